"""The provider x strategy x schema family x behaviour matrix, shared by the test and the benchmark.

A `Case` runs one agent through an official client against a fake server whose
scripted model behaves as the case says, and reports what came back. The model
answers in whatever shape the request asks for: a strict response format gets
the value encoded for that format (`Plan` knows the transform), a Gemini tool
gets its arguments in the Gemini dialect, anything else the plain value.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, TypeAdapter, create_model
from typing_extensions import TypedDict

from langchain_structx import AutoStrategy, PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx._request.envelope import ENVELOPE_DATA, ENVELOPE_KIND
from langchain_structx._request.plan import Plan, build_plan
from langchain_structx.dialects import Transformed, transform_for_tools
from langchain_structx.errors import DialectError

from .clients import PROVIDERS, client, fake
from .wire import Ask, FakeProvider, Reply

STRATEGIES = ("tool", "provider", "provider_strict", "auto", "prompted")
BEHAVIOURS = (
    "clean", "fenced", "refusal", "truncation", "rejection", "invalid_then_fixed",
    "two_calls", "user_tool_first", "second_turn", "streaming",
)  # fmt: skip
DIALECT = {
    "openai": "openai",
    "openai_responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


# -- schema families --------------------------------------------------------------


class Flat(BaseModel):
    name: str
    qty: int


class Inner(BaseModel):
    city: str
    zip: str | None = None


class Outer(BaseModel):
    inner: Inner | None = None
    note: str | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Movie(TypedDict):
    title: str
    year: int


class Scores(BaseModel):
    scores: dict[str, int]


class Node(BaseModel):
    label: str
    kids: list[Node] = []


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    node["required"] = ["leaf"]
    node["additionalProperties"] = False
    for level in range(levels - 1):
        node = {
            "type": "object",
            "properties": {f"l{level}": node},
            "required": [f"l{level}"],
            "additionalProperties": False,
        }
    return {"title": "Deep", **node}


def _deep_value(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for level in range(levels - 1):
        value = {f"l{level}": value}
    return value


Wide = create_model("Wide", **{f"f{i}": (int | None, None) for i in range(30)})  # type: ignore[call-overload]

SHAPES = {
    "title": "Shape",
    "type": "object",
    "$defs": {
        "Circle": {
            "type": "object",
            "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
            "required": ["kind", "r"],
        },
        "Square": {
            "type": "object",
            "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
            "required": ["kind", "side"],
        },
    },
    "properties": {
        "shape": {"oneOf": [{"$ref": "#/$defs/Circle"}, {"$ref": "#/$defs/Square"}]},
        "tag": {"type": "string"},
    },
    "required": ["shape"],
}

FAMILIES: dict[str, tuple[Any, dict[str, Any]]] = {
    "flat": (Flat, {"name": "bolt", "qty": 3}),
    "nested_optional": (Outer, {"inner": {"city": "Oslo"}}),
    "union": (Cat | Dog, {"kind": "dog", "good": True}),
    "defs_oneof": (SHAPES, {"shape": {"kind": "square", "side": 2.0}, "tag": "t"}),
    "typeddict": (Movie, {"title": "Up", "year": 2009}),
    "map": (Scores, {"scores": {"a": 1, "b": 2}}),
    "recursive": (Node, {"label": "a", "kids": [{"label": "b", "kids": []}]}),
    "deep11": (_deep(11), _deep_value(11)),
    "optional30": (Wide, {"f0": 1, "f29": 2}),
}


def strategy_for(name: str, schema: Any) -> Any:
    """The response format a strategy name stands for."""
    return {
        "tool": lambda: ToolStrategy(schema),
        "provider": lambda: ProviderStrategy(schema),
        "provider_strict": lambda: ProviderStrategy(schema, strict=True),
        "auto": lambda: AutoStrategy(schema),
        "prompted": lambda: PromptedStrategy(schema),
    }[name]()


def expected_value(schema: Any, value: dict[str, Any]) -> Any:
    """What the agent's structured response must equal."""
    return value if isinstance(schema, dict) else TypeAdapter(schema).validate_python(value)


# -- the scripted model -----------------------------------------------------------


