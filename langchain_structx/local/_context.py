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

from langchain_structx.local._weights import LocalModelError

__all__ = ("ContextWindowError", "typed_chunks", "typed_overflow")

_OVERFLOW = re.compile(r"(?:Requested tokens \((\d+)\) )?exceed context window of (\d+)")
"""llama-cpp-python's `ValueError` for a prompt that leaves no room for an answer."""


class ContextWindowError(LocalModelError, ValueError):
    """The prompt leaves no room for an answer in the model's context window.

    llama-cpp-python refuses such a prompt (a long input, or a schema rendered
    into the prompt) with a plain `ValueError`; this is that error, typed. It is
    still a `ValueError`, so code that caught llama-cpp-python's keeps working.

    Attributes:
        needed: Tokens in the prompt, as llama.cpp counted them (None if unknown).
        window: Tokens the context window holds (the prompt and the answer).

    Examples:
        >>> print(ContextWindowError(5000, 4096))  # doctest: +NORMALIZE_WHITESPACE
        the prompt needs 5000 tokens, which leaves no room for an answer in the
        model's context window of 4096; raise n_ctx or shorten the input
    """

    def __init__(self, needed: int | None, window: int) -> None:
        self.needed = needed
        self.window = window
        size = "the prompt" if needed is None else f"the prompt needs {needed} tokens, which"
        super().__init__(
            f"{size} leaves no room for an answer in the model's context window of "
            f"{window}; raise n_ctx or shorten the input"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its counts (a pickle would otherwise pass the message alone).
        return type(self), (self.needed, self.window)


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
