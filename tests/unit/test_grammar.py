"""Schema sanitising for llama.cpp's grammar converter, and output planning."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from langchain_structx.errors import UserError
from langchain_structx.local._grammar import (
    GrammarError,
    call_schema,
    constrain_output,
    lint_gbnf,
    sanitize_pattern,
    sanitize_schema,
    schema_to_gbnf,
)
from langchain_structx.local._patterns import _ANY_CHAR
from langchain_structx.local._patterns import _NOT_IN_JSON as NOT_IN_JSON

pytest.importorskip("llama_cpp", reason="the grammar converter ships with llama-cpp-python")

# "Any character" in a rewritten pattern is one a JSON string can hold where it stands.
PAD = f"{_ANY_CHAR}*"

TRANSLATED = [
    (r"^\d{3}-\d{4}$", "^([0-9]{3}-[0-9]{4})$"),
    (r"^\d+\.\d+$", r"^([0-9]+[\x2E][0-9]+)$"),
    (r"^[\d\-]{2,}$", r"^([0-9\x2D]{2,})$"),
    (r"^\S+$", rf"^([^ \t\n\r{NOT_IN_JSON}]+)$"),
    (r"^\w+$", "^([A-Za-z0-9_]+)$"),
    (r"^(?:ab|cd)+?$", "^((ab|cd)+)$"),
    (r"^[]a]$", r"^([\x5Da])$"),
    (r"^\u00e9\x41$", r"^([\xE9][\x41])$"),
    ("abc", f"^{PAD}(abc){PAD}$"),
    ("^abc", f"^(abc){PAD}$"),
    (r"x\$", rf"^{PAD}(x[\x24]){PAD}$"),
    ('^[^"]+$', rf"^([^\x22{NOT_IN_JSON}]+)$"),
]

UNSUPPORTED = [
    r"\bword\b",
    "^(?=a)b$",
    "^(?i)a$",
    r"^\p{L}+$",
    r"^(a)\1$",
    "^a{2,x}$",
    "a^b",
    "^a*+$",
    # Characters JSON writes escaped: the grammar would write them as they are,
    # so only broken JSON could match.
    '^a"b$',
    r"^a\\b$",
    r"^a\tb$",
    '^[ab"]+$',
    # Text in JSON Schema's regexes (ECMA-262), a count in Python's.
    "^a{,2}$",
]

SAMPLES = ["555-1234", "55-1234", "1.5", "a-b", "abc", "xabcx", "x$", "ab", "cdab", "", "é"]


@pytest.mark.parametrize(("pattern", "expected"), TRANSLATED)
def test_patterns_are_rewritten(pattern: str, expected: str) -> None:
    assert sanitize_pattern(pattern) == expected


@pytest.mark.parametrize(("pattern", "_"), TRANSLATED)
def test_rewritten_patterns_match_the_same_strings(pattern: str, _: str) -> None:
    safe = sanitize_pattern(pattern)
    assert safe is not None
    for sample in SAMPLES:
        # JSON Schema regexes follow ECMA-262, where \w and \d are ASCII-only.
        expected = bool(re.search(pattern, sample, re.ASCII))
        assert expected == bool(re.fullmatch(safe, sample)), sample


@pytest.mark.parametrize("pattern", UNSUPPORTED)
def test_inexpressible_patterns_are_dropped(pattern: str) -> None:
    assert sanitize_pattern(pattern) is None


@pytest.mark.parametrize("pattern", ["^a|b$", "^ab|c", "a|bc$", "^(a|b)|c$"])
def test_anchors_that_hold_for_one_branch_each_are_dropped(pattern: str) -> None:
    # `^a|b$` is "starts with a, or ends with b": anchoring the whole narrowed it
    # to "a" or "b", so a pattern with `minLength: 3` left no answer at all.
    safe = sanitize_pattern(pattern)
    assert safe is not None and safe.startswith(f"^{PAD}(") and safe.endswith(f"){PAD}$")
    for sample in [*SAMPLES, "abc", "xxb", "cab", "bca"]:
        if re.search(pattern, sample):
            assert re.fullmatch(safe, sample), sample


def test_sanitize_schema_walks_nested_schemas_and_copies() -> None:
    digits = {"type": "string", "pattern": r"^\d+$"}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "pattern": r"\bx"},  # a property named "pattern"
            "list": {"type": "array", "items": dict(digits)},
            "either": {"anyOf": [dict(digits), {"type": "null"}]},
            "ref": {"$ref": "#/$defs/D"},
            "extra": {"type": "object", "additionalProperties": dict(digits)},
        },
        "$defs": {"D": dict(digits)},
    }
    clean = sanitize_schema(schema)
    assert schema["$defs"]["D"]["pattern"] == r"^\d+$", "input must not change"
    assert "pattern" not in clean["properties"]["pattern"]
    assert clean["properties"]["pattern"]["type"] == "string"
    for node in (
        clean["properties"]["list"]["items"],
        clean["properties"]["either"]["anyOf"][0],
        clean["properties"]["extra"]["additionalProperties"],
        clean["$defs"]["def-D"],
    ):
        assert node["pattern"] == "^([0-9]+)$"


def test_schema_to_gbnf_produces_parseable_digit_rules() -> None:
    schema = {
        "type": "object",
        "properties": {"phone": {"type": "string", "pattern": r"^\d{3}-\d{4}$"}},
        "required": ["phone"],
    }
    grammar = schema_to_gbnf(schema)
    assert "[0-9]" in grammar and "\\d" not in grammar


def test_an_empty_items_schema_is_any_value() -> None:
    # LangChain writes `"items": {}` where it cuts a recursive model short; the
    # converter reads an empty `items` as a missing one and fails.
    assert schema_to_gbnf({"type": "array", "items": {}}) == schema_to_gbnf(
        {"type": "array", "items": True}
    )


def _holding(extra: Any, **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"extra": extra}, "required": ["extra"], **keywords}


@pytest.mark.parametrize(
    "shapeless",
    [
        {},  # the converter took it for an object only
        {"title": "Extra", "default": None},  # Pydantic's `Any` field: the converter refused it
        {"description": "Anything.", "minimum": 3},  # a bound on numbers does not make one
        {"format": "email"},
        {"additionalProperties": True},
    ],
)
def test_a_subschema_that_names_no_shape_is_any_value(shapeless: dict[str, Any]) -> None:
    assert schema_to_gbnf(_holding(shapeless)) == schema_to_gbnf(_holding(True))
    extra = {"type": "object", "additionalProperties": shapeless}
    every_type = {"type": ["array", "boolean", "null", "number", "object", "string"]}
    assert schema_to_gbnf(_holding(extra)) == schema_to_gbnf(
        _holding({"type": "object", "additionalProperties": every_type})
    )


@pytest.mark.parametrize(
    "shaped",
    [{"format": "date"}, {"const": 1}, {"enum": [1, 2]}, {"additionalProperties": False}],
)
def test_a_subschema_with_a_shape_keeps_it(shaped: dict[str, Any]) -> None:
    assert sanitize_schema(_holding(shaped))["properties"]["extra"] == shaped


def test_a_pydantic_any_field_builds_a_grammar() -> None:
    class Record(BaseModel):
        name: str
        extra: Any = None

    schema = Record.model_json_schema()
    assert schema["properties"]["extra"] == {"default": None, "title": "Extra"}
    anything = {**schema, "properties": {**schema["properties"], "extra": True}}
    assert schema_to_gbnf(schema) == schema_to_gbnf(anything)


EVERY_TYPE = {"type": ["array", "boolean", "null", "number", "object", "string"]}


@pytest.mark.parametrize(
    ("schema", "opened"),
    [
        # A required key it does not list gets any value.
        (
            {"type": "object", "properties": {}, "required": ["id"]},
            {"type": "object", "properties": {"id": EVERY_TYPE}, "required": ["id"]},
        ),
        # More keys wanted than it lists, or keys `patternProperties` allows: extra keys.
        (
            {"type": "object", "properties": {}, "minProperties": 1},
            {
                "type": "object",
                "properties": {},
                "minProperties": 1,
                "additionalProperties": EVERY_TYPE,
            },
        ),
        (
            {"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False},
            {
                "type": "object",
                "patternProperties": {"^x": EVERY_TYPE},
                "additionalProperties": EVERY_TYPE,
            },
        ),
        # The converter reads `true` as "object values" and `*` as its marker.
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            {"type": "object", "properties": {}, "additionalProperties": EVERY_TYPE},
        ),
        (
            {"type": "object", "properties": {"*": {"type": "string"}}},
            {"type": "object", "properties": {}, "additionalProperties": EVERY_TYPE},
        ),
        # A tuple of another length than the one the converter writes.
        (
            {"type": "array", "prefixItems": [{"type": "string"}] * 2, "maxItems": 1},
            {"type": "array", "items": EVERY_TYPE, "maxItems": 1},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
            {"type": "array", "items": EVERY_TYPE},
        ),
    ],
)
def test_what_the_converter_would_close_is_opened(
    schema: dict[str, Any], opened: dict[str, Any]
) -> None:
    assert sanitize_schema(schema) == opened


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {}, "additionalProperties": False},
        {"type": "array", "prefixItems": [{"type": "string"}] * 2, "minItems": 2},
    ],
)
def test_what_the_converter_writes_as_the_schema_says_is_kept(schema: dict[str, Any]) -> None:
    assert sanitize_schema(schema) == schema


def test_the_root_keeps_its_form() -> None:
    # JSON mode sends `{}` as the root and wants an object there.
    assert sanitize_schema({}) == {}


def test_not_is_left_out_of_the_grammar() -> None:
    schema = {"type": "object", "properties": {"a": {"not": {"type": "null"}}}, "required": ["a"]}
    assert "not" not in sanitize_schema(schema)["properties"]["a"]
    grammar = schema_to_gbnf(schema)
    assert "root ::=" in grammar
    assert schema["properties"]["a"] == {"not": {"type": "null"}}  # the caller's is untouched


def test_schema_to_gbnf_wraps_converter_errors() -> None:
    with pytest.raises(GrammarError, match="cannot build a grammar"):
        schema_to_gbnf({"$ref": "elsewhere.json"})


@pytest.mark.parametrize("bad", [r'root ::= "\d"', r"root ::= [\w]", r'root ::= "\b"'])
def test_lint_rejects_escapes_llama_cpp_cannot_parse(bad: str) -> None:
    with pytest.raises(GrammarError, match="escape"):
        lint_gbnf(bad)


def test_lint_accepts_valid_escapes() -> None:
    good = r'root ::= "\"" [\x41\u00e9\U0001F600\t\n\r\\\[\]] "\""'
    assert lint_gbnf(good) == good


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet='\\dwsSDbx.^$[]()|{}*+?-,:a1"', max_size=14))
def test_any_pattern_yields_a_lintable_grammar(pattern: str) -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": pattern}}}
    lint_gbnf(schema_to_gbnf(schema))


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


def test_a_list_of_objects_keeps_its_properties_as_they_are() -> None:
    # The walk took `items` (one subschema) for a map of subschemas, so an object's
    # `properties` map was read as a subschema, and given a `type` of its own.
    line = {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}
    schema = {
        "type": "object",
        "properties": {"lines": {"type": "array", "items": line}},
        "required": ["lines"],
    }
    assert sanitize_schema(schema) == schema
