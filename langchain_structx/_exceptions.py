"""Exceptions of the layers that know nothing of LangChain.

The parser, the schema layer, validation, the provider dialects and the limits
raise these. This module imports nothing but the standard library and
`langchain_structx._clip`, so importing those layers never loads LangChain.
`langchain_structx.errors` re-exports every class here (that is their public
home, and what their `__module__` says), draws the whole tree, and adds the
run-time failures that also derive from LangChain's own error classes.

Here: `StructxError`, the root; `UserError` for misuse, with `SchemaError` (a
schema that cannot be normalised) and `RouteError` (a union variant with no route
in a graph); `DialectError` (a schema a provider dialect cannot express
faithfully); `JSONParseError`, a `ValueError` for model text that is not JSON even
after repair, with `MalformedJSONError` (broken syntax; `ReplyTooLargeError` below
it for a reply too long to read) and `TruncatedJSONError` (an unclosed string,
object or array); and `OutputValidationError`, a `ValueError` for a parsed value
that breaks the schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_structx._clip import MESSAGE_CHARS, clip


class StructxError(Exception):
    """Root of every exception raised by langchain-structx."""


class UserError(StructxError, ValueError):
    """The package was used in a way it does not support."""


class SchemaError(UserError):
    """A schema that cannot be turned into named variants."""


class RouteError(UserError):
    """A union variant has no route, or a route names no known variant."""


class DialectError(StructxError):
    """A schema cannot be expressed faithfully in a provider's strict dialect.

    `AutoStrategy` treats this as a reason to use another strategy.

    Attributes:
        dialect: The dialect that was asked for, such as `"openai"`.
        reason: Why the schema does not fit, worded for a report.
    """

    def __init__(self, dialect: str, reason: str) -> None:
        self.dialect = dialect
        self.reason = reason
        super().__init__(f"Schema cannot be expressed in the {dialect} dialect: {reason}")


class JSONParseError(StructxError, ValueError):
    """Text could not be read as JSON, even after lenient repair.

    Attributes:
        position: Character offset where reading stopped.
    """

    def __init__(self, message: str, *, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


class MalformedJSONError(JSONParseError):
    """The text holds JSON-like data with syntax that could not be repaired."""


class TruncatedJSONError(JSONParseError):
    """The text ends inside a string, object or array: the output was cut off."""


class ReplyTooLargeError(MalformedJSONError):
    """The text is longer than `Limits.max_reply_chars`, so it was not read at all.

    Attributes:
        size: Length of the text in characters.
        limit: The bound it broke.
    """

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"the reply has {size} characters, more than the limit of {limit}", position=0
        )
        self.size = size
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One reason a value does not match its schema.

    Attributes:
        path: Keys and indexes from the root to the offending value.
        message: What is wrong, worded for a person or a model to act on.
        unfinished: Whether the check stopped before it was done (out of time,
            or a value the validator could not finish): the value may be valid.
    """

    path: tuple[str | int, ...]
    message: str
    unfinished: bool = field(default=False, compare=False, repr=False)

    @property
    def location(self) -> str:
        """The path as a JSONPath-like string, such as `$.items[0].name`.

        A key that is not a name (`"a.b"`, `"0"`, `""`) is quoted in brackets, so that
        no path reads as another: `$["a.b"]` is one key, `$.a.b` two.

        Examples:
            >>> ValidationIssue(("items", 0, "姓名", "a.b", "0"), "").location
            '$.items[0].姓名["a.b"]["0"]'
        """
        parts = ["$"]
        for step in self.path:
            if isinstance(step, int):
                parts.append(f"[{step}]")
            elif step.isidentifier():
                parts.append(f".{step}")
            else:
                parts.append(f"[{json.dumps(step, ensure_ascii=False)}]")
        return "".join(parts)

    def __str__(self) -> str:
        return f"at {self.location}: {self.message}"


class OutputValidationError(StructxError, ValueError):
    """A parsed value does not match the schema.

    Attributes:
        issues: Every problem found, each with its JSON path.
        schema_name: Name of the variant that was checked.
    """

    def __init__(self, schema_name: str, issues: Sequence[ValidationIssue]) -> None:
        self.schema_name = schema_name
        self.issues = tuple(issues)
        super().__init__(self._describe())

    @property
    def unfinished(self) -> bool:
        """Whether the check stopped before it was done, so the value may be valid."""
        return any(issue.unfinished for issue in self.issues)

    def _describe(self) -> str:
        count = len(self.issues)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{count} {noun} with {self.schema_name}:"]
        size = len(lines[0])
        for issue in self.issues:
            # Stop early: rendering every issue of a huge list only to cut it is waste.
            line = clip(f"- {issue}", MESSAGE_CHARS)
            size += len(line) + 1
            lines.append(line)
            if size > MESSAGE_CHARS:
                break
        return clip("\n".join(lines), MESSAGE_CHARS)


__all__ = (
    "DialectError",
    "JSONParseError",
    "MalformedJSONError",
    "OutputValidationError",
    "ReplyTooLargeError",
    "RouteError",
    "SchemaError",
    "StructxError",
    "TruncatedJSONError",
    "UserError",
    "ValidationIssue",
)

# Tracebacks, pickles and the API docs name the public module, as before the split.
for _name in __all__:
    globals()[_name].__module__ = "langchain_structx.errors"
del _name
