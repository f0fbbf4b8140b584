"""Per-invoke overhead of our create_agent against langchain.agents.create_agent.

Both agents get the same ScriptedChatModel script (one structured tool call) and the
same Pydantic schema with the tool strategy. Runs are interleaved, one invoke of each
agent per round after a warm-up, so that drift in machine load hits every side alike.
The order turns by one place every round: measured with two copies of one agent,
the first place of a fixed order ran 0.2% to 0.6% slower than the third, a bias
that a fixed order would put on one agent alone.

A third agent, LangChain's own with a do-nothing middleware of the same hooks as
ours (a pass-through `wrap_model_call` and `wrap_tool_call`), shows how much of
the difference is the fixed cost of LangChain's middleware machinery rather than
our engine. On this path our agent has no other graph step: an answer at once
is one model step, as in LangChain.

The same four agents are then timed with `ainvoke`, as LangGraph Server runs a
graph. Those figures carry no goal; they show what an async run costs, where
LangChain wraps every middleware hook in LangSmith's `traceable`, whose async
form hands its bookkeeping to a worker thread on every call, traced or not. A
last async round sets LangSmith's documented `set_runtime_overrides` hook to do
that bookkeeping inline, to show how much of the cost those threads are.

A fourth agent is a reference for the rest: LangChain's, with a middleware
written by hand for this one schema, with our hooks and our state keys, that
binds the tool, validates the call with Pydantic, answers it and writes the
keys, and does nothing else (no bounds, no refusal check, no report, no
retry, no events). What our agent costs beyond it is the price of the
engine's generality and checks.

Each ratio is printed with a 95% bootstrap interval (the interleaved rounds
resampled together), and the verdict says PASS only when the whole interval is
within the goal, MISS when all of it is above, and EDGE when the goal falls
inside it: on a noisy machine one run's ratio alone does not settle a goal
that close.

Run: python benchmarks/agent_overhead.py [--n 1000] [--warmup 50]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

import langsmith
from _record import record  # noqa: E402 - benchmarks run as scripts
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelResponse,
)
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.types import Command
from pydantic import BaseModel

from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

GOAL = 1.15
"""Goal against stock `create_agent`."""
NET_GOAL = 1.05
"""Goal against stock `create_agent` with do-nothing middleware of the same hooks."""
LABELS = ("structx", "langchain", "langchain+noop mw", "langchain+by-hand mw")


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

    async def awrap_model_call(self, request, handler):
        return await handler(request)

    async def awrap_tool_call(self, request, handler):
        return await handler(request)


def _never(**_):
    raise RuntimeError("the middleware answers the structured call; the tool never runs")


class ByHand(AgentMiddleware):
    """The least a structured-output middleware does for `Contact`, with our hooks and keys."""

    state_schema = StructuredOutputMiddleware(ToolStrategy(Contact)).state_schema

    def __init__(self):
        super().__init__()
        self.tool = StructuredTool(
            name="Contact", description="A person to reach.", args_schema=Contact, func=_never
        )

    def wrap_model_call(self, request, handler):
        return self._answer(handler(self._ask(request)))

    async def awrap_model_call(self, request, handler):
        return self._answer(await handler(self._ask(request)))

    def wrap_tool_call(self, request, handler):
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        return await handler(request)

    def _ask(self, request):
        return request.override(
            tools=[*request.tools, self.tool], tool_choice="Contact", response_format=None
        )

    def _answer(self, response):
        reply = response.result[-1]
        call = reply.tool_calls[0]
        value = Contact.model_validate(call["args"])
        answer = ToolMessage(
            content=f"Returning structured response: {value}",
            tool_call_id=call["id"],
            name=call["name"],
        )
        update = {
            "structx_progress": {"done": True},
            "structured_response_kind": "Contact",
            "structured_output_report": {"strategy": "tool", "attempts": 1},
        }
        return ExtendedModelResponse(
            model_response=ModelResponse(result=[reply, answer], structured_response=value),
            command=Command(update=update),
        )


def in_turn(round_: int) -> tuple[str, ...]:
    """The agents in the order of one round: each starts one round in every four."""
    shift = round_ % len(LABELS)
    return LABELS[shift:] + LABELS[:shift]


def timed(agent, model: ScriptedChatModel) -> float:
    model.reset([ANSWER])
    started = time.perf_counter()
    result = agent.invoke(INPUT)
    elapsed = time.perf_counter() - started
    if result["structured_response"] != EXPECTED:
        raise AssertionError(f"unexpected answer: {result['structured_response']!r}")
    return elapsed


async def atimed(agent, model: ScriptedChatModel) -> float:
    model.reset([ANSWER])
    started = time.perf_counter()
    result = await agent.ainvoke(INPUT)
    elapsed = time.perf_counter() - started
    if result["structured_response"] != EXPECTED:
        raise AssertionError(f"unexpected answer: {result['structured_response']!r}")
    return elapsed


async def async_times(agents, models, n: int, warmup: int) -> dict[str, list[float]]:
    """The same interleaved rounds as the sync run, with `ainvoke`."""
    for _ in range(warmup):
        for name in LABELS:
            await atimed(agents[name], models[name])
    times: dict[str, list[float]] = {name: [] for name in LABELS}
    for round_ in range(n):
        for name in in_turn(round_):
            times[name].append(await atimed(agents[name], models[name]))
    return times


async def _inline(default, ctx, func, /, *args, **kwargs):
    """LangSmith's `aio_to_thread` hook, doing the work on the calling thread."""
    return ctx.run(func, *args, **kwargs)


