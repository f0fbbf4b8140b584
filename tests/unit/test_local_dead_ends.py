"""Parts of a schema that no value satisfies, in the embedded model's grammar.

`false`, `{"enum": []}` and the like crashed llama-cpp-python's converter (which
surfaced as "cannot build a grammar", so a valid schema could not be used) or
became an empty rule that llama.cpp refuses. An optional part is now left out of
the grammar, `"items": false` closes the array, and a schema that admits no value
at all is refused with a message naming the part that leaves nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_structx.local import GrammarError, LocalChatModel
from langchain_structx.local._grammar import sanitize_schema, schema_to_gbnf

pytest.importorskip("llama_cpp", reason="the grammar converter ships with llama-cpp-python")

STRING = {"type": "string"}
NOT_AN_OBJECT = ["array", "boolean", "null", "number", "string"]

# Subschemas no value satisfies, with the words the refusal uses for each.
NOTHING = [
    pytest.param(False, "`false`", id="false"),
    pytest.param({"enum": []}, "an empty enum", id="empty-enum"),
    pytest.param({"type": []}, "an empty list of types", id="no-types"),
    pytest.param({"anyOf": []}, "no branch of its anyOf", id="empty-anyOf"),
    pytest.param({"oneOf": [False, {"enum": []}]}, "no branch of its oneOf", id="dead-oneOf"),
    pytest.param({"$ref": "#/$defs/Never"}, r"its \$ref #/\$defs/Never", id="ref-to-false"),
]


def _object(b: Any, **keywords: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"a": STRING, "b": b},
        "$defs": {"Never": False},
        **keywords,
    }


@pytest.mark.parametrize(("nothing", "_"), NOTHING)
def test_an_optional_property_nothing_satisfies_is_left_out(nothing: Any, _: str) -> None:
    schema = _object(nothing)
    before = copy.deepcopy(schema)
    assert schema_to_gbnf(schema) == schema_to_gbnf(_object(STRING) | {"properties": {"a": STRING}})
    assert "b" not in sanitize_schema(schema)["properties"]
    assert schema == before, "the caller's schema must not change"


@pytest.mark.parametrize(("nothing", "words"), NOTHING)
def test_a_required_property_nothing_satisfies_is_refused(nothing: Any, words: str) -> None:
    message = rf"no value: nothing satisfies \$\.properties\.b \(a required property: {words}"
    with pytest.raises(GrammarError, match=message):
        schema_to_gbnf(_object(nothing, required=["b"]))


def test_the_refusal_names_the_path_of_a_nested_required_property() -> None:
    inner = {"type": "object", "properties": {"b": {"enum": []}}, "required": ["b"]}
    schema = {"type": "object", "properties": {"a": inner}, "required": ["a"]}
    with pytest.raises(GrammarError, match=r"nothing satisfies \$\.properties\.a\.properties\.b "):
        schema_to_gbnf(schema)
    # Optional, the object holding it is left out instead.
    del schema["required"]
    assert sanitize_schema(schema)["properties"] == {}


def test_a_required_key_left_to_closed_extra_keys_is_refused() -> None:
    schema = {"type": "object", "properties": {}, "required": ["id"], "additionalProperties": False}
    with pytest.raises(GrammarError, match=r'\$\.additionalProperties \(the required property "id'):
        schema_to_gbnf(schema)


@pytest.mark.parametrize("schema", [False, {"enum": []}, {"anyOf": [False]}, {"type": []}])
def test_a_root_nothing_satisfies_is_refused(schema: Any) -> None:
    with pytest.raises(GrammarError, match=r"the schema admits no value: nothing satisfies \$ "):
        schema_to_gbnf(schema)


def test_the_refusal_comes_before_any_model_call() -> None:
    schema = _object(False, required=["a", "b"])
    response_format = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    with pytest.raises(GrammarError, match="admits no value"):
        LocalChatModel()._request([HumanMessage("hi")], None, {"response_format": response_format})


def test_extra_keys_nothing_satisfies_are_closed() -> None:
    schema = {"type": "object", "properties": {"a": STRING}, "additionalProperties": {"enum": []}}
    assert sanitize_schema(schema)["additionalProperties"] is False
    assert schema_to_gbnf(schema) == schema_to_gbnf({**schema, "additionalProperties": False})


@pytest.mark.parametrize(
    "branches",
    [[False, STRING], [{"enum": []}, STRING], [STRING, {"$ref": "#/$defs/Never"}]],
)
def test_a_branch_nothing_satisfies_is_left_out(branches: list[Any]) -> None:
    schema = _object({"anyOf": branches}, required=["b"])
    assert sanitize_schema(schema)["properties"]["b"] == {"anyOf": [STRING]}
    assert schema_to_gbnf(schema) == schema_to_gbnf(_object({"anyOf": [STRING]}, required=["b"]))


@pytest.mark.parametrize("items", [False, {"enum": []}, {"anyOf": [False]}])
def test_items_nothing_satisfies_leave_only_the_empty_array(items: Any) -> None:
    grammar = schema_to_gbnf({"type": "array", "items": items})
    assert grammar.splitlines() == ['root ::= "[" space  "]" space', 'space ::= " "?']
    with pytest.raises(GrammarError, match=r"nothing satisfies \$ \(it needs 1 item and allows"):
        schema_to_gbnf({"type": "array", "items": items, "minItems": 1})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "prefixItems": [STRING], "items": {"enum": []}},
        {"type": "array", "prefixItems": [STRING, False, STRING]},
        {"type": "array", "items": [STRING, {"enum": []}]},  # a tuple before 2020-12
    ],
)
def test_a_tuple_is_closed_before_the_first_item_nothing_satisfies(schema: dict[str, Any]) -> None:
    closed = {"type": "array", "prefixItems": [STRING], "items": False}
    assert sanitize_schema(schema) == closed
    assert 'root ::= "[" space string "]" space' in schema_to_gbnf(schema).splitlines()
    with pytest.raises(GrammarError, match=r"it needs 2 items and allows at most 1\)"):
        schema_to_gbnf({**schema, "minItems": 2})


@pytest.mark.parametrize(
    ("kind", "left"),
    [(None, NOT_AN_OBJECT), (["object", "null"], "null"), (["array", "object"], "array")],
)
def test_a_part_whose_objects_have_no_value_keeps_its_other_types(kind: Any, left: Any) -> None:
    # JSON Schema reads `properties` and `required` as holding for objects only.
    part: dict[str, Any] = {"properties": {"x": False}, "required": ["x"]}
    if kind is not None:
        part["type"] = kind
    schema = {"type": "object", "properties": {"a": part}, "required": ["a"]}
    assert sanitize_schema(schema)["properties"]["a"] == {"type": left}
    assert schema_to_gbnf(schema) == schema_to_gbnf(
        {"type": "object", "properties": {"a": {"type": left}}, "required": ["a"]}
    )


def test_a_recursive_schema_loses_only_what_nothing_satisfies() -> None:
    tree: dict[str, Any] = {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}, "no": False},
        "required": ["kids"],
    }
    schema = {"$ref": "#/$defs/Tree", "$defs": {"Tree": tree}}
    without = copy.deepcopy(schema)
    del without["$defs"]["Tree"]["properties"]["no"]
    assert schema_to_gbnf(schema) == schema_to_gbnf(without)
