"""Checks on the shape of a value before any validator sees it, and bounded rendering.

Validators (jsonschema, pydantic, `repr`) recurse, build messages that embed the
whole value and choke on numbers no JSON parser should have produced. Everything
here is iterative and bounded, so it can run first on a value nobody trusts:

- `shape_issue` finds the first value that is nested too deeply, an integer with
  too many digits, a non-finite float or a non-string object key, and refuses a
  value whose strings and keys hold more characters than a reply may.
- `schema_shape_problem` does the same for a schema, which must also be JSON-like
  (no cycles, no foreign types).
- `preview` renders a value in at most a given number of characters.
- `offline_registry` and `check_references` (from `_references`, kept here for
  the validator) resolve a schema's references once, with no way to fetch a
  document from anywhere.
"""

from __future__ import annotations

import functools
import math
import reprlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from langchain_structx._exceptions import ValidationIssue
from langchain_structx._validation.integers import (
    Link,
    fits_bits,
    is_numeral,
    materialise,
    may_be_wide,
    numeral_chars,
    wide_message,
)
from langchain_structx._validation.references import check_references as check_references
from langchain_structx._validation.references import offline_registry as offline_registry
from langchain_structx.limits import Limits

Path = tuple[str | int, ...]

_LEAVES = (str, int, float, bool, type(None))


@functools.lru_cache(maxsize=8)
def _power_of_ten(digits: int) -> int:
    return int(10**digits)


def too_many_digits(number: int, limit: int) -> bool:
    """Whether `number` has more than `limit` decimal digits, without `str()`.

    Examples:
        >>> too_many_digits(10**5, 5), too_many_digits(-(10**5) + 1, 5)
        (True, False)
    """
    # Four bits per digit at most: anything shorter is certainly within the limit.
    if number.bit_length() <= 3 * limit:
        return False
    return abs(number) >= _power_of_ten(limit)


def _leaf_problem(value: Any, limits: Limits) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if too_many_digits(value, limits.max_integer_digits):
            return f"integer has more than {limits.max_integer_digits} digits"
        if not fits_bits(value, limits.max_integer_bits):
            return wide_message(limits)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a JSON number"
    return None


SURROGATE = (
    "the string holds a lone surrogate (such as \\ud800), which is no character; "
    "write the character itself, or both halves of its escape pair"
)
"""Why a string with a lone surrogate is refused: no checkpoint or UTF-8 file can keep it."""
SURROGATE_KEY = "an object key holds a lone surrogate (such as \\ud800), which is no character"


