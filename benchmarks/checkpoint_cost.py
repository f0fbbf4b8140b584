"""What a PostgreSQL checkpoint costs per attempt, beside the in-memory saver.

The same agent (our `create_agent`, ToolStrategy, scripted model) runs one
structured answer per thread, on a fresh thread each time, with:

- `memory`: LangGraph's `InMemorySaver`;
- `postgres sync`: `PostgresSaver` with `durability="sync"` (each step written
  before the next starts);
- `postgres async`: the same saver with LangGraph's default `durability="async"`.

Each answer takes 1 attempt, or 3 (two invalid replies, then a valid one). Each
attempt of an agent is its own model step, so each attempt writes its own
checkpoint; the table prints how many. Runs are
interleaved across savers so machine load hits them alike. PostgreSQL is the
build the `pgserver` package ships, started here on a unix socket with fsync on
(the default), so the figures include a durable commit.

The savers restore only known types (`LANGGRAPH_STRICT_MSGPACK=true`, the
setting LangGraph recommends for production); the agent's state schema names
`Contact`, so its answers come back as `Contact` objects with nothing else set.

Run: python benchmarks/checkpoint_cost.py [--n 200] [--warmup 20]
"""

from __future__ import annotations

import os

# Read by LangGraph when it is imported, so set before the imports below.
os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")

import argparse  # noqa: E402
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from _record import ROOT, record  # noqa: E402 - benchmarks run as scripts
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from pydantic import BaseModel

from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

# The test suite's embedded server: one way to start PostgreSQL, used by both.
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import embedded_postgres  # noqa: E402

ATTEMPTS = (1, 3)
LABELS = ("memory", "postgres sync", "postgres async")


class Contact(BaseModel):
    """A person to reach."""

    name: str
    email: str


VALID = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "email": "a@x.org"})])
INVALID = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])
INPUT = {"messages": [HumanMessage("Ada, a@x.org")]}


def script(attempts: int) -> list[AIMessage]:
    return [INVALID] * (attempts - 1) + [VALID]


def runner(saver: Any, durability: str) -> Callable[[int], tuple[float, int]]:
    """A function timing one answer of `attempts` attempts on a new thread."""
    model = ScriptedChatModel(responses=[])
    agent = create_agent(
        model, response_format=ToolStrategy(Contact, max_retries=3), checkpointer=saver
    )

    def run(attempts: int) -> tuple[float, int]:
        model.reset(script(attempts))
        thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
        started = time.perf_counter()
        result = agent.invoke(INPUT, thread, durability=durability)
        elapsed = time.perf_counter() - started
        report = result["structured_output_report"]
        if report["attempts"] != attempts or result["structured_response"].email != "a@x.org":
            raise AssertionError(f"unexpected run: {report}")
        # Read back through the agent, whose saver allows the schema's types.
        history = list(agent.get_state_history(thread))
        if not isinstance(history[0].values["structured_response"], Contact):
            raise AssertionError("the checkpoint did not restore the answer as a Contact")
        return elapsed, len(history)

    return run


def measure(runs: dict[str, Callable[[int], tuple[float, int]]], n: int, warmup: int) -> dict:
    times = {(label, a): [] for label in LABELS for a in ATTEMPTS}
    writes: dict[tuple[str, int], int] = {}
    for index in range(warmup + n):
        for attempts in ATTEMPTS:
            for label in LABELS:
                elapsed, checkpoints = runs[label](attempts)
                writes[label, attempts] = checkpoints
                if index >= warmup:
                    times[label, attempts].append(elapsed)
    return {key: (statistics.median(values), writes[key]) for key, values in times.items()}


def report(figures: dict, n: int) -> None:
    print(f"answers per saver and attempt count: {n}, interleaved")
    heads = f"{'attempts':>9}{'checkpoints':>13}{'median ms':>11}{'ms/attempt':>12}"
    print(f"{'':16}{heads}{'+ms vs memory':>15}")
    for attempts in ATTEMPTS:
        memory = figures["memory", attempts][0]
        for label in LABELS:
            median, checkpoints = figures[label, attempts]
            extra = (median - memory) * 1e3
            print(
                f"{label:16}{attempts:>9}{checkpoints:>13}{median * 1e3:>11.2f}"
                f"{median / attempts * 1e3:>12.2f}{extra:>15.2f}"
            )


def checkpoint_figures(n: int, warmup: int) -> dict:
    """Median seconds and checkpoints per (saver, attempts), on a fresh embedded server."""
    server = embedded_postgres.start_postgres(durable=True)
    try:
        with PostgresSaver.from_conn_string(server.uri()) as saver:
            saver.setup()
            runs = {
                "memory": runner(InMemorySaver(), "sync"),
                "postgres sync": runner(saver, "sync"),
                "postgres async": runner(saver, "async"),
            }
            return measure(runs, n, warmup)
    finally:
        embedded_postgres.stop_postgres(server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200, help="timed answers per saver and count")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first")
    args = parser.parse_args()

    figures = checkpoint_figures(args.n, args.warmup)
    report(figures, args.n)
    groups = [f"{a} attempt{'s' if a > 1 else ''}, per attempt" for a in ATTEMPTS]
    record(
        "checkpoint_cost",
        title="Wall time per attempt, one structured answer per thread (scripted model)",
        unit="ms",
        groups=groups,
        series={label: [figures[label, a][0] / a * 1e3 for a in ATTEMPTS] for label in LABELS},
        extra={
            "answers": args.n,
            "checkpoints_per_run": {f"{k}/{a}": figures[k, a][1] for k in LABELS for a in ATTEMPTS},
            "median_ms": {f"{k}/{a}": figures[k, a][0] * 1e3 for k in LABELS for a in ATTEMPTS},
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
