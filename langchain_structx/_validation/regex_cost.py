"""What compiling a pattern in the `regex` package costs, bounded from its text alone.

`regex` writes a counted repetition out when it compiles it: `a{1000}` costs what
a thousand-character pattern does, `(?:a{1000}){1000}` what a million-character
one does, and `a{4294967294}` takes minutes and gigabytes. `compile_cost` bounds
that work, in characters, before anything is compiled, in time linear in the
pattern's length, so that hostile text never reaches the compiler unbounded.

One case is worse than linear: a repeated group holding nothing but empty groups
(`(){10000}`, `(?:()()){5000}`) takes time quadratic in the count (1.5 s for
`(){10000}`), so such a repetition costs the square of what it writes out, over 16.

Two bounds are taken, the smaller one wins:

- `_flat_bound` reads no structure, so that nothing can hide a count from it:
  every `{` followed by digits counts, even as a literal (and digits split by
  white space or verbose-mode comments too); a count that may repeat a group (one
  written after `)` or white space) multiplies everything, and pays the square
  as if the group were empty groups only.
- `_nested_bound` follows the groups, so that `(a){7}(b){3}` costs 7 + 3, not 7 * 3.
  It gives up (and the flat bound stands) wherever a parenthesis might not be a
  group: a `#` anywhere (a comment in verbose mode), a parenthesis inside a set, or
  a set whose end the `regex` versions would read differently (`[[]`).

Neither is the exact cost; each may only overstate it.
"""

from __future__ import annotations

_CAP = 1_000_000
"""Costs are counted up to here; anything larger is as bad."""

_DIGITS = "0123456789"


def compile_cost(pattern: str) -> int:
    r"""An upper bound, in characters, on the work `regex.compile(pattern)` does (up to `_CAP`).

    Examples:
        >>> compile_cost(r"^[a-z]{2}\d{4}$")  # 15 characters, the set twice, 4 digits
        29
        >>> compile_cost("(?:a{100}){100}")  # a hundred groups of a hundred
        10905
        >>> compile_cost("(a){7}(b){3}") < 100
        True
        >>> compile_cost("a{4294967294}")
        1000000
    """
    bound = _flat_bound(pattern)
    if bound <= 2 * len(pattern) + 100 or "#" in pattern:
        return bound
    nested = _nested_bound(pattern)
    return bound if nested is None else min(bound, nested)


def _flat_bound(pattern: str) -> int:
    """The pattern's length plus each count on an item or set, times each count on a group.

    A count on a set is multiplied by the set's length (overstated: taken from the
    pattern's first `[`), since each copy holds all its members.

    Each count on a group also adds the square of the count times the number of
    groups, over 16: what it costs if that group holds only empty groups.
    """
    items, groups = len(pattern), 1
    opened = pattern.count("(")
    # `regex` writes a repeated set out with all its members each time; a set
    # before a count is taken to reach back to the first `[` of the pattern.
    first_set = pattern.find("[")
    comment_end = -1
    index = pattern.find("{")
    while index != -1 and groups * items < _CAP:
        count, comment_end = _count_after(pattern, index + 1, comment_end)
        if count > 1:
            before = pattern[index - 1] if index else ")"
            if before == ")" or before.isspace():
                groups = min(groups * count, _CAP)
                items = min(items + _hollow_penalty(count, opened), _CAP)
            elif before == "]" and 0 <= first_set < index:
                items = min(items + count * (index - first_set), _CAP)
            else:
                items = min(items + count, _CAP)
        index = pattern.find("{", index + 1)
    return min(groups * items, _CAP)


