"""Integers an answer may hold: no wider than what a checkpoint can store.

LangGraph writes the state of a checkpointed run with MessagePack, whose integers
hold 64 bits (signed or unsigned); a wider one fails the write, and the run with
it. `Limits.max_integer_bits` bounds the integers of a reply (checked with its
shape, in `_bounds.shape_issue`) and of the validated answer: a validator may
read a string of digits as an integer, so when a reply holds such a string the
answer itself is walked (`wide_integer`).

Paths are kept as links (last step, parent link) while walking, so no tuple is
built per node; `materialise` turns one into a path.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from langchain_structx._exceptions import ValidationIssue
from langchain_structx.limits import Limits

Link = tuple[str | int, Any] | None
"""A path kept as (last step, parent link)."""

_NUMERAL = re.compile(r"[\s+-]*\d[\d_]*(?:\.\d*)?\s*")
"""What a validator may read as an integer (Pydantic takes signs, spaces,
underscores between digits and a fraction of zeros); a little more, to be safe."""


def materialise(link: Link) -> tuple[str | int, ...]:
    """The path a link stands for, root first."""
    steps: list[str | int] = []
    while link is not None:
        steps.append(link[0])
        link = link[1]
    return tuple(reversed(steps))


def fits_bits(number: int, bits: int) -> bool:
    """Whether `number` lies within what `bits` bits hold, signed or unsigned.

    Examples:
        >>> fits_bits(2**64 - 1, 64), fits_bits(-(2**63), 64), fits_bits(2**64, 64)
        (True, True, False)
    """
    if number.bit_length() < bits:
        return True
    return -(1 << (bits - 1)) <= number < 1 << bits


def wide_message(limits: Limits) -> str:
    """The problem of an integer wider than `limits.max_integer_bits`."""
    return f"integer does not fit in {limits.max_integer_bits} bits"


@functools.lru_cache(maxsize=16)
def numeral_chars(bits: int) -> int:
    """The fewest characters a numeral needs to be too wide for `bits`.

    Examples:
        >>> numeral_chars(64), len(str(2**63))
        (19, 19)
    """
    return int((bits - 1) * math.log10(2)) + 1


def is_numeral(text: str) -> bool:
    """Whether a validator might read `text` as an integer (see `_NUMERAL`)."""
    return _NUMERAL.fullmatch(text) is not None


def may_be_wide(text: str, bits: int) -> bool:
    """Whether `text` might be read as an integer too wide for `bits`.

    Examples:
        >>> may_be_wide("1" * 25, 64), may_be_wide("12", 64), may_be_wide("x" * 25, 64)
        (True, False, False)
    """
    return len(text) >= numeral_chars(bits) and is_numeral(text)


def wide_integer(value: Any, limits: Limits) -> ValidationIssue | None:
    """Where a validated answer holds an integer wider than `limits.max_integer_bits`.

    The answer's containers are walked, and the fields of its models and
    dataclasses, down to `limits.max_depth` as the reply was.

    Examples:
        >>> wide_integer({"ids": [1, 2**70]}, Limits())
        ValidationIssue(path=('ids', 1), message='integer does not fit in 64 bits')
    """
    bits = limits.max_integer_bits
    stack: list[tuple[Any, Link, int]] = [(value, None, 0)]
    while stack:
        node, link, depth = stack.pop()
        if isinstance(node, int) and not fits_bits(node, bits):
            return ValidationIssue(materialise(link), wide_message(limits))
        if depth >= limits.max_depth:
            continue
        for key, item in _parts(node):
            if isinstance(key, int) and not fits_bits(key, bits):
                return ValidationIssue(materialise(link), wide_message(limits))
            if not isinstance(item, _SCALARS):
                stack.append((item, (key, link), depth + 1))
    return None


_SCALARS = (str, float, bool, type(None))


def _parts(node: Any) -> Any:
    """The keyed parts of one node of an answer: items, elements, or a model's fields.

    Only the shapes a validator builds an answer from are entered (dicts, lists,
    tuples, sets, Pydantic models and dataclasses); anything else is a leaf.
    """
    if isinstance(node, dict):
        return node.items()
    if isinstance(node, (list, tuple, set, frozenset)):
        return enumerate(node)
    kind = type(node)
    if hasattr(kind, "__pydantic_fields__") and hasattr(node, "__dict__"):
        extra = getattr(node, "__pydantic_extra__", None)
        return [*node.__dict__.items(), *extra.items()] if extra else node.__dict__.items()
    names = getattr(kind, "__dataclass_fields__", None)
    if names is not None:
        return [(name, getattr(node, name, None)) for name in names]
    return ()
