"""Focused tests of the dialect transforms: edge cases, codecs, errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from langchain_structx.dialects import Transformed, transform
from langchain_structx.errors import DialectError, UserError

DIALECTS = ("openai", "anthropic", "gemini")


def round_trip(t: Transformed, value: Any) -> None:
    encoded = t.encode(value)
    Draft202012Validator(t.schema).validate(encoded)
    assert t.restore(encoded) == value


def test_unknown_dialect_is_a_user_error() -> None:
    with pytest.raises(UserError, match="Unknown dialect"):
        transform({"type": "string"}, "mistral")  # type: ignore[arg-type]


def test_schema_must_be_a_mapping() -> None:
    with pytest.raises(UserError, match="must be a mapping"):
        transform(["type"], "openai")  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_boolean_root_schemas(dialect: Any) -> None:
    t = transform(True, dialect)
    assert t.wrapped
    round_trip(t, {"any": [1, None]})
    with pytest.raises(DialectError, match="accepts no value"):
        transform(False, dialect)


def test_input_is_never_mutated() -> None:
    schema = {
        "$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "allOf": [{"$ref": "#/$defs/A"}, {"properties": {"y": {"type": "string"}}}],
    }
    before = copy.deepcopy(schema)
    for dialect in DIALECTS:
        transform(schema, dialect)
    assert schema == before


def test_external_and_broken_references_raise() -> None:
    with pytest.raises(DialectError, match="points outside"):
        transform({"$ref": "https://example.com/s.json"}, "openai")
    with pytest.raises(DialectError, match="cannot be resolved"):
        transform({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, "openai")


def test_required_false_property_raises() -> None:
    schema = {"type": "object", "properties": {"a": False}, "required": ["a"]}
    with pytest.raises(DialectError, match="accepts no value"):
        transform(schema, "openai")


def test_all_of_with_false_member_raises() -> None:
    with pytest.raises(DialectError, match="allOf member"):
        transform({"allOf": [{"type": "string"}, False]}, "openai")


def test_empty_enum_after_filtering_raises() -> None:
    with pytest.raises(DialectError, match="no value satisfies"):
        transform({"type": "string", "enum": [1, 2]}, "openai")


def test_inlining_budget() -> None:
    defs = {
        f"D{i}": {"type": "array", "items": {"anyOf": [{"$ref": f"#/$defs/D{i + 1}"}] * 4}}
        for i in range(12)
    }
    defs["D12"] = {"type": "string"}
    with pytest.raises(DialectError, match="more than"):
        transform({"$defs": defs, "$ref": "#/$defs/D0"}, "gemini")


def test_restore_leaves_unexpected_shapes_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "t": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            "j": {},
            "u": {
                "anyOf": [
                    {"type": "object"},
                    {"type": "array", "prefixItems": [{"type": "integer"}]},
                ]
            },
        },
    }
    t = transform(schema, "openai")
    assert t.restore("nope") == "nope"
    odd = {"m": [{"no_key": 1}], "t": 5, "j": "{not json", "u": 3.5, "zzz": 1}
    assert t.restore(odd) == {"m": [{"no_key": 1}], "t": 5, "j": "{not json", "u": 3.5, "zzz": 1}
    assert t.restore({"m": "x", "t": None, "j": 4, "u": None}) == {"m": "x", "j": 4}
    assert transform({"type": "array"}, "openai").restore([1]) == [1]


def test_json_text_keeps_enum_spelling() -> None:
    t = transform({"enum": [1, "1", True, {"a": 1}]}, "openai")
    assert t.schema["properties"]["value"]["enum"] == ["1", '"1"', "true", '{"a":1}']
    for member in (1, "1", True, {"a": 1}, 1.0):
        round_trip(t, member)
    assert t.encode(1.0) == {"value": "1"}


def test_union_prefers_the_member_that_round_trips() -> None:
    a = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    b = {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}, "required": ["a"]}
    t = transform({"anyOf": [a, b]}, "openai")
    for value in ({}, {"a": 1}, {"a": None}):
        round_trip(t, value)


def test_marker_name_avoids_collisions() -> None:
    inner = {"type": "object", "properties": {"explicit_null": {"type": "boolean"}}}
    schema = {"type": "object", "properties": {"v": {"anyOf": [inner, {"type": "null"}]}}}
    t = transform(schema, "openai")
    marker = t.schema["properties"]["v"]["anyOf"][-1]
    assert list(marker["properties"]) == ["_explicit_null"]
    for value in ({}, {"v": None}, {"v": {"explicit_null": True}}):
        round_trip(t, value)


def test_extra_properties_key_avoids_collisions() -> None:
    schema = {
        "type": "object",
        "properties": {"extra_properties": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    }
    t = transform(schema, "anthropic")
    assert "_extra_properties" in t.schema["properties"]
    round_trip(t, {"extra_properties": "x", "n": 1})


def test_repeated_map_key_keeps_last_value() -> None:
    t = transform({"type": "object", "additionalProperties": {"type": "integer"}}, "openai")
    assert t.restore({"value": [{"key": "a", "value": 1}, {"key": "a", "value": 2}]}) == {"a": 2}


def test_definitions_named_like_keywords_survive() -> None:
    schema = {
        "type": "object",
        "properties": {"definitions": {"type": "string"}, "$defs": {"type": "integer"}},
        "definitions": {"X": {"type": "string"}},
        "$defs": {"X": {"type": "integer"}},
        "required": ["definitions"],
    }
    t = transform(schema, "openai")
    assert list(t.schema["properties"]) == ["definitions", "$defs"]
    carried = transform(schema, "openai", carry_undeclared=True)
    assert list(carried.schema["properties"]) == ["definitions", "$defs", "extra_properties"]


def test_reference_to_both_definition_tables() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/X"}, "b": {"$ref": "#/$defs/X"}},
        "required": ["a", "b"],
        "definitions": {"X": {"type": "string"}},
        "$defs": {
            "X": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        },
    }
    t = transform(schema, "openai")
    assert set(t.schema["$defs"]) == {"X", "X_2"}
    round_trip(t, {"a": "s", "b": {"n": 1}})


def test_escaped_pointer_reference() -> None:
    schema = {
        "type": "object",
        "properties": {"a/b": {"type": "integer"}, "c": {"$ref": "#/properties/a~1b"}},
        "required": ["a/b", "c"],
    }
    t = transform(schema, "anthropic")
    assert t.schema["properties"]["c"] == {"$ref": "#/$defs/a_b"}
    round_trip(t, {"a/b": 1, "c": 2})


def test_oneof_of_tagged_members_loses_nothing() -> None:
    tag = lambda v: {"type": "object", "properties": {"k": {"const": v}}, "required": ["k"]}  # noqa: E731
    tagged = transform({"oneOf": [tag("a"), tag("b")]}, "openai")
    assert not any("oneOf" in line for line in tagged.dropped)
    plain = transform({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "openai")
    assert any("oneOf" in line for line in plain.dropped)


def test_dropped_lines_and_descriptions() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "string", "minLength": 2, "description": "Name"}},
    }
    t = transform(schema, "openai")
    assert t.dropped == ("$.properties.n: minLength 2 (enforced by validation)",)
    assert t.schema["properties"]["n"] == {
        "type": ["string", "null"],
        "description": "Name (minLength: 2)",
    }


def test_long_values_are_shortened_in_dropped() -> None:
    t = transform({"type": "string", "pattern": "a" * 200}, "gemini")
    assert t.dropped[0].endswith("... (enforced by validation)")


def test_conflicting_all_of_keywords_are_described() -> None:
    t = transform({"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "z$"}]}, "openai")
    assert t.dropped == ('$: allOf pattern "z$" (enforced by validation)',)
    assert t.schema["properties"]["value"]["pattern"] == "^a"


def test_merge_rules() -> None:
    t = transform(
        {
            "allOf": [
                {
                    "type": ["number", "string"],
                    "minimum": 1,
                    "maxItems": 4,
                    "items": {"type": "integer"},
                },
                {"type": "integer", "minimum": 3, "maxItems": 2, "items": {"minimum": 0}},
                {"dependentRequired": {"a": ["b"]}},
                {"dependentRequired": {"a": ["c"], "d": ["e"]}},
            ]
        },
        "openai",
    )
    value = t.schema["properties"]["value"]
    assert value["type"] == "integer" and value["minimum"] == 3
    assert any("dependentRequired" in line and '"a":["b","c"]' in line for line in t.dropped)


def test_type_conflict_in_all_of_is_described() -> None:
    t = transform({"allOf": [{"type": "string"}, {"type": "integer"}]}, "openai")
    assert any("allOf type" in line for line in t.dropped)


def test_large_union_product_is_described() -> None:
    many = [{"const": i} for i in range(10)]
    t = transform({"allOf": [{"anyOf": many}, {"anyOf": many}]}, "openai")
    assert any("allOf anyOf" in line for line in t.dropped)


def test_untyped_constraints_are_described() -> None:
    t = transform(
        {"type": "object", "properties": {"v": {"minimum": 3}}, "required": ["v"]}, "openai"
    )
    assert t.schema["properties"]["v"]["type"] == "string"
    round_trip(t, {"v": "anything"})


def test_enum_of_null_only_and_const_null() -> None:
    t = transform({"enum": [None]}, "gemini")
    round_trip(t, None)


def test_gemini_enums_become_strings() -> None:
    t = transform({"type": "object", "properties": {"n": {"enum": [1, 2, None]}}}, "gemini")
    assert t.schema["properties"]["n"] == {
        "anyOf": [{"type": "string", "enum": ["1", "2"]}, {"type": "null"}],
        "description": "(each option is written as JSON text)",
    }
    for value in ({}, {"n": 1}, {"n": None}):
        round_trip(t, value)


@pytest.mark.parametrize(
    "module",
    ["dialects", "_dialects.codecs", "_dialects.jsonvalues", "_dialects.merge"]
    + ["_dialects.traversal", "_dialects.refs", "_dialects.shapes", "_dialects.openai"]
    + ["_dialects.anthropic", "_dialects.checks"],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    found = doctest.testmod(importlib.import_module(f"langchain_structx.{module}"))
    assert found.failed == 0
    assert found.attempted > 0


def test_a_pydantic_map_of_patterned_keys_is_sent_closed() -> None:
    # Pydantic writes `dict[constr(pattern=...), int]` as `patternProperties`
    # alone, and refuses any other key; it was sent with a branch for other keys
    # holding any JSON value, so a reply the provider allowed failed every time.
    import json

    from pydantic import BaseModel, constr

    from langchain_structx._request.plan import build_plan
    from langchain_structx.strategies import ProviderStrategy

    class Scores(BaseModel):
        m: dict[constr(pattern=r"^[a-z]+$"), int]  # type: ignore[valid-type]

    json_map = {
        "title": "Scores",
        "type": "object",
        "properties": {
            "m": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}}
        },
        "required": ["m"],
    }
    for dialect in ("openai", "anthropic", "gemini"):
        sent = build_plan(ProviderStrategy(Scores, strict=True)).transformed(dialect)
        entries = sent.schema["properties"]["m"]["items"]
        assert "anyOf" not in entries and "JSON text" not in json.dumps(entries)
        assert sent.restore({"m": [{"key": "ab", "value": 3}]}) == {"m": {"ab": 3}}
        # A JSON schema's map that says nothing of other keys is closed to them too.
        plain_map = build_plan(ProviderStrategy(json_map, strict=True)).transformed(dialect)
        assert "anyOf" not in plain_map.schema["properties"]["m"]["items"]
        # Other keys travel where the schema admits them in so many words.
        json_map["properties"]["m"]["additionalProperties"] = True  # type: ignore[index]
        open_map = build_plan(ProviderStrategy(json_map, strict=True)).transformed(dialect)
        assert len(open_map.schema["properties"]["m"]["items"]["anyOf"]) == 2
        del json_map["properties"]["m"]["additionalProperties"]  # type: ignore[attr-defined]
