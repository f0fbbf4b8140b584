"""The lenient repair scanner: one pass that rewrites sloppy JSON into strict JSON.

`Rewriter` starts at one candidate position and copies the text through, rewriting
what models commonly get wrong (trailing commas, single quotes, Python literals,
comments, unquoted keys, typographic quotes, full-width colons and commas, raw
control characters) and counting each kind of repair; the standard library's C
decoder then does all strict validation. The scan only stops at the few characters
that can need a repair: long runs of ordinary JSON are matched by one regular
expression. Choosing where in the text to start is the job of
`langchain_structx._parsing.parse`.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Any, Final

from langchain_structx._exceptions import MalformedJSONError, TruncatedJSONError
from langchain_structx._parsing import rewrite_patterns as pat
from langchain_structx._parsing.decode import (
    BadNumber,
    Fail,
    depth_message,
    malformed,
    non_finite_message,
    repair_decoder,
)
from langchain_structx._parsing.repairs import Repair, text_repairs
from langchain_structx.limits import Limits

__all__ = ("Rewriter",)

_FLUSH: Final = 512  # output pieces joined at a time, so tiny pieces stay few


class Rewriter:
    """One pass from `start` that copies JSON through and rewrites what needs repair.

    It stops after the value that began at `start` closes, at a closing code fence,
    or at the end of the text. Strict JSON validation is left to the C decoder.

    Most repairs keep the length (quotes, literals, comments become spaces, a
    dropped comma becomes a space), so source and output positions stay aligned;
    a mark is kept only where they drift apart, for error positions.
    """

    def __init__(self, text: str, start: int, limits: Limits) -> None:
        self.text, self.start, self.pos, self.limits = text, start, start, limits
        self.chunks: list[str] = []
        self.out: list[str] = []
        self.olen = self.depth = 0
        self.marks_out, self.marks_src = array("q", [0]), array("q", [start])
        self.counts: dict[str, int] = {}
        self.reached_end = False
        # A comma (and the blanks after it) held back until we see whether a
        # closing bracket follows, which makes it a trailing comma to drop.
        self.held, self.blank = False, 0

    def run(self) -> int:
        """Scan to the end of the value and return the position just after it."""
        text, end = self.text, len(self.text)
        boring, single = pat.BORING.match, pat.SINGLE_RUN.match
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

    def _take_run(self, piece: str, quoted: bool, bare: bool = False) -> bool:
        """Emit a fast run; True if the value closed inside it."""
        ended = False
        if bare and ("#" in piece or "/" in piece):
            piece = self._blank_comments(piece)
        closes = piece.count("}") + piece.count("]")
        opens = piece.count("{") + piece.count("[")
        if closes >= self.depth or self.depth + opens > self.limits.max_depth:
            cut = self._walk(piece)
            piece, ended = (piece[:cut], True) if cut else (piece, False)
        else:
            self.depth += opens - closes
        end = self.pos + len(piece)
        if closes:
            piece, dropped = pat.TRAILING_COMMA.subn(" ", piece)
            self._count("trailing_comma", dropped)
        if quoted:
            self._count("single_quotes", piece.count("'") // 2)
            piece = piece.replace("'", '"')
        elif bare:
            piece = self._fix_bare(piece)
        self._put(piece, end)
        return ended

    def _blank_comments(self, piece: str) -> str:
        """Blank the comments of a bare run, keeping its length (and brackets out)."""
        parts = pat.COMMENT_SPLIT.split(piece)
        self._count("comment", len(parts) // 2)
        parts[1::2] = [" " * len(comment) for comment in parts[1::2]]
        return "".join(parts)

    def _fix_bare(self, piece: str) -> str:
        """Quote the keys and lower the Python literals of a bare run."""
        parts = pat.KEY_SPLIT.split(piece)
        literals = any(word in piece for word in pat.PY_LITERALS)
        if literals:
            self._lower_literals(parts, 0)
        # Past each key the output runs two more quotes ahead of the source.
        ends = list(accumulate(map(len, parts)))[1::2]
        self.marks_src.extend([self.pos + end for end in ends])
        self.marks_out.extend([self.olen + end + 2 * n for n, end in enumerate(ends, 1)])
        self._count("unquoted_key", len(ends))
        for index in range(2, len(parts), 2) if literals else ():
            self._lower_literals(parts, index)
        return '"'.join(parts)

    def _lower_literals(self, parts: list[str], index: int) -> None:
        part = parts[index]
        count = sum(map(part.count, pat.PY_LITERALS))
        if count:
            self._count("python_literal", count)
            for word, json_word in pat.PY_LITERALS.items():
                part = part.replace(word, json_word)
            parts[index] = part

    def _walk(self, piece: str) -> int:
        """Track depth bracket by bracket; return where the value closes, or 0."""
        for bracket in pat.BRACKET.finditer(piece):
            self.depth += 1 if bracket.group() in "{[" else -1
            if self.depth > self.limits.max_depth:
                self.pos += bracket.start()
                raise self._fail(depth_message(self.limits), final=True)
            if self.depth < 0:
                self.pos += bracket.start()
                raise self._fail(f"unmatched {bracket.group()!r}")
            if self.depth == 0 and bracket.group() in "}]":
                return bracket.end()
        return 0

    def output(self) -> str:
        """The rewritten text so far, a held comma kept."""
        if self.held:
            self._release(drop=False)
        self.chunks.append("".join(self.out))
        self.out = []
        joined = "".join(self.chunks)
        self.chunks = [joined]
        return joined

    def decode(self, duplicates: list[str]) -> Any:
        """Decode the rewritten text strictly, recording duplicate keys."""
        repaired = self.output()
        if not repaired.strip():
            raise Fail(MalformedJSONError, "no JSON value found", self.start)
        return self._strict(repaired, duplicates)

    def check_prefix(self) -> None:
        """Called on truncation: raise if the text before the cut is not valid JSON."""
        self.reached_end = True
        try:
            self._strict(self.output(), [])
        except Fail as fail:
            if fail.error is TruncatedJSONError:
                return
            raise
        raise self._fail("unexpected text after the JSON value")

    def _strict(self, repaired: str, duplicates: list[str]) -> Any:
        decoder = repair_decoder(repaired, self.limits, duplicates)
        try:
            return decoder.decode(repaired)
        except json.JSONDecodeError as err:
            raise self._decode_failure(err, repaired) from None
        except BadNumber as bad:
            found = self.text.find(bad.literal, self.start)
            raise malformed(bad.message, found if found >= 0 else self.start, final=True) from None
        except RecursionError:
            raise self._fail(depth_message(self.limits), final=True) from None

    def repairs(self) -> list[Repair]:
        """One repair per kind found, with a count-aware sentence."""
        return text_repairs(self.counts)

    def _decode_failure(self, err: json.JSONDecodeError, repaired: str) -> Fail:
        if self.reached_end and err.pos >= len(repaired.rstrip()):
            return Fail(TruncatedJSONError, "the JSON ends before it is complete", len(self.text))
        index = bisect_right(self.marks_out, err.pos) - 1
        pos = self.marks_src[index] + err.pos - self.marks_out[index]
        return malformed(err.msg, min(pos, len(self.text)))

    def _fail(self, message: str, *, final: bool = False) -> Fail:
        return malformed(message, self.pos, final=final)

    def _truncated(self, message: str) -> Fail:
        return Fail(TruncatedJSONError, message, len(self.text))

    def _count(self, kind: str, count: int = 1) -> None:
        if count:
            self.counts[kind] = self.counts.get(kind, 0) + count

    def _put(self, piece: str, end: int, kind: str | None = None) -> None:
        """Write `piece` in place of the source up to `end`."""
        self._write(piece)
        self.olen += len(piece)
        self.pos = end
        if self.pos - self.olen != self.marks_src[-1] - self.marks_out[-1]:
            self.marks_out.append(self.olen)
            self.marks_src.append(self.pos)
        if kind is not None:
            self._count(kind)

    def _write(self, piece: str) -> None:
        if not piece:
            return
        if self.held:
            if piece.isspace():
                self.blank += len(piece)
                return
            self._release(drop=pat.LEADING_CLOSE.match(piece) is not None)
        if piece[-1] in ", \t\r\n":
            body = piece.rstrip()
            if body.endswith(","):
                self.held, self.blank = True, len(piece) - len(body)
                piece = body[:-1]
        self.out.append(piece)
        if len(self.out) >= _FLUSH:
            self.chunks.append("".join(self.out))
            self.out = []

    def _release(self, *, drop: bool) -> None:
        """Write the held comma back (as a space when it was a trailing comma)."""
        self.held = False
        self.out.append(" " * (self.blank + 1) if drop else "," + " " * self.blank)
        self._count("trailing_comma", drop)

    def _token(self) -> bool:
        char = self.text[self.pos]
        if self.depth > 0 and (char.isalpha() or char in "_$#/"):
            bare = pat.BARE_RUN.match(self.text, self.pos)
            if bare is not None:
                return self._take_run(bare.group(), False, bare=True)
        handler = _HANDLERS.get(char)
        if handler is not None:
            return handler(self)
        if char.isalpha() or char in "_$":
            return self._word()
        return self._other()

    def _double_quote(self) -> bool:
        # Reached for strings the fast pattern refused: open, brackets, control chars.
        end = pat.DQ_BODY.match(self.text, self.pos + 1).end()  # type: ignore[union-attr]
        if end >= len(self.text) or self.text[end] != '"':
            raise self._truncated("the text ends inside a string")
        raw = pat.CONTROL.search(self.text, self.pos + 1, end) is not None
        self._put(self.text[self.pos : end + 1], end + 1, "control_character" if raw else None)
        return False

    def _quoted(self) -> bool:
        closers, kind = pat.QUOTES[self.text[self.pos]]
        end = self._find_close(pat.QUOTE_CLOSE[closers])
        body = self.text[self.pos + 1 : end].replace("\\'", "'").replace('"', '\\"')
        self._put(f'"{body}"', end + 1, kind)
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
        raise self._truncated("the text ends inside a string")

    def _slash(self) -> bool:
        text, pos = self.text, self.pos
        if text.startswith("//", pos):
            return self._comments()
        if text.startswith("/*", pos):
            if text.find("*/", pos + 2) < 0:
                raise self._truncated("the text ends inside a comment")
            return self._comments()
        return self._other()

    def _comments(self) -> bool:
        # A run of comments and blanks in one step, blanked to the same length.
        piece = pat.BLANK.match(self.text, self.pos).group()  # type: ignore[union-attr]
        self._put(self._blank_comments(piece), self.pos + len(piece))
        return False

    def _backtick(self) -> bool:
        if not self.text.startswith("```", self.pos):
            return self._other()
        self.reached_end = True
        return True

    def _minus(self) -> bool:
        if self.text.startswith("-Infinity", self.pos):
            raise self._fail(non_finite_message("-Infinity"), final=True)
        return self._other()

    def _python_literal(self) -> bool:
        found = pat.PY_LITERAL.match(self.text, self.pos)
        if found is None:
            return self._word()
        self._put(pat.PY_LITERALS[found.group()], found.end(), "python_literal")
        return False

    def _word(self) -> bool:
        text = self.text
        word = pat.WORD.match(text, self.pos).group()  # type: ignore[union-attr]
        end = self.pos + len(word)
        if self.depth > 0 and pat.KEY_AFTER.match(text, end):
            self._put(f'"{word}"', end, "unquoted_key")
        elif word in pat.NON_FINITE:
            raise self._fail(non_finite_message(word), final=True)
        elif pat.TO_END.fullmatch(text, end) and (
            self.depth > 0 or any(name.startswith(word) for name in pat.LITERAL_NAMES)
        ):
            raise self._truncated("the text ends inside a value")
        else:
            raise self._fail(f"unexpected word {word[:40]!r}")
        return False

    def _fullwidth(self) -> bool:
        # Between values (never inside a string, which a run or `_quoted` takes whole)
        # it can only be structure, as its ASCII twin is.
        self._count("fullwidth_punctuation")
        return self._take_run(pat.FULLWIDTH[self.text[self.pos]], False)

    def _other(self) -> bool:
        if pat.INCOMPLETE.fullmatch(self.text, self.pos):
            raise self._truncated("the text ends inside a number")
        raise self._fail(f"unexpected character {self.text[self.pos]!r}")


_HANDLERS: Final[dict[str, Callable[[Rewriter], bool]]] = {
    '"': Rewriter._double_quote,
    "/": Rewriter._slash,
    "#": Rewriter._comments,
    "`": Rewriter._backtick,
    "-": Rewriter._minus,
    **dict.fromkeys("TFN", Rewriter._python_literal),
    **dict.fromkeys(pat.QUOTES, Rewriter._quoted),
    **dict.fromkeys(pat.FULLWIDTH, Rewriter._fullwidth),
}
