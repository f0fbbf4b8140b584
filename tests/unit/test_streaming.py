"""Partial structured objects on the custom stream and in astream_events."""

import pytest
from json_growth import grows
from langchain.agents import create_agent as langchain_create_agent
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.streaming import partial_value
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
NATIVE = {"structured_output": True, "tool_calling": True}
PLAIN = {"structured_output": False, "tool_calling": False}
EVENT_KEYS = {"type", "phase", "kind", "value", "strategy", "attempt"}


class Contact(BaseModel):
    name: str
    tags: list[str]
    age: int


class Event(BaseModel):
    title: str


DATA = {
    "name": "Ada Lovelace, the first programmer",
    "tags": ["mathematics", "engines", "poetry", "analysis"],
    "age": 36,
}
ADA = Contact(**DATA)
JSON = (
    '{"name": "Ada Lovelace, the first programmer", '
    '"tags": ["mathematics", "engines", "poetry", "analysis"], "age": 36}'
)

CASES = {
    "tool": (
        ToolStrategy(Contact),
        None,
        lambda: [AIMessage("", tool_calls=[tool_call("Contact", DATA)])],
    ),
    "provider": (ProviderStrategy(Contact), NATIVE, lambda: [JSON]),
    "prompted": (PromptedStrategy(Contact), PLAIN, lambda: ["Sure! " + JSON]),
    "provider-union": (
        ProviderStrategy(Contact | Event),
        NATIVE,
        lambda: ['{"kind": "Contact", "data": ' + JSON + "}"],
    ),
}


def model_for(case):
    strategy, profile, script = CASES[case]
    extra = {"profile": profile} if profile else {}
    return strategy, ScriptedChatModel(responses=script(), **extra)


def check_events(events, result, strategy_name):
    assert events, "no structured_output events"
    assert all(set(e) == EVENT_KEYS for e in events)
    assert all(e["type"] == "structured_output" for e in events)
    assert all(e["strategy"] == strategy_name for e in events)
    *partials, final = events
    assert [e["phase"] for e in partials] == ["partial"] * len(partials)
    assert final["phase"] == "final"
    assert final["kind"] == "Contact"
    assert final["attempt"] == 1
    assert final["value"] == result["structured_response"] == ADA
    assert len(partials) >= 3
    values = [e["value"] for e in partials]
    assert all(grows(a, b) for a, b in zip(values, values[1:], strict=False))
    assert grows(values[-1], DATA)
    kinds = [e["kind"] for e in partials if e["kind"] is not None]
    assert set(kinds) <= {"Contact"}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("factory", ["ours", "middleware"])
def test_custom_stream_yields_growing_partials_then_the_final_object(case, factory):
    strategy, model = model_for(case)
    if factory == "ours":
        agent = create_agent(model, response_format=strategy)
    else:
        agent = langchain_create_agent(model, middleware=[StructuredOutputMiddleware(strategy)])

    chunks = list(agent.stream(ASK, stream_mode=["custom", "values"]))

    events = [data for mode, data in chunks if mode == "custom"]
    result = [data for mode, data in chunks if mode == "values"][-1]
    check_events(events, result, CASES[case][0].__class__.__name__[:-8].lower())
    assert events[-1]["value"] is result["structured_response"]


@pytest.mark.parametrize("case", list(CASES))
async def test_async_custom_stream(case):
    strategy, model = model_for(case)
    agent = create_agent(model, response_format=strategy)

    chunks = [c async for c in agent.astream(ASK, stream_mode=["custom", "values"])]

    events = [data for mode, data in chunks if mode == "custom"]
    result = [data for mode, data in chunks if mode == "values"][-1]
    check_events(events, result, strategy.__class__.__name__[:-8].lower())


