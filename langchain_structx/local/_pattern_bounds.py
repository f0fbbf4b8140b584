"""How many alternatives a pattern makes llama.cpp's grammar sampler weigh per character.

llama.cpp keeps one parse stack for every place in the grammar the text so far may
have reached, and for each character it advances every stack through every place
that may come next. For most patterns that is a handful, but where the pattern lets
one character be read in many places (`(a?){300}`, `a?a?a?...`, an unanchored
`.*[a-z]{500}`) the work per token grows as a high power of the pattern's size:
`(a?){240}` took 88 s for four tokens.

`pattern_load` reads a pattern as rewritten by `_patterns` (character classes, `.`,
groups, `|` and quantifiers only), writes its counts out as the grammar does, and
builds its position automaton (Glushkov's construction). It then visits every set
of positions the text can reach and measures, for each, how many next positions
llama.cpp would weigh. A pattern whose measure or analysis exceeds the bounds in
`_limits` has no reliable cost, and the caller leaves it out of the grammar.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from langchain_structx.local._limits import (
    MAX_ALTERNATIVES,
    MAX_PATTERN_CHARS,
    MAX_PATTERN_POSITIONS,
    MAX_PATTERN_WORK,
)

__all__ = ("PatternBudget", "affordable", "pattern_load")

_STEPS_PER_CHAR = 5

_COUNTS = re.compile(r"\{(\d*)(,?)(\d*)\}")
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_SIMPLE_ESCAPES = {"t": 9, "n": 10, "r": 13, "\\": 92, '"': 34, "[": 91, "]": 93}
_LINE_BREAKS = ((10, 10), (13, 13))

# A parsed pattern: ("set", ranges, negated), ("cat", items), ("alt", branches),
# or ("rep", item, minimum, maximum-or-None).
_Node = tuple[object, ...]


class _TooCostly(Exception):
    """Internal: the pattern cannot be shown to stay within the bounds."""


@dataclass
class PatternBudget:
    """Steps left for analysing the patterns of one schema.

    Attributes:
        remaining: Steps still available; analysis past zero gives up.
    """

    remaining: int

    def spend(self, steps: int) -> None:
        """Use `steps`, giving up the current analysis when none are left."""
        self.remaining -= steps
        if self.remaining < 0:
            raise _TooCostly("analysis budget spent")


def affordable(pattern: str, budget: PatternBudget | None) -> bool:
    """Whether `pattern` may be read at all, charging its length to `budget` if so.

    Args:
        pattern: A pattern as written in a schema.
        budget: The schema's shared analysis budget, if any.

    Returns:
        False for a pattern longer than `MAX_PATTERN_CHARS`, or one the budget
        cannot pay for: it is left out of the grammar without being compiled.
    """
    cost = _STEPS_PER_CHAR * len(pattern)
    if len(pattern) > MAX_PATTERN_CHARS or (budget is not None and budget.remaining < cost):
        return False
    if budget is not None:
        budget.remaining -= cost
    return True


class _Parser:
    """Recursive descent over the regex subset `_patterns` emits."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def parse(self) -> _Node:
        node = self.alternation()
        if self.pos != len(self.text):
            raise _TooCostly("unbalanced parenthesis")
        return node

    def alternation(self) -> _Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", tuple(branches))

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while (char := self.peek()) and char not in "|)":
            item = self.atom()
            while (char := self.peek()) and char in "*+?{":
                item = self.quantified(item)
            items.append(item)
        return items[0] if len(items) == 1 else ("cat", tuple(items))

    def atom(self) -> _Node:
        char = self.peek()
        if char == "(":
            self.pos += 1
            inner = self.alternation()
            if self.peek() != ")":
                raise _TooCostly("unclosed group")
            self.pos += 1
            return inner
        if char == "[":
            return self.bracket()
        self.pos += 1
        if char == ".":
            return ("set", _LINE_BREAKS, True)
        if char in "*+?{}]\\":
            raise _TooCostly(f"unexpected {char!r}")
        return ("set", ((ord(char), ord(char)),), False)

    def quantified(self, item: _Node) -> _Node:
        char = self.peek()
        if char in "*+?":
            self.pos += 1
            return ("rep", item, 1 if char == "+" else 0, 1 if char == "?" else None)
        match = _COUNTS.match(self.text, self.pos)
        if match is None or not (match.group(1) or match.group(3)):
            raise _TooCostly("brace that is not a count")
        self.pos = match.end()
        low = int(match.group(1) or 0)
        if not match.group(2):
            return ("rep", item, low, low)
        return ("rep", item, low, int(match.group(3)) if match.group(3) else None)

    def bracket(self) -> _Node:
        # Mirrors llama.cpp's parser: the first "]" closes the class.
        self.pos += 1
        negated = self.peek() == "^"
        self.pos += negated
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            low = self.class_char()
            high = low
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.class_char()
            if high < low:
                raise _TooCostly("reversed range")
            ranges.append((low, high))
        self.pos += 1
        return ("set", tuple(ranges), negated)

    def class_char(self) -> int:
        char = self.peek()
        if not char:
            raise _TooCostly("unclosed class")
        if char != "\\":
            self.pos += 1
            return ord(char)
        letter = self.peek(1)
        self.pos += 2
        if letter in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[letter]
        digits = self.text[self.pos : self.pos + _HEX_DIGITS.get(letter, 0)]
        if letter not in _HEX_DIGITS or len(digits) != _HEX_DIGITS[letter]:
            raise _TooCostly(f"escape \\{letter}")
        self.pos += len(digits)
        return int(digits, 16)


