"""Lenient JSON parsing for model output.

Valid JSON goes straight to the standard library's C decoder. Anything else takes
the lenient path: one linear scan finds the JSON in the text (code fences, prose),
rewrites what models commonly get wrong (trailing commas, single quotes, Python
literals, comments, unquoted keys, typographic quotes) into strict JSON, and hands
the result back to the C decoder. The scan only stops at the few characters that
can need a repair; long runs of ordinary JSON are matched by one regular expression.

Which JSON is taken from prose: a reply that is a bare JSON value (after fences) is
that value; otherwise the first `{` or `[` that starts a complete, repairable value
wins. Text that ends inside a value is truncation, which is final: no later
candidate is tried, because every later candidate would sit inside the cut value.

Schema-guided coercion (`coerce`) lives here too. Streaming parsing is implemented in
`langchain_structx._partial` and re-exported from here.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from langchain_structx._partial import MAX_DEPTH, PartialJSONParser, parse_partial
from langchain_structx.errors import JSONParseError, MalformedJSONError, TruncatedJSONError

__all__ = (
    "MAX_DEPTH",
    "Parsed",
    "PartialJSONParser",
    "Repair",
    "coerce",
    "parse_json",
    "parse_partial",
)

_MAX_ATTEMPTS: Final = 32
"""How many `{`/`[` candidates in prose are tried before giving up (bounds the work)."""

# Fast runs: plain JSON copied through in one regex match. Strings inside a run may
# not hold brackets, so every bracket in a run is structural and can be counted.
# Repeated groups are possessive (`*+`, `++`): without that, the regex engine keeps
# backtracking state per repetition, which costs gigabytes on megabyte inputs.
_PLAIN = r"[\s:,{}\[\]]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?:true|false|null)(?![\w$])"
_DQ_STRING = r'"[^"\\\x00-\x1f{}\[\]]*+(?:\\.[^"\\\x00-\x1f{}\[\]]*+)*+"'
_BORING = re.compile(rf"(?:{_PLAIN}|{_DQ_STRING})++")
# A run of simple single-quoted strings (and double-quoted ones free of apostrophes)
# that one str.replace turns into JSON; the lookahead leaves apostrophes alone.
_DQ_NO_APOSTROPHE = r'"[^"\'\\\x00-\x1f{}\[\]]*+(?:\\.[^"\'\\\x00-\x1f{}\[\]]*+)*+"'
_SQ_STRING = r"'[^'\"\\\x00-\x1f{}\[\]]*+'(?=\s*[,:}\]])"
_SINGLE_RUN = re.compile(rf"(?:{_PLAIN}|{_DQ_NO_APOSTROPHE}|{_SQ_STRING})++")
_BRACKET = re.compile(r"[{}\[\]]")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_LEADING_CLOSE = re.compile(r"\s*[}\]]")
_LEAD = re.compile(r"[\ufeff\s]*(?:```[\w+.#-]*\s*)?")
_OPEN = re.compile(r"[{\[]")
_REGION_TOKEN = re.compile(r'"[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"?|[{}\[\]]')
_PY_LITERAL = re.compile(r"(?:True|False|None)(?![\w$])(?!\s*:)")
_WORD = re.compile(r"(?:[^\W\d]|\$)[\w$-]*")
_KEY_AFTER = re.compile(r"\s*:")
_TO_END = re.compile(r"\s*(?:```[\s\S]*)?")
_INCOMPLETE = re.compile(r"[-+.\deE]*\s*(?:```[\s\S]*)?")
_DQ_BODY = re.compile(r'[^"\\]*+(?:\\[\s\S][^"\\]*+)*+')
_QUOTE_FIX = re.compile(r"\\'|\"|[\x00-\x1f]")
_CONTROL = re.compile(r"[\x00-\x1f]")
_FENCE_TAG = re.compile(r"[\w+.#-]*")

_QUOTES: Final = {
    "'": ("'", "single_quotes"),
    "\u2018": ("\u2018\u2019", "smart_quotes"),
    "\u2019": ("\u2018\u2019", "smart_quotes"),
    "\u201c": ("\u201c\u201d", "smart_quotes"),
    "\u201d": ("\u201c\u201d", "smart_quotes"),
}
# A closing quote is one followed by a delimiter, so that apostrophes inside survive.
_QUOTE_CLOSE: Final = {
    closers: re.compile(rf"[{closers}](?=\s*(?:[,:}}\]]|```|\Z))")
    for closers, _ in _QUOTES.values()
}
_PY_LITERALS: Final = {"True": "true", "False": "false", "None": "null"}
_LITERAL_NAMES: Final = ("true", "false", "null", "True", "False", "None")
_NON_FINITE: Final = ("NaN", "Infinity")

_DETAILS: Final = {
    "fence": ("removed a markdown code fence around the JSON", ""),
    "prose": ("removed text before or after the JSON", ""),
    "trailing_comma": ("removed a trailing comma", "removed {n} trailing commas"),
    "single_quotes": (
        "replaced single quotes around a string with double quotes",
        "replaced single quotes around {n} strings with double quotes",
    ),
    "python_literal": (
        "replaced a Python literal (True, False or None) with JSON",
        "replaced {n} Python literals (True, False or None) with JSON",
    ),
    "comment": ("removed a comment", "removed {n} comments"),
    "unquoted_key": ("quoted an unquoted object key", "quoted {n} unquoted object keys"),
    "smart_quotes": (
        "replaced typographic quotes around a string with plain double quotes",
        "replaced typographic quotes around {n} strings with plain double quotes",
    ),
    "control_character": (
        "escaped raw control characters inside a string",
        "escaped raw control characters inside {n} strings",
    ),
}


@dataclass(frozen=True, slots=True)
class Repair:
    """One change made to turn model text into a JSON value.

    Attributes:
        kind: Short stable identifier, such as `"trailing_comma"` or `"coerce_int"`.
        detail: One human-readable sentence saying what was changed.
        path: JSON path of the changed value for coercions; `()` for text repairs.
    """

    kind: str
    detail: str
    path: tuple[str | int, ...] = ()


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed value and the repairs that were needed to get it.

    Attributes:
        value: The JSON value (dict, list, str, int, float, bool or None).
        repairs: Every repair applied, in the order first met; empty for valid JSON.
    """

    value: Any
    repairs: tuple[Repair, ...] = ()


