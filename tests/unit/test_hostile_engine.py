"""Hostile replies and misuse against the engine, through the public API.

Each test names the finding it covers: A unbounded text, B fallback-memory
poisoning, C unions and routing, D `handle_errors`, E event-loop stalls, F
exceptions of the user's own validators.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

import jsonschema
import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import BaseModel, SecretStr, field_validator

import langchain_structx
from langchain_structx import (
    ErrorHandlerError,
    FallbackMemory,
    Limits,
    PromptedStrategy,
    ProviderStrategy,
    RouteError,
    StructuredOutputMiddleware,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    ToolStrategy,
    UserError,
    create_agent,
    route_by_kind,
    structured_output_node,
)
from langchain_structx._models.capabilities import model_identity
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
NATIVE = {"structured_output": True, "tool_calling": True}


class Contact(BaseModel):
    name: str
    age: int


class Event(BaseModel):
    title: str


GOOD = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36})])
JSON_GOOD = '{"name": "Ada", "age": 36}'


def bad_call(id: str = "b1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"}, id=id)])


class HTTPError(Exception):
    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


def strategy_of(call: Any) -> str:
    if call.response_format is not None and call.response_format.get("type") == "json_schema":
        return "provider"
    return "tool" if call.tools else "prompted"


# --- A: every text built from model output is bounded ---------------------------------

HUGE = "x" * 1_000_000


def test_a_huge_refusal_becomes_bounded_feedback_and_errors() -> None:
    limits = Limits(max_feedback_chars=500)
    refusal = AIMessage("", additional_kwargs={"refusal": HUGE})
    model = ScriptedChatModel(responses=[refusal, refusal, GOOD])
    strategy = ToolStrategy(Contact, handle_errors=StructuredOutputRefusal, limits=limits)

    state = create_agent(model, response_format=strategy).invoke(ASK)

    assert state["structured_response"] == Contact(name="Ada", age=36)
    feedback = [m.content for m in model.calls[2].messages if isinstance(m, HumanMessage)][1:]
    assert len(feedback) == 2
    assert all(len(text) <= 500 and text.endswith("... (truncated)") for text in feedback)
    report = state["structured_output_report"]
    assert all(len(entry) <= 500 for entry in report["errors"])


def test_a_huge_refusal_raised_as_itself_is_bounded() -> None:
    model = ScriptedChatModel(responses=[AIMessage("", additional_kwargs={"refusal": HUGE})])

    with pytest.raises(StructuredOutputRefusal) as caught:
        create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert len(str(caught.value)) < 10_000
    assert len(caught.value.refusal) < 10_000
    assert caught.value.ai_message.additional_kwargs["refusal"] == HUGE  # kept in full


@pytest.mark.parametrize(
    "reply",
    [
        # An odd server's refusal that is no string: `str()` of it raised ValueError.
        AIMessage("", additional_kwargs={"refusal": 10**5000}),
        AIMessage([{"type": "refusal", "refusal": 10**5000}]),
        AIMessage("", additional_kwargs={"refusal": [["no"] * 100_000]}),
    ],
)
def test_a_refusal_that_is_no_string_is_a_typed_refusal_within_bounds(reply: AIMessage) -> None:
    model = ScriptedChatModel(responses=[reply])

    with pytest.raises(StructuredOutputRefusal) as caught:
        create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert 0 < len(caught.value.refusal) < 10_000
    assert "5001 digits" in caught.value.refusal or "'no'" in caught.value.refusal


def test_a_huge_invalid_answer_gives_bounded_feedback_and_retry_error() -> None:
    answer = '{"name": "Ada", "age": "' + "9" * 500_000 + 'x"}'
    model = ScriptedChatModel(responses=[answer] * 3)
    strategy = PromptedStrategy(Contact, max_retries=2)

    with pytest.raises(StructuredOutputRetryError) as caught:
        create_agent(model, response_format=strategy).invoke(ASK)

    limit = strategy.limits.max_feedback_chars
    for call in model.calls[1:]:
        assert all(len(m.text) <= limit for m in call.messages if isinstance(m, HumanMessage))
    assert len(str(caught.value)) < 10_000
    assert all(len(str(error)) < 10_000 for error in caught.value.errors)


def test_a_handler_feedback_is_cut_to_the_limit() -> None:
    limits = Limits(max_feedback_chars=300)
    model = ScriptedChatModel(responses=[bad_call(), GOOD])
    strategy = ToolStrategy(Contact, handle_errors=lambda error: HUGE, limits=limits)

    create_agent(model, response_format=strategy).invoke(ASK)

    [feedback] = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert len(feedback.content) == 300


def test_a_many_structured_calls_do_not_each_cost_full_feedback() -> None:
    calls = [tool_call("Contact", {"name": "A"}, id=f"c{n}") for n in range(200)]
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=calls), GOOD])

    create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    replies = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert len(replies) == 200  # every call is still answered
    assert sum(len(m.content) for m in replies) < 40_000


class Node(BaseModel):
    child: Node | None = None


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"child": None}
    for _ in range(depth - 1):
        value = {"child": value}
    return value


def test_a_deep_valid_answer_is_not_lost_to_its_rendering() -> None:
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("Node", nested(200))])]
    )

    # Deeper than the default bound, which leaves room for a checkpoint's levels.
    deep = ToolStrategy(Node, limits=Limits(max_depth=256))
    state = create_agent(model, response_format=deep).invoke(ASK)

    assert isinstance(state["structured_response"], Node)
    reply = state["messages"][-1]
    assert isinstance(reply, ToolMessage)
    assert reply.content.startswith("Returning structured response: ")
    assert len(reply.content) <= 4_100


# --- B: the fallback memory cannot be poisoned -----------------------------------------


@tool
def my_tool(query: str) -> str:
    """Look something up."""
    return query


USERS_TOOL_REFUSED = "Invalid schema for function 'my_tool': 'default' is not permitted"


def test_b_a_refusal_of_the_users_tool_on_the_provider_route_stays_with_those_tools() -> None:
    # langchain-openai makes every tool strict beside a response format, so the
    # provider route can be refused for the caller's tool where the tool route is not.
    memory = FallbackMemory()
    tenant_a = ScriptedChatModel(
        responses=[HTTPError(USERS_TOOL_REFUSED, 400), GOOD, GOOD], profile=NATIVE
    )
    agent_a = langchain_create_agent(
        tenant_a,
        [my_tool],
        middleware=[StructuredOutputMiddleware(Contact, fallback_memory=memory)],
    )

    first = agent_a.invoke(ASK)
    second = agent_a.invoke(ASK)

    assert first["structured_response"] == second["structured_response"]
    assert [f["to_strategy"] for f in first["structured_output_report"]["fallbacks"]] == ["tool"]
    # The same tools go straight to the tool route; the shared memory holds nothing.
    assert [strategy_of(c) for c in tenant_a.calls] == ["provider", "tool", "tool"]
    assert memory.rejected(model_identity(tenant_a)) == frozenset()
    tenant_b = ScriptedChatModel(responses=[JSON_GOOD], profile=NATIVE)
    agent_b = langchain_create_agent(
        tenant_b, middleware=[StructuredOutputMiddleware(Contact, fallback_memory=memory)]
    )
    assert agent_b.invoke(ASK)["structured_output_report"]["strategy"] == "provider"


def test_b_a_refusal_of_the_users_tool_on_the_tool_route_is_raised() -> None:
    model = ScriptedChatModel(responses=[HTTPError(USERS_TOOL_REFUSED, 400), GOOD])
    agent = create_agent(model, [my_tool], response_format=ToolStrategy(Contact))

    with pytest.raises(HTTPError):
        agent.invoke(ASK)

    assert len(model.calls) == 1


def test_b_a_refusal_of_the_users_tool_under_an_explicit_provider_strategy_is_raised() -> None:
    model = ScriptedChatModel(responses=[HTTPError(USERS_TOOL_REFUSED, 400), GOOD], profile=NATIVE)
    agent = create_agent(model, [my_tool], response_format=ProviderStrategy(Contact))

    with pytest.raises(HTTPError):
        agent.invoke(ASK)

    assert len(model.calls) == 1


def test_b_a_server_error_naming_the_users_tool_is_not_kept_with_the_route() -> None:
    server_error = HTTPError("Internal Server Error while binding tools for 'my_tool'", 500)
    model = ScriptedChatModel(responses=[server_error, GOOD, JSON_GOOD], profile=NATIVE)
    agent = create_agent(model, [my_tool], response_format=Contact)

    agent.invoke(ASK)
    agent.invoke(ASK)

    assert [strategy_of(c) for c in model.calls] == ["provider", "tool", "provider"]


def test_b_a_server_error_falls_back_now_but_is_not_remembered() -> None:
    model = ScriptedChatModel(
        responses=[HTTPError("Internal Server Error", 500), GOOD, JSON_GOOD], profile=NATIVE
    )
    agent = create_agent(model, response_format=Contact)

    first = agent.invoke(ASK)
    second = agent.invoke(ASK)

    assert first["structured_output_report"]["strategy"] == "tool"
    assert second["structured_output_report"]["strategy"] == "provider"
    assert [strategy_of(c) for c in model.calls] == ["provider", "tool", "provider"]


def test_b_each_agent_has_its_own_memory_and_there_is_no_global_one() -> None:
    assert not hasattr(langchain_structx, "FALLBACKS")
    assert "FALLBACKS" not in langchain_structx.__all__
    rejected = ScriptedChatModel(
        responses=[HTTPError("response_format is not supported", 400), GOOD], profile=NATIVE
    )
    create_agent(rejected, response_format=Contact).invoke(ASK)

    healthy = ScriptedChatModel(responses=[JSON_GOOD], profile=NATIVE)
    state = create_agent(healthy, response_format=Contact).invoke(ASK)

    assert state["structured_output_report"]["strategy"] == "provider"


def test_b_remembered_rejections_expire() -> None:
    now = [0.0]
    memory = FallbackMemory(ttl_seconds=60, clock=lambda: now[0])
    rejection = HTTPError("response_format is not supported", 400)
    model = ScriptedChatModel(responses=[rejection, GOOD, GOOD, JSON_GOOD], profile=NATIVE)
    agent = langchain_create_agent(
        model, middleware=[StructuredOutputMiddleware(Contact, fallback_memory=memory)]
    )

    agent.invoke(ASK)
    now[0] = 59.0
    agent.invoke(ASK)
    now[0] = 61.0
    agent.invoke(ASK)

    assert [strategy_of(c) for c in model.calls] == ["provider", "tool", "tool", "provider"]


class KeyedModel(ScriptedChatModel):
    openai_api_key: SecretStr | None = None


def test_b_the_memory_tells_credentials_apart_without_storing_them() -> None:
    memory = FallbackMemory()
    rejection = HTTPError("response_format is not supported", 400)
    first = KeyedModel(
        responses=[rejection, GOOD], profile=NATIVE, openai_api_key=SecretStr("sk-tenant-a")
    )
    second = KeyedModel(
        responses=[JSON_GOOD], profile=NATIVE, openai_api_key=SecretStr("sk-tenant-b")
    )
    for model in (first, second):
        middleware = StructuredOutputMiddleware(Contact, fallback_memory=memory)
        langchain_create_agent(model, middleware=[middleware]).invoke(ASK)

    assert [strategy_of(c) for c in second.calls] == ["provider"]
    assert memory.rejected(model_identity(first)) == frozenset({"provider"})
    assert "sk-tenant" not in model_identity(first)
    assert model_identity(first) != model_identity(second)


def test_b_fallback_memory_rejects_a_bad_ttl() -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        FallbackMemory(ttl_seconds=0)


# --- C: unions and routing ------------------------------------------------------------


class Cat(BaseModel):
    kind: Literal["cat"]
    meow: bool


class Dog(BaseModel):
    kind: Literal["dog"]
    bark: bool


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"kind": "cat", "meow": true}', Cat(kind="cat", meow=True)),
        ('{"kind": "dog", "bark": false}', Dog(kind="dog", bark=False)),
        ('{"kind": "Cat", "data": {"kind": "cat", "meow": true}}', Cat(kind="cat", meow=True)),
    ],
    ids=["bare-cat", "bare-dog", "envelope"],
)
def test_c_a_union_discriminated_by_kind_is_accepted(reply: str, expected: Any) -> None:
    model = ScriptedChatModel(responses=[reply])

    state = create_agent(model, response_format=PromptedStrategy(Cat | Dog)).invoke(ASK)

    assert state["structured_response"] == expected
    assert state["structured_response_kind"] == type(expected).__name__
    assert len(model.calls) == 1


def test_c_a_broken_envelope_still_gets_the_envelope_feedback() -> None:
    reply = '{"kind": "Bird", "data": {}}'
    model = ScriptedChatModel(responses=[reply, '{"kind": "cat", "meow": true}'])

    create_agent(model, response_format=PromptedStrategy(Cat | Dog)).invoke(ASK)

    assert "must be one of 'Cat', 'Dog'" in model.calls[1].messages[-1].text


class State(MessagesState):
    structured_response: Any
    structured_response_kind: str | None


def contact_model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=[GOOD])


def graph_with(extract: Any, router: Any = None) -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("extract", extract)
    if router is not None:
        graph.add_conditional_edges("extract", router)
    for name in ("save", "plan"):
        graph.add_node(name, lambda state: {})
        graph.add_edge(name, END)
    graph.add_edge(START, "extract")
    return graph


def test_c_a_node_routing_to_a_missing_node_fails_at_compile() -> None:
    node = structured_output_node(
        contact_model(), ToolStrategy(Contact | Event), routes={"Contact": "svae", "Event": "plan"}
    )

    with pytest.raises(ValueError, match="svae"):
        graph_with(node).compile()


def test_c_a_router_to_a_missing_node_fails_at_compile() -> None:
    node = structured_output_node(contact_model(), ToolStrategy(Contact | Event))
    router = route_by_kind({"Contact": "svae", "Event": "plan"}, schema=node)

    with pytest.raises(ValueError, match="svae"):
        graph_with(node, router).compile()


def test_c_a_misspelt_variant_is_a_route_error() -> None:
    routes = {"Contct": "save", "Event": "plan"}
    with pytest.raises(RouteError, match="Contact; add them.*unknown variant.s. Contct"):
        route_by_kind(routes, schema=ToolStrategy(Contact | Event))

    node = structured_output_node(contact_model(), ToolStrategy(Contact | Event))
    graph = graph_with(node, route_by_kind(routes)).compile()
    with pytest.raises(RouteError, match="'Contact'"):
        graph.invoke(ASK)


@pytest.mark.parametrize("target", ["", None, 3])
def test_c_a_route_to_no_node_name_is_a_route_error(target: Any) -> None:
    with pytest.raises(RouteError):
        route_by_kind({"Contact": target})
    with pytest.raises(RouteError):
        structured_output_node(
            contact_model(), ToolStrategy(Contact | Event), routes={"Contact": target, "Event": "x"}
        )


@tool("Contact")
def contact_tool(name: str) -> str:
    """A user tool that happens to share a variant's name."""
    return name


