"""A vocabulary of one token per byte, to drive the embedded model's decoder without weights."""

from __future__ import annotations

import json
from typing import Any

from langchain_structx.local._guidance import compiled, matcher_for

END = 256
"""The end-of-sequence token."""


class _Bytes:
    """One token per byte, and an end token: any text can be written."""

    eos_token_id = END
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<end>"]
    special_token_ids = [END]

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode())


def byte_tokenizer() -> Any:
    """An `llguidance.LLTokenizer` over `_Bytes`."""
    import llguidance

    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Bytes()))


def accepts(tokenizer: Any, schema: dict[str, Any], value: Any) -> bool:
    """Whether the decoder lets `value` be written whole, then end.

    A value that is not a string is written as `json.dumps` writes it, as the decoder does.
    """
    text = value if isinstance(value, str) else json.dumps(value)
    matcher = matcher_for(tokenizer, compiled(schema))
    return bool(matcher.consume_tokens(list(text.encode())) and matcher.is_accepting())
