r"""Rewrite JSON-schema regexes into the subset llama.cpp's grammar converter handles.

The converter copies a `pattern` into GBNF nearly verbatim, but GBNF knows only
character classes and `\xHH`-style escapes: `\d`, `\.`, lazy quantifiers and
non-capturing groups would make llama.cpp fail to parse the grammar. `_Rewriter`
makes one pass over the regex and spells each construct the way GBNF accepts, or
gives up (`_Unsupported`) on constructs that have no grammar equivalent.
"""

from __future__ import annotations

import re
import warnings

from langchain_structx.local._limits import MAX_REPEAT

__all__ = ("anchored_pattern",)

# What a class that leaves characters out must leave out too: the grammar writes a
# pattern's characters into the JSON string as they are, and these would end it or
# begin an escape there (or be no JSON at all).
_NOT_IN_JSON = "\\x22\\x5C\\x7F\\x00-\\x1F"
# Regex shorthand classes, written as GBNF-safe character classes. A tab, newline
# or carriage return is written escaped in JSON, so `\s` is a space or one of those
# escapes (and only a space inside a class, where an escape cannot stand).
_CLASS_ALONE = {
    "d": "[0-9]",
    "w": "[A-Za-z0-9_]",
    "s": "( |[\\x5C][tnr])",
    "D": f"[^0-9{_NOT_IN_JSON}]",
    "W": f"[^A-Za-z0-9_{_NOT_IN_JSON}]",
    "S": f"[^ \\t\\n\\r{_NOT_IN_JSON}]",
}
# Any one character, as a JSON string holds it: written as it is, or escaped. The
# converter's own `.` lets a raw quote or backslash through, which breaks the JSON.
_ANY_CHAR = f"([^{_NOT_IN_JSON}]|[\\x5C][\\x22\\x5C/bft]|[\\x5C]u[0-9A-Fa-f]{{4}})"
_CLASS_INSIDE = {"d": "0-9", "w": "A-Za-z0-9_", "s": " "}
_CONTROL = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_HEX = {"x": 2, "u": 4}
# `{,n}` is no count in JSON Schema's regexes (ECMA-262 reads it as text), though
# Python's reads it as `{0,n}`: such a brace is left to the validator.
_BOUNDS = re.compile(r"\{(\d+|\d+,\d*)\}")


class _Unsupported(Exception):
    """Internal: the pattern uses a feature with no grammar equivalent."""


def _code_point(char: str) -> str:
    """Escape one character the way GBNF spells it inside a class."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


class _Rewriter:
    """Single pass over a regex body, emitting the GBNF-friendly equivalent."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.pos = 0
        self.out: list[str] = []
        self.negated = False
        self.depth = 0
        self.alternation = False
        """Whether the regex is an alternation at its top level (`a|b`)."""

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.body[index] if index < len(self.body) else ""

    def run(self) -> str:
        while self.pos < len(self.body):
            self.step(self.peek())
        return "".join(self.out)

    def step(self, char: str) -> None:
        if char == "\\":
            self.out.append(self.escape(inside=False))
        elif char == "[":
            self.out.append(self.bracket())
        elif char == "(":
            self.group()
        elif char in "^$":
            raise _Unsupported("anchor inside the pattern")
        elif char == "{":
            self.bounds()
        elif char in "*+?":
            self.quantifier(char)
        elif char in ")|":
            self.depth -= char == ")"
            self.alternation = self.alternation or (char == "|" and self.depth == 0)
            self.out.append(char)
            self.pos += 1
        elif char == ".":
            self.out.append(_ANY_CHAR)
            self.pos += 1
        elif char in "]}":
            # Literal in a regex, but the converter loops forever on a bare one.
            self.out.append(self.literal(char, inside=False))
            self.pos += 1
        else:
            _written_as_is(char)
            self.out.append(char)
            self.pos += 1

    def escape(self, *, inside: bool) -> str:
        """Translate the escape at `pos` (a backslash) and step past it."""
        letter = self.peek(1)
        self.pos += 2
        table = _CLASS_INSIDE if inside else _CLASS_ALONE
        if letter in table:
            return table[letter]
        if letter in _CONTROL:
            return self.literal(_CONTROL[letter], inside)
        if letter in _HEX:
            digits = self.body[self.pos : self.pos + _HEX[letter]]
            if len(digits) != _HEX[letter] or not all(
                c in "0123456789abcdefABCDEF" for c in digits
            ):
                raise _Unsupported(f"bad \\{letter} escape")
            self.pos += len(digits)
            return self.literal(chr(int(digits, 16)), inside)
        if not letter or letter.isalnum():
            # \b, \B, back-references, \p{...} and friends: no grammar equivalent.
            raise _Unsupported(f"escape \\{letter}")
        return self.literal(letter, inside)

    def literal(self, char: str, inside: bool) -> str:
        if not (inside and self.negated):  # a class that leaves it out never writes it
            _written_as_is(char)
        # A one-character class is the only spelling the converter passes through
        # untouched, whatever the character is.
        return _code_point(char) if inside else f"[{_code_point(char)}]"

    def bracket(self) -> str:
        """Translate a `[...]` class starting at `pos`."""
        parts = ["["]
        self.pos += 1
        self.negated = self.peek() == "^"
        if self.negated:
            parts.append("^")
            self.pos += 1
        first = True
        while (char := self.peek()) != "]" or first:
            if not char:
                raise _Unsupported("unclosed character class")
            if char == "\\":
                parts.append(self.escape(inside=True))
            else:
                # A leading "]" is literal in a regex; "[" may start a POSIX class.
                if char == "[" and self.peek(1) == ":":
                    raise _Unsupported("POSIX character class")
                if not self.negated:
                    _written_as_is(char)
                parts.append(_code_point(char) if char in '[]\\"' else char)
                self.pos += 1
            first = False
        self.pos += 1
        parts.append(f"{_NOT_IN_JSON}]" if self.negated else "]")
        return "".join(parts)

    def group(self) -> None:
        self.pos += 1
        if self.peek() == "?":
            if self.peek(1) != ":":
                raise _Unsupported("lookaround or inline flag")
            self.pos += 2  # A non-capturing group is just a group to a grammar.
        self.depth += 1
        self.out.append("(")

    def repeatable(self) -> None:
        # The converter indexes the previous item; with none it crashes.
        if not self.out or self.out[-1] in ("(", "|"):
            raise _Unsupported("quantifier with nothing to repeat")

    def bounds(self) -> None:
        match = _BOUNDS.match(self.body, self.pos)
        if match is None:
            raise _Unsupported("brace that is not a repetition")
        self.repeatable()
        self.out.append(_loosened(match.group(0)))
        self.pos = match.end()
        self.lazy_suffix()

    def quantifier(self, char: str) -> None:
        self.repeatable()
        self.out.append(char)
        self.pos += 1
        self.lazy_suffix()

    def lazy_suffix(self) -> None:
        # Laziness changes which match is found, not which strings match: drop it.
        if self.peek() == "?":
            self.pos += 1
        elif self.peek() == "+":
            raise _Unsupported("possessive quantifier")


