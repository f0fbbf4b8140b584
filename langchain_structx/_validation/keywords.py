"""jsonschema keywords rewritten to stay bounded on hostile values, and the format checkers.

- `multipleOf` and `uniqueItems` stay exact and linear on numbers and arrays no
  sane reply contains; `unevaluatedItems` and `unevaluatedProperties` stay linear
  in the items and keys (jsonschema looks each one up in a list).
- `format` checks no string longer than `MAX_FORMAT_CHARS`: jsonschema's checkers
  run outside the validation deadline (some take time quadratic in the text, and
  the `regex` one compiles it), so a longer string is an issue, "too long to check",
  without being read. A `regex` value is compiled only when `compile_cost` says its
  repetitions stay within the same bound.

Each keyword is a plain jsonschema keyword function; `_validate` wraps it in the
deadline check and builds the validator class.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema._utils import (  # private, and unchanged across the range we allow
    find_evaluated_item_indexes_by_schema,
    find_evaluated_property_keys_by_schema,
)
from jsonschema.exceptions import ValidationError as JSONSchemaValidationError

from langchain_structx._validation.bounds import preview
from langchain_structx._validation.regex_cost import compile_cost
from langchain_structx._validation.regexes import is_regex, is_schema_regex
from langchain_structx.limits import DEFAULT_LIMITS, Limits

MAX_FORMAT_CHARS = 16_384
"""Longest string whose `format` is checked (for `regex`: also the most its repetitions
may come to); longer is an issue. Far above any URI, e-mail address, date or regex
a model writes."""

LIMITS: contextvars.ContextVar[Limits] = contextvars.ContextVar("structx_limits")
"""The limits of the validation under way; they set how much of a value a message quotes."""


def value_chars() -> int:
    """How many characters of the model's value a message may quote."""
    return LIMITS.get(DEFAULT_LIMITS).max_value_chars


def _checker(regex_check: Any) -> FormatChecker:
    checker = FormatChecker()
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checkers["regex"] = (regex_check, ())
    return checker


FORMAT_CHECKER = _checker(is_regex)
"""The format checks made on replies (through `bounded_format`)."""

SCHEMA_FORMAT_CHECKER = _checker(is_schema_regex)
"""The format checks the meta-schema makes on a schema: its patterns must compile."""

_STOCK_FORMAT = Draft202012Validator.VALIDATORS["format"]


def bounded_format(
    validator: Any, format: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    """The `format` keyword, refusing to hand a checker a string too long to check in time."""
    checker = validator.format_checker
    if checker is not None and isinstance(instance, str) and format in checker.checkers:
        problem = format_problem(format, instance)
        if problem is not None:
            yield JSONSchemaValidationError(f"{preview(instance, value_chars())} {problem}")
            return
    yield from _STOCK_FORMAT(validator, format, instance, schema)


def format_problem(format: str, text: str) -> str | None:
    """Why `text` is too large to check against `format`, or None when it may be checked.

    A `regex` is what this package can compile safely, so a value too large for
    that is simply not one.

    Examples:
        >>> format_problem("uri", "https://example.org/" + "a" * 20_000)
        "is too long to check its format 'uri' (more than 16384 characters)"
        >>> format_problem("regex", "a" * 20_000)
        "is not a 'regex' (too long to check: more than 16384 characters)"
        >>> format_problem("regex", "a{4294967294}")
        "is not a 'regex' (too large to check: its repetitions come to more than 16384 characters)"
        >>> format_problem("regex", "^[a-z]{2,8}$") is None
        True
    """
    bound = MAX_FORMAT_CHARS
    if format == "regex":
        if len(text) > bound:
            return f"is not a 'regex' (too long to check: more than {bound} characters)"
        if compile_cost(text) > bound:
            return (
                "is not a 'regex' (too large to check: "
                f"its repetitions come to more than {bound} characters)"
            )
    elif len(text) > bound:
        return f"is too long to check its format {format!r} (more than {bound} characters)"
    return None


def multiple_of(
    validator: Any, divisor: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    """The `multipleOf` keyword, exact: JSON numbers are decimals.

    A float is read as the decimal it is written as (`0.1` is one tenth), so the
    rounding of a float quotient no longer accepts `5e-324` for 5 (it underflows
    to 0) or `1e17` for 3 (every float that large is whole), nor refuses `4.35`
    for `0.01`.
    """
    if not validator.is_type(instance, "number"):
        return
    if isinstance(divisor, float) or isinstance(instance, float):
        try:
            failed = (_decimal(instance) / _decimal(divisor)).denominator != 1
        except (ValueError, ZeroDivisionError):  # not finite: the float reading judges
            quotient = instance / divisor
            failed = int(quotient) != quotient
    else:
        failed = bool(instance % divisor)
    if failed:
        yield JSONSchemaValidationError(
            f"{preview(instance, value_chars())} is not a multiple of {divisor}"
        )


def _decimal(number: float | int) -> Fraction:
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def unevaluated_items(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    """The `unevaluatedItems` keyword, linear in the items (jsonschema's is quadratic).

    An item its subschema takes counts as evaluated (jsonschema's walk checks it).
    """
    extra = _unevaluated(validator, instance, schema, "array")
    if extra:
        yield JSONSchemaValidationError(f"Unevaluated items are not allowed (at {_listed(extra)})")


def unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    """The `unevaluatedProperties` keyword, linear in the keys (jsonschema's is quadratic)."""
    extra = [
        key
        for key in _unevaluated(validator, instance, schema, "object")
        if next(iter(validator.descend(instance[key], unevaluated, path=key)), None) is not None
    ]
    if extra:
        quoted = _listed([preview(key, max(value_chars() // 2, 20)) for key in extra])
        verdict = "not allowed" if unevaluated is False else "not valid under the given schema"
        yield JSONSchemaValidationError(f"Unevaluated properties are {verdict} ({quoted})")


def _unevaluated(validator: Any, instance: Any, schema: Mapping[str, Any], kind: str) -> list[Any]:
    """The indexes of an array, or the keys of an object, that no other keyword evaluated.

    None when `instance` is not a `kind`. jsonschema's walk lists the evaluated
    ones; each is looked up in a set here.
    """
    if not validator.is_type(instance, kind):
        return []
    if kind == "array":
        items = set(find_evaluated_item_indexes_by_schema(validator, instance, schema))
        return [index for index in range(len(instance)) if index not in items]
    keys = set(find_evaluated_property_keys_by_schema(validator, instance, schema))
    return [key for key in instance if key not in keys]


def _listed(items: list[Any], shown: int = 3) -> str:
    more = len(items) - shown
    return ", ".join(map(str, items[:shown])) + (f" and {more} more" if more > 0 else "")


def unique_items(
    validator: Any, unique: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    """The `uniqueItems` keyword, linear whatever the items (jsonschema's may be quadratic)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        frozen = _freeze(item)
        if frozen in seen:
            yield JSONSchemaValidationError(
                f"{preview(instance, value_chars())} has non-unique elements"
            )
            return
        seen.add(frozen)


def _freeze(value: Any) -> Any:
    """A hashable twin of a JSON value; equal for JSON-equal values (so 1 == 1.0 != true)."""
    if isinstance(value, dict):
        return ("object", frozenset((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(_freeze(v) for v in value))
    if isinstance(value, bool):
        return ("boolean", value)
    return ("value", value)
