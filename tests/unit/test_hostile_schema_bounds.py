"""Hostile schemas and replies that used to slip past the validation layer's bounds.

- A subschema's `$schema` no longer switches to jsonschema's stock validator (which
  ran `pattern` in `re`, with no deadline, and none of our keywords).
- The pattern checks and the `patternProperties` + `unevaluatedProperties` ban cover
  every subschema validation can reach, `$ref` targets under unknown keywords too.
- The lists the meta-schema would compare pair by pair (`type`, `required`, ...)
  are checked in one pass first, and compiling patterns has a bounded cost.
- `format` checks never run on strings too long to check in time.

Each hostile case here took seconds to minutes (or gigabytes) before; the tests
assert the typed outcome, never the time.
"""

from __future__ import annotations

from typing import Any

import pytest

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError, SchemaError
from langchain_structx.limits import DEFAULT_LIMITS, Limits

DRAFT_7 = "http://json-schema.org/draft-07/schema#"

EVIL = r"^(?=a)(a|aa)+$"
"""Backtracks exponentially on 'aaaa...ab'; the look-ahead keeps it out of RE2."""

SLOW_KEY = "a" * 32 + "b"

CLASSIC = r"^(a+)+$"
"""Exponential in Python's `re` ('a' * 30 + '!': about a minute), linear in RE2."""

IPV6 = (
    r"(([0-9a-fA-F]{1,4}:){7,7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|"
    r"([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|"
    r"::(ffff(:0{1,4}){0,1}:){0,1}((25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9])\.){3,3}"
    r"(25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9]))"
)
"""A long regex with several counted groups, as a model may well write one."""


def _outcome(schema: Any, value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """Validate and say how it ended: "value", or the error's text."""
    variant = normalize(schema).variants[0]
    try:
        variant.validate(value, limits)
    except OutputValidationError as exc:
        return str(exc)
    return "value"


def _object(**properties: Any) -> dict[str, Any]:
    return {"title": "Rec", "type": "object", "properties": properties}


# --- 1. a subschema's $schema keeps the bounded validator -------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        _object(a={"$schema": DRAFT_7, "type": "string", "pattern": EVIL}),
        {
            "$schema": DRAFT_7,
            "type": ["object", "string"],
            "properties": {"a": {"$ref": "#"}},
            "pattern": EVIL,
        },
        _object(a={"$ref": "#/$defs/old"})
        | {"$defs": {"old": {"$schema": DRAFT_7, "pattern": EVIL}}},
    ],
    ids=["nested", "reference-to-a-draft-7-root", "definition"],
)
def test_a_pattern_under_another_draft_still_has_the_deadline(schema: dict[str, Any]) -> None:
    outcome = _outcome(schema, {"a": SLOW_KEY}, Limits(validation_seconds=0.3))

    assert f"could not be checked against the pattern {EVIL!r} within 0.3 s" in outcome


def test_a_pattern_under_another_draft_runs_in_re2() -> None:
    schema = _object(a={"$schema": DRAFT_7, "type": "string", "pattern": CLASSIC})

    outcome = _outcome(schema, {"a": "a" * 30 + "!"})

    assert outcome.endswith(f"'{'a' * 30}!' does not match {CLASSIC!r}")


def test_keywords_under_another_draft_are_ours() -> None:
    schema = _object(a={"$schema": DRAFT_7, "type": "object", "additionalProperties": False})

    outcome = _outcome(schema, {"a": {f"k{i:02}": 1 for i in range(50)}})

    assert "'k00', 'k01', 'k02' and 47 more were unexpected" in outcome


def test_a_subschema_under_another_draft_still_validates() -> None:
    schema = _object(a={"$schema": DRAFT_7, "type": "integer", "maximum": 3})

    assert _outcome(schema, {"a": 2}) == "value"
    assert "4 is greater than the maximum of 3" in _outcome(schema, {"a": 4})


# --- 2. reference targets get the pattern checks ---------------------------------------


BAN = "may not combine patternProperties with unevaluatedProperties"


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "$ref": "#/x-hidden",
            "x-hidden": {"patternProperties": {CLASSIC: {}}, "unevaluatedProperties": False},
        },
        {
            "type": "object",
            "patternProperties": {"^a": {}},
            "properties": {"b": {"$ref": "#/x-hidden"}},
            "x-hidden": {"unevaluatedProperties": False},
        },
        {
            "$ref": "#/x-one",
            "x-one": {"$ref": "#/x-two/deeper"},
            "x-two": {"deeper": {"patternProperties": {"^a": {}}, "unevaluatedProperties": {}}},
        },
        {
            "$ref": "#/const",
            "const": {"patternProperties": {"^a": {}}, "unevaluatedProperties": False},
        },
    ],
    ids=["both-hidden", "one-hidden", "target-of-a-target", "under-const"],
)
def test_unevaluated_properties_with_patterns_behind_a_reference_is_refused(
    schema: dict[str, Any],
) -> None:
    with pytest.raises(SchemaError, match=BAN):
        normalize(schema)


