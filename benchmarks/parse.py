"""Benchmark lenient JSON parsing against the standard library's json.loads.

Run with `python benchmarks/parse.py`. Every figure is compared with json.loads
timed in the same run on the same machine, so only the ratios matter. Medians of
several repeats are reported; garbage collection is paused while timing, as timeit
does.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from langchain_core.utils.json import parse_json_markdown, parse_partial_json

from langchain_structx._parsing.parse import parse_json
from langchain_structx._parsing.partial_json import Buffer
from langchain_structx.limits import Limits

VALID_GOAL = 1.5
REPAIR_GOAL = 20.0
PARTIAL_GROWTH_GOAL = 2.0


def record(rng: random.Random, index: int) -> dict[str, Any]:
    return {
        "id": index,
        "name": f"Person {index}",
        "email": f"person{index}@example.org",
        "age": rng.randint(18, 90),
        "score": round(rng.random() * 100, 3),
        "active": rng.random() < 0.5,
        "manager": None,
        "tags": rng.sample(["red", "green", "blue", "amber", "violet"], 3),
        "address": {"city": "Springfield", "zip": f"{rng.randint(10000, 99999)}"},
        "note": 'Likes long walks; dislikes "quotes" and \\backslashes\\.',
    }


def document(size: int, seed: int = 7) -> dict[str, Any]:
    """A realistic extraction result of about `size` characters of compact JSON."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    total = 0
    while total < size - 40:
        item = record(rng, len(items))
        total += len(json.dumps(item)) + 2
        items.append(item)
    return {"count": len(items), "items": items}


def sloppy(value: Any) -> str:
    """The same value the way a sloppy model writes it: Python repr in a fence, with prose."""
    body = repr(value).replace("}", ",}").replace("]", ",]")
    return f"Sure! Here is the data:\n```json\n{body}\n```\nLet me know if you need more."


