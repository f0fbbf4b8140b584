"""Benchmark the CPU cost of partial structured objects while a model streams.

Run with `python benchmarks/streaming.py`. For structured outputs of about 2 KB,
20 KB and 200 KB streamed in 4-character chunks, it prints the CPU time
(`time.process_time`) spent turning the stream into partial objects, as a ratio
to parsing the final output once with `json.loads`:

- ours: `langchain_structx.streaming.PartialTracker` fed `AIMessageChunk`s, for
  the tool strategy (arguments in `tool_call_chunks`), the provider strategy
  (JSON text in `content`), and the provider strategy in Anthropic's strict
  dialect ("strict"), whose partial values are restored to the schema's shape
  as they stream (as always for Anthropic and Gemini);
- stock LangChain: `langchain_core.utils.json.parse_partial_json` on each growing
  prefix, which is what merging tool-call chunks (`AIMessageChunk.__add__`) and
  `JsonOutputParser` do per chunk. Its cost grows with the square of the size, so
  for the larger outputs it is timed on an even sample of the prefixes and scaled
  up (the sample size is printed);
- of which reads: the part of ours spent re-reading the growing text
  (`partial_value`); the rest is per-chunk bookkeeping;
- floor: the least any per-chunk Python consumer pays, reading each chunk's
  arguments and keeping them (no parsing at all).

Then an end-to-end figure: `agent.stream(..., stream_mode="custom")` on our
`create_agent` with a `ScriptedChatModel(chunk_size=4)` for the 20 KB output.

Goals: our ratio stays flat as the size grows (largest / smallest <= 2, i.e.
linear), and is under 5 at 200 KB. The chunks are built before timing; garbage
collection is paused while timing; medians of several repeats are reported.
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
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel

from langchain_structx import streaming
from langchain_structx._parsing import partial_json as _partial_json
from langchain_structx._request.plan import Plan, build_plan
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

CHUNK = 4
SIZES = (("2 KB", 2_000), ("20 KB", 20_000), ("200 KB", 200_000))
RATIO_GOAL = 5.0
STRICT = "anthropic"
GROWTH_GOAL = 2.0
STOCK_SAMPLE = 300  # prefixes timed for stock LangChain at the larger sizes


class Address(BaseModel):
    city: str
    zip: str


class Person(BaseModel):
    id: int
    name: str
    email: str
    age: int
    score: float
    active: bool
    tags: list[str]
    address: Address
    note: str


class People(BaseModel):
    """A list of people extracted from a document."""

    count: int
    items: list[Person]


def person(rng: random.Random, index: int) -> dict[str, Any]:
    return {
        "id": index,
        "name": f"Person {index}",
        "email": f"person{index}@example.org",
        "age": rng.randint(18, 90),
        "score": round(rng.random() * 100, 3),
        "active": rng.random() < 0.5,
        "tags": rng.sample(["red", "green", "blue", "amber", "violet"], 3),
        "address": {"city": "Springfield", "zip": f"{rng.randint(10000, 99999)}"},
        "note": 'Likes long walks; dislikes "quotes" and \\backslashes\\.',
    }


def document(size: int, seed: int = 7) -> dict[str, Any]:
    """A `People` value of about `size` characters of JSON."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    total = 0
    while total < size - 40:
        item = person(rng, len(items))
        total += len(json.dumps(item)) + 2
        items.append(item)
    value = {"count": len(items), "items": items}
    People.model_validate(value)
    return value


def pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def tool_chunks(text: str) -> list[AIMessageChunk]:
    """The chunks a provider streams for one tool call, as LangChain hands them over."""
    head = tool_call_chunk(name="People", args="", id="call_1", index=0)
    chunks = [AIMessageChunk(content="", tool_call_chunks=[head])]
    chunks += [
        AIMessageChunk(content="", tool_call_chunks=[tool_call_chunk(args=p, index=0)])
        for p in pieces(text)
    ]
    return chunks


def text_chunks(text: str) -> list[AIMessageChunk]:
    return [AIMessageChunk(content=p) for p in pieces(text)]


