"""The union envelope: one schema for an answer that may be any of several variants.

A union answer is `{"kind": <variant name>, "data": <the variant>}`; the
variants' definitions are hoisted into one `$defs`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from langchain_structx._schema import Variant

ENVELOPE_KIND = "kind"
ENVELOPE_DATA = "data"


def envelope_schema(variants: tuple[Variant, ...]) -> dict[str, Any]:
    """The schema of `{"kind": <name>, "data": <variant>}` over all variants.

    Each variant's own definitions are hoisted into one `$defs`, renamed where two
    variants use the same definition name for different things.

    Examples:
        >>> from langchain_structx._schema import normalize
        >>> s = normalize([{"title": "A", "type": "object"}, {"title": "B", "type": "object"}])
        >>> envelope_schema(s.variants)["anyOf"][0]["properties"]["kind"]
        {'const': 'A'}
    """
    defs: dict[str, Any] = {}
    branches = []
    for variant in variants:
        body = _hoist(variant, defs)
        branches.append(
            {
                "type": "object",
                "properties": {ENVELOPE_KIND: {"const": variant.name}, ENVELOPE_DATA: body},
                "required": [ENVELOPE_KIND, ENVELOPE_DATA],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def _hoist(variant: Variant, defs: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(variant.json_schema)
    local = {**body.pop("definitions", {}), **body.pop("$defs", {})}
    renames = _def_names(variant.name, local, defs)
    for name, sub in local.items():
        defs.setdefault(renames[name], _rewrite_refs(sub, renames))
    return _rewrite_refs(body, renames)  # type: ignore[no-any-return]


def _def_names(prefix: str, local: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, str]:
    """Where each of a variant's definitions goes in the shared `$defs`.

    A definition keeps its name only when the shared one is identical once its
    own references are renamed; since renaming one definition can change
    another that refers to it, this repeats until nothing moves (each round can
    only move names, so it ends within `len(local)` rounds).
    """
    renames = {name: name for name in local}
    taken = set(defs) | set(local)
    moved = True
    while moved:
        moved = False
        for name, sub in local.items():
            if renames[name] != name or name not in defs:
                continue
            if defs[name] != _rewrite_refs(sub, renames):
                renames[name] = _fresh(f"{prefix}__{name}", taken)
                moved = True
    return renames


def _fresh(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


_DEF_PREFIXES = ("#/$defs/", "#/definitions/")


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, list):
        return [_rewrite_refs(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_refs(v, renames) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEF_PREFIXES):
        out["$ref"] = _renamed_ref(ref, renames)
    return out


def _renamed_ref(ref: str, renames: Mapping[str, str]) -> str:
    """`ref` pointed at the renamed definition, keeping any path inside it.

    Examples:
        >>> _renamed_ref("#/definitions/a~1b/properties/x", {"a/b": "V__a/b"})
        '#/$defs/V__a~1b/properties/x'
    """
    rest = ref.split("/", 2)[2]
    first, _, inside = rest.partition("/")
    name = _unescape(first)
    target = _escape(renames.get(name, name))
    return f"#/$defs/{target}/{inside}" if inside else f"#/$defs/{target}"


def _unescape(segment: str) -> str:
    # JSON pointer order: "~1" before "~0", so "~01" reads as "~1", not "/".
    return segment.replace("~1", "/").replace("~0", "~")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
