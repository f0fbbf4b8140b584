"""The embedded model's errors, in one place: every other module of `local` raises these.

```
StructxError
  LocalModelError          the embedded model could not be set up or run
    WeightsError           weights missing, incomplete, corrupt, or not GGUF
    GrammarError           a schema the constrained decoder refuses (reads as an HTTP 400)
    ContextWindowError     the prompt leaves no room for an answer (also a ValueError)
```
"""

from __future__ import annotations

from typing import Any

from langchain_structx.errors import StructxError


class LocalModelError(StructxError):
    """The embedded local model could not be set up or run."""


class WeightsError(LocalModelError):
    """Model weights are missing, incomplete, corrupt, or not a GGUF file."""


class GrammarError(LocalModelError):
    """A schema the constrained decoder refuses, named with the part it refuses.

    It reads as a provider's HTTP 400 refusal of a JSON schema, so `AutoStrategy`
    falls back to the next route (in the end the prompted one) for that schema.
    """

    status_code = 400


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
