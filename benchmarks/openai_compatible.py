"""The embedded model served over HTTP: `ChatOpenAI` with no profile, against stock LangChain.

A user points `ChatOpenAI` at an OpenAI-compatible server (here llama-cpp-python's,
`python -m llama_cpp.server`, on 127.0.0.1, serving the embedded weights) and gives
it no profile. Our agent asks the server who it is (`GET /v1/models`), and sends the
schema where this engine reads it (`response_format` `{"type": "json_object",
"schema": ...}`), so the server constrains decoding with a grammar. Per
configuration, over the first N tasks of `local_model.py`, it prints valid answers,
exact fields (fields equal to the expected value, summed), answers with every field
right, model calls and model calls per valid answer:

- ours over HTTP: `AutoStrategy` (a bare schema), each explicit strategy, and
  `AutoStrategy` on a server it does not recognise (the memory told so), which is
  how every run went before engines were recognised;
- ours in-process: what `structx extract` runs, `AutoStrategy` on `LocalChatModel`
  (a grammar built from the schema), the yardstick for exact fields;
- stock LangChain on the same `ChatOpenAI`: `model.with_structured_output(schema)`
  (its default `json_schema` method, and `function_calling`), and
  `langchain.agents.create_agent` with its `ProviderStrategy` and `ToolStrategy`.

Results go to `benchmarks/results/openai_compatible.json`.

Run: python benchmarks/openai_compatible.py [--tasks N] [--threads N]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.prompts import ChatPromptTemplate

from langchain_structx import (
    AutoStrategy,
    FallbackMemory,
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputMiddleware,
    ToolStrategy,
)
from langchain_structx._models.capabilities import model_identity
from langchain_structx._models.engines import NO_ENGINE
from langchain_structx.local import LocalChatModel, default_model_path
from langchain_structx.local._weights import DEFAULT_WEIGHTS

sys.path.insert(0, str(Path(__file__).resolve().parent))

import local_model as lm  # noqa: E402 - benchmarks run as scripts
from _record import record as save_figures  # noqa: E402


def unrecognised(model: Any, retries: int) -> Callable[[lm.Task], Any]:
    """AutoStrategy on a server it takes for no known engine: the behaviour before."""

    def build(task: lm.Task) -> Any:
        memory = FallbackMemory()
        memory.remember_fact(model_identity(model), "engine", NO_ENGINE)
        middleware = StructuredOutputMiddleware(
            AutoStrategy(task.schema, max_retries=retries), fallback_memory=memory
        )
        return langchain_create_agent(
            model, middleware=[middleware], system_prompt=lm.SYSTEM_PROMPT
        )

    return build


class StructuredChain:
    """`prompt | model.with_structured_output(schema)`, answering like an agent's state."""

    def __init__(self, model: Any, schema: Any, **options: Any) -> None:
        prompt = ChatPromptTemplate.from_messages(
            [("system", lm.SYSTEM_PROMPT), ("placeholder", "{messages}")]
        )
        self.chain = prompt | model.with_structured_output(schema, **options)

    def invoke(self, state: dict[str, Any], config: Any = None) -> dict[str, Any]:
        return {"structured_response": self.chain.invoke(state, config)}


def with_structured_output(model: Any, **options: Any) -> Callable[[lm.Task], Any]:
    return lambda task: StructuredChain(model, lm.stock_schema(task), **options)