class _NonFinite(Exception):
    """Raised from inside the decoder when it meets NaN or Infinity."""


class _Fail(Exception):
    """An internal parse failure, turned into a public error at the API boundary."""

    def __init__(
        self, error: type[JSONParseError], message: str, position: int, *, final: bool = False
    ) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.position = position
        # Truncation and hard limits end the search for other JSON candidates.
        self.final = final or error is TruncatedJSONError

    def public(self) -> JSONParseError:
        return self.error(self.message, position=self.position)


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


_FAST_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(text: str) -> Parsed:
    """Read model text as a JSON value, repairing common mistakes.

    Args:
        text: The model's reply: JSON, possibly fenced, wrapped in prose or sloppy.

    Returns:
        The value and the repairs applied (none when `text` was valid JSON).

    Raises:
        TruncatedJSONError: The text ends inside a string, object or array.
        MalformedJSONError: The syntax is broken beyond repair, NaN or Infinity is
            used, the nesting is deeper than `MAX_DEPTH`, or there is no JSON at all.
    """
    if not isinstance(text, str):
        raise MalformedJSONError(f"expected text, got {type(text).__name__}")
    try:
        return Parsed(_FAST_DECODER.decode(text))
    except (ValueError, _NonFinite, RecursionError):
        # Also NaN, over-deep nesting and over-long integers: the lenient path
        # reports those with a precise message and position.
        pass
    try:
        return _parse_lenient(text)
    except _Fail as fail:
        raise fail.public() from None