@pytest.mark.parametrize("case", list(CASES))
async def test_astream_events_carries_custom_structured_output_events(case):
    strategy, model = model_for(case)
    agent = create_agent(model, response_format=strategy)

    events = []
    final_state = None
    async for event in agent.astream_events(ASK, version="v2"):
        if event["event"] == "on_custom_event" and event["name"] == "structured_output":
            events.append(event["data"])
        if event["event"] == "on_chain_end" and event["name"] == "LangGraph":
            final_state = event["data"]["output"]

    check_events(events, final_state, strategy.__class__.__name__[:-8].lower())


def test_a_retry_starts_a_new_attempt_in_the_events():
    model = ScriptedChatModel(
        responses=['{"name": "Ada Lovelace, the first programmer"}', JSON], profile=NATIVE
    )
    agent = create_agent(model, response_format=ProviderStrategy(Contact))

    events = list(agent.stream(ASK, stream_mode="custom"))

    attempts = [e["attempt"] for e in events]
    assert attempts == sorted(attempts)
    assert set(attempts) == {1, 2}
    assert events[-1]["phase"] == "final"
    assert events[-1]["attempt"] == 2
    assert all(e["phase"] == "partial" for e in events[:-1])


def test_plain_invoke_emits_nothing_and_still_answers():
    strategy, model = model_for("tool")

    result = create_agent(model, response_format=strategy).invoke(ASK)

    assert result["structured_response"] == ADA


def test_union_partials_name_the_kind_once_known():
    strategy, model = model_for("provider-union")

    events = list(create_agent(model, response_format=strategy).stream(ASK, stream_mode="custom"))

    kinds = [e["kind"] for e in events]
    first_known = next(i for i, k in enumerate(kinds) if k is not None)
    assert all(k == "Contact" for k in kinds[first_known:])
    # The envelope never reaches the caller.
    assert all("kind" not in e["value"] and "data" not in e["value"] for e in events[:-1])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('Sure: {"name": "Ad', {"name": "Ad"}),
        ('{"n": 12', {}),
        ('```json\n{"a": [1, 2', {"a": [1]}),
        ("no json yet", None),
        ('[{"a": true}, {"b"', [{"a": True}, {}]),
    ],
)
def test_partial_value(text, value):
    assert partial_value(text) == value


def test_no_partial_value_past_the_reply_limit() -> None:
    from langchain_structx.limits import Limits

    text = '{"name": "' + "a" * 50 + '"}'
    assert partial_value(text, Limits(max_reply_chars=len(text))) == {"name": "a" * 50}
    assert partial_value(text, Limits(max_reply_chars=len(text) - 1)) is None


def test_partials_stop_where_the_answer_would_be_refused_unread() -> None:
    from langchain_structx._request.plan import build_plan
    from langchain_structx.limits import Limits
    from langchain_structx.streaming import PartialTracker

    plan = build_plan(ProviderStrategy(Contact, limits=Limits(max_reply_chars=1_000)))
    events: list = []
    tracker = PartialTracker(plan, plan.call_spec("provider"), 1, events.append)
    from langchain_core.messages import AIMessageChunk

    tracker.feed(AIMessageChunk(content='{"name": "' + "a" * 600))
    shown = [e["value"]["name"] for e in events]
    assert shown and len(shown[-1]) == 600
    tracker.feed(AIMessageChunk(content="b" * 600))
    tracker.feed(AIMessageChunk(content='"}'))
    assert [e["value"]["name"] for e in events] == shown  # nothing past 1,000 characters


def _node_graph(case):
    from typing import Annotated, Any

    from langchain_core.messages import AnyMessage
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from typing_extensions import TypedDict

    from langchain_structx.nodes import structured_output_node

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]
        structured_response: Any

    strategy, model = model_for(case)
    graph = StateGraph(State)
    graph.add_node("extract", structured_output_node(model, strategy))
    graph.add_edge(START, "extract")
    return strategy, graph.compile()


