"""Provider schema dialects: send any JSON Schema to a strict structured-output mode.

OpenAI, Anthropic and Gemini each accept only a subset of JSON Schema in their
strict or structured-output modes. `transform` rewrites a schema into that subset and
returns a `Transformed`, which knows how to bring the model's output back to the
original schema's shape (`restore`) and how to put a value into the provider's shape
(`encode`), so that for every value `x` valid under the original schema::

    transformed.restore(transformed.encode(x)) == x

What changes, per dialect:

* the root becomes an object (`{"value": ...}`) when it is not one;
* objects get closed; maps (open objects) become lists of key/value entries, and
  the other keys of an object with named properties (where the schema admits
  them: `additionalProperties` true or a schema) travel the same way beside them;
  an object that says nothing of other keys is closed, as strict modes close it;
  tuples become objects keyed `item_0`, `item_1`, ...; free-form values become
  JSON text; enums the provider cannot take become enums of JSON text;
* Anthropic: nullable scalars are an `anyOf` with `null` (never a `type` list);
* Gemini: a definition that recurs through optional properties stays a `$ref`;
* OpenAI only: every property becomes required, optional ones nullable (`null`
  means absent; when the original property accepts `null` too, and absent and
  `null` validate to different values, `{"explicit_null": true}` means an
  explicit `null`);
* `allOf` is merged, `oneOf` becomes `anyOf`, type lists become `anyOf`;
* constraints the provider does not enforce are removed, described in the node's
  `description` so the model still sees them, and listed in `dropped`; the output is
  validated against the original schema anyway.

A schema the dialect cannot express faithfully (over a size limit, recursion where
`$ref` cannot recur, a reference outside the document, nesting deeper than the
rewriting can follow) raises `DialectError`; one that is not JSON at all raises
`SchemaError`. References are never fetched. The work done is linear in the
schema's size, and no schema or value makes any step recurse without bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from langchain_structx._dialects import anthropic, declarations, gemini, openai
from langchain_structx._dialects.codecs import PENDING, Codec
from langchain_structx._dialects.guard import (
    check_references,
    copy_document,
    too_deep,
)
from langchain_structx._dialects.refs import normalise_refs
from langchain_structx._dialects.rules import Rules
from langchain_structx._dialects.shapecheck import check_shapes
from langchain_structx._dialects.walker import Walker
from langchain_structx._exceptions import (
    DialectError,
    OutputValidationError,
    UserError,
    ValidationIssue,
)
from langchain_structx._validation.validate import deadline
from langchain_structx.limits import DEFAULT_LIMITS, Limits

Dialect = Literal["openai", "anthropic", "gemini"]
"""A provider's strict structured-output dialect."""

MAX_VALUE_DEPTH = 128
"""Deepest value `encode` and `restore` walk; a deeper one is an `OutputValidationError`."""

