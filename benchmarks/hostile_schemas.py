"""Hostile schemas (and one hostile stream): cost at one size and at four times it.

Run with `python benchmarks/hostile_schemas.py`. Each case is a schema a tenant
could send, or a reply shape, that once cost time growing faster than its size or
without bound. Each is run at a size n and at 4n, best of three, and the figures
are printed side by side:

- the outcome (accepted, or the typed error that refuses it);
- seconds at n and at 4n, and their ratio (linear is 4; goal <= 4.4, and a case
  that is refused or bounded should not grow at all);
- for the streaming case, which LangChain's own `with_structured_output` can also
  do, LangChain's seconds from the same run.

One more case measures memory, not time: n schemas, then 4n, each with its own
patterns that hold megabytes once compiled and used (a large RE2 program, an RE2
pattern whose matching tables grow on noisy text, a `regex` set repeated a
thousand times, as large as its compile cost allows). It runs first, and prints
the growth of the process's peak RSS:
the patterns kept for reuse are bounded by weight, so it should not grow from n
to 4n.

Figures are printed and recorded, never asserted.
"""

from __future__ import annotations

import gc
import json
import random
import resource
import time
from collections.abc import Callable
from typing import Any

from _record import record  # noqa: E402 - benchmarks run as scripts
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from langchain_structx import (
    PromptedStrategy,
    ToolStrategy,
    with_structured_output,
)
from langchain_structx._request.plan import build_plan
from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import StructxError
from langchain_structx.limits import Limits
from langchain_structx.testing import ScriptedChatModel, tool_call

GROWTH_GOAL = 4.4


class City(BaseModel):
    name: str
    note: str


def alias_chain(n: int) -> Callable[[], object]:
    defs = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(n)}
    defs[f"D{n}"] = {"type": "object"}
    schema = {"title": "Chain", "$ref": "#/$defs/D0", "$defs": defs}
    return lambda: build_plan(ToolStrategy(schema))


def doubling_definitions(n: int) -> Callable[[], object]:
    defs: dict[str, Any] = {"D0": {"type": "string"}}
    for i in range(1, n):
        pair = {"a": {"$ref": f"#/$defs/D{i - 1}"}, "b": {"$ref": f"#/$defs/D{i - 1}"}}
        defs[f"D{i}"] = {"type": "object", "properties": pair}
    schema = {"title": "Tree", "$ref": f"#/$defs/D{n - 1}", "$defs": defs}
    return lambda: build_plan(PromptedStrategy(schema)).instructions()


def clashing_definitions(n: int) -> Callable[[], object]:
    def variant(title: str, tag: str) -> dict[str, Any]:
        defs = {f"D{i}": {"type": "object", "properties": {tag: {"const": i}}} for i in range(n)}
        uses = {f"p{i}": {"$ref": f"#/$defs/D{i}"} for i in range(n)}
        return {"title": title, "type": "object", "properties": uses, "$defs": defs}

    first, second = variant("A", "a"), variant("B", "b")
    return lambda: build_plan(ToolStrategy([first, second])).output_schema()


def mixed_type_list(n: int) -> Callable[[], object]:
    schema = {"title": "Odd", "type": [0, *(f"t{i}" for i in range(n))]}
    return lambda: build_plan(ToolStrategy(schema))


def unwrapped_union(n: int) -> Callable[[], object]:
    slow = {"type": "string", "pattern": r"^(?=(a|aa)+c)"}
    variants = [{"title": f"V{i}", "type": "object", "properties": {"s": slow}} for i in range(n)]
    reply = json.dumps({"s": "a" * 60 + "b"})
    limits = Limits(validation_seconds=0.2)

    def run() -> object:
        model = ScriptedChatModel(responses=[reply])
        strategy = PromptedStrategy(variants, max_retries=0, limits=limits)
        return with_structured_output(model, strategy).invoke("Go")

    return run


def unevaluated_items(n: int) -> Callable[[], object]:
    variant = normalize({"title": "Xs", "type": "array", "items": {}, "unevaluatedItems": False})
    value = [0] * n
    return lambda: variant.variants[0].validate(value)


def unevaluated_properties(n: int) -> Callable[[], object]:
    schema = {
        "title": "Bag",
        "type": "object",
        "additionalProperties": {},
        "unevaluatedProperties": False,
    }
    variant = normalize(schema)
    value = {f"k{i}": 0 for i in range(n)}
    return lambda: variant.variants[0].validate(value)


def _many_calls(n: int) -> AIMessage:
    calls = [tool_call("City", {"name": "Oslo", "note": f"n{i}"}, id=f"c{i}") for i in range(n)]
    return AIMessage("", tool_calls=calls)


def raw_stream(n: int) -> Callable[[], object]:
    def run() -> object:
        model = ScriptedChatModel(responses=[_many_calls(n)], chunk_size=64)
        strategy = ToolStrategy(City, max_retries=0)
        return list(with_structured_output(model, strategy, include_raw=True).stream("Go"))

    return run


def raw_stream_langchain(n: int) -> Callable[[], object]:
    def run() -> object:
        model = ScriptedChatModel(responses=[_many_calls(n)], chunk_size=64)
        return list(model.with_structured_output(City, include_raw=True).stream("Go"))

    return run


