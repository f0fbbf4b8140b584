"""Bounds on the work one model reply may cause: size, time, depth and text.

Model replies are untrusted input, and in multi-tenant apps so are schemas. Every
strategy carries a `Limits` value (the defaults suit ordinary use); each bound is
enforced where the work happens, and breaking one is a typed error, never a hang.
This module imports nothing but the standard library, so the pure layers (parser,
schema, validation) can read it.

Examples:
    >>> from langchain_structx import ToolStrategy
    >>> strategy = ToolStrategy({"title": "Tag", "type": "object"},
    ...                         limits=Limits(max_reply_chars=100_000))
    >>> strategy.limits.max_reply_chars
    100000
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ("DEFAULT_LIMITS", "Limits")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource bounds applied to every reply a strategy reads.

    Raises:
        ValueError: When a bound is not a positive number, or a count is not a
            whole number (checked at construction; `1e6` is taken as `1_000_000`).
    """

    max_reply_chars: int = 2_000_000
    """Longest reply text (or tool-call argument text) that is parsed; a longer one
    is an `InvalidOutputError` without being read."""
    max_depth: int = 128
    """Deepest nesting of objects and arrays accepted in a value. LangGraph's
    checkpoints (MessagePack) store at most 255 levels in all, and the state
    wraps an answer in a few more (a stored reply's arguments sit 5 levels
    down), so the default leaves room for a state of your own around it."""
    max_integer_digits: int = 1_000
    """Most digits an integer in a reply may have."""
    max_integer_bits: int = 64
    """Integers in an answer must lie within what this many bits hold, signed or
    unsigned: from `-2**(bits - 1)` to `2**bits - 1`. The default is the range
    LangGraph's checkpoints store (MessagePack's integers); a larger integer in
    the state fails the run when its checkpoint is written. Raise it where no
    checkpointer stores the answer."""
    validation_seconds: float = 1.0
    """Total time one validation of one value may take, every regex included;
    running out is a validation failure with its own message."""
    offload_chars: int = 32_768
    """In async runs, replies longer than this are parsed and validated on a worker
    thread so the event loop keeps serving other requests."""
    max_issues: int = 20
    """Most validation problems listed in one error (and so in the feedback)."""
    max_value_chars: int = 80
    """Longest excerpt of a model's value quoted in an error message."""
    max_feedback_chars: int = 4_000
    """Longest feedback text sent back to the model after a failed attempt."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                raise ValueError(f"Limits.{spec.name} must be a positive number, got {value!r}")
            if spec.type == "int" and isinstance(value, float):
                # Counts slice and shift: a whole float is taken as the count it names.
                if not value.is_integer():
                    raise ValueError(f"Limits.{spec.name} must be a whole number, got {value!r}")
                object.__setattr__(self, spec.name, int(value))


DEFAULT_LIMITS = Limits()
"""The limits a strategy uses unless it is given its own."""
