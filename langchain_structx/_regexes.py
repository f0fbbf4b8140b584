"""Regexes from schemas: compiled once, with the engine that validation runs them in.

Patterns come from user schemas, which may be hostile, and are matched against
model output, which may be hostile too. A pattern RE2 can express (nearly every
pattern in real schemas) runs in RE2, whose matching is linear in the text: no
input can make it backtrack. The rest (back-references, look-arounds) runs in the
`regex` package, whose matching takes a timeout. Every pattern is compiled when
a schema is built, so that a broken one is a `SchemaError` then, never a crash later.

Compiling is bounded too: the `regex` package writes each counted repetition out in
full, so `a{4294967294}` would take minutes and gigabytes. Nothing whose
`_regex_cost.compile_cost` is over a bound reaches `regex`.
"""

from __future__ import annotations

import functools
from typing import Any

import re2
import regex

from langchain_structx._clip import clip
from langchain_structx._exceptions import SchemaError
from langchain_structx._regex_cost import compile_cost

REGEX_ERRORS = (regex.error, RecursionError, OverflowError, ValueError, TypeError)

MAX_PATTERN_COST = 100_000
"""Largest `compile_cost` of one pattern in a schema (about 0.1 s and 100 MB at worst)."""


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 cannot take is normal, not worth a log line
_RE2_OPTIONS.never_capture = True  # only "does it match" is ever asked


class _Linear:
    """An RE2 pattern with the `regex` package's `search` signature."""

    __slots__ = ("_pattern", "_source")

    def __init__(self, source: str) -> None:
        # Matching UTF-8 bytes skips the binding's per-call offset conversions
        # (2-3x faster on short keys); the semantics are the same, RE2 reads UTF-8.
        self._pattern = re2.compile(source.encode("utf-8"), _RE2_OPTIONS)
        self._source = source

    def search(self, text: str, timeout: float | None = None) -> Any:
        # Linear time: the deadline is checked by the caller, no timeout is needed.
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate is no UTF-8: such rare text takes the bounded engine.
            return regex.compile(self._source).search(text, timeout=timeout)
        return self._pattern.search(data)


def compiled(pattern: str) -> Any:
    r"""A schema's pattern, in RE2 when it fits, else in `regex`; schemas reuse few patterns.

    Both are kept once compiled, the `regex` ones fewer: each may hold megabytes.

    Raises:
        regex.error: The pattern does not compile, or would cost more than
            `MAX_PATTERN_COST` to compile in `regex`.

    Examples:
        >>> type(compiled("^[a-z]+$")).__name__, type(compiled(r"(a)\1")).__name__
        ('_Linear', 'Pattern')
    """
    linear = _linear(pattern)
    return linear if linear is not None else _backtracking(pattern)


@functools.lru_cache(maxsize=512)
def _linear(pattern: str) -> _Linear | None:
    try:
        return _Linear(pattern)
    except (re2.error, UnicodeEncodeError):
        return None


@functools.lru_cache(maxsize=32)
def _backtracking(pattern: str) -> Any:
    if compile_cost(pattern) > MAX_PATTERN_COST:
        raise regex.error(_too_large(MAX_PATTERN_COST))
    return regex.compile(pattern, cache_pattern=False)


def _too_large(bound: int) -> str:
    return f"its repetitions would make it longer than {bound} characters to compile"


def is_regex(instance: object) -> bool:
    """The `format: regex` check: a value's text compiles (non-strings pass, as the spec says).

    Text that would cost more than `MAX_PATTERN_COST` to compile is no regex here:
    it is never handed to the compiler.
    """
    if not isinstance(instance, str):
        return True
    if compile_cost(instance) > MAX_PATTERN_COST:
        return False
    try:
        regex.compile(instance, cache_pattern=False)
    except REGEX_ERRORS:
        return False
    return True


def is_schema_regex(instance: object) -> bool:
    """`is_regex` for the patterns of schemas, which repeat the same few often."""
    if isinstance(instance, str) and len(instance) <= _REMEMBERED_CHARS:
        return _remembered_regex(instance)
    return is_regex(instance)


_REMEMBERED_CHARS = 1_000


@functools.lru_cache(maxsize=512)
def _remembered_regex(pattern: str) -> bool:
    return is_regex(pattern)


def compile_or_fail(pattern: str) -> None:
    """Compile a schema's pattern with the engine validation will use.

    Raises:
        SchemaError: The pattern does not compile, or would cost too much to.
    """
    try:
        compiled(pattern)
    except REGEX_ERRORS as exc:
        raise SchemaError(f"Invalid pattern {clip(repr(pattern), 200)} in schema: {exc}") from None
