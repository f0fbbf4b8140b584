"""Validation of JSON values against JSON-schema dicts, with no I/O and one deadline.

jsonschema does the work (Draft 2020-12, formats checked), with these changes,
because schemas and values may both be hostile:

- Every `$ref` and `$dynamicRef` is resolved when the validator is built, against a
  registry that refuses to fetch anything, and validation uses that registry too:
  a schema can never make us open a socket or a file.
- Every regex (`pattern`, `patternProperties`, the pattern half of
  `additionalProperties`) runs in RE2 when it can (linear time) and otherwise in
  the `regex` package with what is left of one deadline per validation (see
  `_regexes`); running out is a failure with its own message, never "no match".
- `multipleOf`, `uniqueItems` and `format` are rewritten (see `_keywords`) to stay
  exact and linear on numbers and arrays no sane reply contains, and to leave
  strings too long to check in time unchecked, as an issue.
- Every subschema is validated by this same bounded class. jsonschema would switch
  to its stock class for a subschema whose `$schema` names another draft (and
  so run `pattern` in `re`, with no deadline); here `$schema` changes nothing, at
  the root as inside: every part of a schema is read as Draft 2020-12.
- Messages quote the value in a bounded excerpt.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as JSONSchemaValidationError

from langchain_structx._exceptions import SchemaError, ValidationIssue
from langchain_structx._validation.bounds import (
    cap_issues,
    check_references,
    clip,
    clip_path,
    offline_registry,
    preview,
    schema_shape_problem,
)
from langchain_structx._validation.keywords import (
    FORMAT_CHECKER,
    LIMITS,
    bounded_format,
    multiple_of,
    unevaluated_items,
    unevaluated_properties,
    unique_items,
    value_chars,
)
from langchain_structx._validation.reach import check_reachable
from langchain_structx._validation.regexes import compiled
from langchain_structx._validation.schema_problems import schema_problems
from langchain_structx.limits import DEFAULT_LIMITS, Limits

MAX_SCHEMA_DEPTH = 64
"""Deepest nesting of objects and arrays accepted in a JSON schema."""

MAX_SCHEMA_NODES = 100_000
"""Most values (objects, arrays and scalars together) accepted in a JSON schema."""

_KEPT_ERRORS = 200
"""Errors kept for sorting; later ones are only counted."""

_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("structx_deadline")


class _OutOfTime(Exception):
    """The validation's deadline passed; raised so that no keyword can read it as a result."""

    def __init__(self, pattern: str | None = None) -> None:
        super().__init__(pattern)
        self.pattern = pattern


_seen: contextvars.ContextVar[dict[tuple[str, str], bool]] = contextvars.ContextVar("structx_seen")
_SEEN_TEXT_CHARS = 256
_SEEN_ENTRIES = 100_000


def _search(pattern: str, text: str) -> bool:
    """Return whether `pattern` matches `text` within the time left.

    Within one validation, answers for short texts are kept: `patternProperties`
    and `additionalProperties` ask the same question of every key.
    """
    seen = _seen.get(None)
    if seen is None or len(text) > _SEEN_TEXT_CHARS:
        return _match(pattern, text)
    found = seen.get((pattern, text))
    if found is None:
        found = _match(pattern, text)
        if len(seen) < _SEEN_ENTRIES:
            seen[(pattern, text)] = found
    return found