def _costly_patterns(i: int) -> tuple[dict[str, Any], dict[str, str]]:
    """Schema i, with three patterns no other schema shares, and a reply that matches them."""
    members = "".join(chr(0x4E00 + 2 * k + i) for k in range(96))
    noise = "".join(random.Random(i).choice("ab") for _ in range(20_000))
    properties = {
        "word": {"type": "string", "pattern": rf"^\pL{{1,{150 + i}}}$"},
        "noise": {"type": "string", "pattern": rf"(a|b)*a(a|b){{15}}c{i}"},
        "glyphs": {"type": "string", "pattern": f"[{members}]{{1000}}(?=x)"},
    }
    schema = {"title": f"P{i}", "type": "object", "properties": properties}
    glyphs = (members * 11)[:1000] + "x"
    reply = {"word": "é" * 40, "noise": f"{noise}a{'b' * 15}c{i}", "glyphs": glyphs}
    return schema, reply


def costly_patterns(n: int) -> Callable[[], object]:
    def run() -> object:
        for i in range(n):
            schema, reply = _costly_patterns(i)
            build_plan(ToolStrategy(schema))
            normalize(schema).variants[0].validate(reply, Limits())
        return None

    return run


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def peak_rss_growth(make: Callable[[], object]) -> tuple[float, str]:
    """How far the process's peak RSS rises, in MiB, while `make` runs."""
    gc.collect()
    before = _peak_rss_mib()
    try:
        make()
        outcome = "accepted"
    except StructxError as exc:
        outcome = type(exc).__name__
    gc.collect()
    return _peak_rss_mib() - before, outcome


MEMORY_CASE = ("distinct costly patterns", costly_patterns, 8)


CASES: tuple[tuple[str, Callable[[int], Callable[[], object]], int, Any], ...] = (
    ("$ref alias chain", alias_chain, 1_000, None),
    ("prompt: definitions used twice", doubling_definitions, 40, None),
    ("envelope: clashing definitions", clashing_definitions, 500, None),
    ("type list of mixed values", mixed_type_list, 8_000, None),
    ("union reply without envelope", unwrapped_union, 10, None),
    ("unevaluatedItems, long array", unevaluated_items, 20_000, None),
    ("unevaluatedProperties, many keys", unevaluated_properties, 5_000, None),
    ("include_raw stream, tool calls", raw_stream, 300, raw_stream_langchain),
)


def best_of(make: Callable[[], object], rounds: int = 3) -> tuple[float, str]:
    best, outcome = float("inf"), "accepted"
    for _ in range(rounds):
        started = time.perf_counter()
        try:
            make()
            outcome = "accepted"
        except StructxError as exc:
            outcome = type(exc).__name__
        best = min(best, time.perf_counter() - started)
    return best, outcome


def main() -> int:
    memory_name, memory_factory, memory_n = MEMORY_CASE
    small_mib, outcome = peak_rss_growth(memory_factory(memory_n))
    large_mib, _ = peak_rss_growth(memory_factory(4 * memory_n))
    print(f"{'case':34}{'n':>7}{'outcome':>28}{'MiB at n':>10}{'MiB at 4n':>10}")
    print(f"{memory_name:34}{memory_n:>7}{outcome:>28}{small_mib:>10.1f}{large_mib:>10.1f}")
    print("(growth of the process's peak RSS; the 4n run starts from the n run's peak)")
    print()
    rows = []
    print(
        f"{'case':34}{'n':>7}{'outcome':>28}{'s at n':>10}{'s at 4n':>10}{'growth':>8}"
        f"{'langchain s at 4n':>19}"
    )
    for name, factory, n, baseline in CASES:
        small, outcome = best_of(factory(n))
        large, _ = best_of(factory(4 * n))
        theirs = best_of(baseline(4 * n), rounds=1)[0] if baseline else None
        growth = large / small if small > 0 else float("nan")
        verdict = "PASS" if growth <= GROWTH_GOAL else "MISS"
        shown = f"{theirs:.3f}" if theirs is not None else "n/a"
        print(
            f"{name:34}{n:>7}{outcome:>28}{small:>10.3f}{large:>10.3f}{growth:>8.2f}"
            f"{shown:>19}  {verdict}"
        )
        rows.append((name, small, large, growth, theirs, outcome))
    record(
        "hostile_schemas",
        title="Hostile schemas and streams: seconds at n and 4n",
        unit="s",
        groups=[row[0] for row in rows],
        series={
            "structx at n": [row[1] for row in rows],
            "structx at 4n": [row[2] for row in rows],
            "langchain at 4n": [row[4] for row in rows],
        },
        extra={
            "growth": {row[0]: row[3] for row in rows},
            "outcome": {row[0]: row[5] for row in rows},
            "growth_goal": GROWTH_GOAL,
            "peak_rss_growth_mib": {
                "case": memory_name,
                "n": memory_n,
                "at n": round(small_mib, 1),
                "at 4n": round(large_mib, 1),
            },
        },
        log_scale=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
