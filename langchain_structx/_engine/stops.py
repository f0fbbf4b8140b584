"""How a reply ended: the stop reason its client reports, and refusals.

Each provider's client reports the end of a reply in its own field; these read
them all, so the interpreter can tell a cut-off answer and a refusal from a
wrong one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from langchain_structx._clip import MESSAGE_CHARS
from langchain_structx._validation.bounds import preview

CUT_REASON = "max_reply_chars"
"""The stop reason of a streamed reply we stopped reading past `Limits.max_reply_chars`."""
# Stop reasons that mean "out of tokens": OpenAI Chat Completions' "length" and the
# Responses API's `incomplete_details.reason` "max_output_tokens", Anthropic's
# "max_tokens", Gemini's "MAX_TOKENS"; and ours.
LENGTH_REASONS = frozenset(
    {"length", "max_tokens", "max_output_tokens", "MAX_TOKENS", "model_length", CUT_REASON}
)
# Stop reasons that are the provider declining to answer: Anthropic's "refusal",
# OpenAI's content filter, and Gemini's safety, blocklist and personal-data blocks.
REFUSAL_REASONS = frozenset(
    {"refusal", "content_filter", "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"}
)


def refusal_text(message: AIMessage, reason: str | None) -> str | None:
    """The model's refusal: OpenAI's field, a refusal block, or a refusal stop reason.

    Args:
        message: The reply.
        reason: Its `stop_reason`, read once by the caller.
    """
    refusal = message.additional_kwargs.get("refusal")
    if refusal:
        return _as_text(refusal)
    if isinstance(message.content, list):
        for block in message.content:
            if isinstance(block, Mapping) and block.get("type") == "refusal":
                return _as_text(block.get("refusal") or block.get("text") or "")
    if reason in REFUSAL_REASONS:
        metadata = message.response_metadata
        return message.text or _as_text(metadata.get("finish_message") or f"refused ({reason})")
    return None


def _as_text(value: Any) -> str:
    """A refusal as text; one that is no string (an odd server's) is shown within bounds.

    Examples:
        >>> _as_text(10**5000)
        '<integer of about 5001 digits>'
    """
    return value if isinstance(value, str) else preview(value, MESSAGE_CHARS)


def stop_reason(message: AIMessage) -> str | None:
    """Why the model stopped, as its client reports it.

    Chat Completions and Gemini clients set `finish_reason`, Anthropic's sets
    `stop_reason`; a Responses API answer that stopped early has
    `status: "incomplete"` and the reason in `incomplete_details`.

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> meta = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
        >>> stop_reason(AIMessage(content="", response_metadata=meta))
        'max_output_tokens'
    """
    metadata = message.response_metadata
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    if not reason:
        details = metadata.get("incomplete_details")
        if details is not None and isinstance(details, Mapping):
            reason = details.get("reason")
    return _joined(reason) if isinstance(reason, str) else None


_TELLING = sorted(LENGTH_REASONS, key=len, reverse=True) + sorted(REFUSAL_REASONS)


def _joined(reason: str) -> str:
    """The reason that matters in reasons a merge of streamed chunks ran together.

    langchain-core joins the string fields of streamed chunks, so a server that
    repeats `finish_reason` in two chunks leaves `"lengthlength"` (or
    `"lengthstop"`); a truncation or refusal inside such a string still counts.

    Examples:
        >>> _joined("lengthlength"), _joined("lengthstop"), _joined("stop")
        ('length', 'length', 'stop')
    """
    if reason in LENGTH_REASONS or reason in REFUSAL_REASONS:
        return reason
    return next((known for known in _TELLING if known in reason), reason)