def _written_as_is(char: str) -> None:
    """Give up on a character JSON writes escaped (a quote, a backslash, a control).

    The grammar puts a pattern's characters into the JSON string as they are, so
    one of these could only come out as broken JSON: the pattern would leave the
    model no valid answer.
    """
    if char in '"\\' or char < " ":
        raise _Unsupported(f"{char!r} is escaped in JSON")


def _loosened(count: str) -> str:
    """`count` (such as `{2,5}`), or `+`/`*` when it exceeds `MAX_REPEAT`.

    The grammar writes a count out, one copy (and, past the minimum, one nested
    group) per repetition; llama.cpp refuses a long chain and crashes on a very long
    one. The looser repetition accepts every string the count did.

    Examples:
        >>> _loosened("{3,8}"), _loosened("{2000}"), _loosened("{0,5000}")
        ('{3,8}', '+', '*')
    """
    numbers = [int(part) for part in count[1:-1].split(",") if part]
    if max(numbers) <= MAX_REPEAT:
        return count
    return "+" if numbers[0] else "*"


def _strip_anchors(pattern: str) -> tuple[str, bool, bool]:
    start = pattern.startswith("^")
    body = pattern[1:] if start else pattern
    trailing_backslashes = len(body[:-1]) - len(body[:-1].rstrip("\\"))
    end = body.endswith("$") and trailing_backslashes % 2 == 0
    return (body[:-1] if end else body), start, end


def anchored_pattern(pattern: str) -> str | None:
    """Rewrite `pattern` for GBNF and anchor it; `None` when that is impossible.

    JSON Schema patterns match anywhere, while the converter wants `^...$`, so an
    unanchored end is padded with any characters. Every "any character" (`.`, the
    padding, a class that leaves characters out) is one a JSON string can hold
    where it stands: a raw quote or backslash there would break the JSON.
    Whether the converter then accepts the result is left to the caller, which
    owns the converter.
    """
    body, start, end = _strip_anchors(pattern)
    rewriter = _Rewriter(body)
    try:
        rewritten = rewriter.run()
    except _Unsupported:
        return None
    if rewriter.alternation:
        # `^a|b$` is "starts with a, or ends with b": the anchors hold for one
        # branch each, so neither end is anchored for the whole.
        start = end = False
    pad = f"{_ANY_CHAR}*"
    candidate = f"^{'' if start else pad}({rewritten}){'' if end else pad}$"
    if not _compiles(candidate):
        # Malformed structure (stray parenthesis, repeated quantifier) would
        # reach the grammar unchecked; Python's parser is a good-enough judge.
        return None
    return candidate


def _compiles(pattern: str) -> bool:
    # Python warns about syntax it may read differently one day (such as `[1--]`);
    # only whether it compiles matters here, so the warning is not for the user.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            re.compile(pattern)
        except (re.error, RecursionError):  # Python's parser recurses once per group.
            return False
    return True