def _hollow_penalty(count: int, size: int) -> int:
    """What repeating `count` times a group of `size` holding only empty groups costs."""
    written = min(count * size, _CAP)
    return min(written * written // 16, _CAP)


def _count_after(text: str, index: int, comment_end: int) -> tuple[int, int]:
    """The repeat count that may start at `index` (0 if none), and where the last comment ended.

    `comment_end` is remembered between calls, so that many `{#` in one comment
    are each read in constant time.
    """
    count = 0
    while index < len(text):
        char = text[index]
        if char in _DIGITS:
            count = min(count * 10 + ord(char) - ord("0"), _CAP)
        elif char == "#":
            if comment_end < index:
                comment_end = text.find("\n", index)
                comment_end = len(text) if comment_end == -1 else comment_end
            index = comment_end
            continue
        elif not char.isspace():
            break
        index += 1
    return count, comment_end


class _Frame:
    """One group being read: the cost of what it holds, and of its last item.

    A frame is hollow while it holds nothing but hollow groups (and signs that
    match nothing by themselves), which `regex` is slow to repeat.
    """

    __slots__ = ("empty", "hollow", "last", "last_hollow", "total")

    def __init__(self) -> None:
        self.total = 0
        self.last = 0
        self.empty = self.hollow = True
        self.last_hollow = False

    def add(self, cost: int, *, item: bool = True, hollow: bool = False) -> None:
        self.total = min(self.total + cost, _CAP)
        if item:
            self.last, self.last_hollow = cost, hollow
            self.hollow = self.hollow and hollow
            self.empty = False

    def add_empty_group(self, cost: int) -> None:
        """Add `()`, `(?:)` or `(?i)`, which a count after may repeat.

        Or, flags being no item, the count repeats the item before: the cost
        left for the count covers both.
        """
        self.total = min(self.total + cost, _CAP)
        self.last, self.last_hollow = max(self.last, cost), True

    def repeat(self, count: int) -> None:
        # With no item before it, a count repeats the white space or sign there.
        repeated = min(max(self.last, 1) * count, _CAP)
        if self.last_hollow and count > 1:
            repeated = min(repeated + _hollow_penalty(count, self.last), _CAP)
        self.total = min(self.total + repeated - self.last, _CAP)
        self.last = repeated


def _nested_bound(pattern: str) -> int | None:
    """The cost with each count applied to the item or group before it; None if unsure."""
    frames = [_Frame()]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        end = index + 1
        if char == "\\":
            end = index + 2
            frames[-1].add(1)
        elif char == "[":
            set_end = _set_end(pattern, index)
            if set_end is None:
                return None
            end = set_end
            frames[-1].add(end - index)
        elif char == "(":
            frames.append(_Frame())
            end = _prefix_end(pattern, end)
            frames[-1].add(end - index - 1, item=False)
        elif char == ")":
            if len(frames) == 1:
                return None
            _close(frames)
        elif char == "{" and (quantifier := _quantifier(pattern, index)) is not None:
            end, count = quantifier
            frames[-1].repeat(max(count, 1))
            frames[-1].add(end - index, item=False)
        else:
            # Signs and white space (ignored in verbose mode) are no items: a count
            # after them applies to the item before. Only `|` may leave a group hollow.
            frames[-1].add(1, item=not (char in "*+?|" or char.isspace()))
        index = end
    while len(frames) > 1:
        inner = frames.pop()
        frames[-1].add(inner.total)
    return frames[0].total


def _close(frames: list[_Frame]) -> None:
    inner = frames.pop()
    if inner.empty:
        frames[-1].add_empty_group(inner.total + 2)
    else:
        frames[-1].add(inner.total + 2, hollow=inner.hollow)


def _prefix_end(pattern: str, index: int) -> int:
    """Where the head of a group (`?:`, `?P<name>`, `?'name'`, `?i)`, ...) at `index` ends."""
    if not pattern.startswith("?", index):
        return index
    if pattern.startswith("'", index + 1):
        close = pattern.find("'", index + 2)
        return len(pattern) if close == -1 else close + 1
    index += 1
    while index < len(pattern) and pattern[index] not in ":>=!|()":
        index += 1
    return index + 1 if index < len(pattern) and pattern[index] in ":>=!|" else index


def _quantifier(pattern: str, index: int) -> tuple[int, int] | None:
    """`(end, least count)` of a `{m}`, `{m,}`, `{m,n}` or `{,n}` at `index`, white space allowed.

    `regex` allows white space there only in verbose mode; reading more as a count
    than `regex` does only overstates the cost.
    """
    count, digits, comma = 0, False, False
    index += 1
    while index < len(pattern):
        char = pattern[index]
        if char in _DIGITS:
            digits = True
            if not comma:
                count = min(count * 10 + ord(char) - ord("0"), _CAP)
        elif char == "," and not comma:
            comma = True
        elif char == "}":
            return (index + 1, count) if digits or comma else None
        elif not char.isspace():
            return None
        index += 1
    return None


def _set_end(pattern: str, index: int) -> int | None:
    """Where the set opening at `index` ends; None if unsure.

    Unsure when a parenthesis is in it (it may be a group), or a `[` (in version 1
    of `regex`, a set nested in this one, which then ends further on).
    """
    index += 1
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):
        index += 1
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char in "[()":
            return None
        if char == "]":
            return index + 1
        index += 1
    return None