def test_c_a_user_tool_named_like_a_variant_is_refused() -> None:
    with pytest.raises(UserError, match="Contact"):
        create_agent(contact_model(), [contact_tool], response_format=ToolStrategy(Contact))

    agent = langchain_create_agent(
        contact_model(), [contact_tool], middleware=[StructuredOutputMiddleware(Contact)]
    )
    with pytest.raises(UserError, match="Contact"):
        agent.invoke(ASK)

    # The prompted strategy binds no structured tools, so nothing clashes.
    model = ScriptedChatModel(responses=[JSON_GOOD])
    create_agent(model, [contact_tool], response_format=PromptedStrategy(Contact)).invoke(ASK)


def variant(title: str, leaf_type: str, names: tuple[str, str]) -> dict[str, Any]:
    outer, inner = names
    escaped = inner.replace("~", "~0").replace("/", "~1")
    return {
        "title": title,
        "type": "object",
        "properties": {"x": {"$ref": f"#/$defs/{outer.replace('~', '~0').replace('/', '~1')}"}},
        "required": ["x"],
        "$defs": {
            outer: {
                "type": "object",
                "properties": {"y": {"$ref": f"#/$defs/{escaped}"}},
                "required": ["y"],
            },
            inner: {"type": leaf_type},
        },
    }


