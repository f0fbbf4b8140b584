"""OpenAI's Responses API through `ChatOpenAI(use_responses_api=True)`: requests and outcomes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputRefusal,
    ToolStrategy,
    TruncatedOutputError,
    create_agent,
)

from .clients import client
from .responses import FakeOpenAIResponses
from .wire import Ask, Reply
from .wire import answering as _value

pytestmark = pytest.mark.integration


class Parcel(BaseModel):
    label: str
    weight: int | None = None


class Dog(BaseModel):
    good: bool


def _run(server: FakeOpenAIResponses, strategy: Any, *, stream: bool = False, **kw: Any) -> Any:
    agent = create_agent(client("openai_responses", server), response_format=strategy, **kw)
    ask = {"messages": [("user", "Describe the parcel as JSON.")]}
    if not stream:
        return agent.invoke(ask)
    last: dict[str, Any] = {}
    for mode, chunk in agent.stream(ask, stream_mode=["messages", "values"]):
        if mode == "values":
            last = chunk
    return last


@pytest.mark.parametrize("stream", [False, True])
def test_strict_format_is_sent_as_text_format(stream: bool) -> None:
    with FakeOpenAIResponses(_value({"label": "box", "weight": None})) as server:
        state = _run(server, ProviderStrategy(Parcel, strict=True), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    body = server.requests[0]
    fmt = body["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "Parcel", True)
    assert fmt["schema"]["required"] == ["label", "weight"]
    assert "response_format" not in body and bool(body.get("stream")) is stream
    assert state["structured_output_report"]["usage"]["output_tokens"] == 7
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True])
def test_tool_strategy_sends_responses_tools(stream: bool) -> None:
    with FakeOpenAIResponses(_value({"label": "box"})) as server:
        state = _run(server, ToolStrategy(Parcel), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    tools = server.requests[0]["tools"]
    assert [(t["type"], t["name"]) for t in tools] == [("function", "Parcel")]
    assert "function" not in tools[0]
    # The one structured tool, with no tools of the caller's, is named: in the
    # Responses API's own form for a named function.
    assert server.requests[0]["tool_choice"] == {"type": "function", "name": "Parcel"}
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True])
def test_refusal_content_part_is_a_refusal(stream: bool) -> None:
    with FakeOpenAIResponses(lambda ask: Reply(text="I can't help.", stop="refusal")) as server:
        with pytest.raises(StructuredOutputRefusal, match="I can't help"):
            _run(server, AutoStrategy(Parcel), stream=stream)
    assert len(server.requests) == 1
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True])
def test_max_output_tokens_is_truncation(stream: bool) -> None:
    with FakeOpenAIResponses(lambda ask: Reply(text='{"label": "bo', stop="length")) as server:
        with pytest.raises(TruncatedOutputError) as info:
            _run(server, ProviderStrategy(Parcel, strict=True), stream=stream)
    assert len(server.requests) == 2  # retried once, then reported
    assert info.value.ai_message is not None
    details = info.value.ai_message.response_metadata["incomplete_details"]
    assert details == {"reason": "max_output_tokens"}
    assert server.violations == []


def test_content_filter_is_a_refusal() -> None:
    with FakeOpenAIResponses(lambda ask: Reply(text="", reason="content_filter")) as server:
        with pytest.raises(StructuredOutputRefusal):
            _run(server, ProviderStrategy(Parcel, strict=True))
    assert len(server.requests) == 1
    assert server.violations == []


def test_text_format_rejection_falls_back_to_tools() -> None:
    answer = _value({"label": "box"})

    def model(ask: Ask) -> Reply:
        if ask.kind == "format":
            return Reply(reject=(400, "'text.format' of type 'json_schema' is not supported"))
        return answer(ask)

    with FakeOpenAIResponses(model) as server:
        state = _run(server, AutoStrategy(Parcel))
    assert state["structured_response"] == Parcel(label="box")
    report = state["structured_output_report"]
    assert [f["from_strategy"] for f in report["fallbacks"]] == ["provider"]
    assert server.rejected == 1
    assert server.violations == []


def test_user_tool_output_answers_its_call_id() -> None:
    @tool
    def lookup(code: str) -> str:
        """Look a parcel code up."""
        return "a box"

    state = {"calls": 0}

    def model(ask: Ask) -> Reply:
        state["calls"] += 1
        if state["calls"] == 1:
            return Reply(calls=(("lookup", {"code": "A1"}),))
        return _value({"label": "box"})(ask)

    with FakeOpenAIResponses(model) as server:
        answer = _run(server, AutoStrategy(Parcel), tools=[lookup])
    assert answer["structured_response"] == Parcel(label="box")
    items = server.requests[1]["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == outputs == ["call_1_0"]
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True])
def test_json_mode_is_sent_as_a_json_object_format(stream: bool) -> None:
    with FakeOpenAIResponses(_value({"label": "box"})) as server:
        state = _run(server, PromptedStrategy(Parcel, json_mode=True), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    assert server.requests[0]["text"]["format"] == {"type": "json_object"}
    assert server.violations == []


def test_union_goes_through_the_envelope() -> None:
    envelope = {"kind": "Dog", "data": {"good": True}}
    with FakeOpenAIResponses(_value(envelope)) as server:
        state = _run(server, ProviderStrategy(Parcel | Dog, strict=True))
    assert state["structured_response"] == Dog(good=True)
    assert server.violations == []


# The fake itself: each documented rule answers a breaking request with a 400.
@pytest.mark.parametrize(
    ("body", "broken"),
    [
        ({"input": "hi", "tools": [{"type": "function", "function": {"name": "a"}}]},
         "function tool"),
        ({"input": "hi", "tools": [{"type": "function", "name": "a b"}]}, "does not match"),
        ({"input": "hi", "tool_choice": {"type": "function", "name": "x"}}, "tool_choice"),
        ({"input": "hi", "text": {"format": {"type": "json_object"}}}, "'JSON'"),
        (
            {"input": "hi", "text": {"format": {"type": "json_schema", "name": "P", "strict": True,
                                               "schema": {"type": "object", "properties": {}}}}},
            "additionalProperties",
        ),
        (
            {"input": [{"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"},
                       {"role": "user", "content": "go on"}]},
            "No tool output found",
        ),
        ({"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]},
         "No tool call"),
    ],
)  # fmt: skip
def test_the_fake_refuses_rule_breaking_requests(body: dict[str, Any], broken: str) -> None:
    with FakeOpenAIResponses(lambda ask: Reply(text="ok")) as server:
        answer = httpx.post(f"{server.url}/v1/responses", json={"model": "gpt-4o", **body})
    assert answer.status_code == 400
    assert broken in answer.json()["error"]["message"]
    assert len(server.violations) == 1
