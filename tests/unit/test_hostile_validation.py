"""Hostile schemas fail when normalised; hostile values give a value or a validation error.

Schemas in multi-tenant apps and model replies everywhere are untrusted: no
reference is ever fetched, every regex shares one deadline, deep and huge values
are refused or checked without escaping exceptions, and messages stay short.
"""

from __future__ import annotations

import builtins
import io
import socket
import sys
import time
import urllib.request
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from langchain_structx._schemas.normalise import normalize
from langchain_structx._validation import guard as _guard
from langchain_structx.errors import OutputValidationError, SchemaError
from langchain_structx.limits import DEFAULT_LIMITS, Limits

EVIL = r"^(?=a)(a|aa)+$"
"""Backtracks exponentially on 'aaaa...ab'; the look-ahead keeps it out of RE2, so it
runs in the backtracking engine under the deadline."""

CLASSIC = r"^(a|aa)+$"
"""The same trap without a look-around: RE2 takes it, and answers in linear time."""

SLOW_KEY = "a" * 32 + "b"

CEILING = 10.0
"""Generous bound for 'it does not hang': each case used to take seconds to minutes."""


def _nest(depth: int, key: str = "child") -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {key: value}
    return value


def _outcome(schema: Any, value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """Validate and say how it ended; any other exception fails the test."""
    variant = normalize(schema).variants[0]
    started = time.monotonic()
    try:
        variant.validate(value, limits)
        outcome = "value"
    except OutputValidationError as exc:
        outcome = str(exc)
    assert time.monotonic() - started < CEILING
    return outcome


# --- hostile schemas: a SchemaError when normalised -------------------------------------


def _with_ref(ref: str) -> dict[str, Any]:
    return {"title": "S", "type": "object", "properties": {"a": {"$ref": ref}}}


@pytest.mark.parametrize(
    "ref",
    [
        "http://127.0.0.1:9/schema.json",
        "https://example.invalid/schema.json#/$defs/a",
        "file:///etc/passwd",
        "other.json",
        "../schemas/other.json#/a",
        "urn:example:schema",
        "#/$defs/Missing",
        "#no-such-anchor",
    ],
)
def test_references_outside_the_document_or_nowhere_are_schema_errors(ref: str) -> None:
    with pytest.raises(SchemaError, match="does not resolve inside the schema"):
        normalize(_with_ref(ref))


def test_an_unresolvable_dynamic_ref_is_a_schema_error() -> None:
    schema = {"type": "object", "properties": {"a": {"$dynamicRef": "#meta"}}}

    with pytest.raises(SchemaError, match=r"\(\$dynamicRef\) does not resolve"):
        normalize(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
        {"$defs": {"A": {"$anchor": "here", "type": "string"}}, "items": {"$ref": "#here"}},
        {
            "$id": "https://example.invalid/root.json",
            "$defs": {"child": {"$id": "child.json", "type": "string"}},
            "properties": {
                "a": {"$ref": "child.json"},
                "b": {"$ref": "https://example.invalid/root.json#/$defs/child"},
            },
        },
    ],
    ids=["self", "anchor", "ids-inside-the-document"],
)
def test_references_inside_the_document_are_followed(schema: dict[str, Any]) -> None:
    assert normalize(schema).variants[0].origin == "json_schema"


def _self_containing() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    schema["properties"] = {"again": schema}
    return schema