def _nullable(node: _Node) -> bool:
    kind = node[0]
    if kind == "set":
        return False
    if kind == "rep":
        return node[2] == 0 or _nullable(node[1])  # type: ignore[arg-type]
    items: tuple[_Node, ...] = node[1]  # type: ignore[assignment]
    return any(map(_nullable, items)) if kind == "alt" else all(map(_nullable, items))


def _positions(node: _Node) -> int:
    """Positions once counts are written out; refuses ambiguous empty matches."""
    kind = node[0]
    if kind == "set":
        return 1
    if kind == "rep":
        child: _Node = node[1]  # type: ignore[assignment]
        low: int = node[2]  # type: ignore[assignment]
        high: int | None = node[3]  # type: ignore[assignment]
        if _nullable(child):
            # llama.cpp finds a left recursion in a starred empty match, and tries
            # every way of matching nothing in a counted one.
            raise _TooCostly("quantifier over an item that can match nothing")
        copies = low + 1 if high is None else max(low, high)
        total = _positions(child) * copies
    else:
        items: tuple[_Node, ...] = node[1]  # type: ignore[assignment]
        if kind == "alt" and sum(map(_nullable, items)) > 1:
            raise _TooCostly("several ways to match nothing")
        total = sum(map(_positions, items))
    if total > MAX_PATTERN_POSITIONS:
        raise _TooCostly("too many positions")
    return total


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@dataclass
class _Automaton:
    """Glushkov's position automaton, with sets of positions as integer bit masks."""

    budget: PatternBudget
    classes: list[tuple[tuple[tuple[int, int], ...], bool]] = field(default_factory=list)
    follow: list[int] = field(default_factory=list)

    def link(self, lasts: int, firsts: int) -> None:
        if not firsts:
            return
        targets = _bits(lasts)
        self.budget.spend(len(targets))
        for position in targets:
            self.follow[position] |= firsts

    def build(self, node: _Node) -> tuple[int, int, bool]:
        """Return the first positions, last positions and nullability of `node`."""
        kind = node[0]
        if kind == "set":
            self.classes.append((node[1], node[2]))  # type: ignore[arg-type]
            self.follow.append(0)
            bit = 1 << (len(self.follow) - 1)
            return bit, bit, False
        if kind == "alt":
            parts = [self.build(item) for item in node[1]]  # type: ignore[attr-defined]
            first = last = 0
            for part_first, part_last, _ in parts:
                first, last = first | part_first, last | part_last
            return first, last, any(part[2] for part in parts)
        if kind == "cat":
            return self.chain([self.build(item) for item in node[1]])  # type: ignore[attr-defined]
        child: _Node = node[1]  # type: ignore[assignment]
        low: int = node[2]  # type: ignore[assignment]
        high: int | None = node[3]  # type: ignore[assignment]
        parts = [self.build(child) for _ in range(low)]
        if high is None:
            first, last, _ = self.build(child)
            self.link(last, first)
            parts.append((first, last, True))
        elif high > low:
            parts.append(self.optional_chain([self.build(child) for _ in range(high - low)]))
        return self.chain(parts)

    def chain(self, parts: list[tuple[int, int, bool]]) -> tuple[int, int, bool]:
        first, last, nullable = 0, 0, True
        for part_first, part_last, part_nullable in parts:
            self.link(last, part_first)
            first |= part_first if nullable else 0
            last = part_last | (last if part_nullable else 0)
            nullable = nullable and part_nullable
        return first, last, nullable

    def optional_chain(self, parts: list[tuple[int, int, bool]]) -> tuple[int, int, bool]:
        # The grammar nests the optional copies, `(x (x (x)?)?)?`: only the first
        # copy can start, and each later one only right after the one before it.
        last = 0
        for (_, previous_last, _), (next_first, _, _) in zip(parts, parts[1:], strict=False):
            self.link(previous_last, next_first)
        for _, part_last, _ in parts:
            last |= part_last
        return parts[0][0], last, True

    def representatives(self) -> tuple[list[int], list[list[int]]]:
        """Split the characters into runs no class tells apart; map positions to runs."""
        points = sorted(
            {0}
            | {low for ranges, _ in self.classes for low, _ in ranges}
            | {high + 1 for ranges, _ in self.classes for _, high in ranges}
        )
        masks = [0] * len(points)
        runs_of: list[list[int]] = []
        for position, (ranges, negated) in enumerate(self.classes):
            inside: set[int] = set()
            for low, high in ranges:
                inside.update(
                    range(bisect.bisect_left(points, low), bisect.bisect_right(points, high))
                )
            runs = sorted(set(range(len(points))) - inside) if negated else sorted(inside)
            self.budget.spend(len(runs) + 1)
            for run in runs:
                masks[run] |= 1 << position
            runs_of.append(runs)
        return masks, runs_of

    def widest_step(self, first: int) -> int:
        """The most next positions weighed for one character, over every reachable state."""
        masks, runs_of = self.representatives()
        widest = self.check(first.bit_count())
        seen: set[int] = set()
        pending = [first]  # positions the next character may match, per state reached
        while pending:
            mask = pending.pop()
            reachable = _bits(mask)
            candidates = {run for position in reachable for run in runs_of[position]}
            self.budget.spend(len(reachable) + len(candidates))
            for run in candidates:
                state = mask & masks[run]
                if state in seen:
                    continue
                seen.add(state)
                weighed, after = 0, 0
                matched = _bits(state)
                self.budget.spend(len(matched))
                for position in matched:
                    weighed += self.follow[position].bit_count()
                    after |= self.follow[position]
                widest = max(widest, self.check(weighed))
                if after:
                    pending.append(after)
        return widest

    @staticmethod
    def check(weighed: int) -> int:
        if weighed > MAX_ALTERNATIVES:
            raise _TooCostly("too many alternatives at once")
        return weighed


