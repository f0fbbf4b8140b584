from __future__ import annotations

import asyncio
import copy
import functools
import json
import operator
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import BaseModel

from langchain_structx.errors import StructxError
from langchain_structx.testing import (
    RecordedCall,
    ScriptedChatModel,
    ScriptExhaustedError,
    tool_call,
)

USAGE: UsageMetadata = {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}


class Weather(BaseModel):
    """Weather report."""

    city: str
    celsius: float


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def merge(chunks: Sequence[AIMessageChunk]) -> AIMessageChunk:
    return functools.reduce(operator.add, chunks)


def rich_reply() -> AIMessage:
    return AIMessage(
        content="The answer is forty-two.",
        tool_calls=[
            tool_call("add", {"a": 40, "b": 2}, id="call_add"),
            tool_call("lookup", {"query": "deep thought", "limit": 3}, id="call_lookup"),
        ],
        additional_kwargs={"refusal": None},
        response_metadata={"finish_reason": "tool_calls", "model_name": "scripted"},
        usage_metadata=USAGE,
        id="msg-1",
    )


# --- plain calls ------------------------------------------------------------


def test_invoke_returns_scripted_message_unchanged() -> None:
    scripted = rich_reply()
    model = ScriptedChatModel(responses=[scripted])

    reply = model.invoke("hi")

    assert reply.content == "The answer is forty-two."
    assert reply.tool_calls == scripted.tool_calls
    assert reply.additional_kwargs == {"refusal": None}
    assert reply.response_metadata == {"finish_reason": "tool_calls", "model_name": "scripted"}
    assert reply.usage_metadata == USAGE
    assert reply.id == "msg-1"


def test_string_is_shorthand_for_ai_message() -> None:
    model = ScriptedChatModel(responses=["plain text"])

    reply = model.invoke("hi")

    assert type(reply) is AIMessage
    assert reply.content == "plain text"
    assert reply.tool_calls == []


async def test_ainvoke_serves_in_order() -> None:
    model = ScriptedChatModel(responses=["one", "two"])

    assert (await model.ainvoke("a")).content == "one"
    assert (await model.ainvoke("b")).content == "two"
    assert model.remaining == 0


def test_batch_serves_one_response_per_input() -> None:
    model = ScriptedChatModel(responses=["one", "two", "three"])

    replies = model.batch(["a", "b", "c"], config={"max_concurrency": 1})

    assert [reply.content for reply in replies] == ["one", "two", "three"]
    assert [call.messages[0].content for call in model.calls] == ["a", "b", "c"]


def test_refusal_content_block_and_refusal_kwarg_survive() -> None:
    blocks: list[str | dict[str, Any]] = [{"type": "refusal", "refusal": "I can't help with that."}]
    model = ScriptedChatModel(
        responses=[
            AIMessage(content=blocks),
            AIMessage(content="", additional_kwargs={"refusal": "No."}),
        ]
    )

    assert model.invoke("x").content == [{"type": "refusal", "refusal": "I can't help with that."}]
    assert model.invoke("x").additional_kwargs == {"refusal": "No."}


def test_finish_reason_and_usage_survive() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content='{"city": "Par',
                response_metadata={"finish_reason": "length"},
                usage_metadata=USAGE,
            )
        ]
    )

    reply = model.invoke("x")

    assert reply.response_metadata == {"finish_reason": "length"}
    assert reply.usage_metadata == USAGE


def test_invalid_tool_calls_survive() -> None:
    invalid = {
        "type": "invalid_tool_call",
        "name": "add",
        "args": '{"a": 1,',
        "id": "bad_1",
        "error": "truncated",
    }
    model = ScriptedChatModel(responses=[AIMessage(content="", invalid_tool_calls=[invalid])])

    assert model.invoke("x").invalid_tool_calls == [invalid]


# --- ids --------------------------------------------------------------------


def test_missing_ids_are_filled_unique_and_script_is_not_mutated() -> None:
    scripted = AIMessage(content="", tool_calls=[tool_call("a", {}), tool_call("b", {"x": 1})])
    model = ScriptedChatModel(responses=[scripted, scripted])

    first, second = model.invoke("x"), model.invoke("y")

    assert first.id is not None
    assert first.id.startswith("run-scripted-")
    assert first.id != second.id
    assert [call["id"] for call in first.tool_calls] == [
        f"call-{first.id}-0",
        f"call-{first.id}-1",
    ]
    assert scripted.id is None
    assert [call["id"] for call in scripted.tool_calls] == [None, None]


