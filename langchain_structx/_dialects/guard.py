"""Bounds checked before any recursive walk over a schema or a value.

Schemas (in multi-tenant apps) and model outputs are untrusted. Everything after
this module walks them recursively, so it first measures them without recursion:

* `copy_document` checks that a schema is JSON (dicts with string keys, lists,
  strings, numbers, booleans, null), that it does not contain itself, that its
  nesting stays under `MAX_DEPTH` and that its size, counting a shared part once per
  place it appears, stays under `MAX_NODES`; then it copies it;
* `check_references` measures the nesting a walk meets when it follows `$ref`s, each
  definition at most once per path, and refuses more than `MAX_DEPTH`;
* `too_deep` measures a value the same way, for `encode` and `restore`.

The measuring walk visits each distinct dict or list once, keyed by its identity,
and remembers its size and height: a part shared a thousand times costs one visit,
yet counts a thousand times towards `MAX_NODES`, because every later walk would
meet it that often. So a document of a few shared dicts that expands to billions of
parts is refused in time linear in its distinct parts.

`MAX_DEPTH` is far above any provider's own limit (OpenAI, the only one to publish
one, allows 10 levels of objects) and far enough below Python's recursion limit that
every later walk, each a few frames per level, fits with room for the caller's stack.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import repeat
from typing import Any, NoReturn

from langchain_structx._dialects.refs import SUBSCHEMA, SUBSCHEMA_LIST, SUBSCHEMA_MAP, ref_name
from langchain_structx._exceptions import DialectError, SchemaError

MAX_DEPTH = 128
"""Deepest nesting of dicts and lists in a schema, references followed."""
MAX_NODES = 1_000_000
"""Most dict entries and list items in a schema, a shared part counted each time."""
_SCALARS = (str, int, float, bool, type(None))
_STR = repeat(str)


class _Refusal(Exception):
    """Why a walk stopped; `not_json` tells a malformed document from an oversized one."""

    def __init__(self, reason: str, *, not_json: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.not_json = not_json


class _Frame:
    """One container on the walk's path, with what is known of it so far."""

    __slots__ = ("children", "height", "key", "node", "size_before")

    def __init__(self, node: Any, key: str | int, size_before: int) -> None:
        self.node = node
        self.key = key
        self.size_before = size_before
        self.height = 1
        self.children: Iterator[tuple[str | int, Any]] = (
            iter(node.items()) if isinstance(node, dict) else enumerate(node)
        )


class _Measure:
    """Size (shared parts counted per place) and height of a graph of dicts and lists.

    Each distinct container is entered once; a container met again adds its
    remembered size and height without being walked again. `checks_json` adds the
    checks a schema needs and values do not.
    """

    def __init__(self, what: str, depth_limit: int, *, checks_json: bool) -> None:
        self.what = what
        self.depth_limit = depth_limit
        self.checks_json = checks_json
        self.size = 0
        self.known: dict[int, tuple[int, int] | None] = {}
        """Size and height of each container left; None for those on the path."""
        self.path: list[_Frame] = []

    def run(self, root: Any) -> None:
        """Measure `root`; raise `_Refusal` on the first problem."""
        self._meet(root, "$")
        path, checks_json = self.path, self.checks_json
        while path:
            frame = path[-1]
            for key, child in frame.children:
                if isinstance(child, dict | list):
                    height = self._meet(child, key)
                    frame.height = max(frame.height, height + 1)
                    break  # a new frame may have been entered: continue from the top
                if checks_json and not isinstance(child, _SCALARS):
                    self._refuse_json(f"holds a {type(child).__name__}, which is not JSON", key)
            else:
                self._leave()

    def _meet(self, node: Any, key: str | int) -> int:
        """Enter `node`, or count it from memory; return its height when known."""
        if not isinstance(node, dict | list):
            if self.checks_json and not isinstance(node, _SCALARS):
                self._refuse_json(f"holds a {type(node).__name__}, which is not JSON", key)
            return 0
        depth, identity = len(self.path) + 1, id(node)
        if identity in self.known:
            remembered = self.known[identity]
            if remembered is None:
                self._refuse_json("contains itself", key)
            size, height = remembered
            self._check(depth + height - 1, size)
            return height
        self._check(depth, len(node))
        if self.checks_json and isinstance(node, dict) and not all(map(isinstance, node, _STR)):
            self._refuse_json("has a key that is not a string", key)
        self.path.append(_Frame(node, key, self.size - len(node)))
        self.known[identity] = None
        return 0

    def _leave(self) -> None:
        frame = self.path.pop()
        self.known[id(frame.node)] = (self.size - frame.size_before, frame.height)
        if self.path:
            parent = self.path[-1]
            parent.height = max(parent.height, frame.height + 1)

    def _check(self, depth: int, added: int) -> None:
        if depth > self.depth_limit:
            raise _Refusal(f"the {self.what} nests deeper than {self.depth_limit} levels")
        self.size += added
        if self.size > MAX_NODES:
            raise _Refusal(f"the {self.what} has more than {MAX_NODES} parts")

    def _refuse_json(self, problem: str, key: str | int) -> NoReturn:
        steps = [(a.node, b.key) for a, b in zip(self.path, self.path[1:], strict=False)]
        if self.path:
            steps.append((self.path[-1].node, key))
        path = "$" + "".join(f".{k}" if isinstance(p, dict) else f"[{k}]" for p, k in steps)
        raise _Refusal(f"{path} {problem}", not_json=True)


def _plain_copy(document: dict[str, Any]) -> dict[str, Any]:
    """Copy a measured document as a tree: a shared part becomes one copy per place."""
    root: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(document, root)]
    while stack:
        source, out = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in pairs:
            made = {} if isinstance(child, dict) else [] if isinstance(child, list) else child
            if isinstance(out, dict):
                out[key] = made
            else:
                out.append(made)
            if made is not child:
                stack.append((child, made))
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
    source = schema if isinstance(schema, dict) else dict(schema)
    try:
        _Measure("schema", MAX_DEPTH, checks_json=True).run(source)
    except _Refusal as refusal:
        if refusal.not_json:
            raise SchemaError(f"The schema is not JSON: {refusal.reason}") from None
        raise DialectError(dialect, refusal.reason) from None
    return _plain_copy(source)


def too_deep(value: Any, limit: int) -> str | None:
    """Tell why `value` is too deep or too large to walk, or None when it is not.

    A value deeper than `limit` levels of dicts and lists is refused, and so is one
    with more than `MAX_NODES` parts (a shared part counted each time it appears),
    or one that contains itself.

    Examples:
        >>> too_deep({"a": [1, {"b": []}]}, 4) is None, too_deep([[[[]]]], 3)
        (True, 'the value nests deeper than 3 levels')
    """
    try:
        _Measure("value", limit, checks_json=False).run(value)
    except _Refusal as refusal:
        return f"the value is not a tree: {refusal.reason}" if refusal.not_json else refusal.reason
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
