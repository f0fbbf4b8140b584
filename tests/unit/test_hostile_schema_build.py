"""Hostile schemas are refused, or built faithfully, when a strategy is built.

Each test pins one way a schema used to get past the build and break every reply
(a bare exception, a RecursionError) or be silently changed (a union split that
dropped part of the schema); the fix is a `SchemaError` up front, or a schema
that validates exactly as written.
"""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessage
from pydantic import BaseModel
from typing_extensions import TypedDict

from langchain_structx import ToolStrategy, cli, with_structured_output
from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError, SchemaError
from langchain_structx.limits import Limits
from langchain_structx.testing import ScriptedChatModel, tool_call

A = {"title": "A", "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
UNTITLED_A = {k: v for k, v in A.items() if k != "title"}
B = {"title": "B", "type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}

SAMPLES: list[Any] = [
    {"a": 1},
    {"b": "x"},
    {"a": "one"},
    {"a": 1, "z": 0},
    {"a": 1, "q": 0},
    {"a": 1, "n": {"b": "x"}},
    {"a": 1, "n": {"z": 1}},
    {"c": 1},
    {"c": "x"},
    {"never": 1},
    "text",
    7,
]


def _accepted(schema: dict[str, Any], value: Any) -> bool:
    """Whether any variant of the normalised schema takes `value`."""
    for variant in normalize(schema).variants:
        try:
            variant.validate(value)
        except OutputValidationError:
            continue
        return True
    return False


def _assert_faithful(schema: dict[str, Any]) -> None:
    reference = Draft202012Validator(schema)
    wrong = [v for v in SAMPLES if _accepted(schema, v) != reference.is_valid(v)]
    assert wrong == []


# --- 1. a reference must lead to a schema -----------------------------------------------


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "#/required"}}, "required": ["a"]},
            "array",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/properties/b/minimum"}, "b": {"minimum": 3}},
            },
            "number",
        ),
        ({"title": "T", "type": "object", "properties": {"a": {"$ref": "#/title"}}}, "string"),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/properties/b/const"}, "b": {"const": None}},
            },
            "null",
        ),
    ],
    ids=["list", "number", "string", "null"],
)
def test_a_reference_to_a_value_that_is_not_a_schema_is_a_schema_error(
    schema: dict[str, Any], kind: str
) -> None:
    with pytest.raises(SchemaError, match=f"points at (an? )?{kind}, not at a schema"):
        normalize(schema)


def test_the_error_comes_when_the_runnable_is_built_before_any_model_call() -> None:
    model = ScriptedChatModel(responses=[])
    schema = {"title": "Rec", "type": "object", "properties": {"a": {"$ref": "#/required"}}}
    schema["required"] = ["a"]

    with pytest.raises(SchemaError):
        with_structured_output(model, ToolStrategy(schema, max_retries=0))
    assert model.calls == []


@pytest.mark.parametrize(
    "target",
    [{"type": 5}, {"minimum": "three"}, {"required": 5}, {"properties": {"x": {"type": "nope"}}}],
    ids=["type", "minimum", "required", "nested"],
)
def test_an_invalid_schema_under_an_unknown_keyword_is_refused_when_referenced(
    target: dict[str, Any],
) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/x-s"}}, "x-s": target}

    with pytest.raises(SchemaError, match="a reference leads to .* not a valid schema"):
        normalize(schema)


def test_a_reference_found_inside_a_reference_target_is_checked_too() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/x-s"}},
        "x-s": {"type": "object", "properties": {"b": {"$ref": "#/required"}}},
        "required": ["a"],
    }

    with pytest.raises(SchemaError, match="'#/required'.*points at an array"):
        normalize(schema)


def test_a_valid_schema_outside_the_usual_places_can_be_referenced() -> None:
    schema = {
        "type": "object",
        "properties": {"pet": {"$ref": "#/components/schemas/Pet"}},
        "components": {"schemas": {"Pet": {"type": "object", "required": ["name"]}}},
    }
    variant = normalize(schema).variants[0]

    assert variant.validate({"pet": {"name": "Rex"}}) == {"pet": {"name": "Rex"}}
    with pytest.raises(OutputValidationError, match="'name' is required"):
        variant.validate({"pet": {}})


# --- 2. a union branch that refers to a non-object ---------------------------------------


@pytest.mark.parametrize("target", ["ab", 7, None, [1]], ids=["string", "number", "null", "list"])
def test_a_union_branch_referring_to_a_non_schema_is_a_schema_error(target: Any) -> None:
    schema = {"anyOf": [{"$ref": "#/$defs/x"}, B], "$defs": {"x": target}}

    with pytest.raises(SchemaError):
        normalize(schema)
    with pytest.raises(SchemaError):
        with_structured_output(ScriptedChatModel(responses=[]), schema)


def test_a_union_branch_referring_to_true_keeps_the_schema_whole() -> None:
    schema = {"anyOf": [{"$ref": "#/$defs/x"}, B], "$defs": {"x": True}}

    assert normalize(schema).names == ("response_format",)
    _assert_faithful(schema)


