"""The attempt loop: the only place that asks a model for structured output.

The loop is a generator written once. It yields *steps* (`CallModel`, `Invoke`)
and receives their results; a sync driver and an async driver perform the steps.
So the retry, fallback and error-handling logic exists in one copy, and the
middleware and the graph node differ only in how they call the model.

One run may span several graph steps: when a message carries ordinary tool calls
next to the structured attempt, the tools must run before the model is asked
again; and an agent asks again after a failed attempt in its next model step, so
that every attempt passes LangChain's middleware. `Progress` (a plain dict kept
in the state) carries the count, budget, usage and fallbacks across.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata, add_usage

from langchain_structx import _capabilities as caps
from langchain_structx import _constraints, _decide, _fallback, _feedback
from langchain_structx._clip import clip
from langchain_structx._engines import Engine
from langchain_structx._feedback import Invoke
from langchain_structx._interpret import interpret
from langchain_structx._match import Found
from langchain_structx._plan import CallSpec, Plan
from langchain_structx._progress import Progress, add_tokens, as_usage, new_progress
from langchain_structx.errors import AttemptError, DialectError
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import StrategyName

REASON_CHARS = 200
"""Longest provider message quoted in a fallback record."""


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

_SHOWN: frozenset[str] = frozenset()


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
class _Run:
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

    def fallback(self, old: StrategyName, new: StrategyName, error: BaseException) -> None:
        reason = clip(f"{type(error).__name__}: {error}", REASON_CHARS)
        self.progress["fallbacks"].append(
            {"from_strategy": old, "to_strategy": new, "reason": reason}
        )
        if old == new:
            # The same route without what the provider refused: JSON mode, or
            # forcing the tool choice.
            self.progress["without_json_mode" if old == "prompted" else "unforced"] = True
        else:
            self.progress.setdefault("dropped", []).append(old)

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


def _spec(
    plan: Plan,
    route: _decide.Route,
    strategy: StrategyName,
    progress: Progress,
    engine: Engine | None,
) -> CallSpec:
    """What `strategy` sends: on a known engine's provider route, the engine's own field."""
    if engine is not None and strategy == "provider":
        return _constraints.spec(plan, engine, route.model)
    return route.spec(
        plan,
        strategy,
        json_mode=not progress.get("without_json_mode", False),
        unforced=progress.get("unforced", False),
    )


def attempt_loop(
    plan: Plan,
    *,
    model: Any,
    state: Mapping[str, Any],
    progress: Progress | None = None,
    memory: caps.FallbackMemory | None = None,
    tools: Sequence[Any] = (),
    one_call: bool = False,
    earlier: Sequence[AttemptError] = (),
    runs_tools: bool = True,
) -> Generator[Step, Any, RunResult]:
    """Ask for structured output until it validates, retries run out, or tools must run.

    Args:
        plan: The response format's plan.
        model: The chat model, for capabilities and identity only (never called
            here); a configurable one is built for them as the call will build it.
        state: Agent or graph state, shown to error handlers.
        progress: Bookkeeping carried over from an earlier step of the same run.
        memory: Where the agent or node remembers rejected strategies; None
            remembers nothing beyond this run.
        tools: The caller's own tools (some models cannot combine them with
            native structured output).
        one_call: Make at most one attempt: after a failure, return the feedback
            with `retry` set, so the shell asks again in its next graph step
            (where every other middleware sees the call).
        earlier: The error objects of this run's earlier steps, if the shell kept them.
        runs_tools: Whether the shell runs the model's calls to `tools` (an
            agent does). Calls that name none of them, and any call in a shell
            that runs none (a node, the runnable), are failed attempts, each
            call answered, so the run always ends with an answer or an error.

    Yields:
        Steps for the driver to perform.

    Returns:
        What to add to the state.

    Raises:
        UserError: When a user tool is named like a variant.
    """
    route = _decide.route(plan, model, tools)
    model, user_tools, declared = route.model, route.user_tools, route.declared
    memory = memory if memory is not None else caps.FallbackMemory()
    # The state's dict is never changed in place: the run works on its own copy.
    progress = copy.deepcopy(progress) if progress else new_progress()
    progress["retry"] = False
    _fallback.recall_settings(plan, progress, memory, model)
    run = _Run(plan, state, progress, _feedback.earlier_errors(progress, earlier))
    engine = yield from _constraints.engine_for(model, memory)
    order = _fallback.initial_order(plan, route, memory, tools, progress, engine)
    while True:
        strategy = order[0]
        try:
            spec = _spec(plan, route, strategy, progress, engine)
        except DialectError as exc:
            # The schema does not fit the provider's strict mode: ask another way.
            order = _fallback.fall_back(run, order, exc)
            continue
        step = CallModel(
            spec,
            tuple(run.history),
            run.progress["attempts"] + 1,
            plan.limits.offload_chars,
            frozenset(hidden) if (hidden := progress.get("hidden")) else _SHOWN,
        )
        try:
            message = yield step
        except Exception as exc:
            order = _fallback.after_rejection(run, order, spec, exc, memory, route)
            continue
        usage = run.add_usage(message)
        attempt = run.progress["attempts"] + 1
        runs = user_tools if runs_tools else None
        seen = interpret(plan, spec, message, attempt=attempt, usage=usage, runs=runs)
        if seen.outcome is None:
            # Turns spent calling ordinary tools cost tokens but are not attempts.
            return run.pending([_feedback.portable(message, declared)], shown=True)
        run.progress["attempts"] = attempt
        if isinstance(seen.outcome, Found):
            _constraints.judge(plan, engine, strategy, None, memory, model, len(order) - 1)
            if progress.get("suspects"):
                _fallback.confirm_suspects(plan, progress, memory, model)
            message = _feedback.portable(message, declared) if seen.ordinary_calls else message
            return run.finish(
                strategy, seen.outcome, _feedback.answered(plan, message, seen.outcome)
            )
        text = yield from _feedback.feedback(run.fail(strategy, seen.outcome.error))
        sent = _feedback.resendable(message, plan.limits, declared)
        replies = _feedback.replies(seen.outcome, text, declared)
        if seen.ordinary_calls:
            return run.pending([sent, *replies], shown=True)
        # A broken route (not a wrong answer) is left for the next strategy, which
        # starts afresh, without this route's attempts and feedback in view.
        kind = seen.outcome.error.kind
        ignored = _constraints.judge(plan, engine, strategy, kind, memory, model, len(order) - 1)
        broken = ignored is not None or _fallback.leaves_route(run, order)
        if broken:
            order = _fallback.fall_back(run, order, ignored or seen.outcome.error)
        if one_call:
            return run.pending([sent, *replies], retry=True, hide=broken)
        run.history = [] if broken else [*run.history, sent, *replies]
