"""Validation helpers used while transforming and by union codecs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator

from langchain_structx._dialects.rules import ANNOTATIONS

_ENUM_KEYS = ANNOTATIONS | {"enum", "const"}


class SchemaChecks:
    """Validators for sub-schemas that may refer to one table of definitions.

    The table may still be filling up while the walker runs: validators are built
    on first use, which for union codecs is after the transform has finished.
    """

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self._root: Any = None

    def validator(self, schema: Any) -> Any:
        """Return a validator of `schema` that resolves `#/$defs/...`."""
        if self._root is None:
            self._root = Draft202012Validator({"$defs": self.defs})
        return self._root.evolve(schema=schema)

    def check(self, schema: Any) -> Callable[[Any], bool]:
        """Return a predicate `value -> bool`, validator built lazily."""
        cache: list[Any] = []

        def accepts(value: Any) -> bool:
            if not cache:
                cache.append(self.validator(schema))
            return bool(cache[0].is_valid(value))

        return accepts

    def accepts(self, schema: Any, value: Any) -> bool:
        """Tell whether `schema` accepts `value`."""
        return bool(self.validator(schema).is_valid(value))

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
