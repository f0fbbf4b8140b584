"""Open what llama.cpp's converter would write narrower than the schema.

The converter reads a few keywords its own way: it closes an object that does not
say `additionalProperties`, leaves out `patternProperties`, writes a tuple with
all of its items, reads a part with no `type` and no other shape as an object (or
not at all), gives an object's extra keys only objects for values under
`"additionalProperties": true`, and files those keys under a property named `*`. Where that
leaves the grammar no answer the schema allows (a required key the object does not
list, more keys wanted than it lists, a tuple longer than `maxItems`), every
attempt would fail. `widen` opens such a part up; like every other loosening it
accepts more than the schema did, never less, and the answer is still validated
against the schema itself.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ("ANY_VALUE", "JSON_TYPES", "shapeless", "widen")

JSON_TYPES = ("array", "boolean", "null", "number", "object", "string")
ANY_VALUE: dict[str, Any] = {"type": list(JSON_TYPES)}
"""The loosest schema the converter understands: a union of every JSON type."""

EXTRA_KEYS = "*"
"""The name under which the converter files an object's extra keys."""

# What the converter reads as the shape of a subschema that has no `type`.
_SHAPES = frozenset(("$ref", "oneOf", "anyOf", "allOf", "const", "enum", "properties", "items"))
_SHAPES |= {"prefixItems", "pattern"}
_FORMATS = re.compile(r"uuid[1-5]?|date|time|date-time")


def shapeless(node: dict[str, Any]) -> bool:
    """Whether the converter finds no shape in `node`, which JSON Schema reads as any value.

    Examples:
        >>> shapeless({"title": "Extra", "default": None}), shapeless({"format": "date"})
        (True, False)
    """
    if "type" in node or not _SHAPES.isdisjoint(node):
        return False
    if node.get("additionalProperties", True) is not True:  # an object with its values
        return False
    found = node.get("format")
    return not (isinstance(found, str) and _FORMATS.fullmatch(found))


def widen(node: dict[str, Any]) -> None:
    """Open `node` (in place) wherever the converter would leave it no valid answer.

    Examples:
        >>> node = {"type": "object", "properties": {}, "required": ["id"]}
        >>> widen(node)
        >>> node["properties"]["id"] == ANY_VALUE
        True
        >>> node = {"type": "array", "prefixItems": [{"type": "string"}] * 2, "maxItems": 1}
        >>> widen(node)
        >>> node
        {'type': 'array', 'maxItems': 1, 'items': {'type': ['array', 'boolean', 'null', 'number', 'object', 'string']}}
    """  # noqa: E501 - a doctest's output is one line
    properties = node.get("properties")
    if isinstance(properties, dict):
        _open_object(node, properties)
    elif node.get("patternProperties") and node.get("additionalProperties") is not None:
        # The converter leaves these keys out: a closed object would refuse them.
        node["additionalProperties"] = dict(ANY_VALUE)
    for key in ("prefixItems", "items"):
        if isinstance(node.get(key), list):
            _loosen_tuple(node, key)


def _open_object(node: dict[str, Any], properties: dict[str, Any]) -> None:
    # A property named like the converter's marker would be taken for the extra
    # keys, and the keys `patternProperties` allows are left out: both open up.
    opened = properties.pop(EXTRA_KEYS, None) is not None or bool(node.get("patternProperties"))
    required = node.get("required")
    if node.get("additionalProperties") is not False:
        for name in required if isinstance(required, list) else ():
            if isinstance(name, str) and name not in properties:
                # A key the object must have and does not list takes any value here
                # (validation checks it against what the schema gives extra keys).
                opened = opened or name == EXTRA_KEYS
                if name != EXTRA_KEYS:
                    properties[name] = dict(ANY_VALUE)
    least = node.get("minProperties")
    if "additionalProperties" not in node and isinstance(least, int):
        opened = opened or least > len(properties)  # more keys than it lists
    # The converter gives extra keys `{}` for `true`, which it reads as "an object".
    if opened or node.get("additionalProperties") is True:
        node["additionalProperties"] = dict(ANY_VALUE)


def _loosen_tuple(node: dict[str, Any], key: str) -> None:
    """A tuple the converter writes in full, where the schema allows another length."""
    items = node[key]
    least, most = node.get("minItems", 0), node.get("maxItems")
    fixed = key == "items" or node.get("items") in (None, False)
    if fixed and isinstance(least, int) and least <= len(items):
        if not isinstance(most, int) or most >= len(items):
            return
    del node[key]
    node.pop("items", None)
    node["items"] = dict(ANY_VALUE)
