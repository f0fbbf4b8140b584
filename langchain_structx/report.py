"""The report that comes with every structured response.

It lives in the agent or graph state under `structured_output_report`, next to
`structured_response` and `structured_response_kind`. It is a plain dict so that
it survives any checkpointer and serialiser.

Examples:
    >>> report: StructuredReport = {
    ...     "strategy": "tool", "variant": "Contact", "attempts": 1, "repairs": [],
    ...     "fallbacks": [], "errors": [],
    ...     "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    ... }
    >>> report["strategy"]
    'tool'
"""

from __future__ import annotations

from typing_extensions import TypedDict

RESPONSE_KEY = "structured_response"
"""State key of the validated object, as in LangChain."""
KIND_KEY = "structured_response_kind"
"""State key of the name of the variant the response matched."""
REPORT_KEY = "structured_output_report"
"""State key of the `StructuredReport`."""
ERROR_KEY = "structured_output_error"
"""Output key of the served extraction graph's error, when a run found no valid object."""


class TokenUsage(TypedDict):
    """Tokens summed over every model call of the run."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


class FallbackRecord(TypedDict):
    """One change of strategy after the provider rejected a request.

    From `prompted` to `prompted` means the same prompt without JSON mode, which
    the provider refused (`AutoStrategy(json_mode=True)`).
    """

    from_strategy: str
    to_strategy: str
    reason: str


class StructuredReport(TypedDict):
    """How a structured response was obtained.

    Attributes:
        strategy: The strategy that produced the response.
        variant: Name of the variant the response matched.
        attempts: Model calls spent on structured output.
        repairs: Each local repair or coercion, as `kind: detail`.
        fallbacks: Strategy changes taken after rejections.
        errors: The error of each failed attempt, as `kind: message`.
        usage: Tokens summed over those calls.
    """

    strategy: str
    variant: str
    attempts: int
    repairs: list[str]
    fallbacks: list[FallbackRecord]
    errors: list[str]
    usage: TokenUsage


__all__ = (
    "ERROR_KEY",
    "FallbackRecord",
    "KIND_KEY",
    "REPORT_KEY",
    "RESPONSE_KEY",
    "StructuredReport",
    "TokenUsage",
)