def cpu(func: Callable[[], object], loops: int = 1, repeats: int = 5) -> float:
    """Median CPU seconds of one call."""
    samples = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            for _ in range(loops):
                func()
            samples.append((time.process_time() - started) / loops)
        finally:
            gc.enable()
    return statistics.median(samples)


def run_tracker(
    plan: Plan, strategy: Any, chunks: list[AIMessageChunk], dialect: Any = None
) -> list[Any]:
    events: list[Any] = []
    spec = plan.call_spec(strategy, dialect=dialect)
    tracker = streaming.PartialTracker(plan, spec, 1, events.append)
    for chunk in chunks:
        tracker.feed(chunk)
    return events


def read_cost(plan: Plan, chunks: list[AIMessageChunk], repeats: int = 5) -> float:
    """Median CPU seconds our tracker spends in `partial_value` for one stream."""
    # The buffer looks the reader up in its own module, so that is where it is timed.
    original = _partial_json.partial_value
    spent = 0.0

    def timed(*args: Any) -> Any:
        nonlocal spent
        started = time.process_time()
        try:
            return original(*args)
        finally:
            spent += time.process_time() - started

    samples = []
    _partial_json.partial_value = timed  # type: ignore[assignment]
    try:
        for _ in range(repeats):
            spent = 0.0
            run_tracker(plan, "tool", chunks)
            samples.append(spent)
    finally:
        _partial_json.partial_value = original  # type: ignore[assignment]
    return statistics.median(samples)


def floor(chunks: list[AIMessageChunk]) -> str:
    kept: list[str] = []
    for chunk in chunks:
        for part in chunk.tool_call_chunks:
            if part.get("args"):
                kept.append(part["args"])
    return "".join(kept)