def pattern_load(pattern: str, budget: PatternBudget | None = None) -> int | None:
    r"""Most next positions llama.cpp weighs for one character of `pattern`.

    Args:
        pattern: An anchored pattern as `_patterns.anchored_pattern` writes it.
        budget: Steps shared by all the patterns of one schema; a fresh
            `MAX_PATTERN_WORK` when omitted. At most `MAX_PATTERN_WORK` of it is
            spent on this pattern.

    Returns:
        The measure (at most `MAX_ALTERNATIVES`), or `None` when the pattern is
        too costly, or too costly to analyse, to go into a grammar.

    Examples:
        >>> pattern_load(r"^([0-9]{3}-[0-9]{4})$")
        1
        >>> pattern_load("^((a?){300})$") is None
        True
    """
    shared = budget if budget is not None else PatternBudget(MAX_PATTERN_WORK)
    allowance = min(MAX_PATTERN_WORK, max(shared.remaining, 0))
    own = PatternBudget(allowance)
    try:
        if not (pattern.startswith("^") and pattern.endswith("$")):
            raise _TooCostly("not anchored")
        tree = _Parser(pattern[1:-1]).parse()
        _positions(tree)
        automaton = _Automaton(own)
        first, _, _ = automaton.build(tree)
        return automaton.widest_step(first)
    except (_TooCostly, RecursionError):
        return None
    finally:
        shared.remaining -= allowance - max(own.remaining, 0)
