from __future__ import annotations

import copy
from typing import Any

import pytest

from langchain_structx._parsing.parse import Parsed, Repair, coerce
from langchain_structx._schemas.drafts import upgrade


def kinds(parsed: Parsed) -> list[tuple[str, tuple[str | int, ...]]]:
    return [(repair.kind, repair.path) for repair in parsed.repairs]


@pytest.mark.parametrize(
    ("value", "schema", "expected", "kind"),
    [
        ("5", {"type": "integer"}, 5, "coerce_int"),
        (" -12 ", {"type": "integer"}, -12, "coerce_int"),
        (5.0, {"type": "integer"}, 5, "coerce_int"),
        ("5.0", {"type": "integer"}, 5, "coerce_int"),
        ("2.5", {"type": "number"}, 2.5, "coerce_number"),
        ("3", {"type": "number"}, 3, "coerce_number"),
        ("1e3", {"type": "number"}, 1000.0, "coerce_number"),
        ("true", {"type": "boolean"}, True, "coerce_bool"),
        ("No", {"type": "boolean"}, False, "coerce_bool"),
        ("YES", {"type": "boolean"}, True, "coerce_bool"),
        ("FALSE", {"type": "boolean"}, False, "coerce_bool"),
        ("null", {"type": "null"}, None, "coerce_null"),
        ("None", {"type": "null"}, None, "coerce_null"),
        ("x", {"type": "array"}, ["x"], "wrap_array"),
        ({"a": 1}, {"type": "array", "items": {"type": "object"}}, [{"a": 1}], "wrap_array"),
        ("red", {"type": "string", "enum": ["Red", "Green"]}, "Red", "enum_case"),
        ("GREEN", {"enum": ["Red", "Green"]}, "Green", "enum_case"),
        (12, {"type": "string"}, "12", "coerce_string"),
        (2.5, {"type": "string"}, "2.5", "coerce_string"),
    ],
)
def test_each_coercion(value: Any, schema: dict[str, Any], expected: Any, kind: str) -> None:
    parsed = coerce(value, schema)
    assert parsed.value == expected
    assert type(parsed.value) is type(expected)
    assert kinds(parsed) == [(kind, ())]
    assert parsed.repairs[0].detail


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        (5, {"type": "integer"}),
        (5.0, {"type": "number"}),
        (5.0, {"type": ["integer", "number"]}),
        ("5", {"type": ["integer", "string"]}),
        ("null", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        ("null", {"type": ["string", "null"]}),
        ("abc", {"type": "integer"}),
        ("maybe", {"type": "boolean"}),
        ("nan", {"type": "number"}),
        ("inf", {"type": "number"}),
        (True, {"type": "integer"}),
        (True, {"type": "string"}),
        (1, {"type": "boolean"}),
        (None, {"type": "array"}),
        ("blue", {"enum": ["Red", "Green"]}),
        ("Red", {"enum": ["Red", "red"]}),
        ("ok", {}),
        ("ok", True),
    ],
)
def test_values_that_fit_or_cannot_be_fixed_are_left_alone(value: Any, schema: Any) -> None:
    assert coerce(value, schema) == Parsed(value, ())


def test_ambiguous_enum_case_is_not_guessed() -> None:
    assert coerce("red", {"enum": ["Red", "RED"]}) == Parsed("red", ())


def test_nested_paths_and_no_mutation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
        },
    }
    value = {"n": "1", "tags": "7", "pair": ["2", "no"], "scores": {"x": "0.5"}, "other": "3"}
    before = copy.deepcopy(value)
    parsed = coerce(value, schema)
    assert value == before
    assert parsed.value == {
        "n": 1,
        "tags": [7],
        "pair": [2, False],
        "scores": {"x": 0.5},
        "other": "3",
    }
    assert kinds(parsed) == [
        ("coerce_int", ("n",)),
        ("wrap_array", ("tags",)),
        ("coerce_int", ("tags", 0)),
        ("coerce_int", ("pair", 0)),
        ("coerce_bool", ("pair", 1)),
        ("coerce_number", ("scores", "x")),
    ]


def test_draft7_tuple_items() -> None:
    # Coercion reads a variant's schema, which a draft-7 tuple reaches as 2020-12 says it.
    schema = upgrade(
        {"type": "array", "items": [{"type": "integer"}], "additionalItems": {"type": "string"}}
    )
    parsed = coerce(["1", 2], schema)
    assert parsed.value == [1, "2"]
    assert kinds(parsed) == [("coerce_int", (0,)), ("coerce_string", (1,))]


