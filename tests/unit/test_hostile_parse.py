"""Hostile replies: every outcome of parsing is a value or a typed error, in bounded time.

The time ceilings here are generous safety bounds (the work used to take seconds
to minutes); the figures that matter live in the benchmarks.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_structx._parsing.coerce import coerce
from langchain_structx._parsing.parse import parse_json
from langchain_structx._parsing.partial_json import Buffer, partial_value
from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import (
    JSONParseError,
    MalformedJSONError,
    OutputValidationError,
    ReplyTooLargeError,
    TruncatedJSONError,
)
from langchain_structx.limits import Limits

CEILING = 15.0
"""Seconds a 2 MB crafted reply may take on a slow machine; quadratic takes minutes."""
SIZE = 2_000_000
ROOMY = Limits(max_reply_chars=4 * SIZE)


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


CRAFTED: dict[str, Callable[[int], str]] = {
    "unclosed braces": lambda n: _repeat("{", n),
    "unclosed braces and words": lambda n: _repeat("{a ", n),
    "brackets in prose": lambda n: _repeat("see [1 and [x ", n),
    "closed brackets in prose": lambda n: _repeat("[x] ", n),
    "backslashes in a string": lambda n: '["' + _repeat("\\", n),
    "escaped single quotes": lambda n: "['" + _repeat("\\'", n),
    "double quotes": lambda n: _repeat('"', n),
    "single quotes": lambda n: "[" + _repeat("' ", n),
    "digits": lambda n: _repeat("7", n),
    "digits in an array": lambda n: "[" + _repeat("7", n) + "]",
    "whitespace": lambda n: "[" + _repeat(" ", n) + "x",
    "nested fences": lambda n: _repeat("```json\n", n),
    "valid prefix then garbage": lambda n: (
        '{"a": [' + _repeat("1, ", n // 2) + _repeat("@", n // 2)
    ),
    "key and colon": lambda n: _repeat('{"a":', n),
    "comment hides a bracket": lambda n: "[#]\n" * 40 + "[" + _repeat("1, #c\n", n) + "x 1",
    "quote hides a bracket": lambda n: _repeat("[']', ", n),
    "comments": lambda n: "[" + _repeat("#c\n", n) + "x",
    "comments between items": lambda n: "[" + _repeat("1, // c\n", n) + "]",
    "unquoted keys": lambda n: "{" + _repeat("a:1,", n),
    "python literals": lambda n: "[" + _repeat("True,", n) + "x",
    "control characters": lambda n: '["' + _repeat("\x01", n) + '"]',
    "huge exponents": lambda n: "[" + _repeat("1e400,", n) + "1]",
    "balanced nesting": lambda n: _repeat("[", n // 2) + _repeat("]", n // 2),
}


def _outcome(text: str, limits: Limits = ROOMY) -> Any:
    try:
        return parse_json(text, limits=limits).value
    except JSONParseError as error:
        return error


@pytest.mark.parametrize("name", list(CRAFTED))
def test_crafted_reply_is_typed_and_quick(name: str) -> None:
    text = CRAFTED[name](SIZE)
    started = time.perf_counter()
    result = _outcome(text)
    assert time.perf_counter() - started < CEILING
    if not isinstance(result, JSONParseError):
        assert _finite(result)


def _finite(value: Any) -> bool:
    return math.isfinite(value) if isinstance(value, float) else True


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1e400", "1e400"),
        ("[1e400]", "1e400"),
        ('{"a": -1e999}', "-1e999"),
        ("[1.5e3, 1e309]", "1e309"),
    ],
)
def test_numbers_that_overflow_are_malformed(text: str, number: str) -> None:
    with pytest.raises(MalformedJSONError, match=f"the number {number} is too large") as info:
        parse_json(text)
    assert info.value.position == text.index(number)


def test_overflow_found_in_sloppy_json_too() -> None:
    with pytest.raises(MalformedJSONError, match="1e400 is too large"):
        parse_json("Here: {'a': 1e400,}")


def test_huge_mantissa_overflows_too() -> None:
    with pytest.raises(MalformedJSONError, match="too large"):
        parse_json("[" + "9" * 400 + ".5]")


def test_small_and_subnormal_numbers_still_parse() -> None:
    assert parse_json("[1e-400, 1.7e308, 5e-324]").value == [0.0, 1.7e308, 5e-324]


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "{'a': -Infinity}"])
def test_non_finite_constants_stay_malformed(text: str) -> None:
    with pytest.raises(MalformedJSONError, match="not valid JSON"):
        parse_json(text)


def test_integer_digit_limit_is_configurable() -> None:
    limits = Limits(max_integer_digits=5)
    assert parse_json("[12345]", limits=limits).value == [12345]
    with pytest.raises(MalformedJSONError, match="6 digits, more than the limit of 5"):
        parse_json("[123456]", limits=limits)
    with pytest.raises(MalformedJSONError, match="digits"):
        parse_json("{'a': -123456,}", limits=limits)


def test_digits_inside_strings_are_not_numbers() -> None:
    text = json.dumps({"id": "7" * 5000, "uuid": "123e4567-e89b-12d3"})
    assert parse_json(text).value["id"] == "7" * 5000


def test_reply_longer_than_the_cap_is_refused_unread() -> None:
    limits = Limits(max_reply_chars=10)
    assert parse_json('{"a": 12}', limits=limits).value == {"a": 12}
    with pytest.raises(ReplyTooLargeError) as info:
        parse_json('{"a": 1234}', limits=limits)
    assert (info.value.size, info.value.limit) == (11, 10)
    assert isinstance(info.value, MalformedJSONError)


@pytest.mark.parametrize("depth", [10, 11])
def test_depth_limit_applies_to_sloppy_json_and_to_validation(depth: int) -> None:
    limits = Limits(max_depth=10)
    valid, sloppy = "[" * depth + "]" * depth, "[" * depth + "1," + "]" * depth
    variant = normalize({"type": "array"}).variants[0]
    if depth <= 10:
        assert parse_json(sloppy, limits=limits).value is not None
        assert variant.validate(parse_json(valid, limits=limits).value, limits) == json.loads(valid)
        return
    with pytest.raises(MalformedJSONError, match="deeper than 10"):
        parse_json(sloppy, limits=limits)
    # Strictly valid JSON is read by the C decoder; its depth is refused by validation.
    with pytest.raises(OutputValidationError, match="deeper than 10"):
        variant.validate(parse_json(valid, limits=limits).value, limits)


def test_brackets_in_strings_do_not_count_towards_depth() -> None:
    limits = Limits(max_depth=3)
    text = json.dumps({"a": ["[[[[{{{{", '\\"]]]]', {"b": "]" * 10}]})
    assert parse_json(text, limits=limits).value["a"][2] == {"b": "]" * 10}


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deep_valid_json_never_raises_recursion_error(depth: int) -> None:
    limits = Limits(max_depth=10**6)
    result = _outcome("[" * depth + "]" * depth, limits)
    assert isinstance(result, list | MalformedJSONError)


def test_non_text_is_malformed() -> None:
    for value in (b"{}", None, 12, ["{}"]):
        with pytest.raises(MalformedJSONError, match="expected text"):
            parse_json(value)  # type: ignore[arg-type]


def _check(text: str) -> None:
    result = _outcome(text, Limits())
    if isinstance(result, JSONParseError):
        assert isinstance(result, MalformedJSONError | TruncatedJSONError)
    else:
        assert json.loads(json.dumps(result, allow_nan=False)) == result


_PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_NEAR_JSON = st.lists(
    st.sampled_from(
        [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            '"',
            "'",
            "\\",
            "a",
            "1",
            "-",
            ".",
            "e",
            "E",
            "+",
            "0",
            "1e400",
            "9" * 30,
            "NaN",
            "True",
            "None",
            "//",
            "/*",
            "*/",
            "#",
            "\n",
            " ",
            "```",
            "```json",
            "\u201c",
            "\x01",
            "\ud800",
            "null",
            '{"a":',
        ]
    ),
    max_size=60,
).map("".join)


@_PROPERTY
@given(st.text(max_size=300))
def test_any_text_is_a_value_or_a_typed_error(text: str) -> None:
    _check(text)


@_PROPERTY
@given(st.binary(max_size=300))
def test_any_bytes_decoded_as_text_are_a_value_or_a_typed_error(data: bytes) -> None:
    _check(data.decode("utf-8", "replace"))
    _check(data.decode("latin-1"))


@_PROPERTY
@given(_NEAR_JSON)
def test_near_json_is_a_value_or_a_typed_error(text: str) -> None:
    _check(text)
    _check("Sure! ```json\n" + text)


@_PROPERTY
@given(st.integers(1, 400), st.sampled_from(["[", "{'a':", '{"a": [']), st.booleans())
def test_deep_nesting_is_a_value_or_a_typed_error(depth: int, opener: str, closed: bool) -> None:
    closer = {"[": "]", "{'a':": "}", '{"a": [': "]}"}[opener]
    _check(opener * depth + "1" + (closer * depth if closed else ""))


@_PROPERTY
@given(
    st.integers(0, 3000).map(str)
    | st.from_regex(r"-?[0-9]{1,400}(\.[0-9]{1,9})?([eE][-+]?[0-9]{1,4})?", fullmatch=True)
)
def test_numbers_of_any_size_are_finite_or_typed_errors(literal: str) -> None:
    _check(literal)
    _check(f"[{literal}]")
    _check(f"{{'n': {literal},}}")


@pytest.mark.parametrize("text", ["1e400", "-1e400", "nan", "NaN", "inf", "-Infinity", " 1E999 "])
def test_coercion_never_makes_a_non_finite_number(text: str) -> None:
    for kind in ("number", "integer"):
        value = coerce(text, {"type": kind}).value
        assert not isinstance(value, float) or math.isfinite(value)


def _stream(text: str, step: int) -> Any:
    buffer = Buffer()
    for start in range(0, len(text), step):
        if buffer.add(text[start : start + step]):
            buffer.read()
    return buffer.read()


@pytest.mark.parametrize(
    "text",
    [
        '{"n": [' + "7" * 200_000,
        "7" * 200_000,
        '{"s": "' + "x" * 200_000,
        "[" * 200_000,
    ],
)
def test_streaming_a_long_run_in_small_chunks_is_quick(text: str) -> None:
    started = time.perf_counter()
    _stream(text, 3)
    assert time.perf_counter() - started < CEILING


def test_streaming_a_long_string_shows_it_growing() -> None:
    assert _stream('{"s": "' + "x" * 50_000, 7) == {"s": "x" * 50_000}


def test_partial_values_hold_no_infinity() -> None:
    assert partial_value("[1e400, 2") is None
    assert partial_value('{"a": [1, 2.5e3') == {"a": [1]}
