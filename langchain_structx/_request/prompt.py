"""A compact, JSON-like rendering of JSON schemas for prompts.

Small models follow `"name": string,` far better than a pasted JSON schema, and the
rendering costs a fraction of the tokens. Keys are quoted and fields separated by
commas as in the JSON to write: a 0.5B model copies the layout it is shown, so
unquoted keys came back as unquoted values. Definitions (`$defs`) are written in
place, where they are read as part of the answer; only definitions that refer back
to themselves are written once as named blocks, so recursive schemas terminate.

A schema is untrusted input, so writing definitions in place is bounded: when it
would add more than `INLINE_PARTS` parts, or nest deeper than `MAX_DEPTH` levels
(a chain of definitions, each used twice by the next, doubles at every link),
every definition used in more than one place is written once as a named block
instead, and one that would nest too deeply where it is used is named there. The
text is then about as long as the schema itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_structx._exceptions import SchemaError
from langchain_structx._request.type_text import one_line, render_type
from langchain_structx._schemas.unions import decode_pointer, resolve_tokens


def render_schema(name: str, schema: Mapping[str, Any], description: str = "") -> str:
    """Render a named schema and the definitions it uses.

    Args:
        name: Name of the shape, written before it.
        schema: The full JSON schema, possibly with `$defs`.
        description: Written as a comment right above the shape.

    Returns:
        One block per definition, then the shape itself.

    Raises:
        SchemaError: When a part of the schema, references aside, nests deeper
            than `MAX_DEPTH` levels (never for a schema that passed the checks
            made when a strategy is used).

    Examples:
        >>> point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        >>> print(render_schema("Point", point))
        Point {
          "x": integer
        }
    """
    definitions = _definitions(schema)
    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    # A recursive model is a bare reference to its own definition: draw it once.
    start: tuple[str, ...] = ()
    if _bare_ref(body) == name and name in definitions:
        body, start = definitions.pop(name), (name,)
    body, refers_to_root = _named_refs(name, body, definitions, schema)
    if refers_to_root:
        start = (name,)
    census = _Census(body, definitions)
    try:
        inliner = _Inliner(definitions, budget=census.parts + INLINE_PARTS)
        blocks, shape = _layout(name, body, start, inliner)
    except _TooLarge:
        inliner = _Inliner(definitions, named=census.shared, heights=census.heights)
        blocks, shape = _layout(name, body, start, inliner)
    head = f"// {one_line(description)}\n" if description.strip() else ""
    blocks.append(f"{head}{name} {render_type(shape)}")
    return "\n".join(blocks)


INLINE_PARTS = 20_000
"""Most parts that writing definitions in place may add to what the schema holds."""

MAX_DEPTH = 128
"""Deepest nesting of dicts and lists in a rendered shape; rendering recurses."""


def _layout(
    name: str, body: Any, start: tuple[str, ...], inliner: _Inliner
) -> tuple[list[str], Any]:
    """The named blocks' text, in definition order, and the shape of `body`.

    Definitions that refer back to themselves (or that `inliner` names) stay
    named blocks; the rest are written in place, where a small model reads them
    as part of the answer.
    """
    shape = inliner.inline(body, start, 1)
    texts: dict[str, str] = {}
    while inliner.todo:
        def_name = inliner.todo.pop()
        if def_name not in texts and def_name != name:
            block = inliner.inline(inliner.definitions[def_name], (def_name,), 1)
            texts[def_name] = f"{def_name} {render_type(block)}"
    return [texts[n] for n in inliner.definitions if n in texts], shape


class _TooLarge(Exception):
    """Writing every definition in place would exceed the budget or the depth."""


class _Inliner:
    """Replaces references by their definitions, except those that must stay names.

    A reference already on the stack of definitions being written is recursive;
    one in `named`, or one whose definition (`heights`) would nest deeper than
    `MAX_DEPTH` where it is used, is written by name. Each of these is noted in
    `todo`, to be written as a block. With a `budget`, going beyond it or beyond
    `MAX_DEPTH` raises `_TooLarge` instead.
    """

    def __init__(
        self,
        definitions: Mapping[str, Any],
        *,
        budget: int | None = None,
        named: frozenset[str] = frozenset(),
        heights: Mapping[str, int] | None = None,
    ) -> None:
        self.definitions = definitions
        self.left = budget
        self.named = named
        self.heights = heights or {}
        self.kept: set[str] = set()
        self.todo: list[str] = []

    def inline(self, node: Any, stack: tuple[str, ...], depth: int) -> Any:
        if self.left is not None:
            self.left -= 1
            if self.left < 0 or depth > MAX_DEPTH:
                raise _TooLarge
        if isinstance(node, list):
            return [self.inline(item, stack, depth + 1) for item in node]
        if not isinstance(node, Mapping):
            return node
        target = _target(node)
        if target is not None and target in self.definitions:
            if target in stack or target in self.named or self._too_deep(target, depth):
                if target not in self.kept:
                    self.kept.add(target)
                    self.todo.append(target)
                return dict(node)
            site = {k: v for k, v in node.items() if k != "$ref"}
            merged = {**self.definitions[target], **site}
            return self.inline(merged, (*stack, target), depth)
        return {k: self.inline(v, stack, depth + 1) for k, v in node.items()}

    def _too_deep(self, target: str, depth: int) -> bool:
        height = self.heights.get(target)
        return height is not None and depth + height > MAX_DEPTH


def _target(node: Mapping[str, Any]) -> str | None:
    """The definition a node refers to by `#/$defs/<name>`, its name decoded."""
    ref = node.get("$ref")
    tokens = decode_pointer(ref) if isinstance(ref, str) else None
    if tokens is None or len(tokens) != 2 or tokens[0] not in ("$defs", "definitions"):
        return None
    return tokens[1]


def _named_refs(
    name: str, body: Any, definitions: dict[str, Any], root: Mapping[str, Any]
) -> tuple[Any, bool]:
    """`body` (and `definitions`, in place) with every other local `$ref` made a definition's.

    `#` is the shape itself, named `name`; a pointer elsewhere (into a definition,
    say) becomes a definition of its own, named after its last step. Each is then
    written in place or as a block as any definition is. Returns the new body, and
    whether anything refers to the shape itself.
    """
    if name in definitions and any(_refers_to_root(d) for d in [body, *definitions.values()]):
        return body, False  # the shape's name is taken by a definition: `#` stays as it is
    namer = _RefNamer(name, definitions, root)
    body = namer.rewrite(body)
    while namer.todo:
        key = namer.todo.pop()
        definitions[key] = namer.rewrite(definitions[key])
    if namer.rooted:
        definitions[name] = body
    return body, namer.rooted


class _RefNamer:
    """Names the target of each local reference that is not `#/$defs/<name>`."""

    def __init__(self, name: str, definitions: dict[str, Any], root: Mapping[str, Any]) -> None:
        self.name, self.definitions, self.root = name, definitions, root
        self.names: dict[str, str] = {}
        self.rooted = False
        self.todo: list[str] = list(definitions)  # each definition is rewritten too

    def rewrite(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.rewrite(item) for item in node]
        if not isinstance(node, Mapping):
            return node
        out = {key: self.rewrite(value) for key, value in node.items()}
        ref = node.get("$ref")
        found = self._named(ref) if isinstance(ref, str) and _target(node) is None else None
        if found is not None:
            out["$ref"] = "#/$defs/" + found.replace("~", "~0").replace("/", "~1")
        return out

    def _named(self, ref: str) -> str | None:
        tokens = decode_pointer(ref)
        if tokens is None:
            return None  # not local: left for the model to read as it is
        if not tokens:
            self.rooted = True
            return self.name
        found = self.names.get(ref)
        target = _target_of(tokens, self.root, ref) if found is None else None
        if found is None and target is not None:
            found = self.names[ref] = _fresh(tokens[-1], self.definitions)
            self.definitions[found] = _as_schema(target)
            self.todo.append(found)
        return found


def _refers_to_root(node: Any) -> bool:
    if isinstance(node, list):
        return any(_refers_to_root(item) for item in node)
    if not isinstance(node, Mapping):
        return False
    return node.get("$ref") == "#" or any(_refers_to_root(v) for v in node.values())


def _target_of(tokens: list[str], root: Mapping[str, Any], ref: str) -> Any:
    # The validator resolved every reference when the schema was read; a miss here
    # (or a target that is no schema) is simply not followed.
    try:
        node = resolve_tokens(tokens, root, ref)
    except SchemaError:
        return None
    return node if isinstance(node, Mapping | bool) else None


def _fresh(base: str, taken: Mapping[str, Any]) -> str:
    name, n = base or "value", 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


class _Census:
    """One pass over the parts of a schema, without recursion.

    Attributes:
        parts: How many dicts, lists and other values it holds.
        shared: The definition names referred to from more than one place.
        heights: Levels of dicts and lists of each definition, references aside.

    Raises:
        SchemaError: A part nests deeper than `MAX_DEPTH` levels by itself.
    """

    def __init__(self, body: Any, definitions: Mapping[str, Any]) -> None:
        self.parts = 0
        self.heights: dict[str, int] = {}
        self._uses: dict[str, int] = {}
        self._measure(body)
        for def_name, definition in definitions.items():
            self.heights[def_name] = self._measure(definition)
        self.shared = frozenset(n for n, count in self._uses.items() if count > 1)

    def _measure(self, root: Any) -> int:
        height = 0
        stack: list[tuple[Any, int]] = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            self.parts += 1
            if not isinstance(node, Mapping | list):
                continue
            if depth > MAX_DEPTH:
                raise SchemaError(
                    f"The schema nests deeper than {MAX_DEPTH} levels to be written into a prompt."
                )
            height = max(height, depth)
            if isinstance(node, list):
                stack.extend((child, depth + 1) for child in node)
                continue
            stack.extend((child, depth + 1) for child in node.values())
            target = _target(node)
            if target is not None:
                self._uses[target] = self._uses.get(target, 0) + 1
        return height


def _bare_ref(body: Mapping[str, Any]) -> str | None:
    if set(body) - {"$ref", "title", "description"}:
        return None
    return _target(body)


def _definitions(schema: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found.update(schema.get(key) or {})
    return {name: _as_schema(d) for name, d in found.items()}


def _as_schema(schema: Any) -> Any:
    # A boolean schema: `true` allows anything, `false` nothing.
    return schema if isinstance(schema, Mapping) else {} if schema else {"not": {}}


def instructions(shapes: Sequence[tuple[str, str, Mapping[str, Any]]], *, envelope: bool) -> str:
    """Write the system-prompt text that asks for JSON output.

    Args:
        shapes: `(name, description, schema)` for each variant.
        envelope: Whether the answer must be wrapped as `{"kind": ..., "data": ...}`.

    Returns:
        Instructions to append to the system prompt.
    """
    body = "\n\n".join(render_schema(n, s, d) for n, d, s in shapes)
    if envelope:
        names = " | ".join(json.dumps(name) for name, _, _ in shapes)
        return (
            "Answer with only a JSON object, no other text, of the form "
            f'{{"kind": {names}, "data": <the object>}} where data matches the shape '
            f"named by kind:\n\n{body}"
        )
    return f"Answer with only a JSON object, no other text, matching:\n\n{body}"
