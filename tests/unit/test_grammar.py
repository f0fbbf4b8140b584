"""Which constraint a request needs: free text, a forced tool call, or a JSON schema."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_structx.errors import UserError
from langchain_structx.local._grammar import call_schema, constrain_output

TOOLS = [
    {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
]


@pytest.mark.parametrize(
    ("choice", "mode", "names"),
    [
        (None, "auto_tool", ["a", "b"]),
        ("auto", "auto_tool", ["a", "b"]),
        ("none", "text", []),
        ("any", "forced_tool", ["a", "b"]),
        ("required", "forced_tool", ["a", "b"]),
        (True, "forced_tool", ["a", "b"]),
        ("b", "forced_tool", ["b"]),
        ({"type": "function", "function": {"name": "a"}}, "forced_tool", ["a"]),
    ],
)
def test_tool_choice_modes(choice: Any, mode: str, names: list[str]) -> None:
    constraint = constrain_output(TOOLS, choice, None)
    assert constraint.mode == mode
    assert [t["function"]["name"] for t in constraint.tools] == names


def test_forced_schema_is_name_and_arguments() -> None:
    single = call_schema((TOOLS[0],))
    assert single["properties"]["name"] == {"const": "a"}
    assert single["required"] == ["name", "arguments"]
    assert len(call_schema(tuple(TOOLS))["anyOf"]) == 2


@pytest.mark.parametrize(
    ("fmt", "schema"),
    [
        ({"type": "json_object"}, {"type": "object"}),
        ({"type": "json_object", "schema": {"type": "array"}}, {"type": "array"}),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string"}}},
            {"type": "string"},
        ),
    ],
)
def test_response_formats(fmt: dict[str, Any], schema: dict[str, Any]) -> None:
    constraint = constrain_output(None, None, fmt)
    assert (constraint.mode, constraint.schema) == ("json", schema)


def test_forced_tool_wins_over_response_format() -> None:
    assert constrain_output(TOOLS, "a", {"type": "json_object"}).mode == "forced_tool"
    assert constrain_output(TOOLS, "auto", {"type": "json_object"}).mode == "json"
    assert constrain_output(None, None, {"type": "text"}).mode == "text"


@pytest.mark.parametrize(
    ("tools", "choice", "fmt", "message"),
    [
        (TOOLS, "missing", None, "not among the bound tools"),
        (None, "any", None, "no tools are bound"),
        (TOOLS, {"type": "function"}, None, "does not name a tool"),
        (None, None, {"type": "xml"}, "unsupported response_format"),
        (None, None, {"type": "json_schema"}, "json_schema.schema"),
        (None, None, "json", "must be a dict"),
    ],
)
def test_misuse_is_a_user_error(tools: Any, choice: Any, fmt: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        constrain_output(tools, choice, fmt)