def test_scripted_ids_are_kept() -> None:
    model = ScriptedChatModel(responses=[rich_reply()])

    reply = model.invoke("x")

    assert reply.id == "msg-1"
    assert [call["id"] for call in reply.tool_calls] == ["call_add", "call_lookup"]


def test_tool_call_helper() -> None:
    assert tool_call("search", {"q": "x"}, id="c1") == {
        "name": "search",
        "args": {"q": "x"},
        "id": "c1",
        "type": "tool_call",
    }
    assert tool_call("ping") == {"name": "ping", "args": {}, "id": None, "type": "tool_call"}


# --- exceptions, callables, exhaustion --------------------------------------


class FakeHTTPError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def test_scripted_exception_is_raised_and_script_moves_on() -> None:
    model = ScriptedChatModel(responses=[FakeHTTPError(400), "recovered"])

    with pytest.raises(FakeHTTPError) as caught:
        model.invoke("x")

    assert caught.value.status == 400
    assert model.invoke("x").content == "recovered"
    assert len(model.calls) == 2


async def test_scripted_exception_in_async_and_stream() -> None:
    model = ScriptedChatModel(responses=[FakeHTTPError(429), FakeHTTPError(500)])

    with pytest.raises(FakeHTTPError, match="HTTP 429"):
        await model.ainvoke("x")
    with pytest.raises(FakeHTTPError, match="HTTP 500"):
        [chunk async for chunk in model.astream("x")]


def test_callable_entry_sees_messages_and_call() -> None:
    seen: list[tuple[list[BaseMessage], RecordedCall]] = []

    def echo(messages: list[BaseMessage], call: RecordedCall) -> str:
        seen.append((messages, call))
        return f"echo: {messages[-1].text}"

    model = ScriptedChatModel(responses=[echo])

    reply = model.invoke("hello", stop=["."])

    assert reply.content == "echo: hello"
    assert seen[0][0] == [HumanMessage(content="hello")]
    assert seen[0][1] is model.calls[0]


def test_callable_entry_may_return_message_or_exception() -> None:
    model = ScriptedChatModel(
        responses=[
            lambda _messages, _call: AIMessage(content="", tool_calls=[tool_call("t", {"n": 1})]),
            lambda _messages, _call: ValueError("rejected"),
        ]
    )

    assert model.invoke("x").tool_calls[0]["args"] == {"n": 1}
    with pytest.raises(ValueError, match="rejected"):
        model.invoke("x")


def test_callable_returning_wrong_type_is_a_type_error() -> None:
    model = ScriptedChatModel(responses=[lambda _m, _c: 42])  # type: ignore[list-item,return-value]

    with pytest.raises(TypeError, match="must return an AIMessage, str or Exception, not int"):
        model.invoke("x")