def _parse_lenient(text: str) -> Parsed:
    start = _LEAD.match(text).end()  # type: ignore[union-attr]
    first: _Fail | None = None
    pos = start
    if start < len(text) and text[start] not in "{[":
        try:
            return _attempt(text, start)
        except _Fail as fail:
            if fail.final:
                raise
            # A failure at the very first character means the text is not JSON-like.
            first = fail if fail.position > start else None
            pos = max(fail.position, start + 1)
    for _ in range(_MAX_ATTEMPTS):
        found = _OPEN.search(text, pos)
        if found is None:
            break
        try:
            return _attempt(text, found.start())
        except _Fail as fail:
            if fail.final:
                raise
            first = first or fail
            # Never retry inside a broken value: its inner parts are not the answer.
            pos = _skip_region(text, found.start())
    raise _no_json(text, start, first)


def _skip_region(text: str, start: int) -> int:
    """Position just after the bracketed region that opens at `start`."""
    depth = 0
    for token in _REGION_TOKEN.finditer(text, start):
        char = token.group()[0]
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return token.end()
    return len(text)


def _no_json(text: str, start: int, first: _Fail | None) -> _Fail:
    stripped = text.rstrip()
    opened = stripped.rfind("```")
    if opened >= 0 and text.count("```") % 2 and _FENCE_TAG.fullmatch(stripped, opened + 3):
        return _Fail(TruncatedJSONError, "the text ends inside a code fence", len(text))
    if first is not None:
        return first
    if start == len(text):
        return _Fail(MalformedJSONError, "the text is empty", start)
    return _Fail(MalformedJSONError, "no JSON object or array found in the text", start)


def _attempt(text: str, start: int) -> Parsed:
    scan = _Rewriter(text, start)
    try:
        end = scan.run()
    except _Fail as fail:
        if fail.error is TruncatedJSONError:
            scan.check_prefix()
        raise
    duplicates: list[str] = []
    value = scan.decode(duplicates)
    repairs = _wrapper_repairs(text[:start], text[end:])
    repairs.extend(scan.repairs())
    if duplicates:
        repairs.append(_duplicate_repair(duplicates))
    return Parsed(value, tuple(repairs))


def _wrapper_repairs(lead: str, trail: str) -> list[Repair]:
    lead = lead.lstrip("\ufeff").rstrip()
    opened = lead.rfind("```")
    fenced = opened >= 0 and _FENCE_TAG.fullmatch(lead, opened + 3) is not None
    if fenced:
        lead = lead[:opened]
    trail = trail.lstrip()
    if trail.startswith("```"):
        fenced, trail = True, trail[3:]
    kinds = ["fence"] * fenced + ["prose"] * bool(lead.strip() or trail.strip())
    return [Repair(kind, _DETAILS[kind][0]) for kind in kinds]


def _duplicate_repair(keys: list[str]) -> Repair:
    names = ", ".join(repr(key) for key in dict.fromkeys(keys[:5]))
    if len(keys) == 1:
        return Repair("duplicate_key", f"kept the last value of the duplicate key {names}")
    more = ", ..." if len(keys) > 5 else ""
    return Repair(
        "duplicate_key", f"kept the last values of {len(keys)} duplicate keys: {names}{more}"
    )


def _pairs_hook(duplicates: list[str]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
        return result

    return build


def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - text.rfind(chr(10), 0, pos)}"


