"""Bring every local `$ref` into one form: `#/$defs/<name>`.

`definitions` (draft 7) and `$defs` are gathered into one table; a reference to the
whole document (`#`), to any other JSON pointer or to a plain-name `$anchor`
(`#name`) gets a definition of its own, so the walker only ever meets
`#/$defs/<name>`. References outside the document cannot be followed (and are
never fetched: dialects do no I/O) and raise `DialectError`.

Only what resolves exactly against the document itself is followed. A sub-schema
with an `$id` of its own is another resource, against which its references
resolve, so a `$ref` inside one raises `DialectError`; so does an anchor that is
missing, declared twice, lies in such a sub-schema or is a `$dynamicAnchor`.
Identity keywords (`$id`, `$anchor`, ...) are then removed, so that the
validators built later resolve references inside this document only.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from langchain_structx._exceptions import DialectError

_PREFIX = "#/$defs/"
_DEF_KEYWORDS = ("$defs", "definitions")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
SUBSCHEMA = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
    }
)
SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
SUBSCHEMA_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
_IDENTITY = frozenset({"$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema"})
_DYNAMIC = ("$dynamicRef", "$recursiveRef")


class _Refs:
    def __init__(self, dialect: str, document: dict[str, Any]) -> None:
        self.dialect = dialect
        self.document = document
        self.defs: dict[str, Any] = {}
        self.by_pointer: dict[str, str] = {}
        self.pending: deque[tuple[str, str]] = deque()
        self.counters: dict[str, int] = {}
        self.anchors: dict[str, str] | None = None

    def name_for(self, pointer: str, hint: str) -> str:
        """Return the definition name for a JSON pointer, creating it if new."""
        if pointer in self.by_pointer:
            return self.by_pointer[pointer]
        hint = _UNSAFE.sub("_", hint) or "Root"
        name, n = hint, self.counters.get(hint, 1)
        while name in self.defs:
            n += 1
            name = f"{hint}_{n}"
        # Remember where numbering stopped, so that many pointers with one hint
        # take linear time, not quadratic.
        self.counters[hint] = n
        self.by_pointer[pointer] = name
        self.defs[name] = None
        self.pending.append((name, pointer))
        return name

    def rewrite(self, ref: str, scope: str | None) -> str:
        if not ref.startswith("#"):
            raise DialectError(self.dialect, f"$ref {ref!r} points outside the schema")
        if scope is not None:
            # Inside another resource a fragment is read against that resource's
            # base URI, not this document: resolving it here would be wrong.
            raise DialectError(
                self.dialect,
                f"$ref {ref!r} sits in a sub-schema with its own $id {scope!r}; "
                "references there are not resolved",
            )
        pointer = unquote(ref[1:])
        if pointer and not pointer.startswith("/"):
            pointer = self.anchor(pointer)
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        return _PREFIX + self.name_for(pointer, parts[-1] if parts else "")

    def anchor(self, name: str) -> str:
        """Return the JSON pointer of the `$anchor` called `name`.

        Raises:
            DialectError: No sub-schema of this document's own resource declares
                it (once), or it is a `$dynamicAnchor`.
        """
        if self.anchors is None:
            self.anchors = _anchors(self.document, self.dialect)
        found = self.anchors.get(name)
        if found is None:
            raise DialectError(self.dialect, f"$ref '#{name}' names no $anchor of the schema")
        if found == _DYNAMIC_ANCHOR:
            raise DialectError(
                self.dialect, f"$ref '#{name}' names a $dynamicAnchor, which is not resolved"
            )
        return found

    def resolve(self, pointer: str) -> tuple[Any, str | None]:
        """Return the node at `pointer` and the foreign `$id` it lies under, if any."""
        node: Any = self.document
        scope = None
        for raw in pointer.split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise DialectError(self.dialect, f"$ref '#{pointer}' cannot be resolved") from None
            scope = _own_id(node) or scope
        if pointer == "":
            node = _root_of(node)
        return node, scope

    def walk(self, node: Any, scope: str | None = None) -> Any:
        """Copy a schema, rewriting references and draft-7 tuple keywords.

        `scope` is the `$id` of the innermost enclosing sub-schema that starts a
        resource of its own (the document's root does not count), or None.
        """
        if not isinstance(node, dict):
            return node
        for keyword in _DYNAMIC:
            if keyword in node:
                raise DialectError(self.dialect, f"{keyword} is not supported")
        scope = _own_id(node) or scope
        out = {
            k: self.keyword(k, v, scope)
            for k, v in node.items()
            if k not in _DEF_KEYWORDS and k not in _IDENTITY
        }
        if isinstance(node.get("$ref"), str):
            out["$ref"] = self.rewrite(node["$ref"], scope)
        if isinstance(out.get("items"), list):
            out["prefixItems"] = out.pop("items")
            if "additionalItems" in out:
                out["items"] = out.pop("additionalItems")
        return out

    def keyword(self, key: str, value: Any, scope: str | None) -> Any:
        if key in SUBSCHEMA_MAP and isinstance(value, dict):
            return {name: self.walk(sub, scope) for name, sub in value.items()}
        if (key in SUBSCHEMA_LIST or key == "items") and isinstance(value, list):
            return [self.walk(sub, scope) for sub in value]
        return self.walk(value, scope) if key in SUBSCHEMA else value


_DYNAMIC_ANCHOR = "$dynamicAnchor"
"""Stands in the anchor table for a name declared by `$dynamicAnchor`."""


def _root_of(document: dict[str, Any]) -> dict[str, Any]:
    """The document's root schema without its definitions and its `$id`.

    The root's `$id` is the document's own base URI, against which `#...`
    references resolve as they do here.
    """
    return {k: v for k, v in document.items() if k not in _DEF_KEYWORDS and k != "$id"}


def _own_id(node: Any) -> str | None:
    """The `$id` that makes `node` a resource of its own, or None.

    An `$id` of only a fragment (`#name`, draft 7's anchors) keeps the base URI.
    """
    found = node.get("$id") if isinstance(node, dict) else None
    return found if isinstance(found, str) and not found.startswith("#") else None


def _anchors(document: dict[str, Any], dialect: str) -> dict[str, str]:
    """Map each anchor name of the root resource to the JSON pointer of its sub-schema.

    Sub-schemas are those under the keywords that take schemas; a sub-schema with
    an `$id` of its own starts another resource, whose anchors are not the root's.

    Raises:
        DialectError: An anchor name is declared twice.
    """
    found: dict[str, str] = {}
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, dict) or (pointer and _own_id(node)):
            continue
        for keyword, target in (("$anchor", pointer), ("$dynamicAnchor", _DYNAMIC_ANCHOR)):
            name = node.get(keyword)
            if isinstance(name, str):
                if name in found:
                    raise DialectError(dialect, f"the anchor {name!r} is declared twice")
                found[name] = target
        stack.extend(_subschemas(node, pointer))
    return found


def _subschemas(node: dict[str, Any], pointer: str) -> list[tuple[Any, str]]:
    """The sub-schemas directly under `node`, each with its JSON pointer."""
    out: list[tuple[Any, str]] = []
    for key, value in node.items():
        here = f"{pointer}/{_escape(key)}"
        if (key in SUBSCHEMA_MAP or key in _DEF_KEYWORDS) and isinstance(value, dict):
            out.extend((sub, f"{here}/{_escape(name)}") for name, sub in value.items())
        elif (key in SUBSCHEMA_LIST or key == "items") and isinstance(value, list):
            out.extend((sub, f"{here}/{i}") for i, sub in enumerate(value))
        elif key in SUBSCHEMA:
            out.append((value, here))
    return out


def normalise_refs(schema: Mapping[str, Any], dialect: str) -> tuple[Any, dict[str, Any]]:
    """Return the root (without definitions) and the table of definitions.

    The result shares non-schema values (`enum`, `const`, ...) with `schema`, so
    pass a copy you own.
    Definition names keep only letters, digits, `_`, `.` and `-`, so that every
    reference reads `#/$defs/<name>` without escaping.

    Examples:
        >>> root, defs = normalise_refs(
        ...     {"definitions": {"A": {"type": "string"}}, "items": {"$ref": "#/definitions/A"}},
        ...     "openai",
        ... )
        >>> root, defs
        ({'items': {'$ref': '#/$defs/A'}}, {'A': {'type': 'string'}})
    """
    document = dict(schema)
    refs = _Refs(dialect, document)
    for keyword in _DEF_KEYWORDS:
        table = document.get(keyword)
        if isinstance(table, dict):
            for name in table:
                refs.name_for(f"/{keyword}/{_escape(name)}", name)
    root = refs.walk(_root_of(document))
    while refs.pending:
        name, pointer = refs.pending.popleft()
        refs.defs[name] = refs.walk(*refs.resolve(pointer))
    return root, refs.defs


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def ref_name(node: Mapping[str, Any]) -> str | None:
    """Return the definition name of a normalised `{"$ref": ...}`, else None."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PREFIX):
        return ref[len(_PREFIX) :]
    return None


def ref_to(name: str) -> dict[str, Any]:
    """Return a reference to a definition."""
    return {"$ref": _PREFIX + name}