def test_bad_script_entry_is_rejected_up_front() -> None:
    with pytest.raises(TypeError, match=r"responses\[1\] has type int"):
        ScriptedChatModel(responses=["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sequence of script entries, not str"):
        ScriptedChatModel(responses="ok")  # type: ignore[arg-type]


def test_exhaustion_error_type_and_message() -> None:
    model = ScriptedChatModel(model_name="planner", responses=["first", "second"])
    model.invoke("warm up")
    model.invoke("again")
    conversation = [
        HumanMessage(content="What is 2 + 2?"),
        AIMessage(content="", tool_calls=[tool_call("add", {"a": 2, "b": 2}, id="c1")]),
        ToolMessage(content="4", tool_call_id="c1", name="add"),
        HumanMessage(content="x" * 300),
    ]

    with pytest.raises(ScriptExhaustedError) as caught:
        model.bind_tools([add]).invoke(conversation)

    error = caught.value
    assert isinstance(error, StructxError)
    assert isinstance(error, RuntimeError)
    assert error.scripted == 2
    assert error.call.messages == conversation
    assert str(error) == "\n".join(
        [
            "ScriptedChatModel 'planner' has no response left for call #3: "
            "2 responses were scripted and all have been used.",
            "The call received 4 message(s); the last 3:",
            """  [ai] '' tool_calls: add({"a": 2, "b": 2})""",
            "  [tool add] '4'",
            f"  [human] '{'x' * 197}...'",
            "Tools bound: add",
            "Script another response, or check why the model was called again.",
        ]
    )
    assert len(model.calls) == 3


def test_exhaustion_with_empty_script_uses_singular_and_plural() -> None:
    with pytest.raises(ScriptExhaustedError, match="0 responses were scripted"):
        ScriptedChatModel().invoke("x")
    model = ScriptedChatModel(responses=["a"])
    model.invoke("x")
    with pytest.raises(ScriptExhaustedError, match="1 response was scripted"):
        model.invoke("x")


async def test_exhaustion_in_async_stream() -> None:
    model = ScriptedChatModel()

    with pytest.raises(ScriptExhaustedError):
        [chunk async for chunk in model.astream("x")]


def test_reset_rewinds_and_replaces() -> None:
    model = ScriptedChatModel(responses=["a", "b"])
    model.invoke("x")

    model.reset()
    assert (model.remaining, model.calls) == (2, [])
    assert model.invoke("x").content == "a"

    model.reset(["c"])
    assert model.invoke("x").content == "c"
    assert model.remaining == 0


def test_appending_to_the_script_extends_it() -> None:
    model = ScriptedChatModel(responses=["a"])
    model.invoke("x")

    model.responses.append("b")

    assert model.invoke("x").content == "b"


def test_deepcopy_gives_an_independent_script() -> None:
    model = ScriptedChatModel(responses=["a", "b"])
    model.invoke("x")

    clone = copy.deepcopy(model)

    assert clone.invoke("y").content == "b"
    assert (model.remaining, len(model.calls)) == (1, 1)
    assert (clone.remaining, len(clone.calls)) == (0, 2)


# --- recording --------------------------------------------------------------


def test_plain_call_records_messages_and_no_tools() -> None:
    model = ScriptedChatModel(responses=["ok"])

    model.invoke([("system", "be brief"), ("human", "hi")])

    assert model.calls == [
        RecordedCall(
            messages=model.calls[0].messages,
            tools=[],
            tool_choice=None,
            response_format=None,
            kwargs={},
        )
    ]
    assert [(m.type, m.content) for m in model.calls[0].messages] == [
        ("system", "be brief"),
        ("human", "hi"),
    ]


def test_bind_tools_records_tools_choice_and_kwargs() -> None:
    raw_tool = {"type": "web_search"}
    model = ScriptedChatModel(responses=["ok"])

    model.bind_tools([add, Weather, raw_tool], tool_choice="add", parallel_tool_calls=False).invoke(
        "hi", stop=["END"], temperature=0.2
    )

    call = model.calls[0]
    assert call.tools == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": {
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "Weather",
                "description": "Weather report.",
                "parameters": {
                    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                    "required": ["city", "celsius"],
                    "type": "object",
                },
            },
        },
        {"type": "web_search"},
    ]
    assert call.tools[2] is raw_tool
    assert call.tool_choice == "add"
    assert call.response_format is None
    assert call.kwargs == {"parallel_tool_calls": False, "stop": ["END"], "temperature": 0.2}


def test_bind_response_format_is_recorded() -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "W", "schema": {}}}
    model = ScriptedChatModel(responses=["{}", "{}"])

    model.bind(response_format=response_format).invoke("x")
    model.bind_tools([], response_format=response_format, strict=True).invoke("x")

    assert [call.response_format for call in model.calls] == [response_format, response_format]
    assert model.calls[1].kwargs == {"strict": True}


def test_with_structured_output_uses_tool_calling_and_records() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="", tool_calls=[tool_call("Weather", {"city": "Oslo", "celsius": -3})]
            )
        ]
    )

    result = model.with_structured_output(Weather).invoke("weather in Oslo?")

    assert result == Weather(city="Oslo", celsius=-3)
    call = model.calls[0]
    assert [tool["function"]["name"] for tool in call.tools] == ["Weather"]
    assert call.tool_choice == "any"
    assert call.kwargs == {
        "ls_structured_output_format": {
            "kwargs": {"method": "function_calling"},
            "schema": Weather,
        }
    }


