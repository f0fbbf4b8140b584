"""Bounds on text: messages built from model text, and files read from disk.

An exception, a feedback message or a report entry that quotes a model's reply is
cut to a bound, so a huge reply never becomes a huge message; a file the user names
is read up to a bound, so a huge file never fills memory. This module imports
nothing of the package, so every layer can use it.
"""

from __future__ import annotations

import os

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


def read_capped(path: str | os.PathLike[str], limit: int, what: str) -> str:
    """The UTF-8 text of the file at `path`, refused when over `limit` bytes.

    Reads at most `limit + 1` bytes, so a huge file costs no more than the bound.
    A leading byte-order mark is dropped.

    Args:
        path: The file, as a string or a path object.
        limit: The largest size accepted, in bytes.
        what: The file as the error message names it, such as `"schema file x.json"`.

    Raises:
        ValueError: With a message ready to show, when the file cannot be read, is
            over the bound or is not UTF-8 text.
    """
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValueError(f"{what} is over {limit} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not UTF-8 text") from None