@pytest.mark.parametrize(
    "names", [("X", "Y"), ("a/b", "c~d"), ("B__X", "B__Y")], ids=["plain", "escaped", "prefixed"]
)
def test_c_merged_definitions_keep_each_variant_on_its_own(names: tuple[str, str]) -> None:
    model = ScriptedChatModel(responses=['{"kind": "A", "data": {"x": {"y": "s"}}}'])
    schemas = [variant("A", "string", names), variant("B", "integer", ("X", "Y"))]
    create_agent(model, response_format=ProviderStrategy(schemas)).invoke(ASK)
    sent = model.calls[0].response_format["json_schema"]["schema"]

    def valid(kind: str, leaf: Any) -> bool:
        answer = {"kind": kind, "data": {"x": {"y": leaf}}}
        return jsonschema.Draft202012Validator(sent).is_valid(answer)

    assert valid("A", "s") and not valid("A", 1)
    assert valid("B", 1) and not valid("B", "s")


# --- D: handle_errors is checked once and its failures are typed ---------------------


@pytest.mark.parametrize("policy", [42, None, (), (ValueError, 3), str, 1.5], ids=repr)
def test_d_a_wrong_policy_is_refused_when_the_strategy_is_built(policy: Any) -> None:
    with pytest.raises(UserError, match="handle_errors"):
        ToolStrategy(Contact, handle_errors=policy)


