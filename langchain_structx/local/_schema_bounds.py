"""Loosen a schema until the grammar built from it has a bounded cost in llama.cpp.

Runs on the sanitised copy, after `check_shape` and the pattern rewriting, in
three passes:

1. `normalise_node`, on each subschema: counts past `MAX_REPEAT` (or not counts at
   all) are dropped, an object with more than `MAX_OPTIONAL_PROPERTIES` optional
   properties keeps its required ones and allows any others, and a `true` subschema
   becomes "any JSON value" (the converter crashed on it with an `AttributeError`),
   as does a subschema that names no shape (`{}`, or Pydantic's `Any` field,
   `{"title": ...}`), which the converter narrowed to objects or refused.
2. `_Unions`: how many alternatives llama.cpp keeps open while it writes each
   value. All of a union's or enum's branches are open before its first character;
   branches that start alike stay open together, so a union of look-alike objects
   nested in another multiplies; and a look-alike union inside its own recursion
   multiplies without end. A union or enum past `MAX_ALTERNATIVES`, or multiplying
   through its own recursion, becomes the JSON types it allows.
3. `Estimate` (in `_grammar_size`): the size of the grammar text, following the converter's own walk
   and rule names (a rule name is the path of property names that leads to it, so
   long names nested deep cost their length once per level). Counts that would
   take it past `MAX_GRAMMAR_CHARS` are dropped; if it is still larger, the schema
   is refused.

Every change accepts more than the schema did, never less.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from langchain_structx.local._grammar_size import Estimate, PatternLoads
from langchain_structx.local._limits import (
    MAX_ALTERNATIVES,
    MAX_GRAMMAR_CHARS,
    MAX_OPTIONAL_PROPERTIES,
    MAX_REPEAT,
)
from langchain_structx.local._schema_shape import (
    NodeMemo,
    builds_object,
    refuse,
    resolve,
    union_branches,
)
from langchain_structx.local._widen import ANY_VALUE, JSON_TYPES, shapeless

__all__ = ("ANY_VALUE", "bound_schema", "schema_nodes")


_CHILD = ("additionalProperties", "items", "not", "contains", "if", "then", "else")
_CHILD_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_CHILD_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")
_CLASS_OF_TYPE = {"integer": "number", "number": "number", "string": "string"}
_CLASS_OF_TYPE |= {"boolean": "boolean", "null": "null", "array": "array"}
_ANY = "any"
_NO_OBJECT_KEY = ("object", None, None)


def schema_nodes(root: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield every subschema of `root` (once per path), turning `true` ones into `ANY_VALUE`.

    So is every other subschema that names no shape (`shapeless`): `{}` (LangChain
    writes `"items": {}` for a recursive model it cuts short) and Pydantic's `Any`
    field (`{"title": "Extra"}`). The root keeps its form (JSON mode sends `{}`).
    """
    pending = [root]
    while pending:
        node = pending.pop()
        if node is not root and shapeless(node):
            node["type"] = list(JSON_TYPES)
        yield node
        for key in _CHILD:
            child = node.get(key)
            if child is True and key != "additionalProperties":
                child = node[key] = dict(ANY_VALUE)
            if isinstance(child, dict):
                pending.append(child)
        for key in _CHILD_LISTS + _CHILD_MAPS:
            group: Any = node.get(key)
            for slot in _slots(key, group):
                if group[slot] is True:
                    group[slot] = dict(ANY_VALUE)
                if isinstance(group[slot], dict):
                    pending.append(group[slot])


def _slots(key: str, group: Any) -> list[Any]:
    """Where `group` holds subschemas: a list's indexes or a map's keys.

    Never a subschema's own keys: `items` holds one subschema, or a list of them.
    """
    if key in _CHILD_LISTS and isinstance(group, list):
        return list(range(len(group)))
    if key in _CHILD_MAPS and isinstance(group, dict):
        return list(group)
    return []


