"""Per-invoke overhead of our create_agent against langchain.agents.create_agent.

Both agents get the same ScriptedChatModel script (one structured tool call) and the
same Pydantic schema with the tool strategy. Runs are interleaved, ours then theirs,
after a warm-up, so that drift in machine load hits both sides alike.

A third agent, LangChain's own with a do-nothing middleware of the same hooks as
ours (a pass-through `wrap_model_call` and `wrap_tool_call`), shows how much of
the difference is the fixed cost of LangChain's middleware machinery rather than
our engine. On this path our agent has no other graph step: an answer at once
is one model step, as in LangChain.

Run: python benchmarks/agent_overhead.py [--n 1000] [--warmup 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _record import record  # noqa: E402 - benchmarks run as scripts
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware.types import AgentMiddleware
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

GOAL = 1.15
"""Goal against stock `create_agent`."""
NET_GOAL = 1.05
"""Goal against stock `create_agent` with do-nothing middleware of the same hooks."""
LABELS = ("structx", "langchain", "langchain+noop mw")


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


class PassThrough(AgentMiddleware):
    """The hooks our middleware uses, doing nothing."""

    def wrap_model_call(self, request, handler):
        return handler(request)

    def wrap_tool_call(self, request, handler):
        return handler(request)


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

    models = {name: ScriptedChatModel(responses=[ANSWER]) for name in LABELS}
    agents = {
        "structx": create_agent(models["structx"], response_format=ToolStrategy(Contact)),
        "langchain": langchain_create_agent(
            models["langchain"], response_format=LangChainToolStrategy(Contact)
        ),
        "langchain+noop mw": langchain_create_agent(
            models["langchain+noop mw"],
            response_format=LangChainToolStrategy(Contact),
            middleware=[PassThrough()],
        ),
    }
    for _ in range(args.warmup):
        for name in LABELS:
            timed(agents[name], models[name])
    times: dict[str, list[float]] = {name: [] for name in LABELS}
    for _ in range(args.n):
        for name in LABELS:
            times[name].append(timed(agents[name], models[name]))

    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["structx"] / medians["langchain"]
    floor = medians["langchain+noop mw"] / medians["langchain"]
    print(f"invokes per agent: {args.n} (after {args.warmup} warm-up), interleaved")
    print(f"{'':20}{'median ms':>12}{'p90 ms':>12}")
    for name in LABELS:
        print(f"{name:20}{medians[name] * 1e3:>12.3f}{percentile(times[name], 0.9) * 1e3:>12.3f}")
    verdict = "PASS" if ratio <= GOAL else "MISS"
    print(f"ratio (median structx / langchain): {ratio:.3f}  goal <= {GOAL:.2f}  {verdict}")
    print(f"ratio of a do-nothing middleware alone (langchain+noop mw / langchain): {floor:.3f}")
    net = ratio / floor
    net_verdict = "PASS" if net <= NET_GOAL else "MISS"
    print(
        f"ratio net of that (structx / langchain+noop mw): {net:.3f}"
        f"  goal <= {NET_GOAL:.2f}  {net_verdict}"
    )
    record(
        "agent_overhead",
        title="Wall time per invoke, ToolStrategy happy path (scripted model)",
        unit="ms",
        groups=["median", "p90"],
        series={name: [medians[name] * 1e3, percentile(times[name], 0.9) * 1e3] for name in LABELS},
        extra={
            "ratio": ratio,
            "noop_middleware_ratio": floor,
            "net_ratio": net,
            "goal": GOAL,
            "net_goal": NET_GOAL,
            "invokes": args.n,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
