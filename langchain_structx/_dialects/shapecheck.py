"""Keyword shapes checked before the walk, without recursion.

The walker reads keywords by their meaning (`properties` as a dict of schemas,
`required` as a list of names, ...). A keyword of another shape, as a hostile or
careless schema may hold, would otherwise surface as a `TypeError` deep inside it;
here it is a `SchemaError` naming the place. Checking this by hand rather than
against the meta-schema keeps it linear and cheap (the meta-schema check took
about half a millisecond per definition).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from langchain_structx._dialects.refs import SUBSCHEMA, SUBSCHEMA_LIST, SUBSCHEMA_MAP
from langchain_structx._exceptions import SchemaError

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
    | {"minContains", "maxContains"}
)
_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any) -> bool:
    if isinstance(value, str):
        return value in _TYPES
    return isinstance(value, list) and all(isinstance(t, str) and t in _TYPES for t in value)


_SHAPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "type": (_is_type, "a JSON type name or a list of them"),
    "required": (
        lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
        "a list of property names",
    ),
    "enum": (lambda v: isinstance(v, list), "a list"),
    "$ref": (lambda v: isinstance(v, str), "a string"),
    "pattern": (lambda v: isinstance(v, str), "a string"),
    "format": (lambda v: isinstance(v, str), "a string"),
    "dependentRequired": (
        lambda v: (
            isinstance(v, dict)
            and all(isinstance(n, list) and all(isinstance(x, str) for x in n) for n in v.values())
        ),
        "a dict of lists of property names",
    ),
    **dict.fromkeys(
        _COUNTS, (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a count")
    ),
    **dict.fromkeys(_NUMBERS, (_is_number, "a number")),
    **dict.fromkeys(SUBSCHEMA, (lambda v: isinstance(v, dict | bool), "a schema")),
    **dict.fromkeys(
        SUBSCHEMA_LIST,
        (lambda v: isinstance(v, list) and bool(v), "a non-empty list of schemas"),
    ),
    **dict.fromkeys(SUBSCHEMA_MAP, (lambda v: isinstance(v, dict), "a dict of schemas")),
}


def _subschemas(node: dict[str, Any], path: str) -> Iterator[tuple[Any, str]]:
    for key, value in node.items():
        if key in SUBSCHEMA:
            yield value, f"{path}.{key}"
        elif key in SUBSCHEMA_LIST:
            yield from ((sub, f"{path}.{key}[{i}]") for i, sub in enumerate(value))
        elif key in SUBSCHEMA_MAP:
            yield from ((sub, f"{path}.{key}.{name}") for name, sub in value.items())


def check_shapes(root: Any, defs: dict[str, Any]) -> None:
    """Raise `SchemaError` at the first keyword whose value has the wrong shape.

    Examples:
        >>> check_shapes({"pattern": 1}, {})
        Traceback (most recent call last):
        ...
        langchain_structx.errors.SchemaError: Invalid JSON Schema: $.pattern must be a string
    """
    stack: list[tuple[Any, str]] = [(root, "$")]
    stack += [(sub, f"$.$defs.{name}") for name, sub in defs.items()]
    while stack:
        node, path = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            raise SchemaError(f"Invalid JSON Schema: {path} must be a schema (a dict or a boolean)")
        for key, value in node.items():
            shape = _SHAPES.get(key)
            if shape is not None and not shape[0](value):
                raise SchemaError(f"Invalid JSON Schema: {path}.{key} must be {shape[1]}")
        stack.extend(_subschemas(node, path))
