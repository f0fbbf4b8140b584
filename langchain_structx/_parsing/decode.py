"""Strict decoding under `Limits`: the standard library's C decoder with guards.

The C decoder accepts a few things a model reply must not smuggle in: numbers
that overflow to infinity (`1e400`), integers of any length up to Python's own
limit, and nesting as deep as the interpreter's recursion limit. This module
wraps it so that each of those becomes a `Fail` with a message, and keeps the
checks cheap enough for the fast path: a whole-text scan at C speed decides
whether the slower, hooked decoder is needed at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Final

from langchain_structx._exceptions import JSONParseError, MalformedJSONError, TruncatedJSONError
from langchain_structx.limits import Limits

__all__ = (
    "BadNumber",
    "all_finite",
    "Fail",
    "checked_decoder",
    "depth_message",
    "malformed",
    "needs_number_checks",
    "non_finite_message",
    "reject_constant",
    "repair_decoder",
)

# A float can only overflow with a three-digit exponent or a long run of digits
# (a two-digit exponent needs over 200 digits before the point to pass 1e308).
_SUSPECT_DIGITS: Final = 100
_SHAPE: Final = bytes(
    ord("0") if 48 <= byte <= 57 else ord("e") if byte in b"eE+" else 32 for byte in range(256)
)


class Fail(Exception):
    """An internal parse failure, turned into a public error at the API boundary."""

    def __init__(
        self,
        error: type[JSONParseError],
        message: str,
        position: int,
        *,
        final: bool = False,
        located: bool = False,
    ) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.position = position
        # Truncation and hard limits end the search for other JSON candidates.
        self.final = final or error is TruncatedJSONError
        self.located = located
        self.reach = position

    def public(self, text: str) -> JSONParseError:
        """The public error to raise for this failure in `text`."""
        message = self.message
        if self.located:
            # Worked out only here, once: counting lines is linear in the position.
            line = text.count("\n", 0, self.position) + 1
            column = self.position - text.rfind("\n", 0, self.position)
            message = f"{message} (line {line}, column {column})"
        return self.error(message, position=self.position)


class BadNumber(Exception):
    """Raised from inside the decoder at a number (or constant) that is refused."""

    def __init__(self, literal: str, message: str) -> None:
        super().__init__(message)
        self.literal = literal
        self.message = message


def reject_constant(name: str) -> Any:
    """Decoder hook: NaN and Infinity are not JSON, so stop the decoder at them."""
    raise BadNumber(name, non_finite_message(name))


def non_finite_message(word: str) -> str:
    """The message for NaN, Infinity or -Infinity in a reply."""
    return f"{word} is not valid JSON; use null or a string"


def _finite_float(literal: str) -> float:
    number = float(literal)
    if number - number != 0:  # only infinity fails this (NaN cannot be written)
        shown = literal if len(literal) <= 24 else literal[:20] + "..."
        raise BadNumber(literal, f"the number {shown} is too large; use a string for it")
    return number


def _integer_reader(max_digits: int) -> Callable[[str], int]:
    def read(literal: str) -> int:
        digits = len(literal) - literal.startswith("-")
        if digits <= max_digits:
            try:
                return int(literal)
            except ValueError:  # Python's own cap on converting long integers
                pass
        raise BadNumber(
            literal, f"an integer has {digits} digits, more than the limit of {max_digits}"
        )

    return read


def checked_decoder(
    limits: Limits,
    pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    *,
    strict: bool = True,
) -> json.JSONDecoder:
    """A decoder that raises `BadNumber` at non-finite and over-long numbers."""
    return json.JSONDecoder(
        parse_constant=reject_constant,
        parse_float=_finite_float,
        parse_int=_integer_reader(limits.max_integer_digits),
        object_pairs_hook=pairs_hook,
        strict=strict,
    )


def repair_decoder(text: str, limits: Limits, duplicates: list[str]) -> json.JSONDecoder:
    """The decoder for repaired `text`.

    Raw control characters in strings are allowed (a repair the scanner counted),
    and duplicate keys are recorded in `duplicates`; the last value of each is kept.
    """
    hook = _pairs_hook(duplicates)
    if needs_number_checks(text, limits):
        return checked_decoder(limits, hook, strict=False)
    return json.JSONDecoder(parse_constant=reject_constant, object_pairs_hook=hook, strict=False)


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


def needs_number_checks(text: str, limits: Limits) -> bool:
    """Whether `text` may hold a number that overflows or has too many digits.

    A false alarm (digits in a string, say) only costs the hooked decoder.
    """
    shape = text.encode("utf-8", "surrogatepass").translate(_SHAPE)
    run = min(_SUSPECT_DIGITS, limits.max_integer_digits + 1)
    # `+` reads as `e` too, so that one search finds `e123` and `e+123` alike.
    return b"0" * run in shape or b"e000" in shape


def all_finite(value: Any) -> bool:
    """Whether no float anywhere in a JSON value is infinite or NaN."""
    return all(number - number == 0 for number in floats(value))


def floats(value: Any) -> Iterator[float]:
    """Every float in a JSON value, without recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def depth_message(limits: Limits) -> str:
    """The message for nesting deeper than the limit."""
    return f"the JSON is nested deeper than {limits.max_depth} levels"


def malformed(message: str, position: int, *, final: bool = False) -> Fail:
    """A located `MalformedJSONError` failure."""
    return Fail(MalformedJSONError, message, position, final=final, located=True)
