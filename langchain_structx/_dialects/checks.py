"""Validation helpers used while transforming and by union codecs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_structx._dialects.rules import ANNOTATIONS
from langchain_structx._validation.validate import bounded_validator, out_of_time

_ENUM_KEYS = ANNOTATIONS | {"enum", "const"}


class SchemaChecks:
    """Validators for sub-schemas that may refer to one table of definitions.

    The table may still be filling up while the walker runs: validators are built
    on first use, which for union codecs is after the transform has finished.
    """

    def __init__(self, defs: Mapping[str, Any], *, closed: bool = False) -> None:
        self.defs = defs
        self.closed = closed
        self._root: Any = None

    def validator(self, schema: Any) -> Any:
        """Return a validator of `schema` that resolves `#/$defs/...`.

        With `closed`, objects are checked as closed even where the provider schema
        leaves `additionalProperties` out (Gemini never adds undeclared keys).
        """
        if self._root is None:
            defs = {k: close_all(v) for k, v in self.defs.items()} if self.closed else self.defs
            self._root = bounded_validator({"$defs": defs})
        return self._root.evolve(schema=close_all(schema) if self.closed else schema)

    def check(self, schema: Any) -> Callable[[Any], bool]:
        """Return a predicate `value -> bool`, validator built lazily."""
        cache: list[Any] = []

        def accepts(value: Any) -> bool:
            if not cache:
                cache.append(self.validator(schema))
            return _is_valid(cache[0], value)

        return accepts

    def accepts(self, schema: Any, value: Any) -> bool:
        """Tell whether `schema` accepts `value`."""
        return _is_valid(self.validator(schema), value)

    def enum_values(self, schema: Mapping[str, Any]) -> list[Any]:
        """Return the `enum`/`const` values that also meet the node's other keywords."""
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        if "const" in schema and "enum" in schema:
            values = [v for v in values if self.accepts({"const": schema["const"]}, v)]
        rest = {k: v for k, v in schema.items() if k not in _ENUM_KEYS}
        if not rest:
            return values
        check = self.check(rest)
        return [v for v in values if check(v)]


def _is_valid(validator: Any, value: Any) -> bool:
    """Validate; a check that cannot finish does not accept.

    Values and schemas were bounded before (see `guard`), so this only catches
    what no bound foresees: a pattern that does not compile, a reference the
    validator cannot follow, a stack already deep in the caller, a regex that
    ran past the enclosing deadline (patterns run in the bounded engine).
    """
    try:
        return bool(validator.is_valid(value))
    except Exception:  # noqa: BLE001 - any failure to decide means "not accepted"
        if out_of_time():
            # "No" would be a guess; the caller turns this into its own typed error.
            raise TimeoutError("the schema's patterns could not be checked in time") from None
        return False


def close_all(schema: Any) -> Any:
    """Return a copy of a provider schema with every object closed.

    Examples:
        >>> close_all({"type": "object", "properties": {"a": {"type": "string"}}})
        {'type': 'object', 'properties': {'a': {'type': 'string'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [close_all(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: close_all(v) if k in _NESTED else v for k, v in schema.items()}
    if "properties" in out:
        out["properties"] = {k: close_all(v) for k, v in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out


_NESTED = frozenset({"items", "anyOf"})
