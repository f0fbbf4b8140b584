"""Per-invoke overhead of our create_agent against langchain.agents.create_agent.

Both agents get the same ScriptedChatModel script (one structured tool call) and the
same Pydantic schema with the tool strategy. Runs are interleaved, ours then theirs,
after a warm-up, so that drift in machine load hits both sides alike.

Run: python benchmarks/agent_overhead.py [--n 1000] [--warmup 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _record import record  # noqa: E402 - benchmarks run as scripts
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

GOAL = 1.10


class Contact(BaseModel):
    """A person to reach."""

    name: str
    email: str
    age: int


ANSWER = AIMessage(
    content="",
    tool_calls=[
        tool_call("Contact", {"name": "Ada", "email": "ada@example.com", "age": 36}, id="c1")
    ],
)
INPUT = {"messages": [HumanMessage("Ada, 36, ada@example.com")]}
EXPECTED = Contact(name="Ada", email="ada@example.com", age=36)


def timed(agent, model: ScriptedChatModel) -> float:
    model.reset([ANSWER])
    started = time.perf_counter()
    result = agent.invoke(INPUT)
    elapsed = time.perf_counter() - started
    if result["structured_response"] != EXPECTED:
        raise AssertionError(f"unexpected answer: {result['structured_response']!r}")
    return elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000, help="timed invokes per agent")
    parser.add_argument("--warmup", type=int, default=50, help="untimed invokes per agent")
    args = parser.parse_args()

    ours_model = ScriptedChatModel(responses=[ANSWER])
    theirs_model = ScriptedChatModel(responses=[ANSWER])
    ours = create_agent(ours_model, response_format=ToolStrategy(Contact))
    theirs = langchain_create_agent(theirs_model, response_format=LangChainToolStrategy(Contact))

    for _ in range(args.warmup):
        timed(ours, ours_model)
        timed(theirs, theirs_model)

    ours_times: list[float] = []
    theirs_times: list[float] = []
    for _ in range(args.n):
        ours_times.append(timed(ours, ours_model))
        theirs_times.append(timed(theirs, theirs_model))

    ours_median = statistics.median(ours_times)
    theirs_median = statistics.median(theirs_times)
    ratio = ours_median / theirs_median
    print(f"invokes per agent: {args.n} (after {args.warmup} warm-up), interleaved")
    print(f"{'':12}{'median ms':>12}{'p90 ms':>12}")
    for label, times in (("structx", ours_times), ("langchain", theirs_times)):
        median_ms = statistics.median(times) * 1e3
        p90_ms = percentile(times, 0.9) * 1e3
        print(f"{label:12}{median_ms:>12.3f}{p90_ms:>12.3f}")
    verdict = "PASS" if ratio <= GOAL else "MISS"
    print(f"ratio (median structx / langchain): {ratio:.3f}  goal <= {GOAL:.2f}  {verdict}")
    record(
        "agent_overhead",
        title="Wall time per invoke, ToolStrategy happy path",
        unit="ms",
        groups=["median", "p90"],
        series={
            "structx": [ours_median * 1e3, percentile(ours_times, 0.9) * 1e3],
            "langchain": [theirs_median * 1e3, percentile(theirs_times, 0.9) * 1e3],
        },
        extra={"ratio": ratio, "goal": GOAL, "invokes": args.n},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