async def test_with_structured_output_streams_and_records() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="", tool_calls=[tool_call("Weather", {"city": "Rome", "celsius": 21})]
            )
        ],
        chunk_size=3,
    )

    parts = [part async for part in model.with_structured_output(Weather).astream("x")]

    assert parts[-1] == Weather(city="Rome", celsius=21)
    assert model.calls[0].kwargs["ls_structured_output_format"]["schema"] is Weather


def test_with_structured_output_include_raw() -> None:
    scripted = AIMessage(content="", tool_calls=[tool_call("Weather", {"city": "Lima"})])
    model = ScriptedChatModel(responses=[scripted])

    result = model.with_structured_output(Weather, include_raw=True).invoke("x")

    assert isinstance(result, dict)
    assert result["parsed"] is None
    assert result["raw"].tool_calls[0]["args"] == {"city": "Lima"}
    assert result["parsing_error"] is not None


# --- streaming --------------------------------------------------------------


def test_stream_text_in_chunk_size_pieces() -> None:
    model = ScriptedChatModel(responses=["Hello, world!"], chunk_size=5)

    chunks = list(model.stream("x"))

    assert [chunk.content for chunk in chunks] == ["Hello", ", wor", "ld!", ""]
    assert [chunk.chunk_position for chunk in chunks] == [None, None, None, "last"]
    assert len({chunk.id for chunk in chunks}) == 1


def test_stream_tool_call_arguments_arrive_in_pieces() -> None:
    model = ScriptedChatModel(responses=[rich_reply()], chunk_size=4)

    chunks = list(model.stream("x"))

    tool_pieces = [piece for chunk in chunks for piece in chunk.tool_call_chunks]
    # Tool calls are numbered after the content block, as Anthropic does.
    assert {piece["index"] for piece in tool_pieces} == {1, 2}
    first = [piece for piece in tool_pieces if piece["index"] == 1]
    assert first[0] == {
        "name": "add",
        "args": "",
        "id": "call_add",
        "index": 1,
        "type": "tool_call_chunk",
    }
    arg_pieces = [piece["args"] for piece in first[1:]]
    assert len(arg_pieces) > 1
    assert all(len(piece or "") <= 4 for piece in arg_pieces)
    assert "".join(piece or "" for piece in arg_pieces) == json.dumps({"a": 40, "b": 2})
    assert all(piece["name"] is None and piece["id"] is None for piece in first[1:])
    # Text comes before tool calls, which come before the closing chunk.
    kinds = ["text" if c.content else "tool" if c.tool_call_chunks else "end" for c in chunks]
    assert kinds == sorted(kinds, key=["text", "tool", "end"].index)
    assert kinds[-1] == "end"


def test_stream_merges_back_into_the_scripted_message() -> None:
    scripted = rich_reply()
    model = ScriptedChatModel(responses=[scripted], chunk_size=3)

    merged = merge(list(model.stream("x")))

    assert merged.content == scripted.content
    assert merged.tool_calls == scripted.tool_calls
    assert merged.usage_metadata == USAGE
    assert merged.response_metadata == scripted.response_metadata
    assert merged.additional_kwargs == {"refusal": None}
    assert merged.id == "msg-1"
    assert merged.chunk_position == "last"


async def test_astream_matches_stream() -> None:
    scripted = rich_reply()
    model = ScriptedChatModel(responses=[scripted, scripted], chunk_size=3)

    sync_chunks = list(model.stream("x"))
    async_chunks = [chunk async for chunk in model.astream("x")]

    assert async_chunks == sync_chunks


@pytest.mark.parametrize(
    "content",
    ["Let me check.", "", [{"type": "text", "text": "Let me check."}]],
    ids=["text", "empty", "blocks"],
)
def test_stream_with_output_version_v1_keeps_blocks_apart(content: str | list[Any]) -> None:
    scripted = AIMessage(
        content=content,
        tool_calls=[tool_call("add", {"a": 1, "b": 2}, id="c1"), tool_call("ok", {}, id="c2")],
    )
    model = ScriptedChatModel(responses=[scripted, scripted], output_version="v1")

    invoked = model.invoke("x")
    merged = merge(list(model.stream("x")))

    assert merged.tool_calls == invoked.tool_calls == scripted.tool_calls
    assert [block["type"] for block in merged.content_blocks] == [
        block["type"] for block in invoked.content_blocks
    ]
    assert merged.text == invoked.text == scripted.text