def _deep_schema(depth: int) -> dict[str, Any]:
    return _nest(depth, key="items")


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string", "pattern": "("}, "is not a 'regex'"),
        ({"type": "string", "pattern": "(" * 5_000 + ")" * 5_000}, "is not a 'regex'"),
        ({"type": "object", "patternProperties": {"[": {}}}, "is not a 'regex'"),
        ({"type": "string", "format": "date", "maxLength": -1}, "less than the minimum"),
        (
            {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False},
            "may not combine patternProperties with unevaluatedProperties",
        ),
        (_self_containing(), "contains itself"),
        ({"type": "object", "properties": {1: {}}}, "key that is not a string"),
        ({"type": "number", "maximum": float("inf")}, "not a JSON number"),
        ({"enum": [10**2000]}, "more than 1000 digits"),
        ({"enum": {1, 2}}, "not JSON"),
        (_deep_schema(200), "nested deeper than 64 levels"),
        (
            {"type": "object", "properties": {f"k{i}": {} for i in range(120_000)}},
            "more than 100000 parts",
        ),
    ],
    ids=[
        "bad-pattern",
        "deeply-nested-pattern",
        "bad-pattern-property",
        "bad-keyword",
        "unevaluated-with-patterns",
        "self-referencing-dict",
        "non-string-key",
        "infinity",
        "huge-integer",
        "python-set",
        "deep",
        "huge",
    ],
)
def test_hostile_schemas_are_schema_errors(schema: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        normalize(schema)


def test_schema_error_messages_stay_short() -> None:
    with pytest.raises(SchemaError) as info:
        normalize(_with_ref("https://example.invalid/" + "x" * 100_000))

    assert len(str(info.value)) < 1_000


# --- no I/O, ever -----------------------------------------------------------------------


@pytest.fixture
def no_io(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every way out (socket, URL opener, file open) fail loudly and record it."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise AssertionError(f"{what} called during schema work")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("socket.getaddrinfo"))
    monkeypatch.setattr(urllib.request, "urlopen", refuse("urlopen"))
    monkeypatch.setattr(builtins, "open", refuse("open"))
    monkeypatch.setattr(io, "open", refuse("io.open"))
    return attempts


@pytest.mark.parametrize(
    "ref",
    ["http://127.0.0.1:9/s.json", "https://example.invalid/s.json", "file:///etc/hostname"],
)
def test_remote_references_open_no_socket_and_no_file(no_io: list[str], ref: str) -> None:
    with pytest.raises(SchemaError):
        normalize(_with_ref(ref))
    # A schema that mixes a valid local reference with nested ids validates offline too.
    schema = {
        "$id": "https://example.invalid/root.json",
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"type": "string", "format": "uri"}},
    }
    variant = normalize(schema).variants[0]
    assert variant.validate({"a": "https://example.invalid/x"}) == {
        "a": "https://example.invalid/x"
    }
    with pytest.raises(OutputValidationError):
        variant.validate({"a": 3})

    assert no_io == []


# --- hostile values: a value or an OutputValidationError --------------------------------

TREE = {"title": "Tree", "type": "object", "properties": {"child": {"$ref": "#"}}}


class Node(BaseModel):
    child: Optional[Node] = None  # noqa: UP045 - the recursive Optional is what is tested


@pytest.mark.parametrize("schema", [TREE, Node], ids=["json-schema", "pydantic"])
def test_a_valid_value_two_hundred_levels_deep_is_returned(schema: Any) -> None:
    value = _nest(200)
    limit_before = sys.getrecursionlimit()

    result = normalize(schema).variants[0].validate(value, Limits(max_depth=256))

    assert (result == value) if schema is TREE else isinstance(result, Node)
    assert sys.getrecursionlimit() == limit_before


def test_a_deep_check_leaves_the_process_wide_recursion_limit_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The limit is shared by every thread: raising it, even for a moment, lets
    # another thread's deep `repr` overflow its C stack and kill the process.
    schema = {
        "title": "Chain",
        "$defs": {
            "a": {"allOf": [{"$ref": "#/$defs/b"}]},
            "b": {"allOf": [{"$ref": "#/$defs/c"}]},
            "c": {"type": "object", "properties": {"child": {"$ref": "#/$defs/a"}}},
        },
        "$ref": "#/$defs/a",
    }
    limit_before = sys.getrecursionlimit()
    seen: list[int] = []
    deep_call = _guard.call_with_deep_stack

    def watched(function: Any, *args: Any, depth: int, steps: int = 0) -> Any:
        def check(*inner: Any) -> Any:
            seen.append(sys.getrecursionlimit())
            return function(*inner)

        return deep_call(check, *args, depth=depth, steps=steps)

    monkeypatch.setattr(_guard, "call_with_deep_stack", watched)
    value = _nest(60)  # deeper than this schema is checked in place

    result = normalize(schema).variants[0].validate(value, Limits(max_depth=128))

    assert result == value
    assert seen == [limit_before]
    assert sys.getrecursionlimit() == limit_before