class Answers:
    """Encodes the family's value for whatever the request asks."""

    def __init__(self, plan: Plan, value: dict[str, Any], provider: str) -> None:
        self.plan = plan
        self.value = value
        self.provider = provider
        self.variant = _variant_of(plan, value)

    def for_format(self, sent: dict[str, Any]) -> Any:
        whole = self.value
        if self.plan.schemas.is_union:
            whole = {ENVELOPE_KIND: self.variant, ENVELOPE_DATA: self.value}
        strict = self._strict()
        if strict is not None and _same(sent, strict.schema, self.provider):
            return strict.encode(whole)
        return whole

    def for_tool(self) -> tuple[str, dict[str, Any]]:
        if self.provider == "gemini" and not refused(self.plan, "tool", "gemini"):
            spec = self.plan.call_spec("tool", native="gemini")
            sent = next(t for t in spec.tools if t["function"]["name"] == self.variant)
            variant = self.plan.schemas.get(self.variant)
            assert variant is not None
            fills = variant.origin in ("pydantic", "dataclass")
            strict = transform_for_tools(variant.json_schema, "gemini", defaults_apply=fills)
            assert _same(sent["function"]["parameters"], strict.schema, "gemini")
            return self.variant, strict.encode(self.value)
        return self.variant, self.value

    def schema_of(self, name: str) -> dict[str, Any]:
        variant = self.plan.schemas.get(name)
        assert variant is not None
        return variant.json_schema

    def for_text(self) -> Any:
        if self.plan.schemas.is_union:
            return {ENVELOPE_KIND: self.variant, ENVELOPE_DATA: self.value}
        return self.value

    def _strict(self) -> Transformed | None:
        try:
            return self.plan.transformed(DIALECT[self.provider])  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a schema the dialect refuses is never sent strict
            return None


def refused(plan: Plan, strategy: str, provider: str) -> bool:
    """Whether the route `strategy` takes on `provider` cannot carry the plan's schema."""
    try:
        if strategy == "provider_strict":
            plan.transformed(DIALECT[provider])  # type: ignore[arg-type]
        elif strategy == "tool":
            plan.call_spec("tool", native=DIALECT[provider])  # type: ignore[arg-type]
    except DialectError:
        return True
    return False


def _variant_of(plan: Plan, value: dict[str, Any]) -> str:
    for variant in plan.schemas.variants:
        try:
            variant.validate(value)
        except Exception:  # noqa: BLE001, S112 - try the next variant
            continue
        return variant.name
    raise AssertionError(f"no variant accepts {value!r}")


def _same(sent: dict[str, Any], ours: dict[str, Any], provider: str) -> bool:
    ours = {**ours, "title": sent.get("title")}
    if provider == "anthropic":
        from anthropic import transform_schema

        return sent == {**transform_schema(ours), "title": sent.get("title")}
    return {**sent, "title": None} == {**ours, "title": None}


REJECTIONS = {
    "openai": "Invalid parameter: 'response_format' and 'tool_choice' are not supported here.",
    "openai_responses": "Invalid parameter: 'text.format' of type 'json_schema' is not supported.",
    "anthropic": "output_config.format: Extra inputs are not permitted",
    "gemini": 'Invalid JSON payload received. Unknown name "responseJsonSchema"; tools unsupported',
}


def scripted(behaviour: str, answers: Answers, provider: str) -> Callable[[Ask], Reply]:
    """The model of one behaviour."""
    state = {"calls": 0}

    def model(ask: Ask) -> Reply:
        state["calls"] += 1
        first = state["calls"] == 1
        if behaviour == "refusal":
            return Reply(text="I will not help with that.", stop="refusal")
        if behaviour == "truncation":
            return Reply(text=json.dumps(answers.for_text())[:9], stop="length")
        if behaviour == "rejection" and first:
            return Reply(reject=(400, REJECTIONS[provider]))
        if behaviour == "user_tool_first" and first:
            return Reply(calls=(("lookup", {"code": "A1"}),))
        if behaviour == "invalid_then_fixed" and first:
            return _shaped(ask, answers, broken=True)
        if behaviour == "two_calls" and first and ask.kind == "tool":
            name, args = answers.for_tool()
            return Reply(calls=((name, args), (name, args)))
        reply = _shaped(ask, answers)
        if behaviour == "fenced" and reply.text:
            return Reply(text=f"Here it is:\n```json\n{reply.text}\n```")
        return reply

    return model


def _shaped(ask: Ask, answers: Answers, *, broken: bool = False) -> Reply:
    # A broken answer gives every field a nested list: no family accepts that.
    wrong = {key: [[["x"]]] for key in answers.value}
    name, args = answers.for_tool()
    # Offered our tool without being forced, the model still calls it.
    if ask.kind == "tool" or name in ask.tools:
        return Reply(calls=((name, wrong if broken else args),))
    if ask.kind == "format" and ask.schema is not None:
        value = answers.for_format(ask.schema)
    else:
        value = answers.for_text()
    return Reply(text=json.dumps(wrong if broken else value))


# -- one case -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One cell of the matrix."""

    provider: str
    strategy: str
    family: str
    behaviour: str

    @property
    def id(self) -> str:
        return f"{self.provider}-{self.strategy}-{self.family}-{self.behaviour}"