def test_last_chunk_carries_usage_and_finish_reason_only() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="abcdefgh",
                response_metadata={"finish_reason": "length"},
                usage_metadata=USAGE,
            )
        ]
    )

    *body, last = list(model.stream("x"))

    assert last.usage_metadata == USAGE
    assert last.response_metadata == {"finish_reason": "length"}
    assert last.chunk_position == "last"
    assert all(chunk.usage_metadata is None for chunk in body)
    assert all(chunk.response_metadata == {} for chunk in body)


def test_stream_refusal_blocks() -> None:
    blocks: list[str | dict[str, Any]] = [
        {"type": "text", "text": "Sorry."},
        {"type": "refusal", "refusal": "I won't do that."},
    ]
    model = ScriptedChatModel(responses=[AIMessage(content=blocks)])

    chunks = list(model.stream("x"))

    assert [chunk.content for chunk in chunks] == [[blocks[0]], [blocks[1]], []]
    assert merge(chunks).content == blocks


def test_stream_openai_refusal_kwarg_arrives_first() -> None:
    model = ScriptedChatModel(
        responses=[AIMessage(content="", additional_kwargs={"refusal": "Can't."})]
    )

    chunks = list(model.stream("x"))

    assert chunks[0].additional_kwargs == {"refusal": "Can't."}
    assert merge(chunks).additional_kwargs == {"refusal": "Can't."}


def test_stream_invalid_tool_call_raw_args_in_pieces() -> None:
    invalid = {
        "type": "invalid_tool_call",
        "name": "add",
        "args": "not json at all",
        "id": "bad_1",
        "error": "unparseable",
    }
    model = ScriptedChatModel(
        responses=[
            AIMessage(content="", tool_calls=[tool_call("ok", {})], invalid_tool_calls=[invalid])
        ]
    )

    chunks = list(model.stream("x"))

    pieces = [p for c in chunks for p in c.tool_call_chunks if p["index"] == 1]
    assert [p["args"] for p in pieces] == ["", "not ", "json", " at ", "all"]
    merged = merge(chunks)
    assert merged.invalid_tool_calls == [
        {
            "type": "invalid_tool_call",
            "name": "add",
            "args": "not json at all",
            "id": "bad_1",
            "error": None,
        }
    ]
    assert [call["name"] for call in merged.tool_calls] == ["ok"]


def test_stream_empty_reply_is_one_closing_chunk() -> None:
    model = ScriptedChatModel(responses=[""])

    chunks = list(model.stream("x"))

    assert len(chunks) == 1
    assert chunks[0].content == ""
    assert chunks[0].chunk_position == "last"


async def test_astream_events_report_each_chunk_once() -> None:
    model = ScriptedChatModel(responses=["abcdefghij"], chunk_size=4)

    events = [
        event
        async for event in model.astream_events("x", version="v2")
        if event["event"] == "on_chat_model_stream"
    ]

    assert [event["data"]["chunk"].content for event in events] == ["abcd", "efgh", "ij", ""]


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedChatModel(chunk_size=0)


# --- concurrency ------------------------------------------------------------


async def test_concurrent_ainvoke_gets_distinct_responses_in_arrival_order() -> None:
    count = 200
    model = ScriptedChatModel(responses=[f"r{i}" for i in range(count)])

    replies = await asyncio.gather(*(model.ainvoke(f"q{i}") for i in range(count)))

    contents = [str(reply.content) for reply in replies]
    assert sorted(contents) == sorted(f"r{i}" for i in range(count))
    # Entry k went to whoever made call k: popping and recording are atomic.
    asked_by = {f"r{k}": call.messages[-1].content for k, call in enumerate(model.calls)}
    assert {content: f"q{i}" for i, content in enumerate(contents)} == asked_by
    assert len({reply.id for reply in replies}) == count


