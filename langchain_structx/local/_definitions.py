"""Definitions lifted to the root of a schema, in the one form the grammar converter reads.

llama-cpp-python's converter resolves references only as paths from the root of
the schema it is given, and it does not look inside the siblings of a `$ref`. Two
common schemas break on that: a Pydantic model that refers to itself (its schema
is a root `$ref` beside its `$defs`), and the parameters of a tool with nested
models once they sit inside the forced-call schema (their `#/$defs/...` no longer
starts at the root). `lift` moves a schema's definitions out, renamed under a
prefix, and rewrites every reference into the schema to match.

Every function here expects a schema that passed `check_shape` (bounded depth and
size, plain JSON, no cycles).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_structx.local._schema_bounds import schema_nodes

DEFINITION_PREFIX = "def-"
"""Before each lifted definition's name: no rule of the converter's own starts so."""

_HOMES = ("$defs", "definitions")
"""Where a schema keeps its definitions."""


def has_local_refs(schema: Any) -> bool:
    """Whether `schema` refers into itself (`#` or `#/...`)."""
    if not isinstance(schema, dict):
        return False
    return any(_is_local(node.get("$ref")) for node in schema_nodes(_plain(schema)))


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
    for node in [*schema_nodes(body), *(n for d in definitions.values() for n in _nodes(d))]:
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


def lifted(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its definitions at the root and no `$ref` beside them.

    A schema with no reference into itself comes back unchanged.

    Examples:
        >>> tree = {"$ref": "#/$defs/Tree", "$defs": {"Tree": {"type": "object",
        ...     "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}}
        >>> lifted(tree)["anyOf"]
        [{'$ref': '#/$defs/def-Tree'}]
    """
    if not has_local_refs(schema):
        return schema
    # The converter names a reference's rule after the definition and reuses a rule
    # of that name: a definition called `space` or `string` would be its own rule.
    body, definitions = lift(schema, DEFINITION_PREFIX)
    if "$ref" in body:
        # The converter would not look at the definitions beside a reference.
        body = {"anyOf": [{"$ref": body["$ref"]}]}
    return {**body, "$defs": definitions}


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
    return list(schema_nodes(schema)) if isinstance(schema, dict) else []


def _is_local(ref: Any) -> bool:
    return isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy the walk may change (tuples become lists, as for the converter)."""
    copied: dict[str, Any] = json.loads(json.dumps(schema))
    return copied