def test_a_check_deeper_than_the_recursion_limit_allows_is_a_typed_unfinished_issue() -> None:
    variant = normalize(TREE).variants[0]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        with pytest.raises(OutputValidationError) as info:
            variant.validate(_nest(250), Limits(max_depth=256))
    finally:
        sys.setrecursionlimit(limit)

    (issue,) = info.value.issues
    assert issue.unfinished
    assert "RecursionError" in issue.message
    assert "recursion" in issue.message


@pytest.mark.parametrize("schema", [TREE, Node], ids=["json-schema", "pydantic"])
def test_nesting_beyond_the_limit_is_an_issue_with_its_path(schema: Any) -> None:
    with pytest.raises(OutputValidationError) as info:
        normalize(schema).variants[0].validate(_nest(10), Limits(max_depth=4))

    (issue,) = info.value.issues
    assert issue.message == "nested deeper than 4 levels"
    assert issue.path == ("child",) * 4


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer"}, 10**5_000, "at $: integer has more than 1000 digits"),
        ({"type": "object"}, {"n": [1, -(10**1_001)]}, "at $.n[1]: integer has more than"),
        ({"type": "number"}, float("nan"), "at $: nan is not a JSON number"),
        ({"type": "array"}, [float("inf")], "at $[0]: inf is not a JSON number"),
        ({"type": "object"}, {"x": float("-inf")}, "at $.x: -inf is not a JSON number"),
        ({"type": "number", "multipleOf": 0.3}, 10**400 + 1, "is not a multiple of 0.3"),
        ({"type": "string", "format": "regex"}, "(" * 50_000 + ")" * 50_000, "not a 'regex'"),
        ({"type": "object"}, {1: "a"}, "object keys must be strings"),
    ],
    ids=[
        "huge-int",
        "huge-nested-int",
        "nan",
        "inf",
        "minus-inf",
        "multiple-of-huge",
        "format-regex-deep",
        "int-key",
    ],
)
def test_hostile_numbers_and_strings_are_validation_errors(
    schema: dict[str, Any], value: Any, expected: str
) -> None:
    # Integers as wide as the digit bound allows reach the validator's keywords
    # only where no checkpoint bounds them to 64 bits.
    assert expected in _outcome(schema, value, Limits(max_integer_bits=4096))


def test_a_slow_pattern_over_many_keys_fails_within_one_deadline() -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}
    keys = {f"{SLOW_KEY}{i}": 1 for i in range(400)}

    outcome = _outcome(schema, keys, Limits(validation_seconds=0.5))

    assert f"could not be checked against the pattern {EVIL!r} within 0.5 s" in outcome


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": EVIL},
        {"type": "string", "not": {"pattern": EVIL}},
        {"type": "object", "propertyNames": {"pattern": EVIL}},
        {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}},
    ],
    ids=["pattern", "not-pattern", "property-names", "pattern-properties"],
)
def test_a_pattern_that_times_out_is_never_a_pass(schema: dict[str, Any]) -> None:
    value: Any = SLOW_KEY if schema["type"] == "string" else {SLOW_KEY: "text"}

    outcome = _outcome(schema, value, Limits(validation_seconds=0.3))

    assert "could not be checked" in outcome


# Values larger than a reply may be are refused for their size before any validator
# sees them; these two raise that bound to check the validator's own messages.
ROOMY = Limits(max_reply_chars=20_000_000)


def test_a_ten_megabyte_string_gives_a_short_message() -> None:
    outcome = _outcome({"title": "N", "type": "integer"}, "z" * 10_000_000, ROOMY)

    assert outcome == "1 problem with N:\n- at $: '" + "z" * 76 + "... is not of type 'integer'"