class _Rewriter:
    """One pass from `start` that copies JSON through and rewrites what needs repair.

    It stops after the value that began at `start` closes, at a closing code fence,
    or at the end of the text. Strict JSON validation is left to the C decoder.
    """

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.start = start
        self.pos = start
        self.out: list[str] = []
        self.olen = 0
        self.marks_out: list[int] = []
        self.marks_src: list[int] = []
        self.depth = 0
        self.counts: dict[str, int] = {}
        self.reached_end = False
        self._mark()

    def run(self) -> int:
        """Scan to the end of the value and return the position just after it."""
        text, end = self.text, len(self.text)
        boring, single = _BORING.match, _SINGLE_RUN.match
        while self.pos < end:
            run = boring(text, self.pos)
            quoted = run is None and text[self.pos] == "'"
            if quoted:
                run = single(text, self.pos)
            if run is None:
                if self._token():
                    return self.pos
            elif self._take_run(run.group(), quoted):
                return self.pos
        self.reached_end = True
        return self.pos

    def _take_run(self, piece: str, quoted: bool) -> bool:
        """Emit a fast run; True if the value closed inside it."""
        ended = False
        closes = piece.count("}") + piece.count("]")
        opens = piece.count("{") + piece.count("[")
        if closes >= self.depth or self.depth + opens > MAX_DEPTH:
            cut = self._walk(piece)
            piece, ended = (piece[:cut], True) if cut else (piece, False)
        else:
            self.depth += opens - closes
        end = self.pos + len(piece)
        if closes:
            piece = self._drop_run_commas(piece)
        if quoted:
            self._put(piece.replace("'", '"'), end, "single_quotes", piece.count("'") // 2)
        else:
            self._put(piece, end)
        return ended

    def _drop_run_commas(self, piece: str) -> str:
        if _LEADING_CLOSE.match(piece):
            self._drop_trailing_comma()
        fixed, dropped = _TRAILING_COMMA.subn(r"\1", piece)
        if dropped:
            self.counts["trailing_comma"] = self.counts.get("trailing_comma", 0) + dropped
            # Each dropped comma shifts what follows it: mark it for error positions.
            for number, comma in enumerate(_TRAILING_COMMA.finditer(piece)):
                self.marks_out.append(self.olen + comma.start() - number)
                self.marks_src.append(self.pos + comma.start() + 1)
        return fixed

    def _walk(self, piece: str) -> int:
        """Track depth bracket by bracket; return where the value closes, or 0."""
        for bracket in _BRACKET.finditer(piece):
            self.depth += 1 if bracket.group() in "{[" else -1
            if self.depth > MAX_DEPTH:
                self.pos += bracket.start()
                raise self._fail(MalformedJSONError, _depth_message(), final=True)
            if self.depth < 0:
                self.pos += bracket.start()
                raise self._fail(MalformedJSONError, f"unmatched {bracket.group()!r}")
            if self.depth == 0 and bracket.group() in "}]":
                return bracket.end()
        return 0

    def decode(self, duplicates: list[str]) -> Any:
        """Decode the rewritten text strictly, recording duplicate keys."""
        repaired = "".join(self.out)
        if not repaired.strip():
            raise _Fail(MalformedJSONError, "no JSON value found", self.start)
        return self._strict(repaired, duplicates)

    def check_prefix(self) -> None:
        """Called on truncation: raise if the text before the cut is not valid JSON."""
        self.reached_end = True
        try:
            self._strict("".join(self.out), [])
        except _Fail as fail:
            if fail.error is TruncatedJSONError:
                return
            raise
        raise self._fail(MalformedJSONError, "unexpected text after the JSON value")

    def _strict(self, repaired: str, duplicates: list[str]) -> Any:
        decoder = json.JSONDecoder(
            parse_constant=_reject_constant, object_pairs_hook=_pairs_hook(duplicates)
        )
        try:
            return decoder.decode(repaired)
        except json.JSONDecodeError as err:
            raise self._decode_failure(err, repaired) from None
        except RecursionError:
            raise self._fail(MalformedJSONError, _depth_message(), final=True) from None
        except ValueError:
            # The only other ValueError is Python's limit on the digits of an integer.
            raise self._fail(
                MalformedJSONError, "a number has too many digits", final=True
            ) from None

    def repairs(self) -> list[Repair]:
        """One repair per kind found, with a count-aware sentence."""
        result = []
        for kind, count in self.counts.items():
            one, many = _DETAILS[kind]
            result.append(Repair(kind, one if count == 1 else many.format(n=count)))
        return result

    def _decode_failure(self, err: json.JSONDecodeError, repaired: str) -> _Fail:
        if self.reached_end and err.pos >= len(repaired.rstrip()):
            return _Fail(TruncatedJSONError, "the JSON ends before it is complete", len(self.text))
        index = bisect_right(self.marks_out, err.pos) - 1
        pos = self.marks_src[index] + err.pos - self.marks_out[index] if index >= 0 else 0
        pos = min(pos, len(self.text))
        return _Fail(MalformedJSONError, f"{err.msg} ({_line_col(self.text, pos)})", pos)

    def _fail(self, error: type[JSONParseError], message: str, *, final: bool = False) -> _Fail:
        if error is TruncatedJSONError:
            return _Fail(error, message, len(self.text))
        return _Fail(error, f"{message} ({_line_col(self.text, self.pos)})", self.pos, final=final)

    def _put(self, replacement: str, end: int, kind: str | None = None, count: int = 1) -> None:
        self.out.append(replacement)
        self.olen += len(replacement)
        self.pos = end
        self._mark()
        if kind is not None:
            self.counts[kind] = self.counts.get(kind, 0) + count

    def _mark(self) -> None:
        # Called after each edit: from here on, output and source differ by a new offset.
        self.marks_out.append(self.olen)
        self.marks_src.append(self.pos)

    def _token(self) -> bool:
        char = self.text[self.pos]
        handler = _HANDLERS.get(char)
        if handler is not None:
            return handler(self)
        if char.isalpha() or char in "_$":
            return self._word()
        return self._other()

    def _drop_trailing_comma(self) -> None:
        """Remove a comma left in earlier output, e.g. before a comment and a bracket."""
        for index in range(len(self.out) - 1, -1, -1):
            original = self.out[index]
            piece = original.rstrip()
            if not piece:
                continue
            if piece.endswith(","):
                self.out[index] = piece[:-1]
                self.olen -= len(original) - len(piece) + 1
                self._mark()
                self.counts["trailing_comma"] = self.counts.get("trailing_comma", 0) + 1
            return

    def _double_quote(self) -> bool:
        # Only reached when the fast pattern rejected the string: it is unterminated,
        # holds raw control characters, or holds brackets.
        end = _DQ_BODY.match(self.text, self.pos + 1).end()  # type: ignore[union-attr]
        if end >= len(self.text) or self.text[end] != '"':
            raise self._fail(TruncatedJSONError, "the text ends inside a string")
        body = self.text[self.pos + 1 : end]
        fixed = _CONTROL.sub(_escape_char, body)
        self._put(f'"{fixed}"', end + 1, "control_character" if fixed != body else None)
        return False

    def _quoted(self) -> bool:
        closers, kind = _QUOTES[self.text[self.pos]]
        end = self._find_close(_QUOTE_CLOSE[closers])
        body = self.text[self.pos + 1 : end]
        self._put(f'"{_QUOTE_FIX.sub(_fix_quoted, body)}"', end + 1, kind)
        return False

    def _find_close(self, closer: re.Pattern[str]) -> int:
        text, scan = self.text, self.pos + 1
        while (found := closer.search(text, scan)) is not None:
            end = before = found.start()
            while before > scan and text[before - 1] == "\\":
                before -= 1
            if (end - before) % 2 == 0:  # not escaped
                return end
            scan = end + 1
        raise self._fail(TruncatedJSONError, "the text ends inside a string")

    def _slash(self) -> bool:
        text, pos = self.text, self.pos
        if text.startswith("//", pos):
            return self._comment(text.find("\n", pos))
        if text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                raise self._fail(TruncatedJSONError, "the text ends inside a comment")
            return self._comment(end + 2)
        return self._other()

    def _hash(self) -> bool:
        return self._comment(self.text.find("\n", self.pos))

    def _comment(self, end: int) -> bool:
        self._put(" ", len(self.text) if end < 0 else end, "comment")
        return False

    def _backtick(self) -> bool:
        if not self.text.startswith("```", self.pos):
            return self._other()
        self.reached_end = True
        return True

    def _minus(self) -> bool:
        if self.text.startswith("-Infinity", self.pos):
            raise self._fail(MalformedJSONError, _non_finite_message("-Infinity"), final=True)
        return self._other()

    def _python_literal(self) -> bool:
        found = _PY_LITERAL.match(self.text, self.pos)
        if found is None:
            return self._word()
        self._put(_PY_LITERALS[found.group()], found.end(), "python_literal")
        return False

    def _word(self) -> bool:
        text = self.text
        word = _WORD.match(text, self.pos).group()  # type: ignore[union-attr]
        end = self.pos + len(word)
        if self.depth > 0 and _KEY_AFTER.match(text, end):
            self._put(json.dumps(word), end, "unquoted_key")
        elif word in _NON_FINITE:
            raise self._fail(MalformedJSONError, _non_finite_message(word), final=True)
        elif _TO_END.fullmatch(text, end) and (
            self.depth > 0 or any(name.startswith(word) for name in _LITERAL_NAMES)
        ):
            raise self._fail(TruncatedJSONError, "the text ends inside a value")
        else:
            raise self._fail(MalformedJSONError, f"unexpected word {word[:40]!r}")
        return False

    def _other(self) -> bool:
        if _INCOMPLETE.fullmatch(self.text, self.pos):
            raise self._fail(TruncatedJSONError, "the text ends inside a number")
        raise self._fail(MalformedJSONError, f"unexpected character {self.text[self.pos]!r}")


_HANDLERS: Final[dict[str, Callable[[_Rewriter], bool]]] = {
    '"': _Rewriter._double_quote,
    "/": _Rewriter._slash,
    "#": _Rewriter._hash,
    "`": _Rewriter._backtick,
    "-": _Rewriter._minus,
    **dict.fromkeys("TFN", _Rewriter._python_literal),
    **dict.fromkeys(_QUOTES, _Rewriter._quoted),
}


def _escape_char(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _fix_quoted(match: re.Match[str]) -> str:
    found = match.group()
    if found == "\\'":
        return "'"
    return '\\"' if found == '"' else _escape_char(match)


def _depth_message() -> str:
    return f"the JSON is nested deeper than {MAX_DEPTH} levels"


def _non_finite_message(word: str) -> str:
    return f"{word} is not valid JSON; use null or a string"


# --- schema-guided coercion ---------------------------------------------------------

_MAX_COERCE_DEPTH: Final = 100
_MAX_REF_HOPS: Final = 32
_INT_TEXT = re.compile(r"\s*[-+]?\d{1,300}(?:\.0*)?\s*")
_NUMBER_TEXT = re.compile(r"\s*[-+]?(?:\d{1,300}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,4})?\s*")
_BOOL_TEXT: Final = {"true": True, "yes": True, "false": False, "no": False}
_TYPE_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, Mapping),
}


