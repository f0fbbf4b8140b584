"""Bounds on messages built from model text.

An exception, a feedback message or a report entry that quotes a model's reply is
cut to a bound, so a huge reply never becomes a huge message. This module imports
nothing, so every layer can use it.
"""

from __future__ import annotations

MESSAGE_CHARS = 8_000
"""Longest message of an exception built from model text; the rest is cut."""

NAME_CHARS = 80
"""Longest name taken from model text (a tool the model made up) quoted in a message."""

TRUNCATION_MARK = "... (truncated)"
"""Appended where a text was cut to its bound."""


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, marked when cut.

    Examples:
        >>> clip("abcdefghijklmnopqrstuvwxyz", 20)
        'abcde... (truncated)'
        >>> clip("short", 20)
        'short'
    """
    if len(text) <= limit:
        return text
    keep = max(limit - len(TRUNCATION_MARK), 0)
    return (text[:keep] + TRUNCATION_MARK)[:limit]
