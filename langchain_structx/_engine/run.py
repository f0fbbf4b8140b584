"""One run of the attempt loop: the steps it yields, and what it adds to the state.

`Run` keeps a run's bookkeeping (attempts, errors, usage, repairs, the messages
it added) in its `Progress`; which strategy it asks with, and what it drops on
the way, is `StrategyChoice`'s (`_engine.choice`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata, add_usage

from langchain_structx._clip import clip
from langchain_structx._engine import feedback as _feedback
from langchain_structx._engine.feedback import Invoke
from langchain_structx._engine.match import Found
from langchain_structx._engine.progress import Progress, add_tokens, as_usage
from langchain_structx._request.plan import CallSpec, Plan
from langchain_structx.errors import AttemptError
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import StrategyName


@dataclass(slots=True)
class CallModel:
    """Step: call the model with the request extended by `spec` and `history`."""

    spec: CallSpec
    history: tuple[BaseMessage, ...]
    attempt: int = 1
    offload_chars: int | None = None
    """In async runs, a reply larger than this is read on a worker thread."""
    hidden: frozenset[str] = frozenset()
    """Ids of earlier messages not to show the model (routes given up)."""


Step: TypeAlias = CallModel | Invoke


@dataclass(slots=True)
class RunResult:
    """What a run adds to the state.

    Attributes:
        messages: Messages to append to the conversation.
        value: The validated object, or None when the run is not finished.
        variant: Name of the matched variant.
        report: The finished report, or None.
        progress: Bookkeeping to keep when the run continues in a later step.
        errors: The error of every failed attempt so far.
    """

    messages: list[BaseMessage]
    value: Any = None
    variant: str | None = None
    report: StructuredReport | None = None
    progress: Progress | None = None
    errors: tuple[AttemptError, ...] = ()

    @property
    def retry(self) -> bool:
        """Whether the model must be asked again, in the next step of the graph."""
        return bool(self.progress and self.progress.get("retry"))


@dataclass(slots=True)
class Run:
    """One run of the attempt loop: its plan, bookkeeping, errors and history.

    The strategy it asks with is not here: `StrategyChoice` owns that.
    """

    plan: Plan
    state: Mapping[str, Any]
    progress: Progress
    errors: list[AttemptError]
    history: list[BaseMessage] = field(default_factory=list)

    def add_usage(self, message: AIMessage) -> UsageMetadata:
        reported = message.usage_metadata
        if reported is None or not isinstance(reported, Mapping):
            return as_usage(self.progress["usage"])
        earlier = as_usage(self.progress["usage"])
        self.progress["usage"] = add_tokens(self.progress["usage"], reported)
        counts = as_usage(self.progress["usage"])
        try:  # LangChain's sum keeps the details (cached tokens, reasoning)
            return {**add_usage(earlier, reported), **counts}
        except (TypeError, ValueError, AttributeError):  # details it cannot add up
            return counts

    def fail(self, strategy: StrategyName, error: AttemptError) -> _feedback.Failure:
        failure = _feedback.Failure(
            self.plan, strategy, error, tuple(self.errors), self.progress["kinds"], self.state
        )
        self.errors.append(error)
        limit = self.plan.limits.max_feedback_chars
        self.progress["errors"].append(clip(f"{error.kind}: {error}", limit))
        self.progress["kinds"].append(error.kind)
        self.progress.setdefault("routes", []).append(strategy)
        return failure

    def finish(
        self, strategy: StrategyName, found: Found, messages: list[BaseMessage]
    ) -> RunResult:
        if found.repairs:
            limit = self.plan.limits.max_feedback_chars
            self.progress["repairs"].extend(
                clip(f"{r.kind}: {r.detail}", limit) for r in found.repairs
            )
        report: StructuredReport = {
            "strategy": strategy,
            "variant": found.variant,
            "attempts": self.progress["attempts"],
            "repairs": list(self.progress["repairs"]),
            "fallbacks": list(self.progress["fallbacks"]),
            "errors": list(self.progress["errors"]),
            "usage": self.progress["usage"],
        }
        self.progress["done"] = True
        self.progress["answer_id"] = messages[0].id
        # Ordinary calls beside the answer run before the turn ends; else it ends here.
        calls = getattr(messages[0], "tool_calls", None) or ()
        self.progress["turn_over"] = not calls or (
            len(calls) == 1 and found.call_id is not None and calls[0].get("id") == found.call_id
        )
        return RunResult(
            [*self.history, *messages],
            found.value,
            found.variant,
            report,
            self.progress,
            tuple(self.errors),
        )

    def pending(
        self,
        messages: list[BaseMessage],
        *,
        retry: bool = False,
        hide: bool = False,
        shown: bool = False,
    ) -> RunResult:
        """The run goes on in a later step; `hide` the route it leaves, except what is `shown`.

        A turn that calls the caller's tools is `shown` for good: their results,
        which the tool node adds, answer its calls, and a call must never be hidden
        from a provider while its result is sent.
        """
        self.progress["retry"] = retry
        # A run that goes on in a later step is named, so the shell can keep its errors.
        self.progress.setdefault("run_id", uuid.uuid4().hex)
        ids = [m.id for m in messages if m.id]
        added = self.progress.setdefault("added", [])
        if not shown:
            added.extend(ids)
        self.progress["last_id"] = messages[-1].id
        if hide:
            self.progress.setdefault("hidden", []).extend(added)
        return RunResult(
            [*self.history, *messages], progress=self.progress, errors=tuple(self.errors)
        )
