"""Leave out of a schema the parts no value satisfies, or refuse a schema that admits none.

JSON Schema lets a part allow no value at all: `false`, `{"enum": []}`,
`{"type": []}`, a union none of whose branches can be satisfied, an `allOf` with
such a member, a reference to such a part. llama-cpp-python's converter crashes
on `false` and writes an empty rule, which llama.cpp refuses, for the others.
What such a part means depends on where it sits, and `drop_dead_ends` writes that
out before the schema is converted:

- an optional property or a branch of a union is left out: the model cannot
  write it, and the schema does not allow it;
- `additionalProperties` becomes `false`;
- `items` (or `prefixItems[i]`) ends the array before it: the tuple is closed at
  its prefix, `[]` when there is none. Wanting more items (`minItems`) leaves the
  array no value;
- a required property leaves the object no value.

An object or array left no value allows nothing where `type` says it must be
one; where the part allows other types, it keeps only those (JSON Schema reads
the keywords of objects and arrays as holding for those values only). A schema
whose root allows nothing is refused with a `GrammarError` that names the path
of the part leaving nothing. No change here takes away a value the schema
accepts (the converter itself still writes every item of a tuple).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from langchain_structx._clip import MESSAGE_CHARS, clip
from langchain_structx._exceptions import ValidationIssue
from langchain_structx.local._schema_bounds import schema_nodes
from langchain_structx.local._schema_shape import NodeMemo, referent, refuse
from langchain_structx.local._widen import JSON_TYPES

__all__ = ("drop_dead_ends",)

_EXTRA = "additionalProperties"

_KEYWORDS = {
    "object": (
        *("properties", "required", "additionalProperties", "patternProperties"),
        *("minProperties", "maxProperties", "propertyNames", "dependentRequired"),
        *("dependentSchemas", "unevaluatedProperties"),
    ),
    "array": (
        *("items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains"),
        *("minContains", "maxContains", "uniqueItems", "unevaluatedItems"),
    ),
}
"""The keywords that hold for objects or arrays only."""


@dataclass(frozen=True, slots=True)
class _Reason:
    """Why a part allows no value: the path to the part that leaves nothing, and what it is."""

    path: tuple[str | int, ...]
    what: str

    def under(self, *steps: str | int) -> _Reason:
        return _Reason((*steps, *self.path), self.what)


def drop_dead_ends(schema: Any) -> None:
    """Leave out (in place) the parts of `schema` that no value satisfies.

    Args:
        schema: A plain JSON copy of a schema that passed `check_shape`.

    Raises:
        GrammarError: No value satisfies the schema itself; the message names the
            path of the part that leaves nothing. Or its references chain too deep.

    Examples:
        >>> schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": False}}
        >>> drop_dead_ends(schema)
        >>> schema
        {'type': 'object', 'properties': {'a': {'type': 'string'}}}
        >>> schema["required"] = ["b"]
        >>> schema["properties"]["b"] = {"enum": []}
        >>> drop_dead_ends(schema)
        Traceback (most recent call last):
        ...
        langchain_structx.local._grammar.GrammarError: the schema admits no value: nothing \