def test_refs_resolve_against_root_and_defs() -> None:
    root = {
        "$defs": {"Color": {"type": "string", "enum": ["Red", "Green"]}},
        "definitions": {"Count": {"type": "integer"}},
    }
    schema = {
        "type": "object",
        "properties": {"c": {"$ref": "#/$defs/Color"}, "n": {"$ref": "#/definitions/Count"}},
    }
    parsed = coerce({"c": "green", "n": "4"}, schema, root=root)
    assert parsed.value == {"c": "Green", "n": 4}
    assert kinds(parsed) == [("enum_case", ("c",)), ("coerce_int", ("n",))]


def test_recursive_schema() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "$ref": "#/$defs/Node",
    }
    parsed = coerce({"v": "1", "kids": [{"v": "2", "kids": {"v": "3"}}]}, schema)
    assert parsed.value == {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}
    assert kinds(parsed) == [
        ("coerce_int", ("v",)),
        ("coerce_int", ("kids", 0, "v")),
        ("wrap_array", ("kids", 0, "kids")),
        ("coerce_int", ("kids", 0, "kids", 0, "v")),
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]},
        {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        {"$ref": "#/$defs/missing"},
        {"$ref": "https://example.org/remote.json"},
    ],
)
def test_ref_cycles_and_unknown_refs_terminate(schema: dict[str, Any]) -> None:
    assert coerce({"a": "1"}, schema) == Parsed({"a": "1"}, ())


def test_union_picks_the_branch_that_fits_after_coercion() -> None:
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}},
                "required": ["kind"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "b"}, "s": {"type": "string"}},
                "required": ["kind"],
            },
        ]
    }
    assert coerce({"kind": "b", "s": 5}, schema) == Parsed(
        {"kind": "b", "s": "5"},
        (Repair("coerce_string", 'converted the number 5 to the string "5"', ("s",)),),
    )
    assert coerce({"kind": "a", "n": 5}, schema) == Parsed({"kind": "a", "n": 5}, ())


def test_one_of_and_all_of() -> None:
    one_of = {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}
    assert kinds(coerce("7", one_of)) == [("coerce_int", ())]
    assert coerce("7", one_of).value == 7
    all_of = {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}]}
    assert coerce({"a": "1"}, all_of).value == {"a": 1}


def test_wrap_array_only_when_the_item_fits() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    assert coerce("abc", schema) == Parsed("abc", ())


def test_coerce_null_only_where_null_is_the_only_option() -> None:
    assert coerce("none", {"type": ["null", "integer"]}).value is None
    assert coerce("none", {"type": ["null", "string"]}).value == "none"


def test_huge_digit_strings_do_not_raise() -> None:
    assert coerce("9" * 5000, {"type": "integer"}).value == "9" * 5000


def test_deep_values_are_bounded() -> None:
    value: Any = "1"
    for _ in range(900):
        value = [value]
    schema = {
        "$defs": {
            "X": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/X"}}]}
        },
        "$ref": "#/$defs/X",
    }
    assert isinstance(coerce(value, schema).value, list)


def test_required_keys_pick_the_union_branch() -> None:
    schema = {
        "oneOf": [
            {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
            {"type": "object", "required": ["b"], "properties": {"b": {"type": "boolean"}}},
        ]
    }
    parsed = coerce({"b": "yes"}, schema)
    assert parsed.value == {"b": True}
    assert kinds(parsed) == [("coerce_bool", ("b",))]


def test_union_members_with_all_of_and_nested_unions() -> None:
    schema = {
        "anyOf": [
            {"allOf": [{"type": "integer"}, {"enum": [1, 2]}]},
            {"anyOf": [{"type": "boolean"}]},
        ]
    }
    assert coerce("2", schema).value == 2
    assert coerce("no", schema).value is False
    assert coerce("7", schema) == Parsed("7", ())


def test_ref_into_a_list_and_unknown_types() -> None:
    root = {"anyOf": [{"type": "integer"}]}
    assert coerce("3", {"$ref": "#/anyOf/0"}, root=root).value == 3
    assert coerce("3", {"type": "decimal"}) == Parsed("3", ())


def test_enum_equality_tells_booleans_from_numbers() -> None:
    assert coerce(1, {"type": ["integer", "boolean"], "enum": [True]}) == Parsed(1, ())
    assert coerce("true", {"enum": [True]}) == Parsed("true", ())


def test_number_overflow_and_non_strings_are_not_coerced() -> None:
    assert coerce("1e999", {"type": "number"}) == Parsed("1e999", ())
    assert coerce(["x"], {"type": "null"}) == Parsed(["x"], ())
    assert coerce({"a": 1}, {"type": "integer"}) == Parsed({"a": 1}, ())