async def _ainvoke(agent: Any) -> Any:
    return await agent.ainvoke(ASK)


def run_agent(mode: str, agent: Any) -> Any:
    if mode == "sync":
        return agent.invoke(ASK)
    return asyncio.run(_ainvoke(agent))


def not_a_string(error: Exception) -> Any:
    return 42


async def async_not_a_string(error: Exception) -> Any:
    return 42


def stops(error: Exception) -> str:
    raise StopIteration


async def async_stops(error: Exception) -> str:
    raise StopIteration


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("handler", "cause"),
    [
        (not_a_string, "attempt"),
        (async_not_a_string, "attempt"),
        (stops, StopIteration),
        (async_stops, StopIteration),
    ],
    ids=["returns-int", "async-returns-int", "stop-iteration", "async-stop-iteration"],
)
def test_d_a_broken_handler_is_a_typed_error(mode: str, handler: Any, cause: Any) -> None:
    model = ScriptedChatModel(responses=[bad_call(), GOOD])
    agent = create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))

    with pytest.raises(ErrorHandlerError) as caught:
        run_agent(mode, agent)

    error = caught.value
    assert error.attempt == 1
    assert error.ai_message is not None and error.ai_message.tool_calls[0]["id"] == "b1"
    assert error.usage is not None
    expected = type(error.error) if cause == "attempt" else cause
    assert isinstance(error.__cause__, expected)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_d_a_handler_that_raises_stops_the_run_with_its_own_exception(mode: str) -> None:
    class Stop(Exception):
        pass

    def handler(error: Exception) -> str:
        raise Stop("no more")

    model = ScriptedChatModel(responses=[bad_call(), GOOD])
    agent = create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))

    with pytest.raises(Stop, match="no more"):
        run_agent(mode, agent)


