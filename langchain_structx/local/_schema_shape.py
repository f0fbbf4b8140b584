"""Checks a schema and a finished grammar must pass, whatever loosening did.

`check_shape` runs before anything recursive touches an untrusted schema (the
prompt renderer, `json.dumps`, the grammar converter): a schema nested 100,000
levels deep, one that contains itself, or one holding Python objects would
otherwise end in an untyped `RecursionError`, `ValueError` or `TypeError`.
`check_grammar` is the last guard before llama.cpp parses the text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, NoReturn, TypeVar

from langchain_structx._clip import MESSAGE_CHARS, clip
from langchain_structx._validation.bounds import schema_shape_problem
from langchain_structx.local._limits import (
    MAX_GRAMMAR_CHARS,
    MAX_GRAMMAR_NESTING,
    MAX_RULE_GROUPS,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
)

__all__ = (
    "NodeMemo",
    "builds_object",
    "check_grammar",
    "check_shape",
    "grammar_stats",
    "referent",
    "refuse",
    "resolve",
    "union_branches",
)


def refuse(message: str) -> NoReturn:
    """Raise `GrammarError` with `message` (imported late: `_grammar` imports this module)."""
    from langchain_structx.local._grammar import GrammarError

    raise GrammarError(message)


def check_shape(schema: Any) -> None:
    """Refuse a schema that is not plain JSON, nests too deep, or has too many parts.

    This is the walk the strategies run on every schema they accept
    (`_bounds.schema_shape_problem`), with the local bounds, and with tuples taken
    as lists since `json.dumps` writes them so. It is iterative and stops at the
    first problem, so it is safe on any input.

    Args:
        schema: The schema (or a tool definition) as given by the caller.

    Raises:
        GrammarError: The schema contains itself, has a value inside more than
            `MAX_SCHEMA_DEPTH` objects and lists, holds more than `MAX_SCHEMA_NODES`
            values, or holds something JSON cannot encode (an object key that is
            not a string, NaN or infinity, an integer of more than 1,000 digits,
            a set or any other Python object). The message ends in the JSON path
            of the offending value.

    Examples:
        >>> check_shape({"type": "object", "required": ("a",)})
        >>> loop: dict = {"type": "array"}
        >>> loop["items"] = loop
        >>> check_shape(loop)
        Traceback (most recent call last):
        ...
        langchain_structx.local._grammar.GrammarError: the schema contains itself at $.items
    """
    problem = schema_shape_problem(
        schema, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES, tuples=True
    )
    if problem is not None:
        # The path may hold keys of any length: keep the message readable.
        refuse(clip(problem, MESSAGE_CHARS))


def grammar_stats(grammar: str) -> tuple[int, int]:
    r"""Measure GBNF text the way llama.cpp's parser will spend on it.

    Args:
        grammar: GBNF text, one rule per line.

    Returns:
        The most groups and repetition operators in one rule (each becomes a rule
        in llama.cpp), and the deepest nesting of parentheses.

    Examples:
        >>> grammar_stats('root ::= ("a" ("b")?)? [(]* "(("')
        (5, 2)
    """
    widest = deepest = 0
    for line in grammar.splitlines():
        groups = depth = 0
        index, end = line.find("::=") + 3, len(line)
        while index < end:
            char = line[index]
            if char in '"[':
                index = _skip_literal(line, index, '"' if char == '"' else "]")
                continue
            if char == "(":
                groups += 1
                depth += 1
                deepest = max(deepest, depth)
            elif char == ")":
                depth -= 1
            elif char in "?*+{":
                groups += 1
            index += 1
        widest = max(widest, groups)
    return widest, deepest


def _skip_literal(line: str, start: int, closer: str) -> int:
    """Index just past the string literal or character class starting at `start`."""
    index = start + 1
    while index < len(line) and line[index] != closer:
        index += 2 if line[index] == "\\" else 1
    return index + 1


def check_grammar(grammar: str) -> str:
    """Refuse grammar text that llama.cpp would choke on or that is too large.

    Args:
        grammar: The finished GBNF text.

    Returns:
        The same text.

    Raises:
        GrammarError: It is longer than `MAX_GRAMMAR_CHARS`, has a rule with more
            than `MAX_RULE_GROUPS` groups, or nests deeper than `MAX_GRAMMAR_NESTING`.
    """
    if len(grammar) > MAX_GRAMMAR_CHARS:
        refuse(f"the grammar for this schema would exceed {MAX_GRAMMAR_CHARS:,} characters")
    groups, depth = grammar_stats(grammar)
    if groups > MAX_RULE_GROUPS or depth > MAX_GRAMMAR_NESTING:
        refuse("the grammar for this schema nests too deep for llama.cpp")
    return grammar


def resolve(root: dict[str, Any], ref: Any) -> dict[str, Any] | None:
    """The subschema a local `#/...` reference names (split as the converter splits it)."""
    target = referent(root, ref)
    return target if isinstance(target, dict) else None


def referent(root: Any, ref: Any) -> Any:
    """What a local `#/...` reference names, `true` and `false` included, or `None`."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    target: Any = root
    for step in ref[2:].split("/"):
        if isinstance(target, dict) and step in target:
            target = target[step]
        elif isinstance(target, list) and step.isdigit() and int(step) < len(target):
            target = target[int(step)]
        else:
            return None
    return target


V = TypeVar("V")


class NodeMemo(Generic[V]):
    """One recursive reading of a schema's parts, each part read once.

    Args:
        read: Works out the result for one part; it may call this memo for the
            parts inside.
        reentered: The result for a part met again inside its own reading (a
            recursive schema), which has none yet.
    """

    def __init__(self, read: Callable[[dict[str, Any]], V], reentered: V) -> None:
        self.read = read
        self.reentered = reentered
        self.known: dict[int, V] = {}
        """Results by the `id` of the part; a caller may set one it already knows."""
        self._reading: set[int] = set()

    def __call__(self, node: dict[str, Any]) -> V:
        """The result for `node`, read now or earlier."""
        key = id(node)
        if key in self._reading:
            return self.reentered
        if key not in self.known:
            self._reading.add(key)
            try:
                self.known[key] = self.read(node)
            finally:
                self._reading.discard(key)
        return self.known[key]


def union_branches(node: dict[str, Any]) -> list[Any] | None:
    if "oneOf" not in node and "anyOf" not in node:
        return None
    branches = node.get("oneOf") or node.get("anyOf")
    return branches if isinstance(branches, list) else None


def builds_object(node: dict[str, Any]) -> bool:
    """Whether the converter writes `node` as an object with named properties."""
    extra = node.get("additionalProperties", True)
    return node.get("type") in (None, "object") and ("properties" in node or extra is not True)
