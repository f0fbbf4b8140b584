"""Lenient JSON parsing for model output.

Valid JSON goes straight to the standard library's C decoder. Anything else takes
the lenient path: find the JSON in the text (code fences, prose), then let the
repair scanner in `langchain_structx._parsing.rewrite` rewrite it into strict JSON for the
C decoder.

Which JSON is taken from prose: a reply that is a bare JSON value (after fences) is
that value; otherwise the first `{` or `[` that starts a complete, repairable value
wins. Text that ends inside a value is truncation, which is final: no later
candidate is tried, because every later candidate would sit inside the cut value.

This module is the package's single entry point for parsing whole replies. The
pieces live elsewhere and are re-exported here: the result types in `_repairs` and
schema-guided coercion (`coerce`) in `_coerce`. Replies that are still streaming
are read by `langchain_structx.streaming.partial_value`.
"""

from __future__ import annotations

import json
import re
from typing import Final

from langchain_structx._exceptions import MalformedJSONError, ReplyTooLargeError, TruncatedJSONError
from langchain_structx._parsing.coerce import coerce
from langchain_structx._parsing.decode import (
    BadNumber,
    Fail,
    checked_decoder,
    needs_number_checks,
    reject_constant,
)
from langchain_structx._parsing.repairs import Parsed, Repair, worded
from langchain_structx._parsing.rewrite import Rewriter
from langchain_structx.limits import DEFAULT_LIMITS, Limits

__all__ = (
    "Parsed",
    "Repair",
    "coerce",
    "parse_json",
)

_MAX_ATTEMPTS: Final = 32
"""How many `{`/`[` candidates in prose are tried before giving up (bounds the work)."""

# Finding the JSON in the text: past a leading fence, at an opening bracket, and
# (after a failed candidate) past the whole bracketed region that failed.
_LEAD = re.compile(r"[\ufeff\s]*(?:```[\w+.#-]*\s*)?")
_OPEN = re.compile(r"[{\[]")
_REGION_TOKEN = re.compile(r'"[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"?|[{}\[\]]')
_FENCE_TAG = re.compile(r"[\w+.#-]*")

_FAST_DECODER: Final = json.JSONDecoder(parse_constant=reject_constant)
_NOT_STRICT: Final = object()


def parse_json(text: str, *, limits: Limits = DEFAULT_LIMITS) -> Parsed:
    """Read model text as a JSON value, repairing common mistakes.

    Args:
        text: The model's reply: JSON, possibly fenced, wrapped in prose or sloppy.
        limits: Bounds on the reply's size and nesting.

    Returns:
        The value and the repairs applied (none when `text` was valid JSON).

    Raises:
        ReplyTooLargeError: The text is longer than `limits.max_reply_chars`; it is
            not read at all.
        TruncatedJSONError: The text ends inside a string, object or array.
        MalformedJSONError: The syntax is broken beyond repair, NaN or Infinity is
            used, a number overflows or has more than `limits.max_integer_digits`
            digits, repaired JSON nests deeper than `limits.max_depth`, or there is
            no JSON at all. Strictly valid JSON goes to the C decoder as it is (its
            own recursion bound makes over-deep text a typed error too); its depth
            against `limits.max_depth` is checked when the value is validated.

    Examples:
        >>> parse_json("1e400")
        Traceback (most recent call last):
        ...
        langchain_structx.errors.MalformedJSONError: the number 1e400 is too large; \
use a string for it (line 1, column 1)
    """
    if not isinstance(text, str):
        raise MalformedJSONError(f"expected text, got {type(text).__name__}")
    if len(text) > limits.max_reply_chars:
        raise ReplyTooLargeError(len(text), limits.max_reply_chars)
    value = _parse_strict(text, limits)
    if value is not _NOT_STRICT:
        return Parsed(value)
    try:
        return _parse_lenient(text, limits)
    except Fail as fail:
        raise fail.public(text) from None
    except RecursionError:  # a guard of last resort: depth is bounded before this
        raise MalformedJSONError("the JSON is nested too deeply") from None


def _parse_strict(text: str, limits: Limits) -> object:
    """The value of strictly valid JSON within the limits, else `_NOT_STRICT`.

    Anything refused here (NaN, a huge number, nesting past the interpreter's
    recursion bound) goes to the lenient path, which reports it with a precise
    message and position. Depth within that bound is left to validation, which
    walks every value anyway: checking it here too cost half a `json.loads`.
    """
    decoder = checked_decoder(limits) if needs_number_checks(text, limits) else _FAST_DECODER
    try:
        value = decoder.decode(text)
    except (ValueError, BadNumber, RecursionError):
        return _NOT_STRICT
    return value


def _parse_lenient(text: str, limits: Limits) -> Parsed:
    start = _LEAD.match(text).end()  # type: ignore[union-attr]
    first: Fail | None = None
    pos = start
    if start < len(text) and text[start] not in "{[":
        try:
            return _attempt(text, start, limits)
        except Fail as fail:
            if fail.final:
                raise
            # A failure at the very first character means the text is not JSON-like.
            first = fail if fail.position > start else None
            pos = max(fail.reach, start + 1)
    for _ in range(_MAX_ATTEMPTS):
        found = _OPEN.search(text, pos)
        if found is None:
            break
        try:
            return _attempt(text, found.start(), limits)
        except Fail as fail:
            if fail.final:
                raise
            first = first or fail
            # Never retry inside a broken value: its inner parts are not the answer.
            # Nor inside what the scanner already read, so no text is read twice
            # by later candidates and the whole search stays linear.
            pos = max(_skip_region(text, found.start()), fail.reach)
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


def _no_json(text: str, start: int, first: Fail | None) -> Fail:
    stripped = text.rstrip()
    opened = stripped.rfind("```")
    if opened >= 0 and text.count("```") % 2 and _FENCE_TAG.fullmatch(stripped, opened + 3):
        return Fail(TruncatedJSONError, "the text ends inside a code fence", len(text))
    if first is not None:
        return first
    if start == len(text):
        return Fail(MalformedJSONError, "the text is empty", start)
    return Fail(MalformedJSONError, "no JSON object or array found in the text", start)


def _attempt(text: str, start: int, limits: Limits) -> Parsed:
    scan = Rewriter(text, start, limits)
    duplicates: list[str] = []
    try:
        end = _scan(scan)
        value = scan.decode(duplicates)
    except Fail as fail:
        fail.reach = max(fail.reach, scan.pos)
        raise
    repairs = _wrapper_repairs(text[:start], text[end:])
    repairs.extend(scan.repairs())
    if duplicates:
        repairs.append(_duplicate_repair(duplicates))
    return Parsed(value, tuple(repairs))


def _scan(scan: Rewriter) -> int:
    try:
        return scan.run()
    except Fail as fail:
        if fail.error is TruncatedJSONError:
            scan.check_prefix()
        raise


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
    return [Repair(kind, worded(kind)) for kind in kinds]


def _duplicate_repair(keys: list[str]) -> Repair:
    names = ", ".join(repr(key) for key in dict.fromkeys(keys[:5]))
    if len(keys) == 1:
        return Repair("duplicate_key", f"kept the last value of the duplicate key {names}")
    more = ", ..." if len(keys) > 5 else ""
    return Repair(
        "duplicate_key", f"kept the last values of {len(keys)} duplicate keys: {names}{more}"
    )