def inline_times(agents, models, n: int, warmup: int) -> dict[str, list[float]]:
    """`async_times` with LangSmith's bookkeeping kept off worker threads."""
    langsmith.set_runtime_overrides(aio_to_thread=_inline)
    try:
        return asyncio.run(async_times(agents, models, n, warmup))
    finally:
        langsmith.set_runtime_overrides()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ratios(times: dict[str, list[float]]) -> tuple[float, float]:
    """Ratios of medians: ours to stock, and ours to stock with the do-nothing middleware."""
    medians = {name: statistics.median(values) for name, values in times.items()}
    ours = medians["structx"]
    return ours / medians["langchain"], ours / medians["langchain+noop mw"]


def intervals(
    times: dict[str, list[float]], rounds: int = 1000, seed: int = 0
) -> list[tuple[float, float]]:
    """95% bootstrap intervals of `ratios`, resampling whole interleaved rounds."""
    rng = random.Random(seed)
    n = len(times["structx"])
    samples = []
    for _ in range(rounds):
        picks = [rng.randrange(n) for _ in range(n)]
        samples.append(ratios({name: [v[i] for i in picks] for name, v in times.items()}))
    bounds = []
    for column in zip(*samples, strict=True):
        ordered = sorted(column)
        bounds.append((ordered[int(0.025 * rounds)], ordered[int(0.975 * rounds) - 1]))
    return bounds