@dataclass
class Outcome:
    """What a case produced: answers (one per run) or an error, and the server's count."""

    answers: list[Any]
    error: BaseException | None
    requests: int
    violations: list[str]
    rejected: int


@tool
def lookup(code: str) -> str:
    """Look a code up in the catalogue."""
    return f"{code}: in stock"


def run(
    case: Case,
    create_agent: Callable[..., Any],
    make_format: Callable[[str, Any], Any] = strategy_for,
) -> Outcome:
    """Run `case` with an agent factory (ours, or LangChain's for comparison)."""
    schema, value = FAMILIES[case.family]
    answers = Answers(build_plan(strategy_for(case.strategy, schema)), value, case.provider)
    server = fake(case.provider, scripted(case.behaviour, answers, case.provider))
    found: list[Any] = []
    error: BaseException | None = None
    with server:
        try:
            response_format = make_format(case.strategy, schema)
            found = _drive(case, create_agent, response_format, server)
        except Exception as exc:  # noqa: BLE001 - the outcome is judged by the caller
            error = exc
    return Outcome(found, error, len(server.requests), server.violations, server.rejected)


def _drive(
    case: Case, create_agent: Callable[..., Any], response_format: Any, server: FakeProvider
) -> list[Any]:
    model = client(case.provider, server)
    tools = [lookup] if case.behaviour == "user_tool_first" else []
    saver = InMemorySaver() if case.behaviour == "second_turn" else None
    agent = create_agent(model, tools=tools, response_format=response_format, checkpointer=saver)
    ask = {"messages": [("user", "Give me the record as JSON.")]}
    # A bound on graph steps: an agent that keeps asking a refusing model ends here.
    config: dict[str, Any] = {"configurable": {"thread_id": "t1"}, "recursion_limit": 24}
    if case.behaviour == "streaming":
        last: dict[str, Any] = {}
        for mode, chunk in agent.stream(ask, config, stream_mode=["messages", "values"]):
            if mode == "values":
                last = chunk
        return [last.get("structured_response")]
    runs = 2 if case.behaviour in ("second_turn", "two_calls") else 1
    return [agent.invoke(ask, config)["structured_response"] for _ in range(runs)]


def cases() -> Iterator[Case]:
    """Every value of every axis, pairwise over provider, strategy and behaviour.

    Each (provider, strategy, behaviour) triple runs once, the schema family
    rotating through all nine; and every (provider, family) pair runs once more
    under AutoStrategy with a clean model.
    """
    families = list(FAMILIES)
    triples = itertools.product(PROVIDERS, STRATEGIES, BEHAVIOURS)
    for i, (provider, strategy, behaviour) in enumerate(triples):
        yield Case(provider, strategy, families[(i * 4) % len(families)], behaviour)
    for provider, family in itertools.product(PROVIDERS, families):
        yield Case(provider, "auto", family, "clean")


def asks_unforced(case: Case) -> bool:
    """Whether the case's rejection names the forced tool choice of a tool route.

    The route then asks again without forcing the choice, auto or not.
    """
    return (
        case.behaviour == "rejection"
        and case.strategy == "tool"
        and "tool_choice" in REJECTIONS[case.provider]
    )


def verdict(case: Case, outcome: Outcome) -> str | None:
    """Why `outcome` is not what `case` must give, or None when it is.

    A route that cannot carry the schema must refuse before sending; a refusal
    and a truncation must come out typed; a rejection falls back under
    AutoStrategy, is asked again unforced on a tool route when it names the
    tool choice, and surfaces otherwise; everything else gives the value.
    """
    from langchain_structx import StructuredOutputRefusal, TruncatedOutputError

    schema, value = FAMILIES[case.family]
    plan = build_plan(strategy_for(case.strategy, schema))
    strict = case.strategy == "provider_strict" or (
        case.strategy == "provider" and DIALECT[case.provider] != "openai"
    )
    expected: tuple[type[BaseException], ...] | None = None
    if refused(plan, "provider_strict" if strict else case.strategy, case.provider):
        expected = (DialectError,)
    elif case.behaviour == "refusal":
        expected = (StructuredOutputRefusal,)
    elif case.behaviour == "truncation":
        expected = (TruncatedOutputError,)
    elif case.behaviour == "rejection" and case.strategy != "auto" and not asks_unforced(case):
        expected = (Exception,)
    if expected is not None:
        if not isinstance(outcome.error, expected):
            return f"expected {expected[0].__name__}, got {outcome.error!r}"
        return None
    if outcome.error is not None:
        return f"failed: {outcome.error!r}"[:300]
    want = expected_value(schema, value)
    if not outcome.answers or any(a != want for a in outcome.answers):
        return f"answers {outcome.answers!r}"[:300]
    return None
