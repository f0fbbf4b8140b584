"""llguidance's tokenizer for a loaded model, its token texts cached on disk.

llguidance needs the bytes of every token of the vocabulary. Reading them from
llama.cpp one token at a time costs about a second for Qwen's 151,936 tokens, on
every process start; the bytes depend only on the model file and llama.cpp, so
they are kept in the cache directory (`_weights.cache_dir`) and read back in a
few milliseconds. A file that does not match the vocabulary is rebuilt.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
from array import array
from pathlib import Path
from typing import Any

from langchain_structx.local._weights import cache_dir

__all__ = ("tokenizer_for", "token_texts")

_MAGIC = b"structx-vocab-1\n"
_SPECIAL = b"\xff"
"""llguidance's mark before the text of a token that only the model writes (`<|im_end|>`)."""


def tokenizer_for(llama: Any, directory: Path | None = None) -> Any:
    """Build llguidance's tokenizer for `llama`'s vocabulary.

    Args:
        llama: A loaded `llama_cpp.Llama`.
        directory: Where the token texts are cached; `cache_dir()` when omitted.

    Returns:
        An `llguidance.LLTokenizer` whose token ids are the model's.
    """
    import llama_cpp
    from llguidance import LLTokenizer

    vocab = llama._model.vocab
    tokens = _cached_texts(llama, vocab, cache_dir() if directory is None else directory)
    tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    builder: Any = LLTokenizer
    return builder.from_llamacpp(
        tokens=tokens,
        vocab_ptr=vocab,
        tokenize_fptr=tokenize,
        eos_token=llama_cpp.llama_vocab_eos(vocab),
        slices=None,
    )


def token_texts(vocab: Any) -> list[bytes]:
    """The bytes of each token, special ones marked as llguidance expects."""
    import llama_cpp

    size = 16 * 1024
    buffer = ctypes.create_string_buffer(size)
    special_kinds = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
    texts: list[bytes] = []
    for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        length = llama_cpp.llama_token_to_piece(vocab, token, buffer, size, 0, True)
        text = buffer.raw[: max(length, 0)]
        kind = llama_cpp.llama_vocab_get_attr(vocab, token)
        looks_special = text.startswith(b"<") and text.endswith(b">")
        user_special = kind & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED and looks_special
        texts.append(_SPECIAL + text if kind & special_kinds or user_special else text)
    return texts


def _cached_texts(llama: Any, vocab: Any, directory: Path) -> list[bytes]:
    import llama_cpp

    count = llama_cpp.llama_vocab_n_tokens(vocab)
    path = directory / f"vocab-{_key(llama)}.bin"
    texts = _read(path, count)
    if texts is None:
        texts = token_texts(vocab)
        _write(path, texts)
    return texts


def _key(llama: Any) -> str:
    """Names the model file as it is now, and the llama.cpp that reads it."""
    import llama_cpp

    source = Path(llama.model_path).resolve()
    stat = source.stat()
    identity = f"{source}|{stat.st_size}|{stat.st_mtime_ns}|{llama_cpp.__version__}"
    return hashlib.sha256(identity.encode()).hexdigest()[:32]


def _read(path: Path, count: int) -> list[bytes] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 4
    if not data.startswith(_MAGIC) or len(data) < head:
        return None
    (stored,) = struct.unpack("<I", data[len(_MAGIC) : head])
    lengths = array("I")
    lengths.frombytes(data[head : head + 4 * stored])
    if stored != count or len(lengths) != count or sum(lengths) != len(data) - head - 4 * count:
        return None
    texts, offset = [], head + 4 * count
    for length in lengths:
        texts.append(data[offset : offset + length])
        offset += length
    return texts


def _write(path: Path, texts: list[bytes]) -> None:
    lengths = array("I", (len(text) for text in texts))
    payload = _MAGIC + struct.pack("<I", len(texts)) + lengths.tobytes() + b"".join(texts)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(payload)
        os.replace(temporary, path)  # Readers see the old file or the whole new one.
    except OSError:
        temporary.unlink(missing_ok=True)  # A read-only cache only costs the rebuild.