def coerce(
    value: Any, schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None
) -> Parsed:
    """Nudge an already-parsed value towards a JSON Schema, recording each change.

    A value is only changed where it does not already fit the schema there (its
    type, `enum` and `const`) and the changed value does. Where `anyOf`, `oneOf` or
    a list of types is given, a value that fits any branch is left alone. Coercion
    follows `properties`, `additionalProperties`, `items`, `prefixItems`, `allOf`,
    `anyOf`, `oneOf` and local `$ref`s. Unchanged parts of the result may be shared
    with `value`, which is never mutated.

    Args:
        value: A JSON value, as returned by `parse_json`.
        schema: The JSON Schema to coerce towards.
        root: The document that `$ref`s resolve against; defaults to `schema`.

    Returns:
        The coerced value and one repair per change, each with its JSON path.
    """
    coercer = _Coercer(schema if root is None else root)
    return Parsed(coercer.visit(value, schema, ()), tuple(coercer.repairs))


class _Coercer:
    def __init__(self, root: Any, depth: int = 0) -> None:
        self.root = root
        self.depth = depth
        self.repairs: list[Repair] = []
        self.active: set[tuple[int, int]] = set()

    def visit(self, value: Any, schema: Any, path: tuple[str | int, ...]) -> Any:
        schema = self.resolve(schema)
        marker = (id(schema), id(value))
        if not isinstance(schema, Mapping) or self.depth > _MAX_COERCE_DEPTH:
            return value
        if marker in self.active:  # a $ref cycle that consumes no part of the value
            return value
        self.active.add(marker)
        self.depth += 1
        try:
            for part in schema.get("allOf", ()):
                value = self.visit(value, part, path)
            branches = schema.get("anyOf") or schema.get("oneOf")
            if branches:
                value = self._union(value, branches, path)
            if not _fits_here(value, schema):
                value = self._convert(value, schema, path)
            return self._descend(value, schema, path)
        finally:
            self.depth -= 1
            self.active.discard(marker)

    def resolve(self, schema: Any) -> Any:
        """Follow local `$ref`s; sibling keywords override the target's."""
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(schema, Mapping) or not isinstance(schema.get("$ref"), str):
                return schema
            target = _pointer(self.root, schema["$ref"])
            rest = {key: item for key, item in schema.items() if key != "$ref"}
            schema = {**target, **rest} if rest and isinstance(target, Mapping) else target
        return {}

    def fits(self, value: Any, schema: Any, depth: int = 0) -> bool:
        """Whether `value` has the shape `schema` asks for (types, enums, required keys)."""
        schema = self.resolve(schema)
        if not isinstance(schema, Mapping):
            return schema is not False
        marker = (id(schema), id(value))
        if depth > _MAX_COERCE_DEPTH or marker in self.active:
            return True
        if not _fits_here(value, schema):
            return False
        self.active.add(marker)
        try:
            return self._fits_parts(value, schema, depth + 1)
        finally:
            self.active.discard(marker)

    def _fits_parts(self, value: Any, schema: Mapping[str, Any], depth: int) -> bool:
        if not all(self.fits(value, part, depth) for part in schema.get("allOf", ())):
            return False
        for key in ("anyOf", "oneOf"):
            if key in schema and not any(self.fits(value, part, depth) for part in schema[key]):
                return False
        if isinstance(value, Mapping):
            if not all(key in value for key in schema.get("required", ())):
                return False
            children = ((item, _property_schema(schema, key)) for key, item in value.items())
        elif isinstance(value, list):
            children = ((item, _item_schema(schema, index)) for index, item in enumerate(value))
        else:
            return True
        return all(self.fits(item, sub, depth) for item, sub in children)

    def _union(self, value: Any, branches: Any, path: tuple[str | int, ...]) -> Any:
        if any(self.fits(value, branch) for branch in branches):
            return value
        for branch in branches:
            trial = _Coercer(self.root, self.depth)
            result = trial.visit(value, branch, path)
            if trial.repairs and self.fits(result, branch):
                self.repairs.extend(trial.repairs)
                return result
        return value

    def _convert(self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
        for target in _target_types(schema):
            if target == "array":
                wrapped = self._wrap(value, schema, path)
                if wrapped is not None:
                    return wrapped
                continue
            converter = _CONVERTERS.get(target)
            converted = converter(value, schema) if converter else None
            if converted is not None and _fits_here(converted[1], schema):
                kind, result, detail = converted
                self.repairs.append(Repair(kind, detail, path))
                return result
        return value

    def _wrap(
        self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]
    ) -> list[Any] | None:
        if value is None or isinstance(value, list) or not _fits_here([value], schema):
            return None
        item_schema = _item_schema(schema, 0)
        trial = _Coercer(self.root, self.depth)
        item = trial.visit(value, item_schema, (*path, 0))
        if not self.fits(item, item_schema):
            return None
        self.repairs.append(Repair("wrap_array", "wrapped a single value in an array", path))
        self.repairs.extend(trial.repairs)
        return [item]

    def _descend(self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
        pick: Callable[[Mapping[str, Any], Any], Any]
        if isinstance(value, Mapping):
            pairs, pick = value.items(), _property_schema
        elif isinstance(value, list):
            pairs, pick = enumerate(value), _item_schema  # type: ignore[assignment]
        else:
            return value
        changed: dict[Any, Any] = {}
        for key, item in pairs:
            sub = pick(schema, key)
            if sub is not None:
                result = self.visit(item, sub, (*path, key))
                if result is not item:
                    changed[key] = result
        if not changed:
            return value
        if isinstance(value, list):
            return [changed.get(index, item) for index, item in enumerate(value)]
        return {**value, **changed}


def _pointer(root: Any, ref: str) -> Any:
    """Resolve a local JSON pointer such as `#/$defs/Item`; `{}` when it points nowhere."""
    if not ref.startswith("#"):
        return {}
    node = root
    for raw in ref[1:].split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return {}
    return node


def _property_schema(schema: Mapping[str, Any], key: Any) -> Any:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping | bool) else None


