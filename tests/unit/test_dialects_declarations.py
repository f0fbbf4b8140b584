"""Gemini function declarations: written in Gemini's `Schema`, checked against the client."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from langchain_structx._dialects.declarations import (
    check_forwarded,
    declaration_parameters,
    property_schema,
)
from langchain_structx.dialects import transform_for_tools
from langchain_structx.errors import DialectError


class Address(BaseModel):
    street: str
    city: str | None = None


class Parcel(BaseModel):
    title: str
    weight: int | None = None
    sender: Address | None = None
    kind: Literal["box", "bag"] = "box"
    code: int | str = 0
    when: str = ""


def test_scalars_stay_plain_and_the_rest_goes_as_members() -> None:
    assert property_schema({"type": "string", "enum": ["a"]}) == {"type": "STRING", "enum": ["a"]}
    assert property_schema({"type": "array", "items": {"type": "integer"}}) == {
        "type": "ARRAY",
        "items": {"type": "INTEGER"},
    }
    assert property_schema({"type": ["integer", "null"], "description": "n"}) == {
        "anyOf": [{"type": "INTEGER", "nullable": True, "description": "n"}]
    }
    union = {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}
    assert property_schema(union) == {
        "anyOf": [{"type": "INTEGER", "nullable": True}, {"type": "STRING", "nullable": True}]
    }
    assert property_schema({"type": ["integer", "string"]}) == {
        "anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]
    }


def test_a_model_goes_out_whole_and_as_the_client_forwards_it() -> None:
    sent = transform_for_tools(Parcel.model_json_schema(), "gemini", defaults_apply=True)
    params = sent.schema
    assert params["required"] == ["title"]
    # The client would describe a property named "title" with its schema's text.
    assert params["properties"]["title"] == {"type": "STRING", "description": "the title"}
    (sender,) = params["properties"]["sender"]["anyOf"]
    assert (sender["type"], sender["nullable"], sender["required"]) == ("OBJECT", True, ["street"])
    assert "propertyOrdering" not in str(params)
    check_forwarded(params)  # no error: forwarded as it is
    value = {"title": "t", "sender": {"street": "s"}}
    assert sent.restore(sent.encode(value)) == value


def test_a_form_the_client_would_change_is_refused() -> None:
    pytest.importorskip("langchain_google_genai")
    nested = {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": []}
    changed = {"type": "OBJECT", "properties": {"o": nested}, "required": []}
    with pytest.raises(DialectError, match="would change these tool parameters"):
        check_forwarded(changed)  # the client makes "a" required
    with pytest.raises(DialectError, match="cannot be converted"):
        check_forwarded({"type": "OBJECT", "properties": {"x": {"type": 3}}})


def test_other_dialects_take_the_strict_schema_and_refuse_recursion() -> None:
    schema: dict[str, Any] = Address.model_json_schema()
    sent = transform_for_tools(schema, "openai", defaults_apply=True)
    assert sent.schema["additionalProperties"] is False
    tree = {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    for dialect in ("openai", "gemini"):
        with pytest.raises(DialectError, match="cannot be recursive|recursive definition"):
            transform_for_tools(tree, dialect)  # type: ignore[arg-type]


def test_declaration_parameters_of_an_empty_object() -> None:
    assert declaration_parameters({"type": "object"}) == {
        "type": "OBJECT",
        "properties": {},
        "required": [],
    }
