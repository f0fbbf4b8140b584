"""Regexes from schemas: compiled once, with the engine that validation runs them in.

Patterns come from user schemas, which may be hostile, and are matched against
model output, which may be hostile too. A pattern RE2 can express (nearly every
pattern in real schemas) runs in RE2, whose matching is linear in the text: no
input can make it backtrack. The rest (back-references, look-arounds) runs in the
`regex` package, whose matching takes a timeout. Every pattern is compiled when
a schema is built, so that a broken one is a `SchemaError` then, never a crash later.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import re2
import regex
from referencing.jsonschema import DRAFT202012

from langchain_structx._bounds import clip
from langchain_structx._exceptions import SchemaError

REGEX_ERRORS = (regex.error, RecursionError, OverflowError, ValueError, TypeError)


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


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    r"""A schema's pattern, in RE2 when it fits, else in `regex`; schemas reuse few patterns.

    Examples:
        >>> type(compiled("^[a-z]+$")).__name__, type(compiled(r"(a)\1")).__name__
        ('_Linear', 'Pattern')
    """
    try:
        return _Linear(pattern)
    except (re2.error, UnicodeEncodeError):
        return regex.compile(pattern)


def is_regex(instance: object) -> bool:
    """The `format: regex` check: a value's text compiles (non-strings pass, as the spec says)."""
    if not isinstance(instance, str):
        return True
    try:
        regex.compile(instance)
    except REGEX_ERRORS:
        return False
    return True


def check_patterns(schema: Mapping[str, Any]) -> None:
    """Compile every pattern in `schema` with the engine validation will use.

    Raises:
        SchemaError: A pattern does not compile, or `unevaluatedProperties` would
            run patterns outside the time limit.
    """
    stack: list[Any] = [schema]
    uses_pattern_properties = uses_unevaluated = False
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        patterns = list(node.get("patternProperties") or ())
        if isinstance(node.get("pattern"), str):
            patterns.append(node["pattern"])
        for pattern in patterns:
            _compile_or_fail(pattern)
        uses_pattern_properties |= bool(node.get("patternProperties"))
        uses_unevaluated |= node.get("unevaluatedProperties", True) is not True
        stack.extend(DRAFT202012.subresources_of(node))
    if uses_pattern_properties and uses_unevaluated:
        raise SchemaError(
            "A schema may not combine patternProperties with unevaluatedProperties: "
            "their patterns could not be checked within the time limit."
        )


def _compile_or_fail(pattern: str) -> None:
    try:
        compiled(pattern)
    except REGEX_ERRORS as exc:
        raise SchemaError(f"Invalid pattern {clip(repr(pattern), 200)} in schema: {exc}") from None
