"""Bring every local `$ref` into one form: `#/$defs/<name>`.

`definitions` (draft 7) and `$defs` are gathered into one table; a reference to the
whole document (`#`) or to any other JSON pointer gets a definition of its own, so
the walker only ever meets `#/$defs/<name>`. References outside the document cannot
be followed (and are never fetched: dialects do no I/O) and raise `DialectError`.
Keywords that would give a sub-schema its own base URI (`$id`, `$anchor`, ...) are
removed, so that the validators built later resolve references inside this
document only.
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

    def rewrite(self, ref: str) -> str:
        if not ref.startswith("#"):
            raise DialectError(self.dialect, f"$ref {ref!r} points outside the schema")
        pointer = unquote(ref[1:])
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        return _PREFIX + self.name_for(pointer, parts[-1] if parts else "")

    def resolve(self, pointer: str) -> Any:
        node: Any = self.document
        for raw in pointer.split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise DialectError(self.dialect, f"$ref '#{pointer}' cannot be resolved") from None
        if pointer == "":
            node = {k: v for k, v in node.items() if k not in _DEF_KEYWORDS}
        return node

    def walk(self, node: Any) -> Any:
        """Copy a schema, rewriting references and draft-7 tuple keywords."""
        if not isinstance(node, dict):
            return node
        for keyword in _DYNAMIC:
            if keyword in node:
                raise DialectError(self.dialect, f"{keyword} is not supported")
        out = {
            k: self.keyword(k, v)
            for k, v in node.items()
            if k not in _DEF_KEYWORDS and k not in _IDENTITY
        }
        if isinstance(node.get("$ref"), str):
            out["$ref"] = self.rewrite(node["$ref"])
        if isinstance(out.get("items"), list):
            out["prefixItems"] = out.pop("items")
            if "additionalItems" in out:
                out["items"] = out.pop("additionalItems")
        return out

    def keyword(self, key: str, value: Any) -> Any:
        if key in SUBSCHEMA_MAP and isinstance(value, dict):
            return {name: self.walk(sub) for name, sub in value.items()}
        if (key in SUBSCHEMA_LIST or key == "items") and isinstance(value, list):
            return [self.walk(sub) for sub in value]
        return self.walk(value) if key in SUBSCHEMA else value


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
    root = refs.walk(document)
    while refs.pending:
        name, pointer = refs.pending.popleft()
        refs.defs[name] = refs.walk(refs.resolve(pointer))
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