_RULES: dict[str, Rules] = {
    "openai": openai.RULES,
    "anthropic": anthropic.RULES,
    "gemini": gemini.RULES,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Transformed:
    """A schema rewritten for one provider, with the way back.

    Attributes:
        schema: The schema to send to the provider (a new dict).
        dialect: The dialect it was written for.
        wrapped: The root was wrapped as `{"value": <original>}`.
        dropped: One line per constraint removed or rewritten lossily, such as
            `"$.properties.age: minimum 0 (enforced by validation)"`.
    """

    schema: dict[str, Any]
    dialect: Dialect
    wrapped: bool
    dropped: tuple[str, ...]
    _codec: Codec = field(repr=False, compare=False)
    _max_depth: int = field(default=MAX_VALUE_DEPTH, repr=False, compare=False)
    _seconds: float = field(default=DEFAULT_LIMITS.validation_seconds, repr=False, compare=False)

    def encode(self, value: Any) -> Any:
        """Put a value valid under the original schema into the provider's shape.

        Args:
            value: A value valid under the original schema.

        Returns:
            The same value as the provider would send it.

        Raises:
            OutputValidationError: The value nests too deeply (or is too large) to
                walk safely.

        Examples:
            >>> t = transform({"type": "array", "items": {"type": "integer"}}, "openai")
            >>> t.encode([1, 2])
            {'value': [1, 2]}
        """
        return self._walk(self._codec.encode, value)

    def restore(self, value: Any) -> Any:
        """Bring a provider output back to the original schema's shape.

        A part of unexpected shape is returned unchanged, for the validation
        against the original schema to report.

        Args:
            value: The provider's parsed output.

        Returns:
            The value in the original schema's shape.

        Raises:
            OutputValidationError: The value nests too deeply (or is too large) to
                walk safely; it would fail validation anyway.

        Examples:
            >>> t = transform({"type": "array", "items": {"type": "integer"}}, "openai")
            >>> t.restore({"value": [1, 2]})
            [1, 2]
        """
        return self._walk(self._codec.restore, value)

    def restore_partial(self, value: Any) -> Any:
        """Bring a provider output still being streamed back to the original shape.

        What is not complete enough to show in that shape is left out: a map
        entry until its value has started, a free-form value until its JSON text
        is whole, a union whose members travel in different shapes (part of a
        value can fit a member the whole does not), a list item after one that
        waits. Nothing of the provider's own shape shows. Gives None while the
        root itself waits (a wrapped root before its key).

        Args:
            value: The provider's output so far, as a partial-JSON reader gives it.

        Returns:
            The part of the value that can be shown, in the original shape.

        Raises:
            OutputValidationError: The value nests too deeply to walk safely.

        Examples:
            >>> t = transform({"type": "object", "additionalProperties": {"type": "integer"}},
            ...               "openai")
            >>> t.restore_partial({"value": [{"key": "a", "value": 1}, {"key": "b"}]})
            {'a': 1}
        """
        restored = self._walk(self._codec.restore_partial, value)
        return None if restored is PENDING else restored

    def _walk(self, step: Callable[[Any], Any], value: Any) -> Any:
        problem = too_deep(value, self._max_depth)
        unfinished = problem is None
        if problem is None:
            try:
                with deadline(self._seconds):
                    return step(value)
            except RecursionError:
                # The value is bounded, but the caller's own stack may be deep.
                problem = "the value nests too deeply to read"
            except TimeoutError:
                problem = f"the value could not be checked within {self._seconds} s"
        name = self.schema.get("title")
        issue = ValidationIssue((), problem, unfinished=unfinished)
        raise OutputValidationError(name if isinstance(name, str) else "the output", [issue])


def transform(
    schema: Mapping[str, Any] | bool,
    dialect: Dialect,
    *,
    limits: Limits = DEFAULT_LIMITS,
    carry_undeclared: bool = False,
    defaults_apply: bool = False,
) -> Transformed:
    """Rewrite a JSON Schema for a provider's strict structured-output mode.

    Args:
        schema: Any JSON Schema (draft 2020-12 or draft 7); it is not modified.
        dialect: `"openai"`, `"anthropic"` or `"gemini"`.
        limits: Bounds for the values later given to `encode` and `restore`
            (`max_depth`, capped at `MAX_VALUE_DEPTH`).
        carry_undeclared: An object that names properties and says nothing of
            others is closed, as strict modes close it (an explicit
            `additionalProperties` true or schema is honoured: such keys travel
            as key/value entries). True carries the undeclared keys JSON Schema
            would admit there too, at the cost of an `extra_properties` list in
            every such object.
        defaults_apply: The validator fills in a property's `default` when the
            key is absent (Pydantic models, dataclasses). Where every property
            must be sent (OpenAI), an optional property that accepts `null` then
            needs no marker for an explicit `null`: absent is sent as the default.

    Returns:
        The provider schema and the codec between both shapes.

    Raises:
        DialectError: The schema cannot be expressed faithfully in the dialect,
            or nests too deeply (through its references too) to be rewritten.
        UserError: The dialect is unknown or the schema is not a JSON Schema
            (`SchemaError` when it is not JSON at all: other types, a dict that
            contains itself).

    Examples:
        >>> t = transform(
        ...     {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}},
        ...     "anthropic",
        ... )
        >>> t.schema["properties"]["age"]
        {'type': 'integer', 'description': '(minimum: 0)'}
        >>> t.dropped
        ('$.properties.age: minimum 0 (enforced by validation)',)
    """
    if dialect not in _RULES:
        raise UserError(f"Unknown dialect {dialect!r}; expected one of {get_args(Dialect)}")
    return _transform(schema, dialect, _RULES[dialect], limits, carry_undeclared, defaults_apply)


def transform_for_tools(
    schema: Mapping[str, Any],
    dialect: Dialect,
    *,
    limits: Limits = DEFAULT_LIMITS,
    defaults_apply: bool = False,
) -> Transformed:
    """`transform` for a tool's parameters, in the form the provider's client forwards.

    Gemini's function declarations take Gemini's own `Schema`, which
    `langchain-google-genai` builds from the JSON schema it is given and
    degrades on the way (see `_dialects.declarations`): they are written in the
    part of it the client forwards unchanged. Other dialects take their tool
    parameters as `transform` writes them.

    Raises:
        DialectError: As `transform`; also for recursive parameters (a client
            turns them into a schema type without references) and for Gemini
            parameters the installed client would change.
    """
    if dialect != "gemini":
        found = transform(schema, dialect, limits=limits, defaults_apply=defaults_apply)
    else:
        found = _transform(schema, dialect, declarations.TOOL_RULES, limits, False, defaults_apply)
    if "$defs" in found.schema:
        raise DialectError(dialect, "tool parameters cannot be recursive")
    if dialect != "gemini":
        return found
    parameters = declarations.declaration_parameters(found.schema)
    declarations.check_forwarded(parameters)
    return replace(found, schema=parameters)


def _transform(
    schema: Mapping[str, Any] | bool,
    dialect: Dialect,
    rules: Rules,
    limits: Limits,
    carry_undeclared: bool,
    defaults_apply: bool,
) -> Transformed:
    if schema is False:
        raise DialectError(dialect, "the schema false accepts no value")
    if schema is True:
        schema = {}
    if not isinstance(schema, Mapping):
        raise UserError(f"A JSON Schema must be a mapping, got {type(schema).__name__}")
    document = copy_document(schema, dialect)
    root, defs = normalise_refs(document, dialect)
    check_references(root, defs, dialect)
    check_shapes(root, defs)
    walker = Walker(rules, defs, carry_undeclared=carry_undeclared, defaults_apply=defaults_apply)
    try:
        with deadline(limits.validation_seconds):
            out, codec, wrapped = walker.run(root)
    except TimeoutError:
        reason = f"its patterns could not be checked within {limits.validation_seconds} s"
        raise DialectError(dialect, reason) from None
    return Transformed(
        schema=out,
        dialect=dialect,
        wrapped=wrapped,
        dropped=tuple(walker.dropped),
        _codec=codec,
        _max_depth=min(limits.max_depth, MAX_VALUE_DEPTH),
        _seconds=limits.validation_seconds,
    )


__all__ = ("Dialect", "DialectError", "Transformed", "transform")