def verdict(interval: tuple[float, float], goal: float) -> str:
    low, high = interval
    if high <= goal:
        return "PASS"
    return "MISS" if low > goal else "EDGE"


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
        "langchain+by-hand mw": langchain_create_agent(
            models["langchain+by-hand mw"], middleware=[ByHand()]
        ),
    }
    for _ in range(args.warmup):
        for name in LABELS:
            timed(agents[name], models[name])
    times: dict[str, list[float]] = {name: [] for name in LABELS}
    for round_ in range(args.n):
        for name in in_turn(round_):
            times[name].append(timed(agents[name], models[name]))

    atimes = asyncio.run(async_times(agents, models, args.n, args.warmup))
    itimes = inline_times(agents, models, args.n, args.warmup)

    medians = {name: statistics.median(values) for name, values in times.items()}
    amedians = {name: statistics.median(values) for name, values in atimes.items()}
    ratio, net = ratios(times)
    floor = medians["langchain+noop mw"] / medians["langchain"]
    ratio_ci, net_ci = intervals(times)
    aratio, anet = ratios(atimes)
    afloor = amedians["langchain+noop mw"] / amedians["langchain"]
    aratio_ci, anet_ci = intervals(atimes)
    imedians = {name: statistics.median(values) for name, values in itimes.items()}
    iratio, inet = ratios(itimes)
    ifloor = imedians["langchain+noop mw"] / imedians["langchain"]
    print(f"invokes per agent: {args.n} (after {args.warmup} warm-up), interleaved")
    print(
        f"{'':20}{'median ms':>12}{'p90 ms':>12}{'async median':>14}{'async p90':>12}"
        f"{'async inline':>14}"
    )
    for name in LABELS:
        print(
            f"{name:20}{medians[name] * 1e3:>12.3f}{percentile(times[name], 0.9) * 1e3:>12.3f}"
            f"{amedians[name] * 1e3:>14.3f}{percentile(atimes[name], 0.9) * 1e3:>12.3f}"
            f"{imedians[name] * 1e3:>14.3f}"
        )
    print(
        f"ratio (median structx / langchain): {ratio:.3f}"
        f"  95% interval {ratio_ci[0]:.3f}-{ratio_ci[1]:.3f}"
        f"  goal <= {GOAL:.2f}  {verdict(ratio_ci, GOAL)}"
    )
    print(f"ratio of a do-nothing middleware alone (langchain+noop mw / langchain): {floor:.3f}")
    print(
        f"ratio net of that (structx / langchain+noop mw): {net:.3f}"
        f"  95% interval {net_ci[0]:.3f}-{net_ci[1]:.3f}"
        f"  goal <= {NET_GOAL:.2f}  {verdict(net_ci, NET_GOAL)}"
    )
    engine = medians["structx"] / medians["langchain+by-hand mw"]
    print(f"ratio to the by-hand middleware (structx / langchain+by-hand mw): {engine:.3f}")
    print(
        f"async, no goal: structx / langchain {aratio:.3f}"
        f" ({aratio_ci[0]:.3f}-{aratio_ci[1]:.3f});"
        f" a do-nothing middleware alone {afloor:.3f};"
        f" net of it {anet:.3f} ({anet_ci[0]:.3f}-{anet_ci[1]:.3f})"
    )
    print(
        f"async with LangSmith's bookkeeping inline: structx / langchain {iratio:.3f};"
        f" a do-nothing middleware alone {ifloor:.3f}; net of it {inet:.3f}"
    )
    record(
        "agent_overhead",
        title="Wall time per invoke, ToolStrategy happy path (scripted model)",
        unit="ms",
        groups=["median", "p90", "async median", "async p90", "async inline median"],
        series={
            name: [
                medians[name] * 1e3,
                percentile(times[name], 0.9) * 1e3,
                amedians[name] * 1e3,
                percentile(atimes[name], 0.9) * 1e3,
                imedians[name] * 1e3,
            ]
            for name in LABELS
        },
        extra={
            "ratio": ratio,
            "ratio_interval": list(ratio_ci),
            "noop_middleware_ratio": floor,
            "net_ratio": net,
            "net_ratio_interval": list(net_ci),
            "by_hand_ratio": engine,
            "goal": GOAL,
            "net_goal": NET_GOAL,
            "async_ratio": aratio,
            "async_ratio_interval": list(aratio_ci),
            "async_noop_middleware_ratio": afloor,
            "async_net_ratio": anet,
            "async_net_ratio_interval": list(anet_ci),
            "async_inline_ratio": iratio,
            "async_inline_noop_middleware_ratio": ifloor,
            "async_inline_net_ratio": inet,
            "invokes": args.n,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