def test_concurrent_threads_get_distinct_responses() -> None:
    count = 200
    model = ScriptedChatModel(responses=[f"r{i}" for i in range(count)])

    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda i: model.invoke(f"q{i}"), range(count)))

    asked_by = {f"r{k}": call.messages[-1].content for k, call in enumerate(model.calls)}
    assert {str(reply.content): f"q{i}" for i, reply in enumerate(replies)} == asked_by
    assert len(asked_by) == count


# --- identity ---------------------------------------------------------------


def test_identity_and_profile() -> None:
    model = ScriptedChatModel(model_name="fake-gpt")

    assert model._llm_type == "scripted-chat-model"
    assert model._identifying_params == {"model_name": "fake-gpt", "chunk_size": 4}
    assert model.profile == {
        "tool_calling": True,
        "tool_choice": True,
        "tool_call_streaming": True,
        "structured_output": False,
    }
    params = model._get_ls_params()
    assert (params["ls_provider"], params["ls_model_name"]) == ("scripted", "fake-gpt")


def test_model_name_and_profile_are_settable() -> None:
    model = ScriptedChatModel(profile={"structured_output": True, "tool_calling": True})

    model.model_name = "renamed"
    model.profile = {"structured_output": False}

    assert model._identifying_params["model_name"] == "renamed"
    assert model.profile == {"structured_output": False}
    assert ScriptedChatModel(profile={}).profile == {}


# --- agents and graphs ------------------------------------------------------


def test_create_agent_runs_tool_then_answers() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(content="", tool_calls=[tool_call("add", {"a": 2, "b": 3}, id="c1")]),
            "2 + 3 = 5",
        ]
    )
    agent = create_agent(model=model, tools=[add])

    result = agent.invoke({"messages": [HumanMessage(content="What is 2 + 3?")]})

    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]
    assert result["messages"][2].content == "5"
    assert result["messages"][-1].content == "2 + 3 = 5"
    first, second = model.calls
    assert [tool["function"]["name"] for tool in first.tools] == ["add"]
    assert [m.type for m in second.messages] == ["human", "ai", "tool"]


async def test_create_agent_with_tool_strategy_response_format() -> None:
    model = ScriptedChatModel(
        responses=[
            AIMessage(content="", tool_calls=[tool_call("Weather", {"city": "Oslo", "celsius": 1})])
        ]
    )
    agent = create_agent(model=model, tools=[add], response_format=Weather)

    result = await agent.ainvoke({"messages": [HumanMessage(content="Oslo?")]})

    assert result["structured_response"] == Weather(city="Oslo", celsius=1)
    call = model.calls[0]
    assert sorted(tool["function"]["name"] for tool in call.tools) == ["Weather", "add"]
    assert call.tool_choice == "any"
    assert call.response_format is None


def test_create_agent_uses_provider_strategy_when_profile_says_so() -> None:
    model = ScriptedChatModel(
        responses=['{"city": "Oslo", "celsius": 1}'],
        profile={"structured_output": True, "tool_calling": True},
    )
    agent = create_agent(model=model, response_format=Weather)

    result = agent.invoke({"messages": [HumanMessage(content="Oslo?")]})

    assert result["structured_response"] == Weather(city="Oslo", celsius=1)
    assert model.calls[0].response_format["type"] == "json_schema"


def test_agent_stream_messages_mode_uses_scripted_stream() -> None:
    model = ScriptedChatModel(responses=["streamed answer"], chunk_size=5)
    agent = create_agent(model=model, tools=[])

    tokens = [
        message.content
        for message, _meta in agent.stream(
            {"messages": [HumanMessage(content="hi")]}, stream_mode="messages"
        )
        if isinstance(message, AIMessageChunk)
    ]

    assert tokens == ["strea", "med a", "nswer", ""]


async def test_inside_a_langgraph_node() -> None:
    model = ScriptedChatModel(responses=["first", "second"])

    async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile()

    one = await graph.ainvoke({"messages": [HumanMessage(content="a")]})
    two = await graph.ainvoke({"messages": [*one["messages"], HumanMessage(content="b")]})

    assert [m.content for m in two["messages"]] == ["a", "first", "b", "second"]
    assert [len(call.messages) for call in model.calls] == [1, 3]