def median_time(func: Callable[[], object], loops: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            for _ in range(loops):
                func()
            samples.append((time.perf_counter() - started) / loops)
        finally:
            gc.enable()
    return statistics.median(samples)


def paired(
    ours: Callable[[], object], theirs: Callable[[], object], loops: int
) -> tuple[float, float, float]:
    """Median times of both and the median of their per-repeat ratios.

    The two alternate, and swap which goes first, so that load from other work on
    the machine and allocator warm-up hit both alike.
    """
    ours(), theirs()
    repeats = 9 if loops > 1 else 5
    a, b, ratios = [], [], []
    for repeat in range(repeats):
        if repeat % 2:
            a.append(median_time(ours, loops, 1))
            b.append(median_time(theirs, loops, 1))
        else:
            b.append(median_time(theirs, loops, 1))
            a.append(median_time(ours, loops, 1))
        ratios.append(a[-1] / b[-1])
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def loops_for(size: int) -> int:
    return max(1, 2_000_000 // size)


FIGURES: dict[str, dict[str, float | None]] = {}
"""Ratio to json.loads per case, for ours and for LangChain's own helpers."""


def langchain_ratio(func: Callable[[], object], base: Callable[[], object], loops: int) -> float:
    return paired(func, base, loops)[2]


def valid_json() -> bool:
    print(f"(a) valid JSON: parse_json vs json.loads   goal: ratio <= {VALID_GOAL}")
    print("    beside LangChain's parse_json_markdown on the same text")
    print(f"    {'size':>8} {'ours MB/s':>10} {'json MB/s':>10} {'ratio':>7} {'langchain':>10}")
    ok = True
    for label, size in (("1 KB", 1_000), ("100 KB", 100_000), ("10 MB", 10_000_000)):
        text = json.dumps(document(size))
        # The 10 MB case is past the default reply cap, so it gets a roomier one.
        limits = Limits(max_reply_chars=2 * len(text))
        assert parse_json(text, limits=limits).value == json.loads(text)
        ours, theirs, ratio = paired(
            partial(parse_json, text, limits=limits), partial(json.loads, text), loops_for(size)
        )
        ok &= ratio <= VALID_GOAL
        mb = len(text) / 1e6
        stock = langchain_ratio(
            partial(parse_json_markdown, text), partial(json.loads, text), loops_for(size)
        )
        FIGURES[f"valid {label}"] = {"structx": ratio, "langchain": stock}
        print(
            f"    {label:>8} {mb / ours:>10.1f} {mb / theirs:>10.1f} {ratio:>7.2f}"
            f" {stock:>10.2f}  {verdict(ratio <= VALID_GOAL)}"
        )
    return ok


def repaired_json() -> bool:
    print(
        "\n(b) JSON needing repair vs json.loads on the repaired text"
        f"   goal: ratio <= {REPAIR_GOAL}"
    )
    print("    (fence + prose + single quotes + Python literals + trailing commas)")
    print(f"    {'size':>8} {'ours MB/s':>10} {'json MB/s':>10} {'ratio':>7}")
    ok = True
    for label, size in (("1 KB", 1_000), ("100 KB", 100_000)):
        value = document(size)
        text, clean = sloppy(value), json.dumps(value)
        kinds = {repair.kind for repair in parse_json(text).repairs}
        assert parse_json(text).value == value
        assert {"fence", "prose", "single_quotes", "python_literal", "trailing_comma"} <= kinds
        ours, theirs, ratio = paired(
            partial(parse_json, text), partial(json.loads, clean), loops_for(size)
        )
        ok &= ratio <= REPAIR_GOAL
        FIGURES[f"repair {label}"] = {"structx": ratio, "langchain": None}
        print(
            f"    {label:>8} {len(text) / 1e6 / ours:>10.1f} {len(clean) / 1e6 / theirs:>10.1f}"
            f" {ratio:>7.2f}  {verdict(ratio <= REPAIR_GOAL)}"
        )
    print(f"    LangChain's parse_json_markdown on the same text: {langchain_repairs()}")
    return ok


def langchain_repairs() -> str:
    text = sloppy(document(1_000))
    try:
        parse_json_markdown(text)
    except ValueError as exc:
        return f"fails ({type(exc).__name__})"
    return "parses"


def stream(text: str) -> Buffer:
    """Read a stream as the partial-object tracker does: again each time it has grown enough."""
    buffer = Buffer()
    for start in range(0, len(text), 4):
        if buffer.add(text[start : start + 4]):
            buffer.last = buffer.read()
    return buffer


def langchain_stream(text: str) -> None:
    for end in range(4, len(text) + 4, 4):
        parse_partial_json(text[:end])


def langchain_stream_ratio(text: str) -> float:
    started = time.perf_counter()
    langchain_stream(text)
    spent = time.perf_counter() - started
    return spent / median_time(partial(json.loads, text), max(1, 40_000 // len(text)), 3)


def partial_json() -> bool:
    print("\n(c) streaming in 4-character chunks: total cost / one json.loads of the whole text")
    print(f"    goal: flat as size grows (largest / smallest <= {PARTIAL_GROWTH_GOAL})")
    print("    beside LangChain's parse_partial_json on every prefix (quadratic; 200 KB skipped)")
    print(f"    {'size':>8} {'stream ms':>10} {'json ms':>10} {'ratio':>7} {'langchain':>10}")
    ratios = []
    for label, size in (("2 KB", 2_000), ("20 KB", 20_000), ("200 KB", 200_000)):
        text = json.dumps(document(size), indent=2)
        loops = max(1, 40_000 // size)
        assert stream(text).read() == json.loads(text)
        ours, theirs, ratio = paired(partial(stream, text), partial(json.loads, text), loops)
        ratios.append(ratio)
        stock = langchain_stream_ratio(text) if size <= 20_000 else None
        FIGURES[f"stream {label}"] = {"structx": ratio, "langchain": stock}
        shown = f"{stock:>10.1f}" if stock is not None else f"{'(skipped)':>10}"
        print(f"    {label:>8} {ours * 1e3:>10.2f} {theirs * 1e3:>10.3f} {ratio:>7.1f} {shown}")
    growth = ratios[-1] / ratios[0]
    ok = growth <= PARTIAL_GROWTH_GOAL
    print(f"    growth 2 KB -> 200 KB: {growth:.2f}x  {verdict(ok)}")
    return ok


def main() -> int:
    started = time.perf_counter()
    print(f"Python {sys.version.split()[0]}; medians of 5-9 paired repeats\n")
    results = [valid_json(), repaired_json(), partial_json()]
    save_figures(
        "parse",
        title="Parsing cost as a ratio to json.loads (lower is better)",
        unit="x json.loads",
        groups=list(FIGURES),
        series={
            "structx": [f["structx"] for f in FIGURES.values()],
            "langchain": [f["langchain"] for f in FIGURES.values()],
        },
        extra={"goals": {"valid": VALID_GOAL, "repair": REPAIR_GOAL}},
        log_scale=True,
    )
    print(
        f"\n{'all goals met' if all(results) else 'some goals missed'}"
        f" ({time.perf_counter() - started:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
