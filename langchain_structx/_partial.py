"""Incremental, best-effort parsing of JSON that is still streaming in.

`PartialJSONParser` is a resumable state machine: each `feed` scans only the new
characters, and containers are live Python objects that grow in place, so a whole
stream costs time linear in its length (plus re-joining the one string that is
still open, once per feed).

What the best-effort value holds, for the text seen so far:

- Objects and arrays appear as soon as they open, and only ever grow.
- A string value appears with the characters read so far; an escape sequence is
  held back until it is complete. A key appears only once its string has closed.
- A number inside a container appears once a delimiter follows it, because `12`
  may still become `123`. A bare top-level number has nothing to grow in, so it is
  reported as read so far and may still change while the text streams in.
- `true`, `false`, `null` (and Python's `True`, `False`, `None`) appear once complete.
- Leading prose and code fences are skipped up to the first `{` or `[`; a reply that
  starts with a bare scalar is read as that scalar, but dropped again if prose
  follows it. Text after the top-level value is ignored.
- Trailing commas and single-quoted strings are tolerated; any other syntax error
  freezes the value as it stands.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any, Final

from langchain_structx.limits import DEFAULT_LIMITS

_START, _FENCE, _PROSE, _VALUE, _KEY, _COLON, _AFTER = range(7)
_STRING, _NUMBER, _LITERAL, _SCALAR_DONE, _DONE = range(7, 12)

_SPACE = re.compile(r"[\s\ufeff]*")
_FENCE_CHARS = re.compile(r"[`\w+.#-]*")
_OPEN = re.compile(r"[{\[]")
_RUNS: Final = {'"': re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
_NUMBER_CHARS = re.compile(r"[-+0-9.eE]*")
_NUMBER_FULL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LETTERS = re.compile(r"[A-Za-z]*")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES: Final = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: Final = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
_SCALAR_STARTS: Final = frozenset("\"'-0123456789tfnTFN")

_Container = dict[str, Any] | list[Any]


class PartialJSONParser:
    """Incremental parser for a stream of text chunks.

    The value returned by `feed` is a live object that later feeds keep growing in
    place; callers must not mutate it, and should copy it (for example through
    `json.dumps`) to keep a snapshot.

    Args:
        max_depth: Deepest nesting read; the value freezes at a deeper bracket.
    """

    def __init__(self, *, max_depth: int = DEFAULT_LIMITS.max_depth) -> None:
        self._max_depth = max_depth
        self._chunks: list[str] = []
        self._joined = ""
        self._pending = ""
        self._state = _START
        self._root: Any = None
        self._stack: list[_Container] = []
        self._keys: list[str | None] = []
        self._parts: list[str] = []
        self._quote = '"'
        self._in_key = False
        self._target: tuple[_Container, str | int] | None = None
        self._handlers: tuple[Callable[[str, int], int], ...] = (
            self._start,
            self._fence,
            self._prose,
            self._value,
            self._key,
            self._colon,
            self._after,
            self._string,
            self._number,
            self._literal,
            self._scalar_done,
        )

    @property
    def value(self) -> Any:
        """The current best-effort value; `None` until something has been read."""
        return self._root

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def feed(self, chunk: str) -> Any:
        """Append a chunk and return the current best-effort value.

        Args:
            chunk: The next piece of text; anything that is not a string is ignored.

        Returns:
            The best-effort value so far (`None` if nothing has been read yet).
        """
        if not isinstance(chunk, str) or not chunk:
            return self._root
        self._chunks.append(chunk)
        if self._state == _DONE:
            return self._root
        try:
            self._advance(self._pending + chunk)
            self._refresh()
        except Exception:  # the contract is that feed never raises: freeze instead
            with contextlib.suppress(Exception):
                self._refresh()
            self._state = _DONE
        return self._root

    def _advance(self, text: str) -> None:
        self._pending = ""
        index, end = 0, len(text)
        while index < end and self._state != _DONE:
            index = self._handlers[self._state](text, index)

    def _refresh(self) -> None:
        """Publish the open string or top-level number into the value."""
        if self._state == _STRING and not self._in_key:
            joined = "".join(self._parts)
            self._parts = [joined]
            self._store(joined)
        elif self._state == _NUMBER and not self._stack:
            number = _to_number("".join(self._parts))
            if number is not None:
                self._root = number

    def _store(self, value: Any) -> None:
        if self._target is None:
            self._root = value
        else:
            container, slot = self._target
            container[slot] = value  # type: ignore[index]

    def _place(self, value: Any) -> None:
        """Put a new value into the innermost container (or make it the root)."""
        if not self._stack:
            self._target = None
            self._root = value
            return
        top = self._stack[-1]
        if isinstance(top, list):
            self._target = (top, len(top))
            top.append(value)
        else:
            key = self._keys[-1]
            assert key is not None
            self._target = (top, key)
            top[key] = value

    def _complete(self, value: Any) -> None:
        self._place(value)
        self._state = _AFTER if self._stack else _SCALAR_DONE

    def _fail(self, index: int) -> int:
        """Stop at a syntax error; a failed top-level scalar was only prose."""
        if self._stack:
            self._state = _DONE
            return index
        self._root = None
        self._state = _PROSE
        return index

    def _start(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index < len(text):
            char = text[index]
            if char == "`":
                self._state = _FENCE
            elif char in "{[" or char in _SCALAR_STARTS:
                self._state = _VALUE
            else:
                self._state = _PROSE
        return index

    def _fence(self, text: str, index: int) -> int:
        index = _FENCE_CHARS.match(text, index).end()  # type: ignore[union-attr]
        if index < len(text):
            self._state = _START
        return index

    def _prose(self, text: str, index: int) -> int:
        found = _OPEN.search(text, index)
        if found is None:
            return len(text)
        return self._open(text[found.start()], found.start())

    def _open(self, bracket: str, index: int) -> int:
        if len(self._stack) >= self._max_depth:
            self._state = _DONE
            return index
        container: _Container = {} if bracket == "{" else []
        self._place(container)
        self._stack.append(container)
        self._keys.append(None)
        self._state = _KEY if bracket == "{" else _VALUE
        return index + 1

    def _close(self, bracket: str, index: int) -> int:
        if isinstance(self._stack[-1], dict) != (bracket == "}"):
            return self._fail(index)
        self._stack.pop()
        self._keys.pop()
        self._state = _AFTER if self._stack else _DONE
        return index + 1

    def _value(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index >= len(text):
            return index
        char = text[index]
        if char in "{[":
            return self._open(char, index)
        if char in "\"'":
            self._begin_string(char, key=False)
            return index + 1
        if char == "-" or char.isdigit():
            self._parts = []
            self._state = _NUMBER
            return index
        if char.isalpha():
            self._parts = []
            self._state = _LITERAL
            return index
        if char == "]" and self._stack:
            # An empty array, or a trailing comma before the bracket.
            return self._close(char, index)
        return self._fail(index)

    def _key(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index >= len(text):
            return index
        char = text[index]
        if char in "\"'":
            self._begin_string(char, key=True)
            return index + 1
        if char == "}":
            return self._close(char, index)
        return self._fail(index)

    def _colon(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index >= len(text):
            return index
        if text[index] != ":":
            return self._fail(index)
        self._state = _VALUE
        return index + 1

    def _after(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index >= len(text):
            return index
        char = text[index]
        if char == ",":
            self._state = _KEY if isinstance(self._stack[-1], dict) else _VALUE
            return index + 1
        if char in "}]":
            return self._close(char, index)
        return self._fail(index)

    def _begin_string(self, quote: str, *, key: bool) -> None:
        self._quote = quote
        self._in_key = key
        self._parts = []
        self._state = _STRING
        if not key:
            self._place("")

    def _string(self, text: str, index: int) -> int:
        end = _RUNS[self._quote].match(text, index).end()  # type: ignore[union-attr]
        if end > index:
            self._parts.append(text[index:end])
        if end >= len(text):
            return end
        if text[end] == self._quote:
            self._end_string()
            return end + 1
        escape = _decode_escape(text, end)
        if escape is None:
            # Hold the unfinished escape back until the next chunk completes it.
            self._pending = text[end:]
            return len(text)
        self._parts.append(escape[0])
        return escape[1]

    def _end_string(self) -> None:
        joined = "".join(self._parts)
        self._parts = []
        if self._in_key:
            self._keys[-1] = joined
            self._state = _COLON
            return
        self._store(joined)
        self._state = _AFTER if self._stack else _SCALAR_DONE

    def _number(self, text: str, index: int) -> int:
        end = _NUMBER_CHARS.match(text, index).end()  # type: ignore[union-attr]
        self._parts.append(text[index:end])
        if end >= len(text):
            return end
        number = _to_number("".join(self._parts))
        if number is None:
            return self._fail(end)
        self._complete(number)
        return end

    def _literal(self, text: str, index: int) -> int:
        end = _LETTERS.match(text, index).end()  # type: ignore[union-attr]
        self._parts.append(text[index:end])
        word = "".join(self._parts)
        if word in _LITERALS:
            self._complete(_LITERALS[word])
            return end
        if end < len(text) or not any(name.startswith(word) for name in _LITERALS):
            return self._fail(end)
        return end

    def _scalar_done(self, text: str, index: int) -> int:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if index >= len(text):
            return index
        if text[index] == "`":
            self._state = _DONE
            return index
        # Prose follows: the scalar was part of it, so look for a container instead.
        self._root = None
        self._state = _PROSE
        return index


def _to_number(text: str) -> int | float | None:
    if not _NUMBER_FULL.fullmatch(text):
        return None
    if "." in text or "e" in text or "E" in text:
        return float(text)
    try:
        return int(text)
    except ValueError:  # more digits than Python converts
        return None


def _hex4(text: str, start: int) -> int | None:
    if _HEX4.fullmatch(text, start, start + 4) is None:
        return None
    return int(text[start : start + 4], 16)


def _decode_escape(text: str, start: int) -> tuple[str, int] | None:
    """Decode the escape at `start`; `None` if the text ends before it is complete."""
    end = len(text)
    if start + 2 > end:
        return None
    char = text[start + 1]
    if char != "u":
        return _SIMPLE_ESCAPES.get(char, char), start + 2
    if start + 6 > end:
        return None
    code = _hex4(text, start + 2)
    if code is None:
        return "u", start + 2
    if not 0xD800 <= code < 0xDC00:
        return chr(code), start + 6
    return _surrogate_pair(text, start, code)


def _surrogate_pair(text: str, start: int, high: int) -> tuple[str, int] | None:
    # A high surrogate is held back until we know whether a low one follows, so
    # that a published string never has to change a character it already showed.
    end = len(text)
    second = start + 6
    if second + 1 > end or (text[second] == "\\" and second + 2 > end):
        return None
    if not text.startswith("\\u", second):
        return chr(high), second
    if second + 6 > end:
        return None
    low = _hex4(text, second + 2)
    if low is None or not 0xDC00 <= low < 0xE000:
        return chr(high), second
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), second + 6


def parse_partial(text: str) -> Any:
    """Best-effort value for any prefix of a JSON document, or of text holding one.

    Same semantics as feeding `text` to a fresh `PartialJSONParser` in one chunk.

    Args:
        text: The text so far.

    Returns:
        The best-effort value; `None` if there is nothing to show yet. Never raises.
    """
    return PartialJSONParser().feed(text)