def test_d_the_handler_signature_is_read_once() -> None:
    reads = []

    class Handler:
        @property
        def __signature__(self) -> Any:
            import inspect

            reads.append(1)
            return inspect.signature(lambda error, context: None)

        def __call__(self, error: Exception, context: Any) -> str:
            return f"attempt {context.attempt}"

    strategy = ToolStrategy(Contact, handle_errors=Handler(), max_retries=5)
    model = ScriptedChatModel(responses=[bad_call(f"b{n}") for n in range(4)] + [GOOD])
    agent = create_agent(model, response_format=strategy)
    before = len(reads)

    agent.invoke(ASK)

    assert len(model.calls) == 5
    assert len(reads) == before
    assert model.calls[4].messages[-1].content == "attempt 4"


# --- E: large replies are read off the event loop -------------------------------------


class Seen(BaseModel):
    text: str

    @field_validator("text")
    @classmethod
    def _where(cls, value: str) -> str:
        THREADS.append(threading.get_ident())
        return value


THREADS: list[int] = []


@pytest.mark.parametrize(("size", "off_loop"), [(50, False), (5_000, True)])
async def test_e_a_large_reply_is_read_on_a_worker_thread(size: int, off_loop: bool) -> None:
    THREADS.clear()
    reply = '{"text": "' + "w" * size + '"}'
    model = ScriptedChatModel(responses=[reply])
    strategy = PromptedStrategy(Seen, limits=Limits(offload_chars=1_000))

    state = await create_agent(model, response_format=strategy).ainvoke(ASK)

    assert state["structured_response"].text == "w" * size
    assert THREADS and all((t != threading.get_ident()) is off_loop for t in THREADS)


