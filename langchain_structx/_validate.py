"""Validation of JSON values against JSON-schema dicts, with bounded regexes.

jsonschema does the work (Draft 2020-12, formats checked). Two keywords are
replaced: `pattern` and `patternProperties` run through the `regex` package with a
time limit, because a user schema with a catastrophic pattern must not hang a run
that is validating model output.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import regex
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as JSONSchemaSchemaError
from jsonschema.exceptions import ValidationError as JSONSchemaValidationError

from langchain_structx.errors import SchemaError, ValidationIssue

PATTERN_TIMEOUT_SECONDS = 0.25
"""Longest time one `pattern` check may take before it counts as a failure."""

_MAX_ISSUES = 20


def _search(pattern: str, text: str) -> bool | None:
    """Return whether `pattern` matches; None when the check ran out of time."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_SECONDS) is not None
    except TimeoutError:
        return None


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if found is None:
        yield JSONSchemaValidationError(
            f"could not be checked against the pattern {pattern!r} in time"
        )
    elif not found:
        yield JSONSchemaValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_BoundedValidator = jsonschema.validators.extend(
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties},
)


class JSONSchemaValidator:
    """Checks values against one JSON-schema dict.

    Args:
        schema: A JSON schema; checked once here so that a broken schema is a
            usage error at set-up time, not a model failure at run time.

    Raises:
        SchemaError: When the schema itself is invalid.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        try:
            Draft202012Validator.check_schema(schema)
        except JSONSchemaSchemaError as exc:
            raise SchemaError(f"Invalid JSON schema: {exc.message}") from None
        self._validator = _BoundedValidator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    def issues(self, instance: Any) -> list[ValidationIssue]:
        """Return every problem with `instance`, deepest paths first, at most 20."""
        found: list[ValidationIssue] = []
        errors = sorted(self._validator.iter_errors(instance), key=_error_order)
        for error in errors[:_MAX_ISSUES]:
            found.append(ValidationIssue(tuple(error.absolute_path), _message(error)))
        return found


def _error_order(error: JSONSchemaValidationError) -> tuple[int, str]:
    return (-len(error.absolute_path), str(list(error.absolute_path)))


def _message(error: JSONSchemaValidationError) -> str:
    message = str(error.message)
    if error.validator == "required":
        return message.replace(" is a required property", " is required but missing")
    if error.validator == "additionalProperties":
        return message.replace("were unexpected", "are not allowed")
    return message
