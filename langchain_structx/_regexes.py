"""Regexes from schemas: compiled once, with the engine that validation runs them in.

Patterns come from user schemas, which may be hostile: they are compiled with the
`regex` package (whose matching takes a timeout) and checked when a schema is
built, so that a broken pattern is a `SchemaError` then and never a crash later.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import regex
from referencing.jsonschema import DRAFT202012

from langchain_structx._bounds import clip
from langchain_structx.errors import SchemaError

REGEX_ERRORS = (regex.error, RecursionError, OverflowError, ValueError, TypeError)


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """A schema's pattern compiled by the `regex` package; schemas reuse few patterns."""
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
