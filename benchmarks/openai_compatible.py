"""The embedded model served over HTTP: `ChatOpenAI` with its default profile.

A user points `ChatOpenAI` at an OpenAI-compatible server (here llama-cpp-python's,
`python -m llama_cpp.server`, on 127.0.0.1, serving the embedded weights) and gives
it no profile. Per configuration, over the same tasks as `local_model.py`, it
prints valid answers, model calls per valid answer, and median seconds per task:

- `auto` (a bare schema) as it was before this change (`tool_choice="any"`, no
  quality fallback), with each change alone, and with both;
- `auto` with one `FallbackMemory` shared by every task, so that what the first
  task learns spares the later ones;
- each explicit strategy of ours, with the tool strategy under both tool choices;
- stock LangChain's `ToolStrategy` and `ProviderStrategy` on the same client.

"Before" is reproduced in-process by patching the two decisions back to their
old answers (`Plan.tool_choice_for` returns `"any"`; `route_broken` never says
a route is broken), so every row runs the same code otherwise. Results go to
`benchmarks/results/openai_compatible.json`.

Run: python benchmarks/openai_compatible.py [--tasks N] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc

from langchain_structx import (
    AutoStrategy,
    FallbackMemory,
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputMiddleware,
    ToolStrategy,
)
from langchain_structx._models import capabilities as caps
from langchain_structx._request.plan import Plan
from langchain_structx.local import default_model_path
from langchain_structx.local._weights import DEFAULT_WEIGHTS

sys.path.insert(0, str(Path(__file__).resolve().parent))

import local_model as lm  # noqa: E402 - benchmarks run as scripts
from _record import record as save_figures  # noqa: E402

Variant = tuple[bool, bool]
"""(named tool choice, quality fallback)."""

NOW: Variant = (True, True)


@contextlib.contextmanager
def variant(named: bool, quality: bool) -> Iterator[None]:
    """Run with the named tool choice and the quality fallback on or off."""
    choose, broken = Plan.tool_choice_for, caps.route_broken
    if not named:
        Plan.tool_choice_for = lambda self, *, alone: "any"  # type: ignore[method-assign]
    if not quality:
        caps.route_broken = lambda *args, **kwargs: False
    try:
        yield
    finally:
        Plan.tool_choice_for = choose  # type: ignore[method-assign]
        caps.route_broken = broken


def shared_memory(model: Any, retries: int) -> Callable[[lm.Task], Any]:
    memory = FallbackMemory()

    def build(task: lm.Task) -> Any:
        middleware = StructuredOutputMiddleware(
            AutoStrategy(task.schema, max_retries=retries), fallback_memory=memory
        )
        return langchain_create_agent(
            model, middleware=[middleware], system_prompt=lm.SYSTEM_PROMPT
        )

    return build


def configurations(model: Any, retries: int) -> list[tuple[lm.Config, Variant]]:
    def auto(s: Any) -> Any:
        return AutoStrategy(s, max_retries=retries)

    def tool(s: Any) -> Any:
        return ToolStrategy(s, max_retries=retries)

    return [
        (lm.Config("auto, before", "ours", lm.ours(model, auto)), (False, False)),
        (lm.Config("auto, named choice only", "ours", lm.ours(model, auto)), (True, False)),
        (lm.Config("auto, quality fallback only", "ours", lm.ours(model, auto)), (False, True)),
        (lm.Config("auto, now", "ours", lm.ours(model, auto)), NOW),
        (lm.Config("auto, now, shared memory", "ours", shared_memory(model, retries)), NOW),
        (lm.Config("tool, 'any'", "ours", lm.ours(model, tool)), (False, True)),
        (lm.Config("tool, named", "ours", lm.ours(model, tool)), NOW),
        (
            lm.Config(
                "provider",
                "ours",
                lm.ours(model, lambda s: ProviderStrategy(s, max_retries=retries)),
            ),
            NOW,
        ),
        (
            lm.Config(
                "prompted",
                "ours",
                lm.ours(model, lambda s: PromptedStrategy(s, max_retries=retries)),
            ),
            NOW,
        ),
        (lm.Config("stock ToolStrategy", "stock", lm.stock(model, lc.ToolStrategy)), NOW),
        (lm.Config("stock ProviderStrategy", "stock", lm.stock(model, lc.ProviderStrategy)), NOW),
    ]


def row(config: lm.Config) -> dict[str, Any]:
    runs = config.outcomes
    valid = sum(o.valid for o in runs)
    calls = sum(o.calls for o in runs)
    return {
        "name": config.name,
        "side": config.side,
        "tasks": len(runs),
        "valid": valid,
        "exact": sum(o.valid and o.right_fields == o.fields for o in runs),
        "calls": calls,
        "calls_per_valid": calls / valid if valid else None,
        "p50_seconds": statistics.median(o.seconds for o in runs) if runs else None,
        "failures": {o.task: o.error for o in runs if o.error},
    }


def first_failure(r: dict[str, Any]) -> str:
    task, error = next(iter(r["failures"].items()))
    return f"{task}: {error[:120]}"


def print_rows(rows: list[dict[str, Any]]) -> None:
    head = f"{'configuration':32} {'valid':>7} {'exact':>6} {'calls':>6} {'calls/valid':>12}"
    print(f"{head} {'p50 s':>7}")
    for r in rows:
        per = f"{r['calls_per_valid']:.2f}" if r["calls_per_valid"] is not None else "-"
        p50 = f"{r['p50_seconds']:.1f}" if r["p50_seconds"] is not None else "-"
        valid = f"{r['valid']}/{r['tasks']}"
        print(f"{r['name']:32} {valid:>7} {r['exact']:>6} {r['calls']:>6} {per:>12} {p50:>7}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=6, help="run the first N tasks")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-retries", type=int, default=3, help="our strategies' retries")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp server threads")
    parser.add_argument("--only", action="append", default=[], help="run only this configuration")
    parser.add_argument("--verbose", action="store_true", help="print each outcome as it comes")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if importlib.util.find_spec("uvicorn") is None:
        print("llama-cpp-python lacks its [server] extras: nothing to measure")
        return 0
    tasks = lm.ALL_TASKS[: max(1, args.tasks)]
    started = time.perf_counter()
    with lm.llama_server(default_model_path(), args.threads) as (base_url, model_id):
        model = lm.openai_model(base_url, model_id, args.max_tokens, profile=None)  # no profile
        configs = configurations(model, args.max_retries)
        if args.only:
            configs = [(c, v) for c, v in configs if c.name in args.only]
        for config, (named, quality) in configs:
            with variant(named, quality):
                for task in tasks:
                    config.outcomes.append(lm.run_one(config, task))
                    if args.verbose:
                        print(config.name, vars(config.outcomes[-1]), flush=True)
    rows = [row(config) for config, _ in configs]
    print(
        f"{DEFAULT_WEIGHTS.model_id} behind llama-cpp-python's server, ChatOpenAI with no "
        f"profile, {len(tasks)} tasks, max_tokens {args.max_tokens}, {args.threads} server "
        f"thread(s), our retries {args.max_retries}, {time.perf_counter() - started:.0f} s\n"
    )
    print_rows(rows)
    names = [r["name"] for r in rows]
    save_figures(
        "openai_compatible",
        title=f"Embedded model over HTTP, ChatOpenAI without a profile, {len(tasks)} tasks",
        unit="valid answers / calls per valid answer",
        groups=names,
        series={
            "valid answers": [float(r["valid"]) for r in rows],
            "calls per valid answer": [r["calls_per_valid"] for r in rows],
        },
        extra={
            "answers with every field right": {r["name"]: r["exact"] for r in rows},
            "model calls": {r["name"]: r["calls"] for r in rows},
            "first failure": {r["name"]: first_failure(r) for r in rows if r["failures"]},
            "server threads": args.threads,
            "our max_retries": args.max_retries,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