@pytest.mark.parametrize("case", ["tool", "prompted"])
async def test_a_sync_node_in_astream_events_sends_its_events(case):
    # LangGraph runs a sync node on a worker thread, which has no event loop to
    # send on: the events were dropped without a word.
    strategy, graph = _node_graph(case)

    events, final_state = [], None
    async for event in graph.astream_events(ASK, version="v2"):
        if event["event"] == "on_custom_event" and event["name"] == "structured_output":
            events.append(event["data"])
        if event["event"] == "on_chain_end" and event["name"] == "LangGraph":
            final_state = event["data"]["output"]

    check_events(events, final_state, strategy.__class__.__name__[:-8].lower())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_message_stream_alone_reads_no_partials(mode, monkeypatch):
    # LangGraph's "messages" stream has a streaming callback handler, which was
    # taken for astream_events: every chunk was read for partials nobody got.
    import asyncio

    from langchain_structx._parsing import partial_json as _partial_json

    reads = []
    real = _partial_json.Buffer.read
    monkeypatch.setattr(_partial_json.Buffer, "read", lambda self: reads.append(1) or real(self))
    strategy, model = model_for("tool")
    agent = create_agent(model, response_format=strategy)

    if mode == "sync":
        chunks = list(agent.stream(ASK, stream_mode="messages"))
    else:

        async def collect():
            return [c async for c in agent.astream(ASK, stream_mode="messages")]

        chunks = asyncio.run(collect())

    assert len(chunks) > 3  # the reply did stream
    assert reads == []
    strategy, model = model_for("tool")
    list(create_agent(model, response_format=strategy).stream(ASK, stream_mode="custom"))
    assert reads  # and the same run, watched, reads them


class Cat(BaseModel):
    name: str


class CatLarge(BaseModel):
    name: str
    weight_kg: int


def _partials(model, strategy):
    events = list(create_agent(model, response_format=strategy).stream(ASK, stream_mode="custom"))
    assert events[-1]["phase"] == "final"
    return events[:-1], events[-1]


def test_a_union_kind_still_being_written_is_not_named():
    # The kind comes last here, cut inside "CatLarge": its prefix "Cat" named the
    # other variant for a moment.
    text = '{"data": {"name": "Garfield", "weight_kg": 12}, "kind": "CatLarge"}'
    model = ScriptedChatModel(responses=[AIMessage(text)], chunk_size=60)  # ends in "Cat"

    partials, final = _partials(model, PromptedStrategy(Cat | CatLarge))

    assert final["kind"] == "CatLarge"
    assert {e["kind"] for e in partials} <= {None, "CatLarge"}
    values = [e["value"] for e in partials]
    assert values and all(grows(a, b) for a, b in zip(values, values[1:], strict=False))


def test_a_union_shows_no_placeholder_before_its_data():
    # `{}` stood for the data not yet begun, though the answer is a list.
    nums = {"title": "Nums", "type": "array", "items": {"type": "string"}}
    text = '{"kind": "Nums", "data": ["alpha", "beta", "gamma", "delta", "epsilon"]}'
    model = ScriptedChatModel(responses=[AIMessage(text)], chunk_size=6)

    partials, final = _partials(model, PromptedStrategy([nums, Event]))

    assert final["value"] == ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert partials and all(isinstance(e["value"], list) for e in partials)


def test_only_the_first_of_two_structured_calls_shows_partials():
    # A second call in the same reply fails the attempt; its values were shown
    # under the same attempt as the first's, so the value jumped between them.
    other = {**DATA, "name": "Grace Hopper, who found the first bug"}
    twice = AIMessage(
        "", tool_calls=[tool_call("Contact", DATA, id="c1"), tool_call("Contact", other, id="c2")]
    )
    once = AIMessage("", tool_calls=[tool_call("Contact", DATA, id="c3")])
    model = ScriptedChatModel(responses=[twice, once], chunk_size=9)

    partials, final = _partials(model, ToolStrategy(Contact))

    assert final["attempt"] == 2 and final["value"] == ADA
    for attempt in (1, 2):
        values = [e["value"] for e in partials if e["attempt"] == attempt]
        assert values and all(grows(a, b) for a, b in zip(values, values[1:], strict=False))
        assert all(grows(v, DATA) for v in values)
