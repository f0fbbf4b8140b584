"""Read-only traversal of provider schemas: iterate nodes, follow references."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_structx._dialects.guard import strong_components
from langchain_structx._dialects.refs import ref_name


def children(node: Mapping[str, Any]) -> Iterator[Any]:
    """Yield the direct sub-schemas of a provider schema node (not `$defs`).

    Examples:
        >>> list(children({"type": "array", "items": {"type": "string"}}))
        [{'type': 'string'}]
    """
    yield from (node.get("properties") or {}).values()
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield node[key]
    yield from node.get("anyOf") or ()


def iter_nodes(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Yield every node of a provider schema, definitions included, each once."""
    stack: list[Any] = [schema, *(schema.get("$defs") or {}).values()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(children(node))


def refs_in(node: Mapping[str, Any]) -> set[str]:
    """Return the names of definitions referenced anywhere below `node`."""
    return {name for sub in iter_nodes({**node, "$defs": {}}) if (name := ref_name(sub))}


def reachable(root: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """Return the definitions reachable from `root`, in their original order."""
    seen: set[str] = set()
    todo = sorted(refs_in(root))
    while todo:
        name = todo.pop()
        if name not in seen and name in defs:
            seen.add(name)
            todo.extend(refs_in(defs[name]))
    return {name: sub for name, sub in defs.items() if name in seen}


def find_cycle(defs: Mapping[str, Any]) -> str | None:
    """Return the name of a definition that refers to itself, directly or not.

    Examples:
        >>> find_cycle({"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}, "C": {}})
        'A'
    """
    edges = {name: [n for n in refs_in(sub) if n in defs] for name, sub in defs.items()}
    looped: set[str] = set()
    for component in strong_components(edges):
        if len(component) > 1 or component[0] in edges[component[0]]:
            looped.update(component)
    return next((name for name in defs if name in looped), None)
