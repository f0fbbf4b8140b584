"""Reliable, portable structured output for LangChain agents and LangGraph graphs."""

from langchain_structx._version import __version__
from langchain_structx.errors import (
    AttemptError,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    StructxError,
    UserError,
)

__all__ = (
    "AttemptError",
    "StructuredOutputRefusal",
    "StructuredOutputRetryError",
    "StructxError",
    "UserError",
    "__version__",
)
