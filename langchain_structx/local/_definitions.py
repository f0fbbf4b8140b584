"""Definitions lifted to the root of a schema, and the walk over a schema's parts.

A reference such as `#/$defs/Item` is a path from the root of the document. The
parameters of a tool with nested models sit inside the forced-call schema, where
their `#/$defs/...` no longer starts at the root: `lift` moves a schema's
definitions out, renamed under a prefix, and rewrites every reference into the
schema to match. `refers_to_itself` tells a recursive tool, whose schema LangChain
would cut short.

Every function here expects a schema that passed `check_shape` (bounded depth and
size, plain JSON, no cycles).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

_HOMES = ("$defs", "definitions")
"""Where a schema keeps its definitions."""


def has_local_refs(schema: Any) -> bool:
    """Whether `schema` refers into itself (`#` or `#/...`)."""
    if not isinstance(schema, dict):
        return False
    return any(_is_local(node.get("$ref")) for node in _nodes(_plain(schema)))


def lift(schema: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split `schema` into a body without definitions and root-level definitions.

    Args:
        schema: A schema whose references are relative to itself.
        prefix: Put before each definition's name, so that the definitions of
            several schemas can share one `$defs`.

    Returns:
        The body and the definitions, for the `$defs` of the schema that will hold
        them. Every reference in both points there. When something refers to the
        schema itself (`#`) or into its body, the body is among the definitions too.

    Examples:
        >>> body, defs = lift({"properties": {"a": {"$ref": "#/$defs/A"}},
        ...                    "$defs": {"A": {"type": "string"}}}, "t0-")
        >>> body, defs
        ({'properties': {'a': {'$ref': '#/$defs/t0-A'}}}, {'t0-A': {'type': 'string'}})
    """
    body = _plain(schema)
    definitions: dict[str, Any] = {}
    renamed: dict[tuple[str, str], str] = {}
    for home in _HOMES:
        group = body.pop(home, None)
        for name, value in group.items() if isinstance(group, dict) else ():
            key = _free(prefix + name, definitions)
            renamed[home, name] = key
            definitions[key] = value
    itself = _free(prefix + "document", definitions)
    into_body = False
    for node in [*_nodes(body), *(n for d in definitions.values() for n in _nodes(d))]:
        ref = node.get("$ref")
        if not isinstance(ref, str) or not _is_local(ref):
            continue
        parts = ref[2:].split("/", 2) if ref != "#" else []
        target = renamed.get((parts[0], parts[1])) if len(parts) >= 2 else None
        if target is not None:
            node["$ref"] = "/".join(["#/$defs", target, *parts[2:]])
        else:
            node["$ref"] = f"#/$defs/{itself}{ref[1:]}"
            into_body = True
    if into_body:
        definitions[itself] = body
    return body, definitions


def refers_to_itself(schema: Any) -> bool:
    """Whether following the references of `schema` can lead back to where they started.

    Examples:
        >>> refers_to_itself({"type": "array", "items": {"$ref": "#"}})
        True
        >>> refers_to_itself({"properties": {"a": {"$ref": "#/$defs/A"}},
        ...                   "$defs": {"A": {"type": "string"}}})
        False
    """
    if not has_local_refs(schema):
        return False
    body, definitions = lift(schema, "")
    edges = {
        name: {_target(node["$ref"]) for node in _nodes(sub) if _is_local(node.get("$ref"))}
        for name, sub in [("", body), *definitions.items()]
    }
    # Depth-first, without recursion: a grey name met again closes a loop.
    state: dict[str, str] = {}
    for start in edges:
        if start in state:
            continue
        state[start], stack = "grey", [(start, iter(edges[start]))]
        while stack:
            name, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                state[name] = "black"
                stack.pop()
            elif state.get(step) == "grey":
                return True
            elif step in edges and step not in state:
                state[step] = "grey"
                stack.append((step, iter(edges[step])))
    return False


def _target(ref: str) -> str:
    """The definition a lifted reference (`#/$defs/NAME...`) points into."""
    return ref.split("/", 3)[2]


def _free(name: str, taken: dict[str, Any]) -> str:
    """`name`, or `name` with the first number that no definition has yet.

    The names stay short whatever the schema holds: at worst one try per definition.
    """
    found, number = name, 1
    while found in taken:
        number += 1
        found = f"{name}_{number}"
    return found


def _nodes(schema: Any) -> list[dict[str, Any]]:
    return [node for _, node in subschemas(schema)] if isinstance(schema, dict) else []


_ONE = (
    "items", "additionalItems", "additionalProperties", "unevaluatedItems",
    "unevaluatedProperties", "contains", "propertyNames", "not", "if", "then", "else",
    "contentSchema",
)  # fmt: skip
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def subschemas(root: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield `(JSON path, part)` for `root` and every subschema in it, once per path.

    Expects a schema that passed `check_shape` (finite, no cycles).

    Examples:
        >>> [path for path, _ in subschemas({"properties": {"a": {"items": {}}}})]
        ['$', '$.properties.a', '$.properties.a.items']
    """
    pending = [("$", root)]
    while pending:
        path, node = pending.pop()
        yield path, node
        children = [(f"{path}.{key}", node.get(key)) for key in _ONE]
        for key in _MANY:
            group = node.get(key)
            if isinstance(group, list):
                children += [(f"{path}.{key}[{i}]", child) for i, child in enumerate(group)]
        for key in _NAMED:
            group = node.get(key)
            if isinstance(group, dict):
                children += [(f"{path}.{key}.{name}", child) for name, child in group.items()]
        pending.extend(reversed([(p, c) for p, c in children if isinstance(c, dict)]))


def _is_local(ref: Any) -> bool:
    return isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy the walk may change (tuples become lists, as for the converter)."""
    copied: dict[str, Any] = json.loads(json.dumps(schema))
    return copied
