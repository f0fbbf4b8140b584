"""Scripted model misbehaviours, run through our agent and through stock LangChain.

Each case is a script of model replies, a strategy (tool or provider), the expected
outcome (a value, or a refusal) and the fewest model calls any agent could need: 1
when the data can be recovered locally, 2 when a retry is unavoidable. Every case
runs through `langchain_structx.middleware.create_agent` and through
`langchain.agents.create_agent` with LangChain's own strategy objects. Cases
LangChain cannot express count as "unsupported"; its exceptions count as failures,
and its unbounded retries are cut off by a recursion limit and the finite script.

The same scripts also run through the LCEL face: our `with_structured_output`
(the same strategy) beside LangChain's `model.with_structured_output` on the same
scripted model. For tool cases that is `BaseChatModel.with_structured_output`
(tool calling); for provider cases it is the chain `langchain-openai` builds for
a text answer (`bind(response_format=...)`, its refusal check, then
`PydanticOutputParser`), since the generic method only knows tools. LangChain's
method takes one schema, so union cases are unsupported there. A runnable has no
tools of its own: ours answers a call to an ordinary tool with an error and asks
again, LangChain's finds no structured call.

Run: python benchmarks/noisy_outputs.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from _record import record  # noqa: E402 - benchmarks run as scripts
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import PydanticOutputParser
from langchain_core.runnables import Runnable, RunnableGenerator
from langchain_core.tools import tool
from langchain_openai.chat_models.base import _acheck_refusal, _check_refusal
from pydantic import BaseModel

from langchain_structx.errors import StructuredOutputRefusal
from langchain_structx.middleware import create_agent
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

CALLS_GOAL = 1.10
RECURSION_LIMIT = 25
NATIVE = {"structured_output": True, "tool_calling": True}
INPUT = {"messages": [HumanMessage("Order 5 widgets for Ada, paid, tag rush.")]}


class Order(BaseModel):
    """A customer order."""

    customer: str
    qty: int
    paid: bool
    tags: list[str]
    status: Literal["open", "closed"]
    note: str | None = None


class Event(BaseModel):
    """A calendar event."""

    title: str
    day: int


ORDER = Order(customer="Ada", qty=5, paid=True, tags=["rush"], status="open")
EVENT = Event(title="Launch", day=3)
GOOD_ARGS = {"customer": "Ada", "qty": 5, "paid": True, "tags": ["rush"], "status": "open"}
GOOD_JSON = '{"customer": "Ada", "qty": 5, "paid": true, "tags": ["rush"], "status": "open"}'
REFUSAL = "refusal"


@tool
def lookup(customer: str) -> str:
    """Look a customer up."""
    return f"{customer}: known customer"


@dataclass
class Case:
    name: str
    strategy: Literal["tool", "provider"]
    script: Callable[[], list[Any]]
    minimum: int
    expected: Any = None
    union: bool = False
    langchain: bool = True

    def __post_init__(self) -> None:
        if self.expected is None:
            self.expected = ORDER


@dataclass
class Outcome:
    ok: bool
    calls: int
    detail: str


@dataclass
class Totals:
    cases: int = 0
    successes: int = 0
    calls: int = 0
    minimum: int = 0
    unsupported: int = 0
    failed: list[str] = field(default_factory=list)


def structured(name: str, args: dict[str, Any], id: str = "s1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call(name, args, id=id)])


def broken(args: str, *, name: str = "Order", id: str = "b1", **metadata: Any) -> AIMessage:
    invalid = {"type": "invalid_tool_call", "name": name, "args": args, "id": id, "error": "bad"}
    return AIMessage("", invalid_tool_calls=[invalid], response_metadata=metadata)


def order_args(**changes: Any) -> dict[str, Any]:
    return {**GOOD_ARGS, **changes}


def text(body: str, **metadata: Any) -> AIMessage:
    return AIMessage(body, response_metadata=metadata)


def provider_cases() -> list[Case]:
    p = "provider"
    return [
        Case("P clean JSON", p, lambda: [GOOD_JSON], 1),
        Case("P fenced JSON", p, lambda: [f"```json\n{GOOD_JSON}\n```"], 1),
        Case(
            "P fence + prose",
            p,
            lambda: [f"Here you go:\n```\n{GOOD_JSON}\n```\nAnything else?"],
            1,
        ),
        Case("P prose around JSON", p, lambda: [f"Sure! {GOOD_JSON} Hope this helps."], 1),
        Case("P trailing commas", p, lambda: [GOOD_JSON[:-1] + ",}"], 1),
        Case(
            "P single quotes",
            p,
            lambda: [
                "{'customer': 'Ada', 'qty': 5, 'paid': true, 'tags': ['rush'], 'status': 'open'}"
            ],
            1,
        ),
        Case(
            "P Python literals",
            p,
            lambda: [
                '{"customer": "Ada", "qty": 5, "paid": True, "tags": ["rush"], '
                '"status": "open", "note": None}'
            ],
            1,
        ),
        Case(
            "P comments",
            p,
            lambda: [
                '{"customer": "Ada", // the buyer\n "qty": 5, /* n */ "paid": true, '
                '"tags": ["rush"], "status": "open"}'
            ],
            1,
        ),
        Case(
            "P unquoted keys",
            p,
            lambda: ['{customer: "Ada", qty: 5, paid: true, tags: ["rush"], status: "open"}'],
            1,
        ),
        Case(
            "P full-width colons and commas",
            p,
            lambda: [GOOD_JSON.replace(": ", "\uff1a").replace(", ", "\uff0c")],
            1,
        ),
        Case(
            "P smart quotes",
            p,
            lambda: [
                "{\u201ccustomer\u201d: \u201cAda\u201d, \u201cqty\u201d: 5, \u201cpaid\u201d: "
                "true, \u201ctags\u201d: [\u201crush\u201d], \u201cstatus\u201d: \u201copen\u201d}"
            ],
            1,
        ),
        Case("P '5' for int", p, lambda: [GOOD_JSON.replace('"qty": 5', '"qty": "5"')], 1),
        Case(
            "P 'true' for bool", p, lambda: [GOOD_JSON.replace('"paid": true', '"paid": "true"')], 1
        ),
        Case("P lone value for array", p, lambda: [GOOD_JSON.replace('["rush"]', '"rush"')], 1),
        Case("P enum case", p, lambda: [GOOD_JSON.replace('"open"', '"OPEN"')], 1),
        Case(
            "P many slips at once",
            p,
            lambda: [
                "```json\n{customer: 'Ada', qty: '5', paid: True, tags: 'rush', "
                "status: 'Open',}\n```"
            ],
            1,
        ),
        Case(
            "P validation error then fix",
            p,
            lambda: ['{"customer": "Ada", "qty": 5}', GOOD_JSON],
            2,
        ),
        Case("P prose only then JSON", p, lambda: ["Ada ordered five widgets.", GOOD_JSON], 2),
        Case(
            "P truncated then good",
            p,
            lambda: [text('{"customer": "Ada", "qty": 5, "pa', finish_reason="length"), GOOD_JSON],
            2,
        ),
        Case(
            "P refusal",
            p,
            lambda: [AIMessage("", additional_kwargs={"refusal": "I can't help."}), GOOD_JSON],
            1,
            expected=REFUSAL,
        ),
        Case(
            "P union clean envelope",
            p,
            lambda: ['{"kind": "Event", "data": {"title": "Launch", "day": 3}}'],
            1,
            expected=EVENT,
            union=True,
            langchain=False,
        ),
        Case(
            "P union missing envelope",
            p,
            lambda: ['{"title": "Launch", "day": 3}'],
            1,
            expected=EVENT,
            union=True,
            langchain=False,
        ),
        Case(
            "P union wrong kind then fix",
            p,
            lambda: [
                '{"kind": "Meeting", "data": {"title": "Launch", "day": 3}}',
                '{"kind": "Event", "data": {"title": "Launch", "day": 3}}',
            ],
            2,
            expected=EVENT,
            union=True,
            langchain=False,
        ),
    ]


def tool_cases() -> list[Case]:
    t = "tool"
    return [
        Case("T clean call", t, lambda: [structured("Order", GOOD_ARGS)], 1),
        Case("T trailing comma in args", t, lambda: [broken(GOOD_JSON[:-1] + ",}")], 1),
        Case(
            "T single quotes in args",
            t,
            lambda: [
                broken(
                    "{'customer': 'Ada', 'qty': 5, 'paid': true, 'tags': ['rush'], "
                    "'status': 'open'}"
                )
            ],
            1,
        ),
        Case("T fenced args", t, lambda: [broken(f"```json\n{GOOD_JSON}\n```")], 1),
        Case(
            "T Python literals in args", t, lambda: [broken(GOOD_JSON.replace("true", "True"))], 1
        ),
        Case(
            "T unquoted keys in args",
            t,
            lambda: [
                broken('{customer: "Ada", qty: 5, paid: true, tags: ["rush"], status: "open"}')
            ],
            1,
        ),
        Case(
            "T comment in args",
            t,
            lambda: [broken(GOOD_JSON.replace('"qty": 5,', '"qty": 5, // five\n'))],
            1,
        ),
        Case(
            "T smart quotes in args",
            t,
            lambda: [broken(GOOD_JSON.replace('"Ada"', "\u201cAda\u201d"))],
            1,
        ),
        Case(
            "T full-width colons and commas in args",
            t,
            lambda: [broken(GOOD_JSON.replace(": ", "\uff1a").replace(", ", "\uff0c"))],
            1,
        ),
        Case("T '5' for int", t, lambda: [structured("Order", order_args(qty="5"))], 1),
        Case("T 'true' for bool", t, lambda: [structured("Order", order_args(paid="true"))], 1),
        Case(
            "T lone value for array", t, lambda: [structured("Order", order_args(tags="rush"))], 1
        ),
        Case("T enum case", t, lambda: [structured("Order", order_args(status="Open"))], 1),
        Case(
            "T prose instead of tool call",
            t,
            lambda: ["Ada ordered 5 widgets.", structured("Order", GOOD_ARGS, id="s2")],
            2,
        ),
        Case(
            "T invalid structured + ordinary call",
            t,
            lambda: [
                AIMessage(
                    "",
                    tool_calls=[
                        tool_call("lookup", {"customer": "Ada"}, id="l1"),
                        tool_call("Order", {"customer": "Ada"}, id="s1"),
                    ],
                ),
                structured("Order", GOOD_ARGS, id="s2"),
            ],
            2,
        ),
        Case(
            "T ordinary call then structured",
            t,
            lambda: [
                structured("lookup", {"customer": "Ada"}, id="l1"),
                structured("Order", GOOD_ARGS, id="s2"),
            ],
            2,
        ),
        Case(
            "T truncated call then good",
            t,
            lambda: [
                broken('{"customer": "Ada", "qty": 5, "pa', finish_reason="length"),
                structured("Order", GOOD_ARGS, id="s2"),
            ],
            2,
        ),
        Case(
            "T refusal (OpenAI field)",
            t,
            lambda: [AIMessage("", additional_kwargs={"refusal": "I can't help."}), "unused"],
            1,
            expected=REFUSAL,
        ),
        Case(
            "T refusal (content block)",
            t,
            lambda: [AIMessage([{"type": "refusal", "refusal": "I can't help."}]), "unused"],
            1,
            expected=REFUSAL,
        ),
        Case(
            "T multiple structured calls",
            t,
            lambda: [
                AIMessage(
                    "",
                    tool_calls=[
                        tool_call("Order", GOOD_ARGS, id="s1"),
                        tool_call("Event", {"title": "Launch", "day": 3}, id="s2"),
                    ],
                ),
                structured("Order", GOOD_ARGS, id="s3"),
            ],
            2,
            union=True,
        ),
        Case(
            "T wrong union variant name",
            t,
            lambda: [
                structured("Meeting", {"title": "Launch", "day": 3}, id="s1"),
                structured("Event", {"title": "Launch", "day": 3}, id="s2"),
            ],
            2,
            expected=EVENT,
            union=True,
        ),
        Case(
            "T union clean call",
            t,
            lambda: [structured("Event", {"title": "Launch", "day": 3})],
            1,
            expected=EVENT,
            union=True,
        ),
        Case(
            "T validation error then fix",
            t,
            lambda: [
                structured("Order", {"customer": "Ada", "qty": 5}),
                structured("Order", GOOD_ARGS, id="s2"),
            ],
            2,
        ),
        Case(
            "T wrong type then fix",
            t,
            lambda: [
                structured("Order", order_args(qty="five")),
                structured("Order", GOOD_ARGS, id="s2"),
            ],
            2,
        ),
    ]


def schema_of(case: Case) -> Any:
    return Order | Event if case.union else Order


def our_strategy(case: Case) -> Any:
    if case.strategy == "tool":
        return ToolStrategy(schema_of(case))
    return ProviderStrategy(schema_of(case))


def ours(case: Case) -> Outcome:
    model = ScriptedChatModel(responses=case.script(), profile=NATIVE)
    agent = create_agent(model, [lookup], response_format=our_strategy(case))
    config = {"recursion_limit": RECURSION_LIMIT}
    return judged(case, model, lambda: agent.invoke(INPUT, config).get("structured_response"))


def ours_lcel(case: Case) -> Outcome:
    model = ScriptedChatModel(responses=case.script(), profile=NATIVE)
    runnable = with_structured_output(model, our_strategy(case))
    return judged(case, model, lambda: runnable.invoke(INPUT["messages"]))


def judged(case: Case, model: ScriptedChatModel, run: Callable[[], Any]) -> Outcome:
    try:
        value = run()
    except StructuredOutputRefusal:
        calls = len(model.calls)
        return Outcome(case.expected == REFUSAL, calls, "refusal raised")
    except Exception as exc:  # noqa: BLE001 - any failure counts
        return Outcome(False, len(model.calls), type(exc).__name__)
    return Outcome(
        value == case.expected,
        len(model.calls),
        "ok" if value == case.expected else f"got {value!r}",
    )


def theirs(case: Case) -> Outcome | None:
    if not case.langchain:
        return None
    model = ScriptedChatModel(responses=case.script(), profile=NATIVE)
    schema = schema_of(case)
    strategy: Any = (
        lc.ToolStrategy(schema) if case.strategy == "tool" else lc.ProviderStrategy(schema)
    )
    try:
        agent = langchain_create_agent(model, [lookup], response_format=strategy)
    except Exception:  # noqa: BLE001 - LangChain cannot express it
        return None
    try:
        result = agent.invoke(INPUT, {"recursion_limit": RECURSION_LIMIT})
    except Exception as exc:  # noqa: BLE001 - any failure counts
        return Outcome(False, len(model.calls), type(exc).__name__)
    value = result.get("structured_response")
    if case.expected == REFUSAL:
        return Outcome(False, len(model.calls), "refusal not reported")
    return Outcome(
        value == case.expected,
        len(model.calls),
        "ok" if value == case.expected else "wrong or missing",
    )


def langchain_runnable(model: ScriptedChatModel, case: Case) -> Runnable[Any, Any]:
    if case.strategy == "tool":
        return model.with_structured_output(Order, method="function_calling")
    settings = {
        "type": "json_schema",
        "json_schema": {"name": "Order", "schema": Order.model_json_schema()},
    }
    check = RunnableGenerator(_check_refusal, _acheck_refusal)
    return (
        model.bind(response_format=settings) | check | PydanticOutputParser(pydantic_object=Order)
    )


def theirs_lcel(case: Case) -> Outcome | None:
    if case.union:
        return None
    model = ScriptedChatModel(responses=case.script(), profile=NATIVE)
    runnable = langchain_runnable(model, case)
    try:
        value = runnable.invoke(INPUT["messages"])
    except Exception as exc:  # noqa: BLE001 - any failure counts
        refused = case.expected == REFUSAL and "refus" in type(exc).__name__.lower()
        return Outcome(refused, len(model.calls), type(exc).__name__)
    if case.expected == REFUSAL:
        return Outcome(False, len(model.calls), "refusal not reported")
    ok = value == case.expected
    return Outcome(ok, len(model.calls), "ok" if ok else "wrong or missing")


def tally(totals: Totals, case: Case, outcome: Outcome | None) -> None:
    if outcome is None:
        totals.unsupported += 1
        return
    totals.cases += 1
    if outcome.ok:
        totals.successes += 1
        totals.calls += outcome.calls
        totals.minimum += case.minimum
    else:
        totals.failed.append(case.name)


def cell(outcome: Outcome | None, minimum: int) -> str:
    if outcome is None:
        return "unsupported"
    mark = "ok  " if outcome.ok else "FAIL"
    ratio = f"{outcome.calls / minimum:.1f}x" if outcome.ok else outcome.detail[:18]
    return f"{mark} {outcome.calls} calls {ratio}"


def summary(label: str, totals: Totals) -> str:
    rate = totals.successes / totals.cases if totals.cases else 0.0
    per = totals.calls / totals.successes if totals.successes else float("nan")
    vs_min = totals.calls / totals.minimum if totals.minimum else float("nan")
    return (
        f"{label:20} success {totals.successes}/{totals.cases} ({rate:.0%}), "
        f"unsupported {totals.unsupported}, calls/success {per:.2f}, vs minimum {vs_min:.2f}x"
    )


def main() -> int:
    cases = provider_cases() + tool_cases()
    mine, stock, mine_lcel, stock_lcel = Totals(), Totals(), Totals(), Totals()
    print(f"{len(cases)} cases")
    print(
        f"{'case':40}{'min':>4}  {'structx agent':26}{'langchain agent':26}"
        f"{'structx w_s_o':26}{'langchain w_s_o':26}"
    )
    for case in cases:
        outcomes = (ours(case), theirs(case), ours_lcel(case), theirs_lcel(case))
        tally(mine, case, outcomes[0])
        tally(stock, case, outcomes[1])
        tally(mine_lcel, case, outcomes[2])
        tally(stock_lcel, case, outcomes[3])
        cells = "".join(f"{cell(o, case.minimum):26}" for o in outcomes)
        print(f"{case.name:40}{case.minimum:>4}  {cells}")
    print()
    print(summary("agent     structx", mine))
    print(summary("agent     langchain", stock))
    print(summary("w_s_o     structx", mine_lcel))
    print(summary("w_s_o     langchain", stock_lcel))
    recoverable_ok = not mine.failed
    within = mine.minimum and mine.calls / mine.minimum <= CALLS_GOAL
    succeeded = "PASS" if recoverable_ok else "MISS: " + ", ".join(mine.failed)
    print(
        f"goal: every case succeeds ({succeeded}); "
        f"calls within {CALLS_GOAL:.1f}x of minimum ({'PASS' if within else 'MISS'})"
    )
    record(
        "noisy_outputs",
        title=f"{len(cases)} scripted misbehaviours",
        unit="success rate (%)",
        groups=["create_agent", "with_structured_output"],
        series={
            "structx": [100 * _rate(mine), 100 * _rate(mine_lcel)],
            "langchain": [100 * _rate(stock), 100 * _rate(stock_lcel)],
        },
        extra={
            "calls_per_success": {"structx": _per(mine), "langchain": _per(stock)},
            "with_structured_output_calls_per_success": {
                "structx": _per(mine_lcel),
                "langchain": _per(stock_lcel),
            },
            "cases": len(cases),
            "langchain_unsupported": stock.unsupported,
            "langchain_failed": stock.failed,
            "structx_failed": mine.failed,
            "with_structured_output_langchain_unsupported": stock_lcel.unsupported,
            "with_structured_output_langchain_failed": stock_lcel.failed,
            "with_structured_output_structx_failed": mine_lcel.failed,
        },
    )
    return 0


def _rate(totals: Totals) -> float:
    return totals.successes / totals.cases if totals.cases else 0.0


def _per(totals: Totals) -> float | None:
    return totals.calls / totals.successes if totals.successes else None


if __name__ == "__main__":
    raise SystemExit(main())
