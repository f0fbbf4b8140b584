"""Bounds checked before any recursive walk over a schema or a value.

Schemas (in multi-tenant apps) and model outputs are untrusted. Everything after
this module walks them recursively, so it first measures them without recursion:

* `copy_document` copies a schema while checking that it is JSON (dicts with string
  keys, lists, strings, numbers, booleans, null), that it does not contain itself,
  that its nesting stays under `MAX_DEPTH` and that its size, counting a shared part
  once per place it appears, stays under `MAX_NODES`;
* `check_references` measures the nesting a walk meets when it follows `$ref`s, each
  definition at most once per path, and refuses more than `MAX_DEPTH`;
* `too_deep` measures a value the same way, for `encode` and `restore`.

`MAX_DEPTH` is far above any provider's own limit (OpenAI, the only one to publish
one, allows 10 levels of objects) and far enough below Python's recursion limit that
every later walk, each a few frames per level, fits with room for the caller's stack.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_structx._dialects.refs import SUBSCHEMA, SUBSCHEMA_LIST, SUBSCHEMA_MAP, ref_name
from langchain_structx._exceptions import DialectError, SchemaError

MAX_DEPTH = 128
"""Deepest nesting of dicts and lists in a schema, references followed."""
MAX_NODES = 1_000_000
"""Most dict entries and list items in a schema, a shared part counted each time."""
_SCALARS = (str, int, float, bool, type(None))


def _items(node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    return [(f"[{i}]", item) for i, item in enumerate(node)]


def _scalar_problem(value: Any, path: str) -> str | None:
    if isinstance(value, dict | list):
        return None
    if isinstance(value, _SCALARS):
        return None
    return f"{path} holds a {type(value).__name__}, which is not JSON"


class _Copier:
    """Iterative, depth-first copy of a JSON document with the checks above."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.on_path: set[int] = set()
        self.size = 0

    def fresh(self, node: Any, path: str, depth: int) -> Any:
        """Return an empty container for `node` (or the scalar itself), after checks."""
        problem = _scalar_problem(node, path)
        if problem is not None:
            raise SchemaError(f"The schema is not JSON: {problem}")
        if not isinstance(node, dict | list):
            return node
        if id(node) in self.on_path:
            raise SchemaError(f"The schema is not JSON: {path} contains itself")
        if depth > MAX_DEPTH:
            raise DialectError(self.dialect, f"the schema nests deeper than {MAX_DEPTH} levels")
        self.size += len(node)
        if self.size > MAX_NODES:
            raise DialectError(self.dialect, f"the schema has more than {MAX_NODES} parts")
        if isinstance(node, dict) and not all(isinstance(k, str) for k in node):
            raise SchemaError(f"The schema is not JSON: {path} has a key that is not a string")
        return {} if isinstance(node, dict) else []

    def copy(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """Copy `document`; raise on the first problem."""
        source = document if isinstance(document, dict) else dict(document)
        root: dict[str, Any] = self.fresh(source, "$", 1)
        # Each frame: source container, its copy, remaining (key, child) pairs, path.
        stack: list[tuple[Any, Any, Iterator[tuple[str, Any]], str]] = []
        self.on_path.add(id(source))
        stack.append((source, root, iter(_items(source)), "$"))
        while stack:
            node, out, rest, path = stack[-1]
            step = next(rest, None)
            if step is None:
                self.on_path.discard(id(node))
                stack.pop()
                continue
            key, child = step
            child_path = f"{path}.{key}" if isinstance(node, dict) else f"{path}{key}"
            made = self.fresh(child, child_path, len(stack) + 1)
            if isinstance(out, dict):
                out[key] = made
            else:
                out.append(made)
            if isinstance(child, dict | list):
                self.on_path.add(id(child))
                stack.append((child, made, iter(_items(child)), child_path))
        return root


def copy_document(schema: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    """Return a plain-JSON copy of `schema`, refusing what later walks cannot bear.

    Raises:
        SchemaError: The schema is not JSON (other types, non-string keys, a dict
            or list that contains itself).
        DialectError: The schema nests deeper than `MAX_DEPTH` or is larger than
            `MAX_NODES`.

    Examples:
        >>> loop: dict = {"type": "object"}
        >>> loop["items"] = loop
        >>> copy_document(loop, "openai")
        Traceback (most recent call last):
        ...
        langchain_structx.errors.SchemaError: The schema is not JSON: $.items contains itself
    """
    return _Copier(dialect).copy(schema)


def too_deep(value: Any, limit: int) -> str | None:
    """Tell why `value` is too deep or too large to walk, or None when it is not.

    A value deeper than `limit` levels of dicts and lists is refused, and so is one
    with more than `MAX_NODES` parts (a shared part counted each time it appears,
    which makes a value that contains itself infinite).

    Examples:
        >>> too_deep({"a": [1, {"b": []}]}, 4) is None, too_deep([[[[]]]], 3)
        (True, 'the value nests deeper than 3 levels')
    """
    budget = MAX_NODES
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > limit:
            return f"the value nests deeper than {limit} levels"
        budget -= len(node)
        if budget < 0:
            return f"the value has more than {MAX_NODES} parts"
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return None


class _Scan:
    """One definition's height and where it refers to other definitions."""

    def __init__(self, schema: Any) -> None:
        self.height = 0
        self.refs: list[tuple[int, dict[str, Any]]] = []
        # Each entry: a container, its depth, and whether it is a schema (refs count)
        # or a value (enum, const, default...: only its height counts).
        stack: list[tuple[Any, int, bool]] = [(schema, 1, True)]
        while stack:
            node, depth, is_schema = stack.pop()
            if not isinstance(node, dict | list):
                continue
            self.height = max(self.height, depth)
            if is_schema and isinstance(node, dict) and ref_name(node) is not None:
                self.refs.append((depth, node))
            stack.extend(
                (child, depth + step, flag) for child, step, flag in _children(node, is_schema)
            )


def _children(node: Any, is_schema: bool) -> Iterator[tuple[Any, int, bool]]:
    """Yield each child with its depth below `node` and whether it is a schema."""
    if isinstance(node, list) or not is_schema:
        values = node.values() if isinstance(node, dict) else node
        yield from ((child, 1, False) for child in values)
        return
    for key, value in node.items():
        if key in SUBSCHEMA_MAP and isinstance(value, dict):
            yield from ((sub, 2, True) for sub in value.values())
        elif key in SUBSCHEMA_LIST | {"items"} and isinstance(value, list):
            yield from ((sub, 2, True) for sub in value)
        else:
            yield value, 1, key in SUBSCHEMA


def _alias_targets(defs: Mapping[str, Any], dialect: str) -> dict[str, str]:
    """Map each definition that is nothing but a reference to the one it stands for."""
    direct: dict[str, str] = {}
    for name, node in defs.items():
        target = ref_name(node) if isinstance(node, dict) and len(node) == 1 else None
        if target is not None and target in defs:
            direct[name] = target
    final: dict[str, str] = {}
    for start in direct:
        chain: dict[str, None] = {}
        name = start
        while name in direct and name not in final:
            if name in chain:
                raise DialectError(dialect, f"definition {name!r} is only a reference to itself")
            chain[name] = None
            name = direct[name]
        final.update(dict.fromkeys(chain, final.get(name, name)))
    return final


def check_references(root: dict[str, Any], defs: dict[str, Any], dialect: str) -> None:
    """Shorten alias chains in place; refuse nesting beyond `MAX_DEPTH` through `$ref`s.

    A definition that is only `{"$ref": ...}` is skipped: every reference to it is
    pointed at the definition it stands for, so a chain of aliases costs nothing.
    The depth counted follows references, each definition once per path; for
    mutually recursive definitions it is bounded by the sum of their heights.

    Raises:
        DialectError: Aliases refer to each other in a loop, or the nesting through
            references is deeper than `MAX_DEPTH`.
    """
    scans = {name: _Scan(schema) for name, schema in defs.items()}
    scans[_ROOT] = _Scan(root)
    targets = _alias_targets(defs, dialect)
    for scan in scans.values():
        for _, holder in scan.refs:
            name = ref_name(holder)
            if name in targets:
                holder["$ref"] = f"#/$defs/{targets[name]}"
    edges = {
        name: [(d, n) for d, h in scan.refs if (n := ref_name(h)) in defs]
        for name, scan in scans.items()
    }
    depth = _deepest(scans, {k: [n for _, n in v] for k, v in edges.items()}, edges)
    if depth > MAX_DEPTH:
        raise DialectError(
            dialect, f"the schema nests deeper than {MAX_DEPTH} levels through its references"
        )


_ROOT = "#"


def _deepest(
    scans: Mapping[str, _Scan],
    graph: Mapping[str, list[str]],
    edges: Mapping[str, list[tuple[int, str]]],
) -> int:
    """Return an upper bound of the nesting from the root, references followed."""
    deepest: dict[str, int] = {}
    for component in strong_components(graph):
        members = set(component)
        outside = [
            depth - 1 + deepest[target]
            for name in component
            for depth, target in edges[name]
            if target not in members
        ]
        looped = len(component) > 1 or any(t in members for _, t in edges[component[0]])
        if looped:
            value = sum(scans[n].height for n in component) + max(outside, default=0)
        else:
            value = max([scans[component[0]].height, *outside])
        for name in component:
            deepest[name] = min(value, MAX_NODES)
    return deepest.get(_ROOT, 0)


def strong_components(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion, sinks first.

    Examples:
        >>> strong_components({"a": ["b"], "b": ["a", "c"], "c": []})
        [['c'], ['b', 'a']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def enter(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(graph.get(node, ()))

    for start in graph:
        if start in index:
            continue
        work = [enter(start)]
        while work:
            node, rest = work[-1]
            child = next(rest, None)
            if child is not None:
                if child not in index:
                    work.append(enter(child))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                found.append(_pop_component(stack, on_stack, node))
    return found


def _pop_component(stack: list[str], on_stack: set[str], node: str) -> list[str]:
    component: list[str] = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
            return component
