r"""Regexes from schemas: compiled once, with the engine that validation runs them in.

Patterns come from user schemas, which may be hostile, and are matched against
model output, which may be hostile too. A pattern RE2 can express (nearly every
pattern in real schemas) runs in RE2, whose matching is linear in the text: no
input can make it backtrack. The rest (back-references, look-arounds) runs in the
`regex` package, whose matching takes a timeout. Every pattern is compiled when
a schema is built, so that a broken one is a `SchemaError` then, never a crash later.

Compiling is bounded too: the `regex` package writes each counted repetition out in
full, so `a{4294967294}` would take minutes and gigabytes. Nothing whose
`_regex_cost.compile_cost` is over a bound reaches `regex`.

Memory is bounded in two places:

- Each RE2 pattern may hold at most `RE2_MAX_MEM` (1 MiB), its program and the
  DFA it builds lazily while matching. A DFA that outgrows its share is cleared,
  and if that keeps happening RE2 matches with its NFA instead: slower, still
  linear, the same answers. The rare pattern whose program alone
  needs more (`^\pL{1,200}$`, say) is compiled again with `RE2_LARGE_MAX_MEM`
  (8 MiB, RE2's own default), so every pattern runs in the engine it always did;
  one too large even for that runs in `regex`, as before.
- The compiled patterns kept for reuse weigh at most `PATTERN_CACHE_BYTES`
  (64 MiB) together, the least recently used going first: an RE2 pattern weighs
  its memory bound, a `regex` one its measured size (`sys.getsizeof` reports the
  nodes it holds) with a margin, never less than its compile cost implies. A
  pattern heavier than the whole budget is compiled each time it is used. The
  budget bounds only what the cache keeps alive: a pattern being matched stays
  alive until its search returns, and one evicted is compiled again when next
  needed, with the same result.

Neither engine's own cache is used: `re2.compile` keeps 128 patterns of any size,
and `regex` keeps the text of every pattern it compiles, even uncached.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import re2
import regex

from langchain_structx._clip import clip
from langchain_structx._exceptions import SchemaError
from langchain_structx._validation.regex_cost import compile_cost

REGEX_ERRORS = (regex.error, RecursionError, OverflowError, ValueError, TypeError)

MAX_PATTERN_COST = 100_000
"""Largest `compile_cost` of one pattern in a schema (about 0.1 s and at most 13 MB).

