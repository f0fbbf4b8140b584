"""The context window: llama-cpp-python's error for a prompt too long for it, typed.

llama-cpp-python tokenizes the prompt after applying the model's chat template and
refuses it with a plain `ValueError` when it leaves no room for an answer. Counting
the tokens here first would mean rendering the template twice and repeating its
check; translating its error is exact and free.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from langchain_structx.local._errors import ContextWindowError

__all__ = ("ContextWindowError", "typed_chunks", "typed_overflow")

_OVERFLOW = re.compile(r"(?:Requested tokens \((\d+)\) )?exceed context window of (\d+)")
"""llama-cpp-python's `ValueError` for a prompt that leaves no room for an answer."""


@contextlib.contextmanager
def typed_overflow() -> Iterator[None]:
    """Raise llama-cpp-python's context-window `ValueError` as a `ContextWindowError`."""
    try:
        yield
    except ValueError as exc:
        found = _OVERFLOW.search(str(exc))
        if found is None:
            raise
        needed, window = found.groups()
        raise ContextWindowError(None if needed is None else int(needed), int(window)) from exc


def typed_chunks(chunks: Iterator[Any]) -> Iterator[Any]:
    """`chunks`, with the same translation as `typed_overflow`.

    A stream is a generator: llama-cpp-python raises at its first chunk, not at
    the call that returns it.
    """
    with typed_overflow():
        yield from chunks