def _item_schema(schema: Mapping[str, Any], index: Any) -> Any:
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if prefix is None and isinstance(items, list):  # draft 7 tuple form
        prefix, items = items, schema.get("additionalItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return items if isinstance(items, Mapping | bool) else None


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return [item for item in kind if isinstance(item, str)] if isinstance(kind, list) else None


def _same(left: Any, right: Any) -> bool:
    """JSON equality: unlike Python, `true` is not `1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def _fits_here(value: Any, schema: Mapping[str, Any]) -> bool:
    """The checks coercion can change: `type`, `enum` and `const`."""
    types = _types(schema)
    if types is not None and not any(_TYPE_CHECKS.get(t, _anything)(value) for t in types):
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(value, member) for member in enum):
        return False
    return "const" not in schema or _same(value, schema["const"])


def _anything(value: Any) -> bool:
    return True


def _target_types(schema: Mapping[str, Any]) -> list[str]:
    types = _types(schema)
    if types is not None:
        return types
    return ["string"] if isinstance(schema.get("enum"), list) else []


def _show(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 40 else shown[:37] + "..."


_Converted = tuple[str, Any, str] | None


def _to_integer(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value):
        result = int(value.strip().split(".")[0])
    else:
        return None
    return "coerce_int", result, f"converted {_show(value)} to the integer {result}"


def _to_number(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or not _NUMBER_TEXT.fullmatch(value):
        return None
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    result = int(value) if _INT_TEXT.fullmatch(value) and "." not in value else number
    return "coerce_number", result, f"converted {_show(value)} to the number {_show(result)}"


def _to_boolean(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or value.strip().casefold() not in _BOOL_TEXT:
        return None
    result = _BOOL_TEXT[value.strip().casefold()]
    return "coerce_bool", result, f"converted {_show(value)} to {_show(result)}"


def _to_null(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or value.strip().casefold() not in ("null", "none"):
        return None
    return "coerce_null", None, f"converted {_show(value)} to null"


def _to_string(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = json.dumps(value)
        return "coerce_string", text, f"converted the number {text} to the string {_show(text)}"
    enum = schema.get("enum")
    if not isinstance(value, str) or not isinstance(enum, list):
        return None
    folded = value.casefold()
    matches = [item for item in enum if isinstance(item, str) and item.casefold() == folded]
    if len(matches) != 1:
        return None
    return "enum_case", matches[0], f"matched {_show(value)} to the enum member {_show(matches[0])}"


_CONVERTERS: Final[dict[str, Callable[[Any, Mapping[str, Any]], _Converted]]] = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "null": _to_null,
    "string": _to_string,
}
