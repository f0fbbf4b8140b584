"""The provider-client defects of issue 11, each through the official client and a fake server."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputRefusal,
    ToolStrategy,
    TruncatedOutputError,
    create_agent,
)
from langchain_structx.errors import DialectError

from .clients import client, fake
from .wire import Ask, Reply
from .wire import answering as _answer

pytestmark = pytest.mark.integration


class Parcel(BaseModel):
    label: str
    weight: int | None = None


def _ask(model: Any, strategy: Any, tools: list[Any] | None = None) -> Any:
    agent = create_agent(model, tools=tools or [], response_format=strategy)
    return agent.invoke({"messages": [("user", "Describe the parcel.")]})["structured_response"]


# 1. ChatAnthropic passes the schema through the anthropic SDK, which takes one type per node.
@pytest.mark.parametrize("strategy", [Parcel, ProviderStrategy(Parcel, strict=True)])
def test_anthropic_optional_scalar_is_sent(strategy: Any) -> None:
    with fake("anthropic", _answer({"label": "box", "weight": None})) as server:
        assert _ask(client("anthropic", server), strategy) == Parcel(label="box")
        schema = server.requests[0]["output_config"]["format"]["schema"]
    assert schema["properties"]["weight"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert server.violations == []


# 2. The openai SDK raises instead of returning a cut-off or filtered response_format answer.
def test_openai_length_is_truncation() -> None:
    def cut(ask: Ask) -> Reply:
        return Reply(text='{"label": "bo', stop="length")

    with fake("openai", cut) as server:
        with pytest.raises(TruncatedOutputError) as info:
            _ask(client("openai", server), ProviderStrategy(Parcel, strict=True))
    assert len(server.requests) == 2  # a cut-off answer is retried once, then reported
    assert info.value.ai_message is not None
    assert info.value.ai_message.response_metadata["finish_reason"] == "length"
    assert server.violations == []


def test_openai_content_filter_is_refusal() -> None:
    with fake("openai", lambda ask: Reply(text="", reason="content_filter")) as server:
        with pytest.raises(StructuredOutputRefusal):
            _ask(client("openai", server), ProviderStrategy(Parcel, strict=True))
    assert len(server.requests) == 1
    assert server.violations == []


# 3. ChatOpenAI.bind_tools rebuilds the response format's name from the schema's title.
def test_openai_format_name_with_user_tools() -> None:
    @tool
    def lookup(code: str) -> str:
        """Look a parcel code up."""
        return "a box"

    schema = {
        "title": "Shipment status",
        "type": "object",
        "properties": {"state": {"type": "string"}},
        "required": ["state"],
        "additionalProperties": False,
    }
    with fake("openai", _answer({"state": "sent"})) as server:
        assert _ask(client("openai", server), schema, [lookup]) == {"state": "sent"}
    names = [r["response_format"]["json_schema"]["name"] for r in server.requests]
    assert names == ["Shipment_status"]
    assert server.violations == []


@pytest.mark.parametrize("provider", ["openai", "openai_responses"])
def test_json_mode_beside_user_tools_is_left_to_the_prompt(provider: str) -> None:
    # LangChain binds the settings with `bind_tools` beside the caller's tools, and
    # ChatOpenAI read JSON mode there as a schema: a ValueError before sending.
    @tool
    def lookup(code: str) -> str:
        """Look a parcel code up."""
        return "a box"

    strategy = PromptedStrategy(Parcel, json_mode=True)
    with fake(provider, _answer({"label": "box"})) as server:
        assert _ask(client(provider, server), strategy, [lookup]) == Parcel(label="box")
    assert len(server.requests) == 1
    assert server.violations == []


# 4. Rejections worded by Anthropic-compatible endpoints and wrapped by langchain-google-genai.
@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("anthropic", "output_config.format: Extra inputs are not permitted"),
        ("gemini", 'Invalid JSON payload received. Unknown name "responseJsonSchema"'),
    ],
)
def test_format_rejection_falls_back(provider: str, message: str) -> None:
    answer = _answer({"label": "box"})

    def model(ask: Ask) -> Reply:
        return Reply(reject=(400, message)) if ask.kind == "format" else answer(ask)

    with fake(provider, model) as server:
        assert _ask(client(provider, server), AutoStrategy(Parcel)) == Parcel(label="box")
    assert server.rejected == 1
    assert len(server.requests) == 2
    assert server.violations == []


# 5. Gemini's safety stops are refusals, answered at once and not retried.
@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"])
def test_gemini_safety_stop_is_refusal(reason: str) -> None:
    with fake("gemini", lambda ask: Reply(reason=reason)) as server:
        with pytest.raises(StructuredOutputRefusal):
            _ask(client("gemini", server), AutoStrategy(Parcel))
    assert len(server.requests) == 1
    assert server.violations == []


# 6. langchain-google-genai turns `oneOf` tool parameters into STRING;
# the Gemini dialect keeps them.
class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


def _members(parameters: dict[str, Any]) -> list[Any]:
    pet = parameters["properties"]["pet"]
    return pet.get("anyOf") or pet.get("any_of") or []


def test_gemini_tool_keeps_union_parameters() -> None:
    with fake("gemini", _answer({"pet": {"kind": "dog", "good": True}})) as server:
        answer = _ask(client("gemini", server), ToolStrategy(Pet))
    assert answer == Pet(pet=Dog(kind="dog", good=True))
    body = server.requests[0]
    parameters = body["tools"][0]["functionDeclarations"][0]["parameters"]
    assert [m["properties"]["kind"]["enum"] for m in _members(parameters)] == [["cat"], ["dog"]]
    assert server.violations == []


class Node(BaseModel):
    label: str
    kids: list[Node] = []


def test_gemini_recursive_tool_is_refused_before_sending() -> None:
    with fake("gemini", _answer({"label": "a"})) as server:
        with pytest.raises(DialectError, match="cannot be recursive"):
            _ask(client("gemini", server), ToolStrategy(Node))
    assert server.requests == []


# 7. Gemini's JSON-schema response format takes cycles through optional properties.
def test_gemini_recursion_uses_the_response_format() -> None:
    tree = {"label": "a", "kids": [{"label": "b", "kids": []}]}
    with fake("gemini", _answer(tree)) as server:
        assert _ask(client("gemini", server), AutoStrategy(Node)) == Node.model_validate(tree)
    config = server.requests[0]["generationConfig"]
    assert "Node" in config["responseJsonSchema"]["$defs"]
    assert len(server.requests) == 1
    assert server.violations == []


# 8. An object that asks for other keys keeps them in a strict dialect; one that
# merely omits additionalProperties is closed, as strict modes close it.
def test_open_object_round_trips_through_openai_strict() -> None:
    schema = {
        "title": "Labels",
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": True,
    }
    sent = {"name": "x", "extra_properties": [{"key": "colour", "value": '"red"'}]}
    with fake("openai", _answer(sent)) as server:
        answer = _ask(client("openai", server), ProviderStrategy(schema, strict=True))
    assert answer == {"name": "x", "colour": "red"}
    assert server.violations == []
    closed = {k: v for k, v in schema.items() if k != "additionalProperties"}
    with fake("openai", _answer({"name": "x"})) as server:
        answer = _ask(client("openai", server), ProviderStrategy(closed, strict=True))
        sent_schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert answer == {"name": "x"}
    assert list(sent_schema["properties"]) == ["name"]
    assert sent_schema["additionalProperties"] is False


# Usage accounting: every attempt's tokens, as each client reports them, are summed.
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_usage_is_summed_over_attempts(provider: str) -> None:
    state = {"calls": 0}

    def model(ask: Ask) -> Reply:
        state["calls"] += 1
        value = {"label": [[1]]} if state["calls"] == 1 else {"label": "box"}
        return _answer(value)(ask)

    with fake(provider, model) as server:
        agent = create_agent(client(provider, server), response_format=AutoStrategy(Parcel))
        result = agent.invoke({"messages": [("user", "Describe the parcel.")]})
    assert result["structured_response"] == Parcel(label="box")
    usage = result["structured_output_report"]["usage"]
    # The fake counts 11 prompt tokens plus one per turn, and 7 output tokens.
    assert len(server.requests) == 2
    assert usage["output_tokens"] == 14
    assert usage["input_tokens"] > 22
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