# --- 3. a union is split only when the split keeps its meaning ----------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [A, B], "required": ["z"]},
        {"anyOf": [A, B], "not": {"required": ["a"]}},
        {"oneOf": [A, B], "anyOf": [{"required": ["q"]}, {"required": ["r"]}]},
        {"anyOf": [{**A, "properties": {**A["properties"], "n": {"$ref": "#"}}}, B]},
        {"anyOf": [A, {"$ref": "#/anyOf/0"}]},
        {
            "anyOf": [A, {"type": "object", "properties": {"c": {"$ref": "#/x-c"}}}],
            "x-c": {"type": "integer"},
        },
        {
            "anyOf": [{"type": "object", "properties": {"c": {"$ref": "#c"}}}, B],
            "$defs": {"c": {"$anchor": "c", "type": "integer"}},
        },
        {"type": "object", "anyOf": [{"properties": {"a": {"type": "integer"}}}, B]},
        {"anyOf": [A, B], "$ref": "#/$defs/base", "$defs": {"base": {"required": ["q"]}}},
    ],
    ids=[
        "required",
        "not",
        "second-union",
        "root-ref",
        "branch-ref",
        "unknown-keyword-ref",
        "anchor",
        "type",
        "root-$ref",
    ],
)
def test_a_union_whose_split_would_change_it_stays_one_variant(schema: dict[str, Any]) -> None:
    assert normalize(schema).names == ("response_format",)
    _assert_faithful(schema)


@pytest.mark.parametrize(
    ("ref", "defs", "name"),
    [
        (
            "#/$defs/a~1b",
            {"a/b": UNTITLED_A, "a~1b": {"type": "object", "required": ["never"]}},
            "a_b",
        ),
        (
            "#/$defs/a~0b",
            {"a~b": UNTITLED_A, "a~0b": {"type": "object", "required": ["never"]}},
            "a_b",
        ),
        (
            "#/$defs/a%25b",
            {"a%b": UNTITLED_A, "a%25b": {"type": "object", "required": ["never"]}},
            "a_b",
        ),
        ("#/%24defs/A", {"A": A}, "A"),
    ],
    ids=["tilde-1", "tilde-0", "percent", "percent-keyword"],
)
def test_a_branch_reference_is_decoded_as_a_json_pointer(
    ref: str, defs: dict[str, Any], name: str
) -> None:
    schema = {"anyOf": [{"$ref": ref}, B], "$defs": defs}
    schemas = normalize(schema)

    assert schemas.names[0] == name
    assert schemas.variants[0].validate({"a": 1}) == {"a": 1}
    with pytest.raises(OutputValidationError):
        schemas.variants[0].validate({"never": 1})
    _assert_faithful(schema)


def test_a_branch_reference_with_siblings_keeps_them() -> None:
    schema = {"anyOf": [{"$ref": "#/$defs/A", "required": ["q"]}, B], "$defs": {"A": A}}
    schemas = normalize(schema)

    assert schemas.names == ("A", "B")
    with pytest.raises(OutputValidationError, match="'q' is required"):
        schemas.get("A").validate({"a": 1})
    _assert_faithful(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [A, B]},
        {"title": "U", "description": "one of two", "discriminator": {}, "oneOf": [A, B]},
        {"type": "object", "anyOf": [A, B]},
        {
            "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/definitions/B"}],
            "$defs": {"A": A},
            "definitions": {"B": B},
        },
    ],
    ids=["plain", "annotations", "repeated-type", "refs"],
)
def test_a_union_that_splits_faithfully_is_still_split(schema: dict[str, Any]) -> None:
    assert normalize(schema).names == ("A", "B")
    _assert_faithful(schema)


def test_json_pointers_are_decoded_by_rfc_6901_after_percent_decoding() -> None:
    from langchain_structx._schemas.unions import decode_pointer

    assert decode_pointer("#/$defs/a~01") == ["$defs", "a~1"]
    assert decode_pointer("#/a%2Fb/%7E1") == ["a", "b", "/"]
    assert decode_pointer("#anchor") is None


def test_many_keeps_a_schema_that_refers_only_into_its_definitions() -> None:
    from langchain_structx._cli.schema_input import many

    wrapped = many(
        {"title": "City", "properties": {"at": {"$ref": "#/$defs/P"}}, "$defs": {"P": {}}}
    )

    assert wrapped["$defs"] == {"P": {}}
    assert "$defs" not in wrapped["properties"]["items"]["items"]


# --- 4. chains of subschemas applied in place --------------------------------------------


def _alias_chain(length: int) -> dict[str, Any]:
    defs: dict[str, Any] = {f"a{i}": {"$ref": f"#/$defs/a{i - 1}"} for i in range(1, length + 1)}
    defs["a0"] = {"type": "string"}
    return {
        "title": "Rec",
        "type": "object",
        "properties": {"x": {"$ref": f"#/$defs/a{length}"}},
        "required": ["x"],
        "$defs": defs,
    }


def test_a_long_alias_chain_is_refused_naming_the_bound() -> None:
    with pytest.raises(SchemaError, match="more than 128 subschemas in a row"):
        normalize(_alias_chain(1000))