def normalise_node(node: dict[str, Any]) -> None:
    """Drop counts the grammar cannot write out, and optional properties past the bound."""
    for key in _COUNTS:
        if key not in node:
            continue
        value = node[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPEAT:
            del node[key]
        else:
            node[key] = value
    properties, required = node.get("properties"), node.get("required")
    if isinstance(properties, dict) and isinstance(required, list | type(None)):
        needed = {name for name in required or () if isinstance(name, str)}
        optional = [name for name in properties if name not in needed]
        if len(optional) > MAX_OPTIONAL_PROPERTIES:
            for name in optional:
                del properties[name]
            node["additionalProperties"] = dict(ANY_VALUE)
    parts = node.get("allOf")
    if "properties" not in node and isinstance(parts, list):
        branches = [b for part in parts if isinstance(part, dict) for b in part.get("anyOf") or ()]
        optional_count = sum(len(b["properties"]) for b in branches if _sized(b))
        if optional_count > MAX_OPTIONAL_PROPERTIES:
            del node["allOf"]
            node["type"] = "object"


def _sized(branch: Any) -> bool:
    return isinstance(branch, dict) and isinstance(branch.get("properties"), dict)


def _value_class(value: Any) -> Any:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return _NO_OBJECT_KEY if isinstance(value, dict) else "null"


def _type_class(kind: Any) -> Any:
    if kind == "object":
        return _NO_OBJECT_KEY
    return _CLASS_OF_TYPE.get(kind, _ANY) if isinstance(kind, str) else _ANY


_Width = tuple[int, int, frozenset[int]]
"""Alternatives open before a value's first character, open at most while it is
written, and the recursions (ids of subschemas being measured) it leads back into."""

_LEAF: _Width = (1, 1, frozenset())


class _Unions:
    """Pass 2: count open alternatives bottom-up, loosening unions and enums past the bound."""

    def __init__(self, root: dict[str, Any], loads: PatternLoads) -> None:
        self.root = root
        self.loads = loads
        self.widths: dict[int, _Width] = {}
        self.active: set[int] = set()
        self.starts = NodeMemo(self._start, frozenset({_ANY}))

    def width(self, node: Any) -> _Width:
        """Measure `node` (memoised; a subschema met again inside itself is a recursion)."""
        if not isinstance(node, dict):
            return _LEAF
        key = id(node)
        if key in self.active:
            return 1, 1, frozenset({key})
        if key not in self.widths:
            self.active.add(key)
            try:
                start, most, loops = self._width(node)
            finally:
                self.active.discard(key)
            self.widths[key] = (start, most, loops - {key})
        start, most, loops = self.widths[key]
        return start, most, loops & self.active

    def _width(self, node: dict[str, Any]) -> _Width:
        if "$ref" in node:
            return self.width(resolve(self.root, node["$ref"]))
        branches = union_branches(node)
        if branches is not None:
            return self._branches(node, branches)
        kind, values = node.get("type"), node.get("enum")
        if isinstance(kind, list):
            return len(kind), len(kind), frozenset()
        if "const" not in node and isinstance(values, list):
            if len(values) > MAX_ALTERNATIVES:
                return self.loosen(node, {_value_class(value) for value in values})
            return len(values), len(values), frozenset()
        if "const" not in node and isinstance(node.get("pattern"), str):
            if kind in (None, "string") and not builds_object(node):
                return 1, self.loads.get(node["pattern"], (1, 0))[0], frozenset()
        most, loops = 1, frozenset[int]()
        for child in self.children(node) if "const" not in node else ():
            _, child_most, child_loops = self.width(child)
            most, loops = max(most, child_most), loops | child_loops
        return 1, most, loops

    def children(self, node: dict[str, Any]) -> list[Any]:
        """The subschemas the converter writes inside `node`'s own rule."""
        kind = node.get("type")
        if builds_object(node):
            properties = node.get("properties")
            found = list(properties.values()) if isinstance(properties, dict) else []
            return [*found, node.get("additionalProperties")]
        if kind in (None, "object") and isinstance(node.get("allOf"), list):
            found = []
            for part in node["allOf"]:
                for piece in (part.get("anyOf") or [part]) if isinstance(part, dict) else ():
                    piece = resolve(self.root, piece.get("$ref")) or piece
                    properties = piece.get("properties") if isinstance(piece, dict) else None
                    found.extend(properties.values() if isinstance(properties, dict) else ())
            return found
        if kind in (None, "array") and ("items" in node or "prefixItems" in node):
            items = node.get("items") or node.get("prefixItems")
            return items if isinstance(items, list) else [items]
        return []

    def _branches(self, node: dict[str, Any], branches: list[Any]) -> _Width:
        if len(branches) > MAX_ALTERNATIVES:
            return self.loosen(node, set().union(*map(self.start, branches)))
        widths = [self.width(branch) for branch in branches]
        classes = [self.start(branch) for branch in branches]
        start = sum(width[0] for width in widths)
        sums, counts = _overlaps(classes, [width[1] for width in widths])
        # A branch leading back into a recursion, beside another that starts like it,
        # doubles the open alternatives at every turn of the recursion.
        endless = any(w[2] and count > 1 for w, count in zip(widths, counts, strict=True))
        if max([start, *sums]) > MAX_ALTERNATIVES or endless:
            return self.loosen(node, set().union(*classes))
        return start, max([start, *sums]), frozenset().union(*(width[2] for width in widths))

    def start(self, node: Any) -> frozenset[Any]:
        """Which classes of first characters `node` may begin with (objects by first key)."""
        return self.starts(node) if isinstance(node, dict) else frozenset({_ANY})

    def _start(self, node: dict[str, Any]) -> frozenset[Any]:
        if "$ref" in node:
            return self.start(resolve(self.root, node["$ref"]))
        branches = union_branches(node)
        if branches is not None:
            if len(branches) > MAX_ALTERNATIVES:
                return frozenset({_ANY})
            return frozenset().union(*(self.start(branch) for branch in branches))
        kind = node.get("type")
        if isinstance(kind, list):
            return frozenset(map(_type_class, kind))
        if "const" in node or isinstance(node.get("enum"), list):
            values = node["enum"] if "const" not in node else [node["const"]]
            return frozenset(_value_class(value) for value in values)
        if builds_object(node):
            return frozenset({_object_key(node)})
        return frozenset({_plain_class(node)})

    def loosen(self, node: dict[str, Any], classes: set[Any]) -> _Width:
        """Replace `node` (in place) by the JSON types its values may have."""
        types = {"object" if isinstance(cls, tuple) else cls for cls in classes}
        if _ANY in types:
            types = set(JSON_TYPES)
        kept: dict[str, Any] = {key: node[key] for key in ("$defs", "definitions") if key in node}
        node.clear()
        node["type"] = sorted(types)[0] if len(types) == 1 else sorted(types)
        node.update(kept)
        self.starts.known[id(node)] = frozenset(map(_type_class, types))
        return len(types), len(types), frozenset()


def _plain_class(node: dict[str, Any]) -> Any:
    """The first-character class of a subschema that is neither union, literal nor object."""
    kind = node.get("type")
    if kind in (None, "object") and "allOf" in node or kind == "object" or not node:
        return _NO_OBJECT_KEY
    if kind in (None, "array") and ("items" in node or "prefixItems" in node):
        return "array"
    if kind is None and ("pattern" in node or "format" in node):
        return "string"
    return _type_class(kind)


def _object_key(node: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """An object's first key (as the converter orders them) and its value if a literal."""
    properties: Any = node.get("properties")
    required = node.get("required")
    needed = (
        {name for name in required if isinstance(name, str)}
        if isinstance(required, list)
        else set()
    )
    first = (
        next((name for name in properties if name in needed), None)
        if isinstance(properties, dict)
        else None
    )
    if first is None:
        return _NO_OBJECT_KEY
    value = properties[first]
    values = value.get("enum") if isinstance(value, dict) else None
    if isinstance(value, dict) and "const" in value:
        return ("object", first, json.dumps(value["const"], sort_keys=True))
    if isinstance(values, list) and len(values) == 1:
        return ("object", first, json.dumps(values[0], sort_keys=True))
    return ("object", first, None)


def _adds(cls: Any) -> list[Any]:
    """The buckets a branch starting with `cls` is counted in."""
    if not isinstance(cls, tuple):
        return [cls]
    _, key, literal = cls
    if key is None:
        return ["object", ("key", None)]
    return ["object", ("keyed", key), ("keyless", key) if literal is None else cls]


def _parts(cls: Any) -> list[Any]:
    """The buckets holding every branch that may start like `cls`."""
    if cls == _ANY:
        return ["object", *sorted(set(_CLASS_OF_TYPE.values())), _ANY]
    if not isinstance(cls, tuple):
        return [cls, _ANY]
    _, key, literal = cls
    if key is None:
        return ["object", _ANY]
    if literal is None:
        return [("keyed", key), ("key", None), _ANY]
    return [cls, ("keyless", key), ("key", None), _ANY]


def _overlaps(classes: list[frozenset[Any]], widths: list[int]) -> tuple[list[int], list[int]]:
    """For each branch, the total width and the number of the branches that start like it."""
    total: dict[Any, list[int]] = {}
    for found, width in zip(classes, widths, strict=True):
        for bucket in {bucket for cls in found for bucket in _adds(cls)}:
            entry = total.setdefault(bucket, [0, 0])
            entry[0] += width
            entry[1] += 1
    sums, counts = [], []
    for found, width in zip(classes, widths, strict=True):
        mine = {bucket for cls in found for bucket in _adds(cls)}
        alike = count = own = 0
        for bucket in (bucket for cls in found for bucket in _parts(cls)):
            entry = total.get(bucket, [0, 0])
            alike, count, own = alike + entry[0], count + entry[1], own + (bucket in mine)
        # A branch of several classes is found in several buckets: count it once.
        sums.append(alike - (own - 1) * width)
        counts.append(count - (own - 1))
    return sums, counts


def bound_schema(schema: dict[str, Any], loads: PatternLoads) -> None:
    """Loosen `schema` in place until its grammar has a bounded cost, or refuse it.

    Args:
        schema: A sanitised copy of the caller's schema (its patterns rewritten).
        loads: What each rewritten pattern costs, as measured while rewriting it.

    Raises:
        GrammarError: The grammar would exceed `MAX_GRAMMAR_CHARS` even without
            any count, or the references chain too deep to follow.
    """
    for node in schema_nodes(schema):
        normalise_node(node)
    try:
        _Unions(schema, loads).width(schema)
        estimate = Estimate(schema, loads)
        estimate.visit(schema, "")
    except RecursionError:
        refuse("the schema's references chain too deep to build a grammar")
    if estimate.chars > 2 * MAX_GRAMMAR_CHARS:  # The estimate may overstate up to twice.
        refuse(f"the grammar for this schema would exceed {MAX_GRAMMAR_CHARS:,} characters")
