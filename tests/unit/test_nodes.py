"""structured_output_node and route_by_kind in LangGraph StateGraphs."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel
from typing_extensions import TypedDict

from langchain_structx._models.capabilities import FallbackMemory, model_identity
from langchain_structx.errors import MissingOutputError, RouteError, StructuredOutputRetryError
from langchain_structx.nodes import route_by_kind, structured_output_node
from langchain_structx.strategies import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
)
from langchain_structx.testing import ScriptedChatModel, tool_call

NATIVE = {"structured_output": True, "tool_calling": True}


class Contact(BaseModel):
    name: str


class Event(BaseModel):
    title: str


class TDState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    structured_response: Any
    structured_response_kind: str | None
    structured_output_report: dict | None


class PydanticState(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]
    structured_response: Any = None
    structured_response_kind: str | None = None
    structured_output_report: dict | None = None


class MState(MessagesState):
    structured_response: Any
    structured_response_kind: str | None
    structured_output_report: dict | None


STATES = pytest.mark.parametrize(
    "state_schema", [TDState, PydanticState, MState], ids=["typeddict", "pydantic", "messages"]
)


def contact_call(name="Ada", id="c1"):
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": name}, id=id)])


def one_node_graph(state_schema, node, *, use_runnable=False):
    graph = StateGraph(state_schema)
    graph.add_node("extract", node.as_runnable() if use_runnable else node)
    graph.add_edge(START, "extract")
    graph.add_edge("extract", END)
    return graph.compile()


def get(result, key):
    return result[key] if isinstance(result, dict) else getattr(result, key)


@STATES
@pytest.mark.parametrize("mode", ["sync", "async-runnable", "async-plain"])
async def test_node_writes_the_three_keys(state_schema, mode):
    model = ScriptedChatModel(responses=[contact_call()])
    node = structured_output_node(model, ToolStrategy(Contact))
    graph = one_node_graph(state_schema, node, use_runnable=mode == "async-runnable")
    start = {"messages": [HumanMessage("Ada here")]}

    result = graph.invoke(start) if mode == "sync" else await graph.ainvoke(start)

    assert get(result, "structured_response") == Contact(name="Ada")
    assert get(result, "structured_response_kind") == "Contact"
    report = get(result, "structured_output_report")
    assert report["strategy"] == "tool"
    assert report["attempts"] == 1
    assert [m.type for m in get(result, "messages")] == ["human", "ai", "tool"]
    assert model.calls[0].tool_choice == "Contact"


@pytest.mark.parametrize(
    ("strategy", "profile", "answer"),
    [
        (ProviderStrategy(Contact), NATIVE, '{"name": "Ada"}'),
        (PromptedStrategy(Contact), None, 'Here: {"name": "Ada",}'),
    ],
    ids=["provider", "prompted"],
)
async def test_node_with_text_strategies(strategy, profile, answer):
    model = ScriptedChatModel(responses=[answer], **({"profile": profile} if profile else {}))
    node = structured_output_node(model, strategy, system_prompt="Extract contacts.")

    result = await one_node_graph(MState, node, use_runnable=True).ainvoke(
        {"messages": [HumanMessage("Ada here")]}
    )

    assert result["structured_response"] == Contact(name="Ada")
    system = model.calls[0].messages[0]
    assert system.type == "system"
    assert system.content.startswith("Extract contacts.")
    assert [m.type for m in result["messages"]] == ["human", "ai"]


def test_retries_are_recorded_in_the_messages():
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("Contact", {}, id="b")]), contact_call()]
    )
    node = structured_output_node(model, ToolStrategy(Contact))

    result = one_node_graph(MState, node).invoke({"messages": [HumanMessage("hi")]})

    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai", "tool"]
    assert result["messages"][2].content.startswith("Error: Failed to parse structured output")
    assert result["structured_output_report"]["attempts"] == 2


def test_record_messages_false_leaves_the_conversation_alone():
    model = ScriptedChatModel(responses=[contact_call()])
    node = structured_output_node(model, ToolStrategy(Contact), record_messages=False)

    result = one_node_graph(MState, node).invoke({"messages": [HumanMessage("hi")]})

    assert [m.type for m in result["messages"]] == ["human"]
    assert result["structured_response"] == Contact(name="Ada")


def test_custom_messages_key():
    class ChatState(TypedDict):
        chat: Annotated[list[AnyMessage], add_messages]
        structured_response: Any
        structured_response_kind: str | None
        structured_output_report: dict | None

    model = ScriptedChatModel(responses=[contact_call()])
    node = structured_output_node(model, ToolStrategy(Contact), messages_key="chat")

    result = one_node_graph(ChatState, node).invoke({"chat": [HumanMessage("hi")]})

    assert model.calls[0].messages[0].content == "hi"
    assert len(result["chat"]) == 3


def test_missing_messages_key_is_a_key_error():
    node = structured_output_node(ScriptedChatModel(responses=[]), ToolStrategy(Contact))

    with pytest.raises(KeyError, match="'messages'"):
        node({"chat": []})


def search_call(id="s1"):
    return AIMessage(
        "",
        tool_calls=[tool_call("search", {"q": "x"}, id=id)],
        usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    )


@pytest.mark.parametrize("strategy", [ToolStrategy, PromptedStrategy])
def test_a_call_to_a_tool_the_node_lacks_is_answered_and_retried(strategy):
    answer = contact_call() if strategy is ToolStrategy else '{"name": "Ada"}'
    model = ScriptedChatModel(responses=[search_call(), answer])
    node = structured_output_node(model, strategy(Contact))

    update = node({"messages": [HumanMessage("hi")]})

    assert update["structured_response"] == Contact(name="Ada")
    retry = model.calls[1].messages[-1]
    assert retry.type == "tool" and retry.tool_call_id == "s1"
    assert "search is not a valid tool here" in retry.content
    assert update["structured_output_report"]["attempts"] == 2


def test_tool_calls_the_node_lacks_use_up_the_retry_budget():
    model = ScriptedChatModel(responses=[search_call("s1"), search_call("s2")])
    node = structured_output_node(model, ToolStrategy(Contact, max_retries=1))

    with pytest.raises(StructuredOutputRetryError) as info:
        node({"messages": [HumanMessage("hi")]})

    errors = info.value.errors
    assert [type(e) for e in errors] == [MissingOutputError, MissingOutputError]
    assert [e.attempt for e in errors] == [1, 2]
    assert [e.usage["total_tokens"] for e in errors] == [7, 14]
    assert errors[-1].ai_message.tool_calls[0]["id"] == "s2"
    assert info.value.n_attempts == 2 and info.value.usage["total_tokens"] == 14


# --- routing ------------------------------------------------------------------------------


def routed_graph(node_or_router, *, by_command):
    visited: list[str] = []

    def save(state):
        visited.append("save")
        return {}

    def plan(state):
        visited.append("plan")
        return {}

    graph = StateGraph(MState)
    if by_command:
        graph.add_node("extract", node_or_router, destinations=("save", "plan"))
    else:
        node, router = node_or_router
        graph.add_node("extract", node)
        graph.add_conditional_edges("extract", router, router.destinations)
    graph.add_node("save", save)
    graph.add_node("plan", plan)
    graph.add_edge(START, "extract")
    graph.add_edge("save", END)
    graph.add_edge("plan", END)
    return graph.compile(), visited


ROUTES = {"Contact": "save", "Event": "plan"}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (contact_call(), ["save"]),
        (AIMessage("", tool_calls=[tool_call("Event", {"title": "T"})]), ["plan"]),
    ],
    ids=["contact", "event"],
)
@pytest.mark.parametrize("by_command", [False, True], ids=["route_by_kind", "routes"])
def test_routing_by_variant(answer, expected, by_command):
    model = ScriptedChatModel(responses=[answer])
    strategy = ToolStrategy(Contact | Event)
    if by_command:
        target = structured_output_node(model, strategy, routes=ROUTES)
    else:
        node = structured_output_node(model, strategy)
        target = (node, route_by_kind(ROUTES, schema=node))

    graph, visited = routed_graph(target, by_command=by_command)
    result = graph.invoke({"messages": [HumanMessage("hi")]})

    assert visited == expected
    assert result["structured_response_kind"] == {"save": "Contact", "plan": "Event"}[expected[0]]


def test_routes_return_a_command_with_goto():
    model = ScriptedChatModel(responses=[contact_call()])
    node = structured_output_node(model, ToolStrategy(Contact | Event), routes=ROUTES)

    command = node({"messages": [HumanMessage("hi")]})

    assert command.goto == "save"
    assert command.update["structured_response"] == Contact(name="Ada")
    assert command.update["structured_response_kind"] == "Contact"


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        ({"Contact": "save"}, "No route for variant(s) Event; add them to routes."),
        (
            {"Contact": "save", "Event": "plan", "Meeting": "x"},
            "Route(s) for unknown variant(s) Meeting; known: Contact, Event.",
        ),
    ],
    ids=["missing", "unknown"],
)
def test_route_errors_at_build_time(routes, message):
    model = ScriptedChatModel(responses=[])

    with pytest.raises(RouteError) as from_node:
        structured_output_node(model, ToolStrategy(Contact | Event), routes=routes)
    with pytest.raises(RouteError) as from_router:
        route_by_kind(routes, schema=Contact | Event)
    with pytest.raises(RouteError):
        route_by_kind(routes, schema=ToolStrategy(Contact | Event))

    assert str(from_node.value) == str(from_router.value) == message
    assert model.calls == []


def test_router_default_and_unknown_kind():
    router = route_by_kind(ROUTES, default="fallback")
    assert router({"structured_response_kind": "Event"}) == "plan"
    assert router({"structured_response_kind": None}) == "fallback"
    assert router.destinations == ["save", "plan", "fallback"]

    strict = route_by_kind(ROUTES)
    with pytest.raises(RouteError, match="No route for structured_response_kind 'Other'"):
        strict({"structured_response_kind": "Other"})


# --- concurrency ----------------------------------------------------------------------------


def echo_contact(messages, recorded):
    name = messages[-1].content
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": name}, id=f"id-{name}")])


async def test_200_concurrent_ainvokes_share_one_model_without_cross_talk():
    model = ScriptedChatModel(responses=[echo_contact] * 200)
    node = structured_output_node(model, ToolStrategy(Contact))
    graph = one_node_graph(MState, node, use_runnable=True)
    names = [f"person-{i}" for i in range(200)]

    results = await asyncio.gather(*(graph.ainvoke({"messages": [HumanMessage(n)]}) for n in names))

    assert [r["structured_response"].name for r in results] == names
    assert all(
        r["messages"][-1].tool_call_id == f"id-{n}" for r, n in zip(results, names, strict=True)
    )
    assert len(model.calls) == 200
    assert model.remaining == 0


class BadRequest(Exception):
    status_code = 400


def reject_provider(messages, recorded):
    if recorded.response_format is not None:
        return BadRequest("response_format is not supported")
    return echo_contact(messages, recorded)


def test_fallback_memory_is_thread_safe_under_concurrent_runs():
    model = ScriptedChatModel(responses=[reject_provider] * 200, profile=NATIVE)
    node = structured_output_node(model, AutoStrategy(Contact))
    graph = one_node_graph(MState, node)
    barrier = threading.Barrier(8)

    def run(i):
        if i < 8:
            barrier.wait()
        return graph.invoke({"messages": [HumanMessage(f"p{i}")]})

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(60)))

    assert [r["structured_response"].name for r in results] == [f"p{i}" for i in range(60)]
    assert all(r["structured_output_report"]["strategy"] == "tool" for r in results)
    assert node.fallback_memory.rejected(model_identity(model)) == frozenset({"provider"})
    provider_calls = sum(1 for c in model.calls if c.response_format is not None)
    # Only runs that started before the first rejection was remembered paid for it.
    assert 1 <= provider_calls <= 8
    assert len(model.calls) == 60 + provider_calls


def test_fallback_memory_direct_concurrent_use():
    memory = FallbackMemory()
    barrier = threading.Barrier(16)

    def work(i):
        barrier.wait()
        for j in range(200):
            memory.remember(f"m{(i + j) % 10}", ("provider", "tool")[j % 2])
            memory.rejected(f"m{j % 10}")
            if j % 50 == 0:
                memory.forget("gone")

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(work, range(16)))

    for key in (f"m{k}" for k in range(10)):
        assert memory.rejected(key) == frozenset({"provider", "tool"})
    memory.forget()
    assert memory.rejected("m0") == frozenset()


def _routes_graph(target, routes):
    graph = StateGraph(MState)
    graph.add_node("extract", target)
    for name in ("save", "plan"):
        graph.add_node(name, lambda state, name=name: {"messages": [AIMessage(name)]})
    graph.add_edge(START, "extract")
    return graph


NODE_FORMS = pytest.mark.parametrize("as_runnable", [False, True], ids=["node", "as_runnable"])


@NODE_FORMS
def test_routes_to_a_missing_node_fail_at_compile_time(as_runnable):
    node = structured_output_node(
        ScriptedChatModel(responses=[]),
        ToolStrategy(Contact | Event),
        routes={**ROUTES, "Event": "plann"},
    )
    graph = _routes_graph(node.as_runnable() if as_runnable else node, ROUTES)

    with pytest.raises(ValueError, match="unknown node `plann`"):
        graph.compile()


@NODE_FORMS
def test_routes_are_the_graphs_edges_without_destinations(as_runnable):
    answers = [AIMessage("", tool_calls=[tool_call("Event", {"title": "T"})])] * 2
    model = ScriptedChatModel(responses=answers)
    node = structured_output_node(model, ToolStrategy(Contact | Event), routes=ROUTES)
    app = _routes_graph(node.as_runnable() if as_runnable else node, ROUTES).compile()

    edges = {(e.source, e.target) for e in app.get_graph().edges}
    synced = app.invoke({"messages": [HumanMessage("hi")]})
    awaited = asyncio.run(app.ainvoke({"messages": [HumanMessage("hi")]}))

    assert {("extract", "save"), ("extract", "plan")} <= edges
    assert synced["messages"][-1].content == awaited["messages"][-1].content == "plan"


@pytest.mark.parametrize(
    "system_prompt", [None, "You extract contacts."], ids=["plain", "own-prompt"]
)
def test_the_node_sends_one_system_message_first(system_prompt):
    # Several system messages, or one not first, are refused by some providers;
    # the runnable merges them, and so does the node.
    model = ScriptedChatModel(responses=['{"name": "Ada"}'])
    node = structured_output_node(model, PromptedStrategy(Contact), system_prompt=system_prompt)

    node({"messages": [SystemMessage("Be brief."), HumanMessage("Ada here")]})

    (call,) = model.calls
    assert [m.type for m in call.messages] == ["system", "human"]
    system = call.messages[0].text
    assert system.startswith("Be brief.") and "Contact" in system
    assert system_prompt is None or system_prompt in system