async def test_e_the_event_loop_keeps_serving_during_a_large_reply() -> None:
    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            ticks.append(loop.time())
            await asyncio.sleep(0.01)

    class Slow(BaseModel):
        text: str

        @field_validator("text")
        @classmethod
        def _slow(cls, value: str) -> str:
            threading.Event().wait(1.0)  # stands in for a second of parsing work
            return value

    reply = '{"text": "' + "w" * 50_000 + '"}'
    model = ScriptedChatModel(responses=[reply])
    task = asyncio.create_task(ticker())
    await create_agent(model, response_format=PromptedStrategy(Slow)).ainvoke(ASK)
    stop.set()
    await task

    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) > 10
    assert max(gaps) < 0.5


class Checked(BaseModel):
    """A model whose own validator fails in ways of its own on some values."""

    name: str
    age: int

    @field_validator("age")
    @classmethod
    def _per_year(cls, age: int) -> int:
        return 100 // age  # ZeroDivisionError on 0, as a validator with a bug would


class Titled(BaseModel):
    title: str

    @field_validator("title")
    @classmethod
    def _keyed(cls, title: str) -> str:
        return {"a": "A"}[title]  # KeyError on any other title


def checked_call(age: int, id: str = "k1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Checked", {"name": "Ada", "age": age}, id=id)])


def test_f_a_validator_raising_any_exception_is_a_failed_attempt() -> None:
    # LangChain's agent treats whatever its parsing raises as a validation error;
    # a validator's ZeroDivisionError on a reply must not crash the run.
    model = ScriptedChatModel(responses=[checked_call(0), checked_call(4, id="k2")])

    result = create_agent(model, response_format=ToolStrategy(Checked)).invoke(ASK)

    assert result["structured_response"].age == 100 // 4
    report = result["structured_output_report"]
    assert report["attempts"] == 2
    assert "ZeroDivisionError" in report["errors"][0]
    feedback = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert "ZeroDivisionError: integer division or modulo by zero" in feedback[-1].text


def test_f_the_validators_own_exception_is_kept_as_the_cause() -> None:
    model = ScriptedChatModel(responses=[checked_call(0)])

    with pytest.raises(StructuredOutputRetryError) as caught:
        create_agent(model, response_format=ToolStrategy(Checked, max_retries=0)).invoke(ASK)

    (error,) = caught.value.errors
    assert isinstance(error.source.__cause__, ZeroDivisionError)


def test_f_a_union_variant_whose_validator_raises_is_not_chosen() -> None:
    # The envelope-free text answer fits both variants by shape; Titled's
    # validator raises KeyError on it, so Contact is the match, as if Titled
    # had refused the value with a validation error.
    model = ScriptedChatModel(responses=['{"name": "Ada", "age": 36, "title": "x"}'])
    strategy = PromptedStrategy(Titled | Contact, max_retries=0)

    result = create_agent(model, response_format=strategy).invoke(ASK)

    assert result["structured_response"] == Contact(name="Ada", age=36)