def test_a_refused_chain_costs_no_model_call() -> None:
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("Rec", {"x": "ok"})])])

    with pytest.raises(SchemaError):
        with_structured_output(model, ToolStrategy(_alias_chain(1000), max_retries=3))
    assert model.calls == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "#"},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {
            "$ref": "#/$defs/a",
            "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
        },
    ],
    ids=["self", "through-anyOf", "two-definitions"],
)
def test_a_reference_loop_that_never_descends_into_the_value_is_refused(
    schema: dict[str, Any],
) -> None:
    with pytest.raises(SchemaError, match="loop validation would never leave"):
        normalize(schema)


def test_a_recursive_schema_that_descends_into_the_value_is_accepted() -> None:
    schema = {
        "$ref": "#/$defs/n",
        "$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}},
    }

    assert normalize(schema).variants[0].validate({"c": {"c": {}}}) == {"c": {"c": {}}}


def _chain_per_level(hops: int) -> dict[str, Any]:
    """A tree node whose child goes through `hops` aliases before being a node again."""
    defs: dict[str, Any] = {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/h0"}}}}
    for i in range(hops):
        defs[f"h{i}"] = {"$ref": f"#/$defs/h{i + 1}" if i + 1 < hops else "#/$defs/n"}
    return {"$ref": "#/$defs/n", "$defs": defs}


# 12,000 reference hops take a few tenths of a second; a loaded machine can take over
# the default one-second budget, and this test is about depth, not time.
_NO_TIME_BOUND = Limits(validation_seconds=600.0)


@pytest.mark.parametrize("depth", [1, 3])
def test_a_chain_within_the_bound_validates_where_the_recursion_limit_allows(depth: int) -> None:
    variant = normalize(_chain_per_level(100)).variants[0]
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"c": value}

    assert variant.validate(value, _NO_TIME_BOUND) == value
    bad: dict[str, Any] = {"c": 5}
    for _ in range(depth - 1):
        bad = {"c": bad}
    with pytest.raises(OutputValidationError, match="is not of type 'object'"):
        variant.validate(bad, _NO_TIME_BOUND)


def test_a_chain_too_long_for_the_recursion_limit_is_an_unfinished_check() -> None:
    # 120 levels of 100 hops need some 30,000 frames; the limit every thread shares
    # is left as it is, so the check stops and says why.
    variant = normalize(_chain_per_level(100)).variants[0]
    value: dict[str, Any] = {}
    for _ in range(120):
        value = {"c": value}
    limit = sys.getrecursionlimit()

    with pytest.raises(OutputValidationError) as info:
        variant.validate(value, _NO_TIME_BOUND)

    (issue,) = info.value.issues
    assert issue.unfinished
    assert "RecursionError" in issue.message
    assert sys.getrecursionlimit() == limit


# --- 5. classes pydantic cannot describe --------------------------------------------------


class _Opaque:
    pass


class _WithCallable(BaseModel):
    f: Callable[[int], int]


@dataclass
class _WithOpaque:
    x: _Opaque


class _Forward(TypedDict):
    x: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


class _StdlibForward(typing.TypedDict):
    x: NotDefinedEither  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize("schema", [_WithCallable, _WithOpaque, _Forward, _StdlibForward])
def test_a_class_pydantic_cannot_describe_is_a_schema_error(schema: Any) -> None:
    with pytest.raises(SchemaError, match="Pydantic cannot describe") as caught:
        with_structured_output(ScriptedChatModel(responses=[]), schema)

    assert caught.value.__cause__ is not None
    assert not isinstance(caught.value.__cause__, SchemaError)


# --- 6. the command line: a bad schema is a usage error -----------------------------------


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(spec: Any) -> Any:
        raise AssertionError("a bad schema must be refused before any model loads")

    monkeypatch.setattr(cli, "load_model", refuse)


@pytest.mark.parametrize(
    "schema",
    [
        None,
        {"type": "object", "properties": {"a": {"$ref": "#/required"}}, "required": ["a"]},
        {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "object"}], "$defs": {"x": "ab"}},
        _alias_chain(1000),
    ],
    ids=["deep-file", "ref-to-list", "branch-ref-to-string", "alias-chain"],
)
def test_a_bad_schema_file_is_a_one_line_usage_error(
    schema: Any, tmp_path: Path, no_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schema.json"
    text = '{"a":' * 150_000 + "1" + "}" * 150_000 if schema is None else json.dumps(schema)
    path.write_text(text)

    code = cli.main(["extract", "--schema", str(path), "text"])

    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert err.startswith("structx: ") and err.count("\n") == 1
    assert "Error:" not in err.split(" ", 2)[1]


def test_many_refuses_a_schema_it_cannot_move_as_a_usage_error(
    no_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = json.dumps({"type": "object", "properties": {"next": {"$ref": "#"}}})

    code = cli.main(["extract", "--schema", schema, "--many", "text"])

    assert code == cli.EXIT_USAGE
    assert "--many cannot wrap this schema" in capsys.readouterr().err