def test_many_huge_unexpected_keys_give_a_short_message() -> None:
    value = {f"{i}" + "k" * 100_000: 1 for i in range(50)}

    outcome = _outcome({"type": "object", "additionalProperties": False}, value, ROOMY)

    assert "and 47 more were unexpected" in outcome
    assert len(outcome) < 1_000


def test_work_under_any_of_on_a_deep_wide_value_is_bounded_by_the_deadline() -> None:
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"c": {"$ref": "#"}, "s": {"type": "string"}},
                "required": ["s"],
            },
            {"type": "integer"},
        ]
    }
    value: dict[str, Any] = {"s": 5}
    for _ in range(200):
        value = {"c": value, "s": "y" * 8_000}

    outcome = _outcome(schema, value, Limits(validation_seconds=0.5, max_depth=256))

    assert outcome.startswith("1 problem with response_format:\n- at $: ")


class Numbers(BaseModel):
    items: list[int]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "array", "items": {"type": "integer"}}, ["x"] * 500),
        (Numbers, {"items": ["x"] * 500}),
    ],
    ids=["json-schema", "pydantic"],
)
def test_issues_are_capped_on_both_paths(schema: Any, value: Any) -> None:
    with pytest.raises(OutputValidationError) as info:
        normalize(schema).variants[0].validate(value, Limits(max_issues=5))

    issues = info.value.issues
    assert len(issues) == 5
    assert issues[-1].message == "... and 496 more problems"


def test_pydantic_messages_quote_a_bounded_excerpt() -> None:
    class Count(BaseModel):
        n: int

    with pytest.raises(OutputValidationError) as info:
        normalize(Count).variants[0].validate({"n": "9" * 5_000 + "x"}, Limits(max_value_chars=20))

    assert info.value.issues[0].message.endswith("(got '9999999999999999...)")


def test_unique_items_on_a_large_array_is_linear_and_exact() -> None:
    schema = {"type": "array", "uniqueItems": True}

    assert _outcome(schema, [{"a": i} for i in range(50_000)]) == "value"
    assert _outcome(schema, [1, True, [1], [True]]) == "value"
    assert "has non-unique elements" in _outcome(schema, [{"a": [1]}, {"a": [1.0]}])


# --- property: any JSON value gives a value or an OutputValidationError -----------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=30,
)

SCHEMAS = [
    TREE,
    {
        "type": "object",
        "patternProperties": {"^a+$": {"type": "integer"}},
        "additionalProperties": False,
    },
    {"type": "array", "items": {"type": "number", "multipleOf": 0.5}, "uniqueItems": True},
    {"anyOf": [{"type": "string", "pattern": "^[a-z]*$", "format": "regex"}, {"type": "null"}]},
    {"type": "object", "propertyNames": {"maxLength": 3}, "required": ["a"]},
    Node,
]


@settings(max_examples=150, deadline=None)
@given(value=JSON_VALUES, index=st.integers(min_value=0, max_value=len(SCHEMAS) - 1))
def test_any_json_value_gives_a_value_or_a_validation_error(value: Any, index: int) -> None:
    variant = normalize(SCHEMAS[index]).variants[0]
    try:
        variant.validate(value, Limits(max_depth=6))
    except OutputValidationError as exc:
        assert exc.issues


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": CLASSIC},
        {"type": "object", "patternProperties": {CLASSIC: {}}, "additionalProperties": False},
    ],
    ids=["pattern", "patternProperties"],
)
def test_a_catastrophic_pattern_that_re2_takes_gets_a_real_answer(schema: dict[str, Any]) -> None:
    # No deadline is reached: the answer is the pattern's own "no match", for every key.
    value: Any = (
        SLOW_KEY * 1000
        if schema["type"] == "string"
        else dict.fromkeys((f"{SLOW_KEY}{i}" for i in range(400)), 1)
    )
    outcome = _outcome(schema, value, Limits(validation_seconds=30))
    assert "could not be checked" not in outcome
    assert "does not match" in outcome or "are not allowed" in outcome