The cost counts a repeated set's members once per copy, as `regex` writes them.
"""

RE2_MAX_MEM = 1 << 20
"""Memory one RE2 pattern may hold, program and DFA (1 MiB): ample for nearly every pattern."""

RE2_LARGE_MAX_MEM = 8 << 20
"""The bound for a pattern whose program does not fit `RE2_MAX_MEM` (RE2's default, 8 MiB)."""

PATTERN_CACHE_BYTES = 64 << 20
"""Total weight of the compiled patterns kept for reuse (64 MiB): 64 ordinary RE2 ones."""

_REGEX_BYTES_PER_COST = 128
"""What a `regex` pattern holds, at most, per unit of `compile_cost`."""

_REGEX_OVERHEAD = 4096
"""The Python objects around a compiled `regex` pattern, which `sys.getsizeof` leaves out."""


def _re2_options(max_mem: int) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a pattern RE2 cannot take is normal, not worth a log line
    options.never_capture = True  # only "does it match" is ever asked
    options.max_mem = max_mem
    return options


_RE2_OPTIONS = _re2_options(RE2_MAX_MEM)
_RE2_LARGE_OPTIONS = _re2_options(RE2_LARGE_MAX_MEM)


class WeightedCache:
    """A thread-safe map bounded by the total weight of its values, least recently used out first.

    One lock guards every read and write; values are built by the caller, outside it.
    """

    __slots__ = ("_budget", "_entries", "_lock", "_weight")

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._weight = 0

    @property
    def budget(self) -> int:
        """The most the values kept may weigh together."""
        return self._budget

    @property
    def weight(self) -> int:
        """What the values kept weigh together."""
        return self._weight

    def get(self, key: Hashable) -> Any:
        """The value kept under `key`, now the most recently used, or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: Any, weight: int) -> None:
        """Keep `value` under `key`, dropping the least recently used values past the budget.

        A value heavier than the whole budget is not kept.
        """
        if weight > self._budget:
            return
        dropped: list[tuple[Any, int]] = []  # freed after the lock: large ones take a while
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._weight -= previous[1]
                dropped.append(previous)
            self._entries[key] = (value, weight)
            self._weight += weight
            while self._weight > self._budget:
                oldest = self._entries.popitem(last=False)[1]
                self._weight -= oldest[1]
                dropped.append(oldest)

    def keys(self) -> list[Hashable]:
        """The keys kept, least recently used first."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Drop every value."""
        with self._lock:
            self._entries.clear()
            self._weight = 0


_PATTERNS = WeightedCache(PATTERN_CACHE_BYTES)


_RE2_CLASS: Any = getattr(re2, "_Regexp", None)


def _re2_uncached(source: bytes, options: re2.Options) -> Any:
    """`re2.compile`, without the binding's own cache of 128 patterns (outside the budget).

    The class `re2.compile` builds with keeps nothing; should a release of the
    binding rename it or change its signature, `re2.compile` itself is used.
    """
    if _RE2_CLASS is not None:
        try:
            return _RE2_CLASS(source, options)
        except TypeError:
            pass
    return re2.compile(source, options)


class _Linear:
    """An RE2 pattern with the `regex` package's `search` signature."""

    __slots__ = ("_pattern", "_source")

    def __init__(self, source: str, options: re2.Options) -> None:
        # Matching UTF-8 bytes skips the binding's per-call offset conversions
        # (2-3x faster on short keys); the semantics are the same, RE2 reads UTF-8.
        self._pattern = _re2_uncached(source.encode("utf-8"), options)
        self._source = source

    def search(self, text: str, timeout: float | None = None) -> Any:
        # Linear time: the deadline is checked by the caller, no timeout is needed.
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate is no UTF-8: such rare text takes the bounded engine.
            return _fallback(self._source).search(text, timeout=timeout)
        return self._pattern.search(data)


def compiled(pattern: str) -> Any:
    r"""A schema's pattern, in RE2 when it fits, else in `regex`; schemas reuse few patterns.

    Compiled patterns are kept within `PATTERN_CACHE_BYTES`, by weight.

    Raises:
        regex.error: The pattern does not compile, or would cost more than
            `MAX_PATTERN_COST` to compile in `regex`.

    Examples:
        >>> type(compiled("^[a-z]+$")).__name__, type(compiled(r"(a)\1")).__name__
        ('_Linear', 'Pattern')
    """
    found = _PATTERNS.get(pattern)
    if found is None:
        found, weight = _compile(pattern)
        _PATTERNS.put(pattern, found, weight)
    return found


def _compile(pattern: str) -> tuple[Any, int]:
    """The pattern compiled in the first engine that takes it, and what keeping it weighs."""
    for options in (_RE2_OPTIONS, _RE2_LARGE_OPTIONS):
        try:
            return _Linear(pattern, options), options.max_mem
        except UnicodeEncodeError:
            break
        except re2.error as exc:
            if "too large" not in str(exc):  # not a size problem: no budget helps
                break
    cost = compile_cost(pattern)
    if cost > MAX_PATTERN_COST:
        raise regex.error(_too_large(MAX_PATTERN_COST))
    return _backtracking(pattern, cost)


def _backtracking(pattern: str, cost: int) -> tuple[Any, int]:
    """The pattern compiled in `regex`, and what keeping it weighs (see the module docstring)."""
    found = _regex_compile(pattern)
    measured = sys.getsizeof(found) * 3 // 2
    return found, _REGEX_OVERHEAD + max(measured, cost * _REGEX_BYTES_PER_COST)


_REGEX_SEEN: Any = getattr(getattr(regex, "_main", None), "_locale_sensitive", None)
"""Where `regex` notes each pattern it compiles, cached or not, and never forgets it."""


def _regex_compile(pattern: str) -> Any:
    """`regex.compile`, leaving nothing behind in the `regex` package.

    Even with `cache_pattern=False` it keeps every pattern's text, so that hostile
    schemas and replies (`format: regex`) would grow it without end.
    """
    try:
        return regex.compile(pattern, cache_pattern=False)
    finally:
        if isinstance(_REGEX_SEEN, dict):
            _REGEX_SEEN.pop((str, pattern), None)


def _fallback(source: str) -> Any:
    """An RE2 pattern compiled in `regex` too, for text RE2 cannot read; kept like the rest."""
    key = ("regex", source)
    found = _PATTERNS.get(key)
    if found is None:
        found, weight = _backtracking(source, compile_cost(source))
        _PATTERNS.put(key, found, weight)
    return found


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
        _regex_compile(instance)
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
