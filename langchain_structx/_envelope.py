"""The union envelope: one schema for an answer that may be any of several variants.

A union answer is `{"kind": <variant name>, "data": <the variant>}`; the
variants' definitions are hoisted into one `$defs`. A variant that refers to
its own root (`#`, or a JSON pointer outside its definitions) is hoisted too,
since those references would otherwise point into the envelope.
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
    root = None
    if any(_refers_to_root(part) for part in (body, *local.values())):
        root = _fresh(variant.name, {*defs, *local, *renames.values()})
    for name, sub in local.items():
        defs.setdefault(renames[name], _rewrite_refs(sub, renames, root))
    rewritten: dict[str, Any] = _rewrite_refs(body, renames, root)
    if root is None:
        return rewritten
    defs[root] = rewritten
    return {"$ref": f"#/$defs/{_escape(root)}"}


def _refers_to_root(node: Any) -> bool:
    """Whether `node` holds a reference into its document outside the definitions."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if _root_pointer(item.get("$ref")) is not None:
                return True
            stack.extend(item.values())
    return False


def _root_pointer(ref: Any) -> str | None:
    """The JSON pointer of a reference into the document outside its definitions."""
    if not isinstance(ref, str) or ref.startswith(_DEF_PREFIXES):
        return None
    return ref[1:] if ref == "#" or ref.startswith("#/") else None


def _def_names(prefix: str, local: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, str]:
    """Where each of a variant's definitions goes in the shared `$defs`.

    A definition keeps its name only when the shared one is identical once its
    own references are renamed. Renaming one definition changes every other
    that refers to it, so this is decided in two linear passes: each definition
    is compared once with the shared one, treating a reference to a definition
    that might keep its name as kept (and noting the dependency); then every
    definition that differs, and by the dependencies every one that refers to
    it, is renamed. A renamed reference never matches a shared one, since fresh
    names are taken by no shared definition.
    """
    renamed: list[str] = []
    needed_by: dict[str, list[str]] = {}
    for name, sub in local.items():
        if name not in defs:
            continue
        uses: list[str] = []
        if _same(sub, defs[name], uses):
            for used in uses:
                if used in defs and used in local:
                    needed_by.setdefault(used, []).append(name)
        else:
            renamed.append(name)
    moved = set(renamed)
    while renamed:
        for name in needed_by.get(renamed.pop(), ()):
            if name not in moved:
                moved.add(name)
                renamed.append(name)
    taken = set(defs) | set(local)
    return {name: _fresh(f"{prefix}__{name}", taken) if name in moved else name for name in local}


def _same(node: Any, shared: Any, uses: list[str]) -> bool:
    """Whether `node`, its references unrenamed, equals `shared`.

    Appends to `uses` the definition names `node` refers to: the equality holds
    only while each of them keeps its name.
    """
    if isinstance(node, list):
        return (
            isinstance(shared, list)
            and len(node) == len(shared)
            and all(_same(a, b, uses) for a, b in zip(node, shared, strict=True))
        )
    if not isinstance(node, dict):
        return bool(node == shared)
    if not isinstance(shared, dict) or node.keys() != shared.keys():
        return False
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_DEF_PREFIXES):
            if shared[key] != _renamed_ref(value, {}):
                return False
            uses.append(_unescape(value.split("/", 2)[2].partition("/")[0]))
        elif not _same(value, shared[key], uses):
            return False
    return True


def _fresh(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


_DEF_PREFIXES = ("#/$defs/", "#/definitions/")


def _rewrite_refs(node: Any, renames: Mapping[str, str], root: str | None = None) -> Any:
    """Copy `node`, pointing references at renamed definitions and at the hoisted `root`."""
    if isinstance(node, list):
        return [_rewrite_refs(item, renames, root) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_refs(v, renames, root) for k, v in node.items()}
    ref = out.get("$ref")
    pointer = _root_pointer(ref) if root is not None else None
    if isinstance(ref, str) and ref.startswith(_DEF_PREFIXES):
        out["$ref"] = _renamed_ref(ref, renames)
    elif pointer is not None:
        out["$ref"] = f"#/$defs/{_escape(str(root))}{pointer}"
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
