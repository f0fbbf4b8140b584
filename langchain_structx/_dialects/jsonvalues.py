"""JSON values compared and written the way JSON Schema reads them."""

from __future__ import annotations

import json
from typing import Any


def json_equal(left: Any, right: Any) -> bool:
    """Compare two JSON values the way JSON Schema does (`1 == 1.0`, `True != 1`).

    Examples:
        >>> json_equal(1, 1.0), json_equal(True, 1)
        (True, False)
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and bool(left == right)


def json_key(value: Any) -> Any:
    """Return a hashable key, equal for two values exactly when `json_equal` says so.

    Numbers keep their own value, as Python already hashes `1` and `1.0` alike;
    booleans are kept apart from numbers.

    Examples:
        >>> json_key(1) == json_key(1.0), json_key(True) == json_key(1)
        (True, False)
    """
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(json_key(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, json_key(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def dump_json(value: Any) -> str:
    """Serialise a value as compact JSON text, keeping non-ASCII characters."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
