"""Merge the members of an `allOf` into one schema.

None of the strict dialects accepts `allOf`, so its members are folded together:
`properties` and `required` are united, bounds take the tighter value, `type` and
`enum` are intersected, and sub-schemas of the same keyword (`items`, a property
present on both sides, ...) become a nested `allOf` that the walker merges when it
reaches them. When two members disagree on a keyword that has no intersection in
schema form (two different `pattern`s, say), the first one is kept and the other is
returned as a conflict, to be described and left to validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import product
from typing import Any

from langchain_structx._dialects.jsonvalues import json_equal, json_key

Conflict = tuple[str, Any]
Merger = Callable[[Any, Any], Any]
_MAX_UNION_PRODUCT = 64


class NoMerge(Exception):
    """Two values of one keyword have no common form."""


def _tighter(pick: Callable[[Any, Any], Any]) -> Merger:
    return lambda a, b: pick(a, b)


def _union_list(a: list[Any], b: list[Any]) -> list[Any]:
    present = {json_key(item) for item in a}
    return list(a) + [item for item in b if json_key(item) not in present]


def _types(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _merge_type(a: Any, b: Any) -> Any:
    left, right = _types(a), _types(b)
    out = [t for t in left if t in right or (t == "integer" and "number" in right)]
    out += [t for t in right if t == "integer" and "number" in left and t not in out]
    if not out:
        raise NoMerge
    return out[0] if len(out) == 1 else out


def _merge_enum(a: list[Any], b: list[Any]) -> list[Any]:
    # Keys instead of pairwise comparison: two enums of 50,000 values each would
    # otherwise take 2.5 billion comparisons.
    allowed = {json_key(w) for w in b}
    out = [v for v in a if json_key(v) in allowed]
    if not out:
        raise NoMerge
    return out


def _merge_schema(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is True or a == {}:
        return b
    if b is True or b == {}:
        return a
    return {"allOf": [a, b]}


def _merge_properties(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for name, sub in b.items():
        out[name] = _merge_schema(out[name], sub) if name in out else sub
    return out


def _merge_union(a: list[Any], b: list[Any]) -> list[Any]:
    if len(a) * len(b) > _MAX_UNION_PRODUCT:
        raise NoMerge
    return [_merge_schema(x, y) for x, y in product(a, b)]


def _merge_dependent(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, names in b.items():
        out[key] = _union_list(out.get(key, []), names)
    return out


def _later(_a: Any, b: Any) -> Any:
    return b


def _same(a: Any, b: Any) -> Any:
    if json_equal(a, b):
        return a
    raise NoMerge


_MERGERS: dict[str, Merger] = {
    "properties": _merge_properties,
    "patternProperties": _merge_properties,
    "required": _union_list,
    "type": _merge_type,
    "enum": _merge_enum,
    "anyOf": _merge_union,
    "oneOf": _merge_union,
    "dependentRequired": _merge_dependent,
    "title": _later,
    "description": _later,
    "default": _later,
    "examples": _later,
    **dict.fromkeys(
        ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"),
        _tighter(max),
    ),
    **dict.fromkeys(
        ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"),
        _tighter(min),
    ),
    **dict.fromkeys(
        (
            "items",
            "additionalProperties",
            "unevaluatedProperties",
            "propertyNames",
            "contains",
        ),
        _merge_schema,
    ),
}


def merge_pair(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[dict[str, Any], list[Conflict]]:
    """Merge `b` into `a`; return the result and what could not be merged.

    Examples:
        >>> merge_pair({"type": "number", "minimum": 0}, {"type": "integer", "minimum": 5})
        ({'type': 'integer', 'minimum': 5}, [])
    """
    out = dict(a)
    conflicts: list[Conflict] = []
    for key, value in b.items():
        if key not in out:
            out[key] = value
            continue
        try:
            out[key] = _MERGERS.get(key, _same)(out[key], value)
        except NoMerge:
            conflicts.append((key, value))
    return out, conflicts


def merge_all(members: list[Mapping[str, Any]]) -> tuple[dict[str, Any], list[Conflict]]:
    """Merge `allOf` members, left to right.

    Examples:
        >>> merge_all([{"properties": {"a": {}}}, {"properties": {"b": {}}, "required": ["b"]}])
        ({'properties': {'a': {}, 'b': {}}, 'required': ['b']}, [])
    """
    out: dict[str, Any] = {}
    conflicts: list[Conflict] = []
    for member in members:
        out, found = merge_pair(out, member)
        conflicts += found
    return out, conflicts
