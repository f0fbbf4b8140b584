"""Gemini function declarations reach Gemini in its own schema, through langchain-google-genai.

The client converts every tool's JSON schema into Gemini's `Schema` itself;
left to it, an `Optional[int]` went out as STRING, an optional nested model as
STRING, a nested model's optional properties as required. Our tool parameters
are written in the part of `Schema` that conversion forwards unchanged; the
fake server refuses fields Gemini does not know.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Literal

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from langchain_structx import AutoStrategy, ToolStrategy, create_agent

from .clients import client, fake
from .gemini_schema import schema_rules
from .wire import Ask, Reply
from .wire import answering as _answer

pytestmark = pytest.mark.integration

ASK = {"messages": [("user", "Describe the parcel.")]}


class Address(BaseModel):
    street: str
    city: str | None = None


class Parcel(BaseModel):
    label: str
    weight: int | None = None
    sender: Address | None = None
    tags: list[str] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")
    age: int | str


SHIPMENT = {
    "title": "Shipment",
    "type": "object",
    "properties": {
        "code": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["code", "counts"],
}


def _parameters(body: dict[str, Any], name: str) -> dict[str, Any]:
    found = [
        d for t in body["tools"] for d in t.get("functionDeclarations") or [] if d["name"] == name
    ]
    parameters: dict[str, Any] = found[0]["parameters"]
    return parameters


def _members(node: dict[str, Any]) -> list[dict[str, Any]]:
    members: list[dict[str, Any]] = node.get("anyOf") or node.get("any_of") or [node]
    return members


def _structured(name: str, value: dict[str, Any]) -> Any:
    """Answer with our tool when it is offered (beside the caller's), else as text."""

    def model(ask: Ask) -> Reply:
        if name in ask.tools:
            return Reply(calls=((name, value),))
        return _answer(value)(ask)

    return model


def _run(strategy: Any, answer: dict[str, Any], stream: bool, tools: Any = ()) -> Any:
    with fake("gemini", _structured(strategy.schemas.variants[0].name, answer)) as server:
        agent = create_agent(client("gemini", server), list(tools), response_format=strategy)
        if stream:
            state: dict[str, Any] = {}
            for chunk in agent.stream(ASK, stream_mode="values"):
                state = chunk
        else:
            state = agent.invoke(ASK)
    assert server.violations == []
    return state["structured_response"], server.requests


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_optional_scalars_and_nested_models_keep_their_types(stream: bool) -> None:
    answer = {"label": "box", "weight": 3, "sender": {"street": "Main St", "city": None}}
    result, requests = _run(ToolStrategy(Parcel), answer, stream)
    assert result == Parcel(label="box", weight=3, sender=Address(street="Main St"))
    sent = _parameters(requests[0], "Parcel")
    assert _members(sent["properties"]["weight"]) == [{"type": "INTEGER", "nullable": True}]
    (sender,) = _members(sent["properties"]["sender"])
    assert (sender["type"], sender["nullable"], sender["required"]) == ("OBJECT", True, ["street"])
    assert _members(sender["properties"]["city"]) == [{"type": "STRING", "nullable": True}]
    assert sent["properties"]["tags"]["items"] == {"type": "STRING"}
    assert sent["required"] == ["label"]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_unions_reach_gemini_as_unions(stream: bool) -> None:
    answer = {"pet": {"kind": "dog", "good": True}, "age": "three"}
    result, requests = _run(ToolStrategy(Pet), answer, stream)
    assert result == Pet(pet=Dog(kind="dog", good=True), age="three")
    sent = _parameters(requests[0], "Pet")
    pets = _members(sent["properties"]["pet"])
    assert [m["properties"]["kind"]["enum"] for m in pets] == [["cat"], ["dog"]]
    assert [m["type"] for m in _members(sent["properties"]["age"])] == ["INTEGER", "STRING"]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_a_dict_schema_with_a_union_and_a_map(stream: bool) -> None:
    answer = {"code": 7, "counts": [{"key": "a", "value": 1}], "note": None}
    result, requests = _run(ToolStrategy(SHIPMENT), answer, stream)
    assert result == {"code": 7, "counts": {"a": 1}, "note": None}
    sent = _parameters(requests[0], "Shipment")
    assert [m["type"] for m in _members(sent["properties"]["code"])] == ["INTEGER", "STRING"]
    (counts,) = _members(sent["properties"]["counts"])
    entry = counts["items"]
    assert (counts["type"], entry["required"]) == ("ARRAY", ["key", "value"])
    assert _members(sent["properties"]["note"]) == [{"type": "STRING", "nullable": True}]


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return query


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_auto_beside_the_callers_tool(stream: bool) -> None:
    answer = {"label": "box", "weight": 2, "sender": None}
    result, requests = _run(AutoStrategy(Parcel), answer, stream, tools=[lookup])
    assert result == Parcel(label="box", weight=2)
    (body,) = requests
    names = [d["name"] for t in body["tools"] for d in t["functionDeclarations"]]
    assert names == ["lookup", "Parcel"]
    weight = _parameters(body, "Parcel")["properties"]["weight"]
    assert _members(weight) == [{"type": "INTEGER", "nullable": True}]


def test_the_fake_refuses_what_gemini_does_not_know() -> None:
    where = "tools[0].function_declarations[0].parameters"
    bad = {
        "type": "object",
        "properties": {
            "a": {"type": ["integer", "null"]},
            "b": {"type": "string", "const": "x"},
            "c": {"type": "object", "additionalProperties": False},
        },
    }
    found = schema_rules(bad, where)
    assert any("Proto field is not repeating" in v for v in found)
    assert any("'const'" in v for v in found)
    assert any("'additionalProperties'" in v for v in found)
    good = {"type": "OBJECT", "properties": {"a": {"any_of": [{"type": "INTEGER"}]}}}
    assert schema_rules(good, where) == []

    def refuse(ask: Ask) -> Reply:
        return Reply(text="{}")

    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": bad}]}],
    }
    with fake("gemini", refuse) as server:
        request = urllib.request.Request(
            f"{server.url}/v1beta/models/gemini-2.5-flash:generateContent",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
    refused.value.close()  # the error holds the response and its socket
    assert refused.value.code == 400
    assert any("Unknown name 'const'" in v for v in server.violations)