@pytest.mark.parametrize(
    "hidden",
    [
        {"type": "string", "pattern": "("},
        {"type": "object", "patternProperties": {"[": {}}},
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "a{2,1}"}}},
    ],
    ids=["pattern", "pattern-property", "nested-pattern"],
)
def test_a_broken_pattern_behind_a_reference_is_a_schema_error(hidden: dict[str, Any]) -> None:
    schema = {"$ref": "#/x-hidden", "x-hidden": hidden}

    with pytest.raises(SchemaError, match="Invalid pattern"):
        normalize(schema)


def test_a_pattern_behind_a_reference_is_checked_like_any_other() -> None:
    schema = {
        "title": "Rec",
        "$ref": "#/components/schemas/Code",
        "components": {"schemas": {"Code": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
    }

    assert _outcome(schema, "ABC") == "value"
    assert "'abc' does not match '^[A-Z]{3}$'" in _outcome(schema, "abc")


def test_patterns_and_unevaluated_properties_never_reached_are_still_fine() -> None:
    schema = {
        "type": "object",
        "unevaluatedProperties": False,
        "properties": {"a": {"type": "string"}},
        "x-unused": {"patternProperties": {"^a": {}}},
    }

    assert _outcome(schema, {"a": "x"}) == "value"


# --- 3. lists the meta-schema compares pair by pair ------------------------------------


TYPE_NAMES = "array, boolean, integer, null, number, object, string"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            _object(p={"type": [0] + [f"t{i}" for i in range(20_000)]}),
            f"'type' lists 0; it may list only distinct type names ({TYPE_NAMES}), "
            "at $.properties.p.",
        ),
        (
            _object(p={"type": ["string", {"a": 1}, *(f"t{i}" for i in range(20_000))]}),
            "'type' lists {'a': 1}",
        ),
        ({"type": ["string", "null", "string"]}, "'type' lists 'string' twice"),
        ({"type": ["text"]}, "'type' lists 'text'; it may list only distinct type names"),
        (
            {"anyOf": [{"required": ["a", 1, *(f"r{i}" for i in range(20_000))]}]},
            "'required' lists 1; it may list only distinct property names, at $.anyOf[0].",
        ),
        ({"required": ["a", "a"]}, "'required' lists 'a' twice"),
        (
            {"dependencies": {"a": [0, *(f"d{i}" for i in range(20_000))]}},
            "'dependencies' lists 0",
        ),
        ({"dependentRequired": {"a": ["b", None]}}, "'dependentRequired' lists None"),
        (
            {
                "$ref": "#/x-hidden",
                "x-hidden": {"required": [0, *(f"r{i}" for i in range(20_000))]},
            },
            "'required' lists 0; it may list only distinct property names, "
            "at $ in the target of '#/x-hidden'.",
        ),
        (
            {
                "$ref": "#/x-hidden",
                "x-hidden": {"properties": {"q": {"type": [0, *(f"t{i}" for i in range(20_000))]}}},
            },
            "'type' lists 0; it may list only distinct type names",
        ),
    ],
    ids=[
        "mixed-type-list",
        "type-list-with-an-object",
        "type-twice",
        "unknown-type",
        "mixed-required",
        "required-twice",
        "mixed-dependencies",
        "dependent-required",
        "required-behind-a-reference",
        "type-behind-a-reference",
    ],
)
def test_lists_of_names_are_checked_in_one_pass(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError) as caught:
        normalize(schema)

    assert message in str(caught.value)
    assert len(str(caught.value)) < 1_000


