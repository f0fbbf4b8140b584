"""Definitions lifted to the root for the grammar converter keep the schema's meaning."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from langchain_structx.local import LocalChatModel
from langchain_structx.local._definitions import has_local_refs, lift, lifted, refers_to_itself
from langchain_structx.local._grammar import GrammarError, call_schema, schema_to_gbnf


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
def test_a_lifted_schema_accepts_exactly_what_the_original_accepts(name: str) -> None:
    schema, good, bad = SCHEMAS[name]
    flat = lifted(schema)
    assert set(flat) - {"$defs"} and "definitions" not in flat
    for instance in good:
        assert _valid(instance, schema) and _valid(instance, flat), instance
    for instance in bad:
        assert not _valid(instance, schema) and not _valid(instance, flat), instance


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


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_converter_builds_a_grammar_for_each_form(name: str) -> None:
    schema, *_ = SCHEMAS[name]
    tool = {"type": "function", "function": {"name": "tool", "parameters": schema}}
    for form in (schema, call_schema((tool,))):
        grammar = schema_to_gbnf(form)
        assert "root ::=" in grammar


def test_nested_definitions_become_rules_of_the_forced_call() -> None:
    tool = {"type": "function", "function": {"name": "Person", "parameters": SCHEMAS["nested"][0]}}
    grammar = schema_to_gbnf(call_schema((tool,)))
    assert 'arguments0-Address-city-kv ::= "\\"city\\"" space ":" space string' in grammar


def test_a_schema_without_references_is_left_as_it_is() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "t", "parameters": schema}}
    assert not has_local_refs(schema)
    assert lifted(schema) is schema
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
    with pytest.raises(GrammarError, match="cannot build a grammar"):
        schema_to_gbnf(call_schema((tool,)))


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


def test_a_recursive_tool_schema_reaches_the_grammar_with_its_references() -> None:
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
    # LangChain's conversion would leave the grammar `"items": {}` for the kids.
    parameters = _bound(tool)
    tree = parameters if tool is Tree else parameters["properties"]["tree"]
    bad_kid = {"label": "root", "kids": [{"kids": 5}]}
    grammar_schema = call_schema(({"function": {"name": "t", "parameters": parameters}},))
    arguments = bad_kid if tool is Tree else {"tree": bad_kid}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "t", "arguments": arguments}, grammar_schema)
    assert "$ref" in str(tree)