def configurations(remote: Any, local: Any, retries: int) -> list[lm.Config]:
    def ours(model: Any, strategy: Any) -> Callable[[lm.Task], Any]:
        return lm.ours(model, lambda s: strategy(s, max_retries=retries))

    return [
        lm.Config("ours auto", "ours", ours(remote, AutoStrategy)),
        lm.Config("ours provider", "ours", ours(remote, ProviderStrategy)),
        lm.Config("ours tool", "ours", ours(remote, ToolStrategy)),
        lm.Config("ours prompted", "ours", ours(remote, PromptedStrategy)),
        lm.Config("ours auto, engine unknown", "ours", unrecognised(remote, retries)),
        lm.Config("in-process CLI (auto, grammar)", "ours", ours(local, AutoStrategy)),
        lm.Config("stock with_structured_output", "stock", with_structured_output(remote)),
        lm.Config(
            "stock w_s_o function_calling",
            "stock",
            with_structured_output(remote, method="function_calling"),
        ),
        lm.Config("stock ProviderStrategy", "stock", lm.stock(remote, lc.ProviderStrategy)),
        lm.Config("stock ToolStrategy", "stock", lm.stock(remote, lc.ToolStrategy)),
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
        "fields": sum(o.fields for o in runs),
        "right_fields": sum(o.right_fields for o in runs),
        "exact": sum(o.valid and o.right_fields == o.fields for o in runs),
        "calls": calls,
        "calls_per_valid": calls / valid if valid else None,
        "failures": {o.task: o.error for o in runs if o.error},
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'configuration':32} {'valid':>7} {'exact fields':>13} {'exact answers':>14} "
        f"{'calls':>6} {'calls/valid':>12}"
    )
    for r in rows:
        per = f"{r['calls_per_valid']:.2f}" if r["calls_per_valid"] is not None else "-"
        valid = f"{r['valid']}/{r['tasks']}"
        fields = f"{r['right_fields']}/{r['fields']}"
        print(f"{r['name']:32} {valid:>7} {fields:>13} {r['exact']:>14} {r['calls']:>6} {per:>12}")
    for r in rows:
        for task, error in r["failures"].items():
            print(f"  {r['name']}: {task}: {error[:110]}")


def best_stock(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Stock LangChain's best row: most valid answers, then fewest calls."""
    stock = [r for r in rows if r["side"] == "stock"]
    return max(stock, key=lambda r: (r["valid"], -r["calls"]), default=None)


def print_ratios(rows: list[dict[str, Any]]) -> None:
    """Ours against stock LangChain's best, from this run's figures."""
    best = best_stock(rows)
    if best is None or not best["valid"]:
        print("\nstock LangChain answered no task validly: no ratio to print")
        return
    print(f"\nagainst stock's best ({best['name']}):")
    for r in rows:
        if r["side"] != "ours" or not r["valid"]:
            continue
        valid = r["valid"] / best["valid"]
        fields = r["right_fields"] / max(best["right_fields"], 1)
        calls = r["calls_per_valid"] / best["calls_per_valid"]
        print(
            f"  {r['name']:32} valid x{valid:.2f}, exact fields x{fields:.2f}, "
            f"calls per valid answer x{calls:.2f}"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10, help="run the first N tasks")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-retries", type=int, default=3, help="our strategies' retries")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
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
    local = LocalChatModel(max_tokens=args.max_tokens, seed=0, n_threads=args.threads)
    with lm.llama_server(default_model_path(), args.threads) as (base_url, model_id):
        remote = lm.openai_model(base_url, model_id, args.max_tokens, profile=None)
        configs = configurations(remote, local, args.max_retries)
        if args.only:
            configs = [c for c in configs if c.name in args.only]
        for config in configs:
            for task in tasks:
                config.outcomes.append(lm.run_one(config, task))
                if args.verbose:
                    print(config.name, vars(config.outcomes[-1]), flush=True)
    rows = [row(config) for config in configs]
    print(
        f"{DEFAULT_WEIGHTS.model_id} behind llama-cpp-python's server, ChatOpenAI with no "
        f"profile, {len(tasks)} tasks, max_tokens {args.max_tokens}, {args.threads} "
        f"thread(s), our retries {args.max_retries}, {time.perf_counter() - started:.0f} s\n"
    )
    print_rows(rows)
    print_ratios(rows)
    save_figures(
        "openai_compatible",
        title=f"Embedded model over HTTP, ChatOpenAI without a profile, {len(tasks)} tasks",
        unit="valid answers / calls per valid answer",
        groups=[r["name"] for r in rows],
        series={
            "valid answers": [float(r["valid"]) for r in rows],
            "calls per valid answer": [r["calls_per_valid"] for r in rows],
        },
        extra={
            "exact fields": {r["name"]: f"{r['right_fields']}/{r['fields']}" for r in rows},
            "answers with every field right": {r["name"]: r["exact"] for r in rows},
            "model calls": {r["name"]: r["calls"] for r in rows},
            "failures": {r["name"]: r["failures"] for r in rows if r["failures"]},
            "threads": args.threads,
            "our max_retries": args.max_retries,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