satisfies $.properties.b (a required property: an empty enum)
    """
    ends = _DeadEnds(schema)
    try:
        reason = ends.why(schema)
        if reason is None and isinstance(schema, dict):
            for node in schema_nodes(schema):
                ends.prune(node)
    except RecursionError:
        refuse("the schema's references chain too deep to build a grammar")
    if reason is not None:
        where = ValidationIssue(reason.path, "").location
        message = f"the schema admits no value: nothing satisfies {where} ({reason.what})"
        refuse(clip(message, MESSAGE_CHARS))


class _DeadEnds:
    """Which parts of one schema allow no value (memoised), and pruning them."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._whys = NodeMemo(self._why, None)

    def why(self, node: Any) -> _Reason | None:
        """Why no value satisfies `node`, or `None` when some value may.

        A part met again inside itself is taken as satisfiable: that can only
        leave in what might have been left out.
        """
        if node is False:
            return _Reason((), "`false`")
        return self._whys(node) if isinstance(node, dict) else None

    def _why(self, node: dict[str, Any]) -> _Reason | None:
        if node.get("enum") == []:
            return _Reason((), "an empty enum")
        if node.get("type") == []:
            return _Reason((), "an empty list of types")
        ref = node.get("$ref")
        target = self.root if ref == "#" else referent(self.root, ref)
        if self.why(target) is not None:
            return _Reason((), f"its $ref {ref} allows no value")
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and all(self.why(b) is not None for b in branches):
                return _Reason((), f"no branch of its {key} can be satisfied")
        parts = node.get("allOf")
        for index, part in enumerate(parts if isinstance(parts, list) else ()):
            found = self.why(part)
            if found is not None:
                return found.under("allOf", index)
        lost = self.lost(node)
        return next(iter(lost.values())) if lost and not _types_left(node, lost) else None

    def lost(self, node: dict[str, Any]) -> dict[str, _Reason]:
        """The types `node` allows whose own keywords leave them no value, and why."""
        lost: dict[str, _Reason] = {}
        properties, required = node.get("properties"), node.get("required")
        listed = properties if isinstance(properties, dict) else {}
        for name in required if _may_be(node, "object") and isinstance(required, list) else ():
            if not isinstance(name, str) or name not in listed and node.get("patternProperties"):
                continue
            found = _required(name, listed, self.why(listed.get(name, node.get(_EXTRA))))
            if found is not None:
                lost["object"] = found
                break
        if _may_be(node, "array"):
            cut, least = self.cut(node)
            if cut is not None and least > cut:
                needed = f"{least} item{'s' * (least > 1)}"
                lost["array"] = _Reason((), f"it needs {needed} and allows at most {cut}")
        return lost

    def cut(self, node: dict[str, Any]) -> tuple[int | None, int]:
        """How many items an array may hold at most, if its items limit it, and `minItems`."""
        if isinstance(node.get("prefixItems"), list):
            prefix, rest = node["prefixItems"], node.get("items", True)
        elif isinstance(node.get("items"), list):  # a tuple as drafts before 2020-12 wrote it
            prefix, rest = node["items"], node.get("additionalItems", True)
        else:
            prefix, rest = [], node.get("items", True)
        cut = next((i for i, item in enumerate(prefix) if self.why(item) is not None), None)
        if cut is None and self.why(rest) is not None:
            cut = len(prefix)
        least = node.get("minItems")
        if isinstance(least, float) and least.is_integer():
            least = int(least)
        return cut, least if isinstance(least, int) and not isinstance(least, bool) else 0

    def prune(self, node: dict[str, Any]) -> None:
        """Leave out of `node` the parts that allow no value (see the module's docstring)."""
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                live = [branch for branch in branches if self.why(branch) is None]
                if live and len(live) < len(branches):
                    node[key] = live
        properties, required = node.get("properties"), node.get("required")
        listed = required if isinstance(required, list) else []
        needed = {name for name in listed if isinstance(name, str)}
        if isinstance(properties, dict):
            for name in [name for name in properties if name not in needed]:
                if self.why(properties[name]) is not None:
                    del properties[name]
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and self.why(extra) is not None:
            node["additionalProperties"] = False
        lost = self.lost(node)
        cut = self.cut(node)[0] if _may_be(node, "array") else None
        if cut is not None and "array" not in lost:
            _close(node, cut)
        if lost:
            _keep_other_types(node, lost)


def _required(name: str, listed: dict[str, Any], found: _Reason | None) -> _Reason | None:
    """Why the required property `name` leaves its object no value, from why its value has none."""
    if found is None:
        return None
    if name in listed:
        if found.path:  # Deeper down, where its own words are.
            return found.under("properties", name)
        return _Reason(("properties", name), f"a required property: {found.what}")
    # Its value is one of the extra keys'.
    what = f"the required property {json.dumps(name)} falls under it: {found.what}"
    return _Reason((_EXTRA, *found.path), what)


def _may_be(node: dict[str, Any], kind: str) -> bool:
    found = node.get("type")
    if isinstance(found, str):
        return found == kind
    return kind in found if isinstance(found, list) else True


def _types_left(node: dict[str, Any], lost: dict[str, _Reason]) -> list[Any]:
    found = node.get("type")
    allowed = [found] if isinstance(found, str) else found
    if not isinstance(allowed, list):
        allowed = list(JSON_TYPES)
    return [kind for kind in allowed if not (isinstance(kind, str) and kind in lost)]


def _keep_other_types(node: dict[str, Any], lost: dict[str, _Reason]) -> None:
    """Make `node` allow only the types it has values of."""
    left = _types_left(node, lost)
    if not left:
        return  # Nothing reads it: its parent left it out, or the schema was refused.
    # The converter writes an enum or a constant before it looks at anything but a
    # list of types: a part holding one is left to it.
    if "type" in node or not {"enum", "const"} & node.keys():
        node["type"] = left[0] if len(left) == 1 else left
    for kind in lost:
        for keyword in _KEYWORDS[kind]:
            node.pop(keyword, None)


def _close(node: dict[str, Any], cut: int) -> None:
    """End the array after its first `cut` items: the converter writes such a tuple in full."""
    if isinstance(node.get("prefixItems"), list):
        prefix = node["prefixItems"]
    else:
        prefix = node["items"] if isinstance(node.get("items"), list) else []
    node["prefixItems"] = prefix[:cut]
    node["items"] = False
    node.pop("additionalItems", None)
