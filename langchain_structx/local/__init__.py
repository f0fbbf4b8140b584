"""The embedded local model: llama.cpp running in-process on packaged weights.

Install with `pip install langchain-structx[local]`.
"""

from __future__ import annotations

from pathlib import Path

from langchain_structx.local._weights import (
    LocalModelError,
    WeightsError,
    ensure_weights,
)


def default_model_path() -> Path:
    """Return the path of the default GGUF weights, assembling them on first use.

    Returns:
        A verified Qwen2.5-Coder-0.5B-Instruct Q4_K_M file in the cache directory.

    Raises:
        WeightsError: A weights package is missing or the assembled file is corrupt.

    Example:
        >>> from langchain_structx.local import default_model_path
        >>> default_model_path().name  # doctest: +SKIP
        'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
    """
    return ensure_weights()


__all__ = ("LocalModelError", "WeightsError", "default_model_path")
