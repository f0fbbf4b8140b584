"""A run's bookkeeping between graph steps: a plain dict kept in the state.

One run may span several graph steps (see `_engine`). `Progress` carries what the
next step needs: the attempt count, the errors so far, usage, fallbacks and the
messages the run added. It is plain data, so any checkpointer can store it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired

from langchain_core.messages.ai import UsageMetadata
from typing_extensions import TypedDict

from langchain_structx.report import FallbackRecord, TokenUsage


class Progress(TypedDict):
    """Bookkeeping of a run that spans several model-node steps.

    A plain dict, so it checkpoints anywhere: a run resumed from a checkpoint
    keeps its attempt count, retry budget, usage and fallbacks.
    """

    attempts: int
    errors: list[str]
    kinds: list[str]
    usage: TokenUsage
    fallbacks: list[FallbackRecord]
    repairs: list[str]
    done: bool
    answer_id: str | None
    dropped: NotRequired[list[str]]
    """Strategies this run fell back from, in order."""
    retry: NotRequired[bool]
    """Whether the last step ended with feedback and the model must be asked again."""
    run_id: NotRequired[str]
    """Names the run, so a shell can keep its error objects between steps."""
    routes: NotRequired[list[str]]
    """The strategy of each failed attempt (beside `kinds`), for the quality fallback."""
    added: NotRequired[list[str]]
    """Ids of the messages this run has added to the conversation."""
    hidden: NotRequired[list[str]]
    """Ids of the messages of routes given up: kept in the state, not shown again."""
    suspects: NotRequired[list[str]]
    """Routes given up in this run, remembered for the model once another answers."""
    turn_over: NotRequired[bool]
    """Whether the run's turn has ended: its answer left no ordinary tool calls to
    run, or they ran and the model step after them ended the turn. A model step
    after that starts a new run, even with no new message."""
    last_id: NotRequired[str | None]
    """Id of the last message the run added: a run goes on while only tool results follow it."""
    without_json_mode: NotRequired[bool]
    """Whether the provider refused JSON mode, so the prompted route asks without it."""
    unforced: NotRequired[bool]
    """Whether the provider refused a forced tool choice, so the tool route leaves
    the choice to the model."""
    deferred: NotRequired[str]
    """Key of a failure to raise at the next step, once this step has cleared the state."""
    deferred_error: NotRequired[dict[str, Any]]
    """That failure as another process rebuilds it: its class, wording and plain fields."""


def new_progress() -> Progress:
    """Bookkeeping for a fresh run.

    The optional keys are added when first needed: a run that answers at once,
    the common case, makes and checkpoints no empty list for them.
    """
    return {
        "attempts": 0,
        "errors": [],
        "kinds": [],
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        "fallbacks": [],
        "repairs": [],
        "done": False,
        "answer_id": None,
    }


def as_usage(tokens: TokenUsage) -> UsageMetadata:
    """Checkpointed token counts as LangChain's usage type."""
    return {
        "input_tokens": tokens["input_tokens"],
        "output_tokens": tokens["output_tokens"],
        "total_tokens": tokens["total_tokens"],
    }


def as_tokens(usage: UsageMetadata) -> TokenUsage:
    """LangChain's usage type as the counts a checkpoint keeps."""
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
    }


MAX_TOKENS = 2**63 - 1
"""Largest token count kept: the largest integer a checkpoint stores (msgpack's int64)."""


def add_tokens(tokens: TokenUsage, reported: Mapping[str, Any]) -> TokenUsage:
    """`tokens` plus the counts a reply reports, as a checkpoint can keep them.

    A count that is not a whole number of at least 0 (a client's or a hostile
    server's oddity) adds nothing, and a sum stops at `MAX_TOKENS`.

    Examples:
        >>> add_tokens({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ...            {"input_tokens": 4, "output_tokens": "5", "total_tokens": 2**64})
        {'input_tokens': 5, 'output_tokens': 2, 'total_tokens': 9223372036854775807}
    """

    def add(key: str, count: int) -> int:
        value = reported.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return min(count + value, MAX_TOKENS)
        return count

    return {
        "input_tokens": add("input_tokens", tokens["input_tokens"]),
        "output_tokens": add("output_tokens", tokens["output_tokens"]),
        "total_tokens": add("total_tokens", tokens["total_tokens"]),
    }
