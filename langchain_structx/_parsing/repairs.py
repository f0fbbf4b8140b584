"""Repairs: what each change to a model's text is called and how it is worded.

`Repair` is one change, `Parsed` a value with the repairs made to reach it, and
`worded` the sentence for each kind of text repair (the coercer words its own).
Kept apart from the parser, the scanner and the coercer so that all three can
build repairs without importing each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = ("Parsed", "Repair", "text_repairs", "worded")

# One sentence per text repair kind; `[one|many]` holds the wording for a single
# repair and for `{n}` of them. The scanner and the wrapper detection in `_parse`
# both word their repairs from this table.
_DETAILS: Final = {
    "fence": "removed a markdown code fence around the JSON",
    "prose": "removed text before or after the JSON",
    "trailing_comma": "removed [a trailing comma|{n} trailing commas]",
    "single_quotes": "replaced single quotes around [a string|{n} strings] with double quotes",
    "python_literal": (
        "replaced [a Python literal|{n} Python literals] (True, False or None) with JSON"
    ),
    "comment": "removed [a comment|{n} comments]",
    "unquoted_key": "quoted [an unquoted object key|{n} unquoted object keys]",
    "smart_quotes": (
        "replaced typographic quotes around [a string|{n} strings] with plain double quotes"
    ),
    "control_character": "escaped raw control characters inside [a string|{n} strings]",
    "fullwidth_punctuation": (
        "replaced [a full-width colon or comma|{n} full-width colons and commas] between "
        "values with ASCII ones"
    ),
}

_CHOICE = re.compile(r"\[([^|\]]*)\|([^\]]*)\]")


def worded(kind: str, count: int = 1) -> str:
    """The sentence for `count` text repairs of `kind`.

    Examples:
        >>> worded("comment"), worded("trailing_comma", 3)
        ('removed a comment', 'removed 3 trailing commas')
    """
    return _CHOICE.sub(
        lambda m: m[1] if count == 1 else m[2].replace("{n}", str(count)), _DETAILS[kind]
    )


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


def text_repairs(counts: dict[str, int]) -> list[Repair]:
    """One repair per kind counted, worded for its count.

    Examples:
        >>> [r.detail for r in text_repairs({"comment": 1, "trailing_comma": 3})]
        ['removed a comment', 'removed 3 trailing commas']
    """
    return [Repair(kind, worded(kind, count)) for kind, count in counts.items()]
