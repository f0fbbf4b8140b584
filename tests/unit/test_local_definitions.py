"""Schemas with references, and tools whose definitions are lifted into the forced call."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from langchain_structx.local import LocalChatModel
from langchain_structx.local._definitions import has_local_refs, lift, refers_to_itself
from langchain_structx.local._grammar import GrammarError, call_schema
from langchain_structx.local._guidance import compiled

pytest.importorskip("llguidance", reason="the decoder ships with the local extra")

from byte_tokenizer import accepts, byte_tokenizer  # noqa: E402 - after the skip


class Address(BaseModel):
    city: str


class Person(BaseModel):
    name: str
    home: Address
    earlier: list[Address] = []


class Tree(BaseModel):
    label: str
    kids: list[Tree] = []


CHAIN = {  # refers to itself from the root, and to a definition by a deeper path
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "next": {"$ref": "#"},
        "unit": {"$ref": "#/definitions/Unit/properties/name"},
    },
    "required": ["value"],
    "definitions": {"Unit": {"type": "object", "properties": {"name": {"enum": ["m", "s"]}}}},
}

BOTH_HOMES = {  # one name defined twice, once in each place definitions may live
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/Id"}, "b": {"$ref": "#/definitions/Id"}},
    "required": ["a", "b"],
    "$defs": {"Id": {"type": "integer"}},
    "definitions": {"Id": {"type": "string"}},
}

SCHEMAS = {
    "nested": (
        Person.model_json_schema(),
        [
            {"name": "Ada", "home": {"city": "Oslo"}},
            {"name": "Ada", "home": {"city": "Oslo"}, "earlier": [{"city": "Rome"}]},
        ],
        [{"name": "Ada"}, {"name": "Ada", "home": {"city": 3}}, {"name": "Ada", "home": {}}],
    ),
    "self-referring": (
        Tree.model_json_schema(),
        [{"label": "a"}, {"label": "a", "kids": [{"label": "b", "kids": [{"label": "c"}]}]}],
        [{"label": "a", "kids": [{"kids": []}]}, {"label": "a", "kids": [{"label": 1}]}],
    ),
    "root and deep paths": (
        CHAIN,
        [{"value": 1}, {"value": 1, "next": {"value": 2, "unit": "m"}}],
        [{"value": 1, "next": {}}, {"value": 1, "unit": "km"}, {"value": 1, "next": {"unit": 2}}],
    ),
    "a name in both homes": (
        BOTH_HOMES,
        [{"a": 1, "b": "x"}],
        [{"a": "x", "b": "x"}, {"a": 1, "b": 1}, {"a": 1}],
    ),
}


def _valid(instance: Any, schema: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator(schema)
    return validator.is_valid(instance)


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_decoder_writes_exactly_what_the_schema_accepts(name: str) -> None:
    schema, good, bad = SCHEMAS[name]
    tokenizer = byte_tokenizer()
    tool = {"type": "function", "function": {"name": "tool", "parameters": schema}}
    call = call_schema((tool,))
    for instance in good:
        assert _valid(instance, schema) and accepts(tokenizer, schema, instance), instance
        assert accepts(tokenizer, call, {"name": "tool", "arguments": instance}), instance
    for instance in bad:
        assert not _valid(instance, schema), instance
        assert not accepts(tokenizer, schema, instance), instance
        assert not accepts(tokenizer, call, {"name": "tool", "arguments": instance}), instance


@pytest.mark.parametrize("name", SCHEMAS)
def test_a_forced_call_takes_exactly_the_arguments_the_tool_takes(name: str) -> None:
    schema, good, bad = SCHEMAS[name]
    other, *_ = SCHEMAS["nested"]
    tools = (
        {"type": "function", "function": {"name": "first", "parameters": other}},
        {"type": "function", "function": {"name": "second", "parameters": schema}},
    )
    call = call_schema(tools)
    for instance in good:
        assert _valid({"name": "second", "arguments": instance}, call), instance
    for instance in bad:
        assert not _valid({"name": "second", "arguments": instance}, call), instance
    # The first tool's definitions are its own, though both may name one alike.
    assert _valid({"name": "first", "arguments": {"name": "A", "home": {"city": "B"}}}, call)
    assert not _valid({"name": "first", "arguments": {"label": "a"}}, call)


def test_a_schema_without_references_is_left_as_it_is() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "t", "parameters": schema}}
    assert not has_local_refs(schema)
    assert call_schema((tool,))["properties"]["arguments"] is schema


def test_lifting_leaves_the_callers_schema_unchanged() -> None:
    schema = Tree.model_json_schema()
    before = repr(schema)
    body, definitions = lift(schema, "p-")
    assert repr(schema) == before
    assert set(definitions) == {"p-Tree"}
    assert body == {"$ref": "#/$defs/p-Tree"}


def test_a_reference_outside_the_schema_still_fails_typed() -> None:
    tool = {"type": "function", "function": {"name": "t", "parameters": {"$ref": "other.json"}}}
    with pytest.raises(GrammarError, match="other.json"):
        compiled(call_schema((tool,)))


def test_a_hostile_tool_schema_is_refused_before_it_is_copied() -> None:
    loop: dict[str, Any] = {"type": "object"}
    loop["properties"] = {"self": loop}
    tool = {"type": "function", "function": {"name": "t", "parameters": loop}}
    with pytest.raises(GrammarError, match="contains itself"):
        call_schema((tool,))


MUTUAL = {
    "$ref": "#/$defs/A",
    "$defs": {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
    },
}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (Tree.model_json_schema(), True),
        (CHAIN, True),
        (MUTUAL, True),
        (Person.model_json_schema(), False),
        (BOTH_HOMES, False),
        ({"type": "object"}, False),
    ],
    ids=["self", "root", "mutual", "nested", "two-homes", "plain"],
)
def test_refers_to_itself(schema: dict[str, Any], expected: bool) -> None:
    assert refers_to_itself(schema) is expected


def _bound_parameters(schema: dict[str, Any]) -> Any:
    tool = StructuredTool(name="t", description="d", args_schema=schema, func=lambda **_: "")
    bound = LocalChatModel().bind_tools([tool], tool_choice="t")
    return bound.kwargs["tools"][0]["function"]["parameters"]  # type: ignore[attr-defined]


def test_a_recursive_tool_schema_reaches_the_decoder_with_its_references() -> None:
    # LangChain's own conversion would cut the recursion short ("items": {}).
    schema = Tree.model_json_schema()
    assert _bound_parameters(schema) == schema


def test_a_tool_schema_without_recursion_is_converted_as_langchain_does() -> None:
    parameters = _bound_parameters(Person.model_json_schema())
    assert "$defs" not in parameters
    assert parameters["properties"]["home"]["properties"]["city"]["type"] == "string"


def test_a_hostile_tool_schema_is_refused_before_langchain_converts_it() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(5_000):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(GrammarError, match="nested deeper than"):
        _bound_parameters(deep)


def test_crowded_names_cost_one_try_each() -> None:
    # Definitions named like the key the body would take: the free name is found
    # in one pass over them, and stays short.
    taken = {"document": {"type": "string"}, **{f"document_{i}": {} for i in range(2, 3000)}}
    schema = {"type": "array", "items": {"$ref": "#"}, "$defs": taken}
    body, definitions = lift(schema, "")
    assert body["items"] == {"$ref": "#/$defs/document_3000"}
    assert definitions["document_3000"] is body


def _bound(tool: Any) -> Any:
    bound = LocalChatModel().bind_tools([tool], tool_choice="any")
    return bound.kwargs["tools"][0]["function"]["parameters"]  # type: ignore[attr-defined]


def plant(tree: Tree) -> str:
    """Plant a tree."""
    return tree.label


@pytest.mark.parametrize(
    "tool", [Tree, StructuredTool.from_function(plant)], ids=["model", "tool-taking-one"]
)
def test_a_recursive_pydantic_tool_keeps_its_references(tool: Any) -> None:
    # LangChain's conversion would leave the decoder `"items": {}` for the kids.
    parameters = _bound(tool)
    tree = parameters if tool is Tree else parameters["properties"]["tree"]
    bad_kid = {"label": "root", "kids": [{"kids": 5}]}
    grammar_schema = call_schema(({"function": {"name": "t", "parameters": parameters}},))
    arguments = bad_kid if tool is Tree else {"tree": bad_kid}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "t", "arguments": arguments}, grammar_schema)
    assert "$ref" in str(tree)
