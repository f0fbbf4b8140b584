"""The partial-JSON reader of streaming: a prefix of a reply, read for what it already holds.

Pure (no LangChain): `streaming` feeds it each growing reply. A value only ever
grows from one read to the next, never shows what may still change (a number
that more digits may follow), and once the text is whole equals `json.loads`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import from_json

from langchain_structx._parsing.decode import all_finite, needs_number_checks
from langchain_structx.limits import DEFAULT_LIMITS, Limits

MIN_STEP = 16
"""Fewest new characters before the partial answer is read again."""
_GROWTH = 0.5
_NUMBER_TAIL = "0123456789+-.eE"


def partial_value(text: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Best-effort value of a JSON prefix, holding only what can no longer change.

    Leading prose or a code fence is skipped. A number at the very end is left
    out, since more digits may follow. Nothing is shown for a text longer than
    `limits.max_reply_chars`, which the answer itself would not be read past.

    Examples:
        >>> partial_value('Sure: {"name": "Ad')
        {'name': 'Ad'}
        >>> partial_value('{"n": 12')
        {}
    """
    start = _json_start(text)
    if start < 0 or len(text) > limits.max_reply_chars:
        return None
    # One strip for the whole number tail: trimming one character at a time
    # would copy the text once per digit, which is quadratic in a long number.
    body = text[start:].rstrip().rstrip(_NUMBER_TAIL)
    value = _read(body)
    if value is _UNREADABLE and _CONTROL.search(body):
        # A raw control character inside a string, which the answer's own parse
        # repairs: read it as that parse does, or no partial would follow it.
        value = _read(_STRING.sub(_escape_controls, body))
    if value is _UNREADABLE:
        return None
    # pydantic-core reads 1e400 as infinity; such a reply fails parsing at the
    # end, so show nothing rather than a value no JSON encoder will write.
    if needs_number_checks(body, limits) and not all_finite(value):
        return None
    return value


_UNREADABLE: Any = object()
_CONTROL = re.compile(r"[\x00-\x1f]")
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)


def _read(body: str) -> Any:
    try:
        # NaN and Infinity are no JSON: a partial never shows them.
        return from_json(body, allow_inf_nan=False, allow_partial="trailing-strings")
    except (ValueError, TypeError):  # numbers it refuses, deep nesting, lone surrogates
        return _UNREADABLE


def _escape_controls(string: re.Match[str]) -> str:
    r"""A JSON string with its raw control characters written as escapes.

    Examples:
        >>> _escape_controls(_STRING.match('"a\nb'))
        '"a\\u000ab'
    """
    return _CONTROL.sub(lambda c: f"\\u{ord(c.group()):04x}", string.group())


def _json_start(text: str) -> int:
    brace = text.find("{")
    # Only look for a bracket before the brace: each search is then bounded.
    bracket = text.find("[", 0, len(text) if brace < 0 else brace)
    return brace if bracket < 0 else bracket


class Buffer:
    """Accumulates one stream of text and decides when to read it again."""

    __slots__ = ("_parts", "_size", "_next_read", "_limits", "last", "shown")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._next_read = MIN_STEP
        self._limits = limits
        self.last: Any = None
        self.shown: Any = None  # the last value restored from the sent shape

    def add(self, piece: str) -> bool:
        """Add text; True when it has grown enough to be read again.

        Past `max_reply_chars` the text is no longer kept nor read: the answer
        will be refused unread, and its partial values would show what it holds.
        """
        if self._size > self._limits.max_reply_chars:
            return False
        self._parts.append(piece)
        self._size += len(piece)
        return self._size >= self._next_read and self._size <= self._limits.max_reply_chars

    def read(self) -> Any:
        text = "".join(self._parts)
        self._parts = [text]
        self._next_read = self._size + max(MIN_STEP, int(self._size * _GROWTH))
        return partial_value(text, self._limits)
