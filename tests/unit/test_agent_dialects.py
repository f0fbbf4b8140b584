"""Strict provider dialects inside the agent: what is sent, what comes back, fallbacks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx import AutoStrategy, DialectError, ProviderStrategy, create_agent
from langchain_structx.testing import ScriptedChatModel

ASK = {"messages": [HumanMessage("Ada, no nickname")]}
NATIVE = {"structured_output": True, "tool_calling": True}


class ChatOpenAI(ScriptedChatModel):
    """A scripted model that passes for OpenAI's, which has a strict mode."""


class ChatAnthropic(ScriptedChatModel):
    """A scripted model that passes for Anthropic's."""


class Profile(BaseModel):
    name: str
    nickname: str | None = None


class Pet(BaseModel):
    species: str


def deep_schema(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}, "required": ["x"]}
    return {"title": "Deep", **node}


def sent_schema(model: ScriptedChatModel) -> dict[str, Any]:
    return model.calls[0].response_format["json_schema"]


def test_auto_on_a_strict_capable_model_sends_the_openai_dialect_and_restores() -> None:
    # OpenAI's strict mode needs every property required; "nickname" becomes nullable.
    model = ChatOpenAI(responses=['{"name": "Ada", "nickname": null}'], profile=NATIVE)
    state = create_agent(model, response_format=AutoStrategy(Profile)).invoke(ASK)
    sent = sent_schema(model)
    assert sent["strict"] is True
    assert sorted(sent["schema"]["required"]) == ["name", "nickname"]
    assert sent["schema"]["additionalProperties"] is False
    assert state["structured_response"] == Profile(name="Ada")
    assert state["structured_output_report"]["strategy"] == "provider"


def test_auto_on_a_model_without_strict_mode_sends_the_schema_as_written() -> None:
    model = ScriptedChatModel(responses=['{"name": "Ada"}'], profile=NATIVE)
    create_agent(model, response_format=AutoStrategy(Profile)).invoke(ASK)
    sent = sent_schema(model)
    assert "strict" not in sent
    assert sent["schema"]["required"] == ["name"]


def test_explicit_strict_uses_the_models_own_dialect() -> None:
    model = ChatAnthropic(responses=['{"name": "Ada"}'], profile=NATIVE)
    state = create_agent(model, response_format=ProviderStrategy(Profile, strict=True)).invoke(ASK)
    assert sent_schema(model)["strict"] is True
    assert sent_schema(model)["schema"]["additionalProperties"] is False
    assert state["structured_response"] == Profile(name="Ada")


def test_union_envelope_is_wrapped_for_openai_and_invisible_to_the_user() -> None:
    answer = {"value": {"kind": "Pet", "data": {"species": "cat"}}}
    model = ChatOpenAI(responses=[json.dumps(answer)], profile=NATIVE)
    state = create_agent(
        model, response_format=ProviderStrategy(Profile | Pet, strict=True)
    ).invoke(ASK)
    root = sent_schema(model)["schema"]
    assert root["type"] == "object"
    assert root["required"] == ["value"]
    assert state["structured_response"] == Pet(species="cat")
    assert state["structured_response_kind"] == "Pet"


def test_a_schema_too_deep_for_the_dialect_falls_back_and_says_why() -> None:
    call = {"name": "Deep", "args": json.loads(json.dumps(_instance(12))), "id": "d1"}
    model = ChatOpenAI(responses=[AIMessage("", tool_calls=[call])], profile=NATIVE)
    state = create_agent(model, response_format=AutoStrategy(deep_schema(12))).invoke(ASK)
    report = state["structured_output_report"]
    assert report["strategy"] == "tool"
    [fallback] = report["fallbacks"]
    assert fallback["from_strategy"] == "provider"
    assert fallback["to_strategy"] == "tool"
    assert fallback["reason"].startswith("DialectError:")
    assert len(model.calls) == 1  # the fallback cost no model call
    assert model.calls[0].tools[0]["function"]["name"] == "Deep"


def test_explicit_strict_with_a_schema_too_deep_raises_dialect_error() -> None:
    model = ChatOpenAI(responses=["{}"], profile=NATIVE)
    agent = create_agent(model, response_format=ProviderStrategy(deep_schema(12), strict=True))
    with pytest.raises(DialectError) as caught:
        agent.invoke(ASK)
    assert caught.value.dialect == "openai"
    assert model.calls == []


def test_dropped_constraints_are_still_enforced_by_validation() -> None:
    schema = {
        "title": "Age",
        "type": "object",
        "properties": {"years": {"type": "integer", "minimum": 0}},
        "required": ["years"],
    }
    model = ChatAnthropic(responses=['{"years": -3}', '{"years": 3}'], profile=NATIVE)
    state = create_agent(model, response_format=ProviderStrategy(schema, strict=True)).invoke(ASK)
    # Anthropic's subset has no numeric bounds: dropped, but described for the model.
    years = sent_schema(model)["schema"]["properties"]["years"]
    assert "minimum" not in years
    assert years["description"] == "(minimum: 0)"
    assert state["structured_response"] == {"years": 3}
    assert len(model.calls) == 2
    feedback = model.calls[1].messages[-1].content
    assert "at $.years: -3 is less than the minimum of 0" in feedback


def _instance(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"x": value}
    return value