@pytest.mark.parametrize(
    "schema",
    [
        {"type": ["string", "null"], "minLength": 1},
        {"type": "object", "required": ["a", "b"], "dependentRequired": {"a": ["b"]}},
        {"type": "object", "dependencies": {"a": ["b"], "b": {"required": ["a"]}}},
        {"const": {"type": [0, 0], "required": [1, 1]}},
        {"enum": [{"type": [0, "t0"]}], "examples": [{"required": [None, None]}]},
        {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"]},
    ],
    ids=["nullable", "required", "dependencies", "const", "enum-and-examples", "named-type"],
)
def test_valid_lists_and_data_that_looks_like_them_are_fine(schema: dict[str, Any]) -> None:
    assert normalize(schema).variants[0].origin == "json_schema"


def test_valid_lists_keep_their_meaning() -> None:
    schema = {"type": ["object", "null"], "required": ["a"], "dependentRequired": {"a": ["b"]}}

    assert _outcome(schema, None) == "value"
    assert _outcome(schema, {"a": 1, "b": 2}) == "value"
    assert "'b' is a dependency of 'a'" in _outcome(schema, {"a": 1})
    assert "is not of type 'object', 'null'" in _outcome(schema, 3)


# --- 3b. compiling a schema's patterns has a bounded cost ------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:a{1000}){300}",
        "x(?:(?=a)b{500}){500}",
        "(?x) ( ab ) {1 000 00}",
        "(){10000}",
    ],
    ids=["nested-counts", "look-ahead", "verbose-spelling", "empty-group"],
)
def test_a_pattern_that_would_cost_too_much_to_compile_is_a_schema_error(pattern: str) -> None:
    with pytest.raises(SchemaError, match="repetitions would make it longer than 100000"):
        normalize(_object(p={"type": "string", "pattern": pattern}))


def test_a_costly_pattern_behind_a_reference_is_a_schema_error() -> None:
    schema = {"$ref": "#/x-hidden", "x-hidden": {"patternProperties": {"(?:a{1000}){300}": {}}}}

    with pytest.raises(SchemaError, match="repetitions would make it longer"):
        normalize(schema)


def test_all_patterns_together_have_a_bounded_cost() -> None:
    patterns = {f"p{i}": {"type": "string", "pattern": f"(?=x{i})a{{90000}}"} for i in range(12)}

    with pytest.raises(SchemaError, match="patterns would come to more than 1000000 characters"):
        normalize(_object(**patterns))


@pytest.mark.parametrize(
    "pattern",
    [IPV6, r"^(?=.*[A-Z])(?=.*\d).{8,64}$", r"(['\"])(?:(?!\1).)*\1", "^a{1,100000}$", "a{5000}"],
    ids=["ipv6", "look-aheads", "back-reference", "large-maximum", "count-under-the-bound"],
)
def test_realistic_patterns_still_compile(pattern: str) -> None:
    assert normalize(_object(p={"type": "string", "pattern": pattern})).variants


# --- 4. format checks on strings too long to check -------------------------------------


def test_a_huge_uri_template_is_not_checked() -> None:
    outcome = _outcome(
        _object(s={"type": "string", "format": "uri-template"}), {"s": "{" * 200_000}
    )

    assert "is too long to check its format 'uri-template' (more than 16384 characters)" in outcome


def test_a_huge_regex_is_not_compiled_nor_accepted() -> None:
    outcome = _outcome(_object(s={"type": "string", "format": "regex"}), {"s": "a" * 1_000_000})

    assert "is not a 'regex' (too long to check: more than 16384 characters)" in outcome


@pytest.mark.parametrize("text", ["(?:a{1000}){300}", "(?:a{1 0 0 0}){300}", "(){5000}"])
def test_a_short_regex_that_would_cost_too_much_to_compile_is_refused(text: str) -> None:
    outcome = _outcome(_object(s={"type": "string", "format": "regex"}), {"s": text})

    assert "is not a 'regex' (too large to check: its repetitions come to more than" in outcome


@pytest.mark.parametrize(
    ("format", "text"),
    [
        ("regex", IPV6),
        ("regex", r"^(?=.*[A-Z])(?=.*\d).{8,64}$"),
        ("uri", "https://example.org/search?q=" + "a" * 10_000),
        ("uri-template", "https://example.org/{user}/items{?page,size}"),
        ("email", "ada@example.org"),
        ("date-time", "2026-12-01T17:54:45Z"),
    ],
    ids=["ipv6-regex", "look-ahead-regex", "long-uri", "uri-template", "email", "date-time"],
)
def test_realistic_formatted_values_are_accepted(format: str, text: str) -> None:
    assert _outcome(_object(s={"type": "string", "format": format}), {"s": text}) == "value"


def test_a_bad_short_value_is_still_refused_for_its_format() -> None:
    outcome = _outcome(_object(s={"type": "string", "format": "date"}), {"s": "2026-13-45"})

    assert "'2026-13-45' is not a 'date'" in outcome


def test_a_long_value_of_a_format_nobody_checks_is_accepted() -> None:
    schema = _object(s={"type": "string", "format": "markdown"})

    assert _outcome(schema, {"s": "# Title\n" + "text " * 50_000}) == "value"


def test_the_bound_holds_under_another_draft_too() -> None:
    schema = _object(s={"$schema": DRAFT_7, "type": "string", "format": "uri-template"})

    assert "too long to check its format" in _outcome(schema, {"s": "{" * 200_000})