def _match(pattern: str, text: str) -> bool:
    remaining = _deadline.get(time.monotonic() + DEFAULT_LIMITS.validation_seconds)
    remaining -= time.monotonic()
    if remaining <= 0:
        raise _OutOfTime(pattern)
    try:
        return compiled(pattern).search(text, timeout=remaining) is not None
    except TimeoutError:
        raise _OutOfTime(pattern) from None


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield JSONSchemaValidationError(
            f"{preview(instance, value_chars())} does not match {pattern!r}"
        )


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[JSONSchemaValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _extras(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        verb = "was" if len(extras) == 1 else "were"
        yield JSONSchemaValidationError(
            f"Additional properties are not allowed ({_quoted(extras)} {verb} unexpected)"
        )


def _quoted(keys: list[str]) -> str:
    shown = [preview(key, max(value_chars() // 2, 20)) for key in sorted(keys[:3])]
    more = len(keys) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _with_deadline(keyword: Any) -> Any:
    """Make a keyword refuse to start once the deadline has passed.

    jsonschema quotes the whole value in many messages, and under `anyOf` at
    every level of a deep value; checking the clock at each keyword bounds that
    work, and every other, by the one deadline.
    """

    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.monotonic() > _deadline.get(_NO_DEADLINE):
            raise _OutOfTime()
        return keyword(validator, value, instance, schema)

    return functools.wraps(keyword)(checked)


_NO_DEADLINE = float("inf")

_KEYWORDS = {
    **Draft202012Validator.VALIDATORS,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "multipleOf": multiple_of,
    "uniqueItems": unique_items,
    "unevaluatedItems": unevaluated_items,
    "unevaluatedProperties": unevaluated_properties,
    "format": bounded_format,
}

_BoundedValidator = jsonschema.validators.extend(
    Draft202012Validator,
    {name: _with_deadline(keyword) for name, keyword in _KEYWORDS.items()},
)

# jsonschema's validator classes are attrs classes; `evolve` copies their init fields.
_EVOLVED_FIELDS = tuple(
    (field.name, field.alias) for field in _BoundedValidator.__attrs_attrs__ if field.init
)


def _evolve(self: Any, **changes: Any) -> Any:
    """The `evolve` of jsonschema, without its switch of class on a subschema's `$schema`.

    jsonschema builds the validator of each subschema with `validator_for(subschema)`,
    which for `"$schema": "http://json-schema.org/draft-07/schema#"` is the stock
    Draft 7 class: no deadline, none of our keywords. Every subschema keeps this
    class instead.
    """
    changes.setdefault("schema", self.schema)
    for name, alias in _EVOLVED_FIELDS:
        if alias not in changes:
            changes[alias] = getattr(self, name)
    return _BoundedValidator(**changes)


_BoundedValidator.evolve = _evolve


def bounded_validator(schema: Mapping[str, Any]) -> Any:
    """A validator of `schema` whose regexes run in the bounded engine and that fetches nothing.

    For checks made outside `JSONSchemaValidator` (the dialects' branch and enum
    checks); run them inside `deadline(...)`.
    """
    return _BoundedValidator(
        schema, registry=offline_registry(schema), format_checker=FORMAT_CHECKER
    )


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Give every bounded check made inside the block one shared deadline.

    Once it has passed, each check raises instead of running.
    """
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def out_of_time() -> bool:
    """Whether the deadline of the enclosing `deadline(...)` block has passed."""
    return time.monotonic() > _deadline.get(_NO_DEADLINE)


class JSONSchemaValidator:
    """Checks values against one JSON-schema dict.

    Args:
        schema: A JSON schema; checked once here (shape, keywords, patterns,
            references) so that a broken schema is a usage error at set-up time,
            not a model failure at run time.

    Raises:
        SchemaError: When the schema itself is invalid.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        problem = schema_shape_problem(
            schema, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES
        )
        if problem is not None:
            raise SchemaError(f"Invalid JSON schema: {problem}.")
        registry = check_reachable(schema, _check_keywords)
        self.reference_steps = check_references(schema, registry)
        """The longest run of subschemas the schema applies in place to one part of a value."""
        self._validator = _BoundedValidator(
            schema, registry=registry, format_checker=FORMAT_CHECKER
        )

    def issues(self, instance: Any, limits: Limits = DEFAULT_LIMITS) -> list[ValidationIssue]:
        """Return the problems with `instance`, deepest paths first, at most `limits.max_issues`.

        Raises:
            RecursionError: When the value is too deep for the current stack; the
                caller runs deep values on a larger one.
        """
        deadline_token = _deadline.set(time.monotonic() + limits.validation_seconds)
        limits_token = LIMITS.set(limits)
        seen_token = _seen.set({})
        kept: list[JSONSchemaValidationError] = []
        try:
            total = self._collect(instance, kept)
        except _OutOfTime as exc:
            # What was found before time ran out is still worth reporting.
            late = ValidationIssue((), _out_of_time(exc, limits), unfinished=True)
            found = [late, *(_issue(error, limits) for error in sorted(kept, key=_error_order))]
            return cap_issues(found, max(len(found), len(kept) + 1), limits)
        finally:
            _deadline.reset(deadline_token)
            LIMITS.reset(limits_token)
            _seen.reset(seen_token)
        kept.sort(key=_error_order)
        return cap_issues([_issue(error, limits) for error in kept], total, limits)

    def _collect(self, instance: Any, kept: list[JSONSchemaValidationError]) -> int:
        total = 0
        for error in self._validator.iter_errors(instance):
            total += 1
            if len(kept) < _KEPT_ERRORS:
                kept.append(error)
            if time.monotonic() > _deadline.get():
                raise _OutOfTime()
        return total


def _check_keywords(schema: Mapping[str, Any]) -> None:
    try:
        problems = schema_problems(schema)
    except (RecursionError, OverflowError, ValueError) as exc:
        raise SchemaError(f"Invalid JSON schema: {type(exc).__name__}") from None
    if problems is not None:
        raise SchemaError(f"Invalid JSON schema: {problems}")


def _out_of_time(exc: _OutOfTime, limits: Limits) -> str:
    seconds = f"{limits.validation_seconds} s"
    if exc.pattern is None:
        return f"the value could not be checked within {seconds}"
    pattern = clip(repr(exc.pattern), limits.max_value_chars)
    return f"the value could not be checked against the pattern {pattern} within {seconds}"


def _error_order(error: JSONSchemaValidationError) -> tuple[int, tuple[tuple[int, Any], ...]]:
    # Deepest first, then in document order: indexes as numbers, keys as (clipped) text.
    steps = tuple((0, s) if isinstance(s, int) else (1, str(s)[:200]) for s in error.absolute_path)
    return (-len(steps), steps)


def _issue(error: JSONSchemaValidationError, limits: Limits) -> ValidationIssue:
    path = clip_path(tuple(error.absolute_path), limits.max_value_chars)
    return ValidationIssue(path, _message(error, limits))


_QUOTES_INSTANCE_FIRST = frozenset(
    {"type", "enum", "const", "format", "minLength", "maxLength", "minItems", "maxItems"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "not", "anyOf", "oneOf"}
    | {"minProperties", "maxProperties", "contains", "if", "dependentRequired"}
)


def _message(error: JSONSchemaValidationError, limits: Limits) -> str:
    message = str(error.message)
    if error.validator == "required":
        return clip(message.replace(" is a required property", " is required but missing"), 300)
    budget = limits.max_value_chars * 4
    if len(message) > budget and error.validator in _QUOTES_INSTANCE_FIRST:
        # jsonschema starts these messages with the whole value's repr.
        quoted = _safe_repr(error.instance)
        if quoted is not None and message.startswith(quoted):
            message = preview(error.instance, limits.max_value_chars) + message[len(quoted) :]
    return clip(message, budget)


def _safe_repr(value: Any) -> str | None:
    try:
        return repr(value)
    except (RecursionError, ValueError):
        return None