def lone_surrogate(text: str) -> bool:
    r"""Whether `text` holds a surrogate code point on its own (from a `\ud800` escape).

    JSON's `\ud83d\ude00` is read as one character; a half alone is no text a
    checkpoint serializer or a UTF-8 file can keep (msgpack stores it as `?`), so
    a value holding one is refused rather than altered later.

    Examples:
        >>> lone_surrogate("café " + chr(0x1F600)), lone_surrogate("a" + chr(0xD800))
        (False, True)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class Shape(NamedTuple):
    """What `shape_issue` finds in a value before any validator sees it."""

    issue: ValidationIssue | None
    """The first shape problem, or None."""
    depth: int
    """The deepest nesting (scalars: 0)."""
    numerals: bool = False
    """Whether a string in it may be read as an integer too wide for
    `Limits.max_integer_bits` (a validator may turn `"1" * 30` into an int)."""


_CLEAN = tuple(Shape(None, depth) for depth in range(8))
"""The finding for a sound value of each shallow depth, made once: every tool call is checked."""


def shape_issue(value: Any, limits: Limits) -> Shape:
    """Find the first shape problem of `value` (or None) and its deepest nesting.

    A value arrives parsed when the client read it (tool-call arguments), so its
    size is bounded here: the characters of its strings and object keys count
    against `limits.max_reply_chars`, as the text of a reply does before parsing.

    Examples:
        >>> shape_issue({"a": [1, float("nan")]}, Limits()).issue
        ValidationIssue(path=('a', 1), message='nan is not a JSON number')
        >>> shape_issue([[[]]], Limits(max_depth=2)).issue.message
        'nested deeper than 2 levels'
        >>> shape_issue({"a": "x" * 20}, Limits(max_reply_chars=10)).issue.message
        'the value holds more than 10 characters'
        >>> shape_issue({"id": " 1" + "0" * 20}, Limits()).numerals
        True
    """
    if not isinstance(value, _CONTAINERS):
        problem = _leaf_problem(value, limits)
        if isinstance(value, str) and not value.isascii() and lone_surrogate(value):
            problem = SURROGATE
        if problem is None and isinstance(value, str) and len(value) > limits.max_reply_chars:
            problem = _too_large(limits)
        numerals = isinstance(value, str) and may_be_wide(value, limits.max_integer_bits)
        return Shape(None if problem is None else ValidationIssue((), problem), 0, numerals)
    # Only containers go on the stack; scalars are checked where they are met:
    # numbers can be wrong, and strings count towards the size.
    stack: list[tuple[Any, Link, int]] = [(value, None, 0)]
    deepest, numerals = 0, False
    room = limits.max_reply_chars
    wide = numeral_chars(limits.max_integer_bits)
    while stack:
        node, link, depth = stack.pop()
        if depth >= limits.max_depth:
            return Shape(ValidationIssue(materialise(link), _too_deep(limits)), depth + 1)
        if depth >= deepest:
            deepest = depth + 1
        issue, used, long_numeral = _scan(node, link, depth, stack, limits, wide)
        room -= used
        numerals = numerals or long_numeral
        if issue is None and room < 0:
            issue = ValidationIssue((), _too_large(limits))
        if issue is not None:
            return Shape(issue, deepest)
    if numerals or deepest >= len(_CLEAN):
        return Shape(None, deepest, numerals)
    return _CLEAN[deepest]


def _scan(
    node: Any,
    link: Link,
    depth: int,
    stack: list[tuple[Any, Link, int]],
    limits: Limits,
    wide: int,
) -> tuple[ValidationIssue | None, int, bool]:
    """Check one container's keys and scalars and queue its containers.

    `wide` is the length from which a string may be read as a too wide integer.

    Returns:
        The first problem met (or None), the characters of the keys and strings
        seen up to there, and whether one of them may be read as a too wide integer.
    """
    used, numerals = 0, False
    is_object = isinstance(node, dict)
    # An integer of this many bits or fewer is within both bounds (see `too_many_digits`).
    bits = min(3 * limits.max_integer_digits, limits.max_integer_bits - 1)
    for key, item in node.items() if is_object else enumerate(node):
        if is_object:
            if not isinstance(key, str):
                issue = ValidationIssue(materialise(link), "object keys must be strings")
                return issue, used, numerals
            if not key.isascii() and lone_surrogate(key):
                return ValidationIssue(materialise(link), SURROGATE_KEY), used, numerals
            used += len(key)
            numerals = numerals or (len(key) >= wide and is_numeral(key))
        if isinstance(item, str):
            if not item.isascii() and lone_surrogate(item):
                return ValidationIssue(materialise((key, link)), SURROGATE), used, numerals
            used += len(item)
            numerals = numerals or (len(item) >= wide and is_numeral(item))
        elif isinstance(item, _CONTAINERS):
            stack.append((item, (key, link), depth + 1))
        elif isinstance(item, float) or (isinstance(item, int) and item.bit_length() > bits):
            problem = _leaf_problem(item, limits)
            if problem is not None:
                return ValidationIssue(materialise((key, link)), problem), used, numerals
    return None, used, numerals


def _too_large(limits: Limits) -> str:
    return f"the value holds more than {limits.max_reply_chars} characters"


_CONTAINERS = (dict, list, tuple)


def _too_deep(limits: Limits) -> str:
    return f"nested deeper than {limits.max_depth} levels"


def schema_shape_problem(
    schema: Any, *, max_depth: int, max_nodes: int, tuples: bool = False
) -> str | None:
    """Describe why `schema` is not a bounded JSON document, or return None.

    Shared sub-dicts are fine (the walk tracks the current path, not every node
    seen), cycles are not. The walk keeps one frame per level of the current
    path, not every child of every level, so a list of millions of values is
    refused after `max_nodes` steps without copying it.

    Args:
        schema: The schema, as given by a caller.
        max_depth: Most objects and lists a value may sit inside.
        max_nodes: Most values in the schema (each visit of a shared one counts).
        tuples: Accept tuples as lists, as `json.dumps` does; otherwise a tuple
            is a value that is not JSON.

    Returns:
        The first problem met, ending in its JSON path (such as `at $.properties.a`),
        or None.

    Examples:
        >>> loop: dict = {"type": "object"}
        >>> loop["properties"] = {"self": loop}
        >>> schema_shape_problem(loop, max_depth=64, max_nodes=1000)
        'the schema contains itself at $.properties.self'
        >>> schema_shape_problem({"enum": (1, 2)}, max_depth=64, max_nodes=1000)
        'the schema holds a tuple, which is not JSON at $.enum'
        >>> schema_shape_problem({"enum": (1, 2)}, max_depth=64, max_nodes=1000, tuples=True)
    """
    containers: tuple[type, ...] = (dict, list, tuple) if tuples else (dict, list)
    on_path: set[int] = set()
    # The containers on the current path, each with the children it has left.
    frames: list[tuple[int, Link, int, Iterator[tuple[str | int, Any]]]] = []
    node, link, depth, nodes = schema, None, 0, 0
    while True:
        nodes += 1
        problem = _schema_node_problem(
            node, depth, nodes, on_path, max_depth, max_nodes, containers
        )
        if problem is not None:
            return f"{problem} at {ValidationIssue(materialise(link), '').location}"
        if isinstance(node, containers):
            on_path.add(id(node))
            frames.append((id(node), link, depth, _children_last_first(node)))
        step = _next_child(frames, on_path)
        if step is None:
            return None
        node, link, depth = step


def _children_last_first(node: Any) -> Iterator[tuple[str | int, Any]]:
    # Last first: the order in which the walk has always reported problems.
    if isinstance(node, dict):
        return reversed(node.items())
    return zip(range(len(node) - 1, -1, -1), reversed(node), strict=True)


def _next_child(
    frames: list[tuple[int, Link, int, Iterator[tuple[str | int, Any]]]], on_path: set[int]
) -> tuple[Any, Link, int] | None:
    """The next value to visit, leaving the containers that have none left."""
    while frames:
        node_id, link, depth, children = frames[-1]
        step = next(children, None)
        if step is not None:
            key, child = step
            return child, (key, link), depth + 1
        on_path.discard(node_id)
        frames.pop()
    return None


def _schema_node_problem(
    node: Any,
    depth: int,
    nodes: int,
    on_path: set[int],
    max_depth: int,
    max_nodes: int,
    containers: tuple[type, ...],
) -> str | None:
    if nodes > max_nodes:
        return f"the schema has more than {max_nodes} parts"
    if depth > max_depth:
        return f"the schema is nested deeper than {max_depth} levels"
    if isinstance(node, containers):
        if id(node) in on_path:
            return "the schema contains itself"
        if isinstance(node, dict) and not all(isinstance(key, str) for key in node):
            return "the schema has a key that is not a string"
        return None
    if isinstance(node, float) and not math.isfinite(node):
        return f"the schema holds {node!r}, which is not a JSON number"
    if isinstance(node, int) and too_many_digits(node, 1_000):
        return "the schema holds an integer with more than 1000 digits"
    if not isinstance(node, _LEAVES):
        return f"the schema holds a {type(node).__name__}, which is not JSON"
    return None


class _BoundedRepr(reprlib.Repr):
    """`reprlib` that never asks `int.__repr__` for more than a few hundred digits."""

    def repr_str(self, x: str, level: int) -> str:
        return clip(repr(x[: self.maxstring]), self.maxstring)

    def repr_int(self, x: int, level: int) -> str:
        if too_many_digits(x, 40):
            sign = "-" if x < 0 else ""
            return f"{sign}<integer of about {int(x.bit_length() * math.log10(2)) + 1} digits>"
        return repr(x)


def preview(value: Any, limit: int) -> str:
    """Render `value` as Python would, cut to at most `limit` characters.

    Examples:
        >>> preview("z" * 100, 12)
        "'zzzzzzzz..."
        >>> preview(10**5000, 80)
        '<integer of about 5001 digits>'
    """
    # One renderer per call: its bounds are per call, and threads share no state.
    shown = _BoundedRepr()
    shown.maxlevel = 3
    shown.maxdict = shown.maxlist = shown.maxtuple = 6
    shown.maxstring = shown.maxother = max(limit, 8)
    try:
        text = shown.repr(value)
    except (RecursionError, ValueError, TypeError):
        text = f"<{type(value).__name__}>"
    return clip(text, limit)


def clip(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters, marking the cut with `...`."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def clip_path(path: Path, limit: int) -> Path:
    """Shorten over-long keys in a path; a model can make a key megabytes long."""
    return tuple(clip(step, limit) if isinstance(step, str) else step for step in path)


def cap_issues(issues: list[ValidationIssue], total: int, limits: Limits) -> list[ValidationIssue]:
    """Keep at most `limits.max_issues` entries, the last one saying how many were left out.

    Examples:
        >>> many = [ValidationIssue((i,), "bad") for i in range(5)]
        >>> [str(i) for i in cap_issues(many, 5, Limits(max_issues=3))]
        ['at $[0]: bad', 'at $[1]: bad', 'at $: ... and 3 more problems']
    """
    if total <= limits.max_issues:
        return issues
    shown = issues[: limits.max_issues - 1]
    return [*shown, ValidationIssue((), f"... and {total - len(shown)} more problems")]