def stock_cost(text: str) -> tuple[float, int]:
    """CPU seconds of `parse_partial_json` on every prefix (sampled), and prefixes timed."""
    ends = list(range(CHUNK, len(text) + CHUNK, CHUNK))
    step = max(1, len(ends) // STOCK_SAMPLE)
    sample = ends[step // 2 :: step]
    prefixes = [text[:end] for end in sample]
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for prefix in prefixes:
            parse_partial_json(prefix)
        spent = time.process_time() - started
    finally:
        gc.enable()
    return spent * len(ends) / len(sample), len(sample)


def check(events: list[Any], value: dict[str, Any]) -> None:
    """The partial values really are the output, growing: its items, in order."""
    last = events[-1]["value"]
    done = last["items"][:-1]  # the last item may still be cut short
    assert last["count"] == value["count"] and done == value["items"][: len(done)]
    assert len(done) > len(value["items"]) // 2


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def per_size() -> bool:
    tool_plan = build_plan(ToolStrategy(People))
    provider_plan = build_plan(ProviderStrategy(People))
    print(f"Partial objects from {CHUNK}-character chunks; CPU time / one json.loads of the output")
    header = (
        f"    {'size':>7} {'chunks':>7} {'events':>7} {'json.loads':>11}"
        f" {'ours tool':>10} {'of which reads':>15} {'ours provider':>14}"
        f" {'strict':>7} {'floor':>7}"
        f" {'stock LangChain':>16}"
    )
    print(header)
    ratios: list[float] = []
    floor_ratio = 0.0
    read_ratios: list[float] = []
    stock_ratios: list[float] = []
    strict_ratios: list[float] = []
    for label, size in SIZES:
        value = document(size)
        text = json.dumps(value)
        by_tool, by_text = tool_chunks(text), text_chunks(text)
        events = run_tracker(tool_plan, "tool", by_tool)
        check(events, value)
        check(run_tracker(provider_plan, "provider", by_text), value)
        check(run_tracker(provider_plan, "provider", by_text, STRICT), value)
        loads = cpu(partial(json.loads, text), loops=max(1, 400_000 // size))
        ours = cpu(partial(run_tracker, tool_plan, "tool", by_tool))
        ours_text = cpu(partial(run_tracker, provider_plan, "provider", by_text))
        strict = cpu(partial(run_tracker, provider_plan, "provider", by_text, STRICT))
        strict_ratios.append(strict / loads)
        reads = read_cost(tool_plan, by_tool)
        least = cpu(partial(floor, by_tool))
        stock, timed = stock_cost(text)
        floor_ratio = least / loads
        ratios.append(ours / loads)
        read_ratios.append(reads / loads)
        stock_ratios.append(stock / loads)
        sampled = "" if timed * CHUNK >= len(text) else f" ({timed} sampled)"
        print(
            f"    {label:>7} {len(by_tool):>7} {len(events):>7} {loads * 1e3:>9.3f}ms"
            f" {ours / loads:>10.1f} {reads / loads:>15.1f} {ours_text / loads:>14.1f}"
            f" {strict / loads:>7.1f} {least / loads:>7.1f}"
            f" {stock / loads:>16.0f}{sampled}"
        )
    save_figures(
        "streaming",
        title=f"Partial objects from {CHUNK}-character chunks (CPU / one json.loads)",
        unit="x json.loads",
        groups=[label for label, _ in SIZES],
        series={"structx (tool)": ratios, "langchain parse_partial_json": stock_ratios},
        extra={
            "rereading_text": read_ratios,
            "provider_strict": strict_ratios,
            "python_floor": floor_ratio,
        },
        log_scale=True,
    )
    growth = ratios[-1] / ratios[0]
    flat, small = growth <= GROWTH_GOAL, ratios[-1] < RATIO_GOAL
    print(f"\n    ours (tool), largest / smallest ratio: {growth:.2f}  goal <= 2  {verdict(flat)}")
    print(f"    ours (tool) at 200 KB: {ratios[-1]:.1f}  goal < {RATIO_GOAL:g}  {verdict(small)}")
    reads_small = read_ratios[-1] < RATIO_GOAL
    print(
        f"    of which re-reading the text at 200 KB: {read_ratios[-1]:.1f}"
        f"  goal < {RATIO_GOAL:g}  {verdict(reads_small)}"
    )
    print(
        f"    (floor at 200 KB: {floor_ratio:.1f}: merely visiting {CHUNK}-character chunks"
        " in Python costs more than the goal)"
    )
    return flat and small


def end_to_end() -> None:
    value = document(20_000)
    reply = AIMessage("", tool_calls=[tool_call("People", value, id="call_1")])
    model = ScriptedChatModel(responses=[reply], chunk_size=CHUNK)
    agent = create_agent(model, response_format=ToolStrategy(People))
    spent = {"tracker": 0.0}
    feed = streaming.PartialTracker.feed

    def timed_feed(self: streaming.PartialTracker, chunk: AIMessageChunk) -> None:
        started = time.process_time()
        feed(self, chunk)
        spent["tracker"] += time.process_time() - started

    streaming.PartialTracker.feed = timed_feed  # type: ignore[method-assign]
    try:
        wall, started = time.perf_counter(), time.process_time()
        events = list(agent.stream({"messages": [HumanMessage("people?")]}, stream_mode="custom"))
        total_cpu, wall = time.process_time() - started, time.perf_counter() - wall
    finally:
        streaming.PartialTracker.feed = feed  # type: ignore[method-assign]
    phases = [e["phase"] for e in events]
    assert phases[-1] == "final" and events[-1]["value"] == People.model_validate(value)
    print(
        f"\nEnd to end: create_agent(...).stream(stream_mode='custom'), 20 KB, chunk_size={CHUNK}"
    )
    print(
        f"    {len(events)} events ({phases.count('partial')} partial + 1 final),"
        f" {wall:.2f} s wall, {total_cpu:.2f} s CPU,"
        f" of which {spent['tracker'] * 1e3:.0f} ms CPU in PartialTracker.feed"
    )


def main() -> int:
    print(f"Python {sys.version.split()[0]}; medians of 5 repeats\n")
    ok = per_size()
    end_to_end()
    print(f"\n{'all goals met' if ok else 'some goals missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
