"""The attempt loop: the only place that asks a model for structured output.

The loop is a generator written once. It yields *steps* (`CallModel`, `Invoke`)
and receives their results; a sync driver and an async driver perform the steps.
So the retry, fallback and error-handling logic exists in one copy, and the
middleware and the graph node differ only in how they call the model.

One run may span several graph steps: when a message carries ordinary tool calls
next to the structured attempt, the tools must run before the model is asked
again. `Progress` (a plain dict kept in the state) carries the count across.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from typing_extensions import TypedDict

from langchain_structx import _capabilities as caps
from langchain_structx._clip import clip
from langchain_structx._extract import Failed, Found, interpret
from langchain_structx._plan import CallSpec, Plan
from langchain_structx.errors import (
    AttemptError,
    DialectError,
    ErrorHandlerError,
    ProviderRejectedError,
    StructuredOutputRetryError,
)
from langchain_structx.report import FallbackRecord, StructuredReport, TokenUsage
from langchain_structx.strategies import ErrorContext, ErrorPolicy, StrategyName

ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""Default feedback, worded as LangChain words it."""

REASON_CHARS = 200
"""Longest provider message quoted in a fallback record."""

SEE_ABOVE = "Error: see the message for the first structured call."
"""Feedback for the structured calls of a message past the first `FULL_REPLIES`,
so that thousands of calls do not each cost a full feedback message."""

FULL_REPLIES = 8
"""Structured calls of one message that each get the full feedback, as in LangChain."""


class Progress(TypedDict):
    """Bookkeeping of a run that continues after ordinary tools ran."""

    attempts: int
    errors: list[str]
    kinds: list[str]
    usage: TokenUsage
    fallbacks: list[FallbackRecord]
    repairs: list[str]
    done: bool
    answer_id: str | None


@dataclass(frozen=True, slots=True)
class CallModel:
    """Step: call the model with the request extended by `spec` and `history`."""

    spec: CallSpec
    history: tuple[BaseMessage, ...]
    attempt: int = 1
    offload_chars: int | None = None
    """In async runs, a reply larger than this is read on a worker thread."""


@dataclass(frozen=True, slots=True)
class Invoke:
    """Step: call a user function, awaiting it if it returns an awaitable."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]


Step: TypeAlias = CallModel | Invoke


@dataclass(slots=True)
class RunResult:
    """What a run adds to the state.

    Attributes:
        messages: Messages to append to the conversation.
        value: The validated object, or None when the run is not finished.
        variant: Name of the matched variant.
        report: The finished report, or None.
        progress: Bookkeeping to keep when the run continues after tools.
    """

    messages: list[BaseMessage]
    value: Any = None
    variant: str | None = None
    report: StructuredReport | None = None
    progress: Progress | None = None


@dataclass(slots=True)
class _Run:
    plan: Plan
    state: Mapping[str, Any]
    progress: Progress
    errors: list[AttemptError] = field(default_factory=list)
    history: list[BaseMessage] = field(default_factory=list)

    def count(self, message: AIMessage, *, attempt: bool) -> None:
        # Turns spent calling ordinary tools cost tokens but are not attempts.
        self.progress["attempts"] += attempt
        usage = add_usage(_usage(self.progress["usage"]), message.usage_metadata)
        self.progress["usage"] = _tokens(usage)

    def fallback(self, old: StrategyName, new: StrategyName, error: BaseException) -> None:
        reason = clip(f"{type(error).__name__}: {error}", REASON_CHARS)
        self.progress["fallbacks"].append(
            {"from_strategy": old, "to_strategy": new, "reason": reason}
        )

    def fail(self, error: AttemptError) -> None:
        error.attempt = self.progress["attempts"]
        error.usage = _usage(self.progress["usage"])
        self.errors.append(error)
        limit = self.plan.limits.max_feedback_chars
        self.progress["errors"].append(clip(f"{error.kind}: {error}", limit))
        self.progress["kinds"].append(error.kind)

    def finish(
        self, strategy: StrategyName, found: Found, messages: list[BaseMessage]
    ) -> RunResult:
        limit = self.plan.limits.max_feedback_chars
        self.progress["repairs"].extend(clip(f"{r.kind}: {r.detail}", limit) for r in found.repairs)
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
        return RunResult(
            [*self.history, *messages], found.value, found.variant, report, self.progress
        )

    def pending(self, messages: list[BaseMessage]) -> RunResult:
        return RunResult([*self.history, *messages], progress=self.progress)


def new_progress() -> Progress:
    """Bookkeeping for a fresh run."""
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


def _usage(tokens: TokenUsage) -> UsageMetadata:
    return {
        "input_tokens": tokens["input_tokens"],
        "output_tokens": tokens["output_tokens"],
        "total_tokens": tokens["total_tokens"],
    }


def _tokens(usage: UsageMetadata) -> TokenUsage:
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
    }


def attempt_loop(
    plan: Plan,
    *,
    model: Any,
    state: Mapping[str, Any],
    progress: Progress | None = None,
    memory: caps.FallbackMemory | None = None,
    tools: Sequence[Any] = (),
) -> Generator[Step, Any, RunResult]:
    """Ask for structured output until it validates, retries run out, or tools must run.

    Args:
        plan: The response format's plan.
        model: The chat model (for capabilities and identity only; never called here).
        state: Agent or graph state, shown to error handlers.
        progress: Bookkeeping carried over from an earlier step of the same run.
        memory: Where the agent or node remembers rejected strategies; None
            remembers nothing beyond this run.
        tools: The caller's own tools (some models cannot combine them with
            native structured output).

    Yields:
        Steps for the driver to perform.

    Returns:
        What to add to the state.

    Raises:
        UserError: When a user tool is named like a variant.
    """
    plan.check_tools(tools)
    memory = memory if memory is not None else caps.FallbackMemory()
    user_tools = caps.tool_names(tools)
    run = _Run(plan, state, progress or new_progress())
    order = plan.candidates
    if plan.auto:
        order = caps.auto_order(model, plan.candidates, memory, tools)
    native = caps.model_dialect(model)
    outcomes: list[tuple[StrategyName, str]] = []  # failed attempts, for quality fallback
    while True:
        strategy = order[0]
        try:
            dialect = plan.strict_dialect(native)
            spec = plan.call_spec(strategy, dialect=dialect, native=native, alone=not user_tools)
        except DialectError as exc:
            # The schema does not fit the provider's strict mode: ask another way.
            order = _fall_back(run, order, exc)
            continue
        step = CallModel(
            spec, tuple(run.history), run.progress["attempts"] + 1, plan.limits.offload_chars
        )
        try:
            message = yield step
        except Exception as exc:
            if not (plan.auto and caps.is_rejection(exc, strategy, user_tools)):
                raise
            _remember(plan, memory, model, strategy, exc, user_tools)
            order = _fall_back(run, order, exc)
            continue
        seen = interpret(plan, spec, message)
        run.count(message, attempt=seen.outcome is not None)
        if seen.outcome is None:
            return run.pending([message])
        if isinstance(seen.outcome, Found):
            return run.finish(strategy, seen.outcome, _success(plan, message, seen.outcome))
        feedback = yield from _feedback(run, strategy, seen.outcome)
        replies = _feedback_messages(seen.outcome, feedback)
        if seen.ordinary_calls:
            return run.pending([message, *replies])
        outcomes.append((strategy, seen.outcome.error.kind))
        if plan.auto and caps.give_up_route(memory, model, strategy, outcomes, len(order) - 1):
            order = _fall_back(run, order, seen.outcome.error)
            run.history.clear()  # the next route starts afresh, not from this one's feedback
            continue
        run.history.extend([message, *replies])


def _remember(
    plan: Plan,
    memory: caps.FallbackMemory,
    model: Any,
    strategy: StrategyName,
    error: Exception,
    user_tools: frozenset[str],
) -> None:
    ours = plan.tool_names | {plan.output_name()}
    if caps.is_lasting(error, ours, user_tools):
        memory.remember(caps.model_identity(model), strategy)


def _fall_back(
    run: _Run, order: tuple[StrategyName, ...], error: Exception
) -> tuple[StrategyName, ...]:
    """Drop the failed strategy, or raise when no other may be tried."""
    if not run.plan.auto or len(order) == 1:
        if isinstance(error, DialectError):
            raise error
        raise ProviderRejectedError(order[0], error) from error
    run.fallback(order[0], order[1], error)
    return order[1:]


def _success(plan: Plan, message: AIMessage, found: Found) -> list[BaseMessage]:
    if found.call_id is None:
        return [message]
    content = plan.tool_message_content or (
        f"Returning structured response: {render(found.value, plan.limits.max_feedback_chars)}"
    )
    reply = ToolMessage(content=content, tool_call_id=found.call_id, name=found.variant)
    return [message, reply]


def render(value: Any, limit: int) -> str:
    """`str(value)` cut to `limit`, or the type's name when it cannot be rendered.

    A valid answer must never be lost to its own rendering: a deeply nested
    value can exhaust the recursion limit of `repr`.

    Examples:
        >>> render({"a": 1}, 100)
        "{'a': 1}"
    """
    try:
        return clip(str(value), limit)
    except Exception:  # noqa: BLE001 - any failure to render falls back to the type
        return f"<{type(value).__name__}>"


def _feedback_messages(failed: Failed, feedback: str) -> list[BaseMessage]:
    if failed.call_ids:
        return [
            ToolMessage(
                content=feedback if n < FULL_REPLIES else SEE_ABOVE,
                tool_call_id=call_id,
                name=name,
                status="error",
            )
            for n, (call_id, name) in enumerate(failed.call_ids)
        ]
    return [HumanMessage(content=feedback)]


def _feedback(run: _Run, strategy: StrategyName, failed: Failed) -> Generator[Step, Any, str]:
    error = failed.error
    run.fail(error)
    if _out_of_retries(run, error):
        raise _exhausted(run, error)
    context = ErrorContext(
        error=error,
        attempt=run.progress["attempts"],
        max_retries=run.plan.max_retries,
        ai_message=error.ai_message if hasattr(error, "ai_message") else None,
        variant_names=run.plan.schemas.names,
        kind=error.kind,
        strategy=strategy,
        state=run.state,
        previous_errors=tuple(run.errors[:-1]),
    )
    decision = _decide(run.plan.policy, error, context)
    if isinstance(decision, str):
        return clip(decision, run.plan.limits.max_feedback_chars)
    try:
        result = yield decision
    except StopIteration as exc:
        raise _handler_error(run, error, "handle_errors raised StopIteration") from exc
    except RuntimeError as exc:
        # A coroutine turns an escaping StopIteration into this RuntimeError.
        if not isinstance(exc.__cause__, StopIteration):
            raise
        stop = exc.__cause__
        raise _handler_error(run, error, "handle_errors raised StopIteration") from stop
    if not isinstance(result, str):
        problem = f"handle_errors must return a str, got {type(result).__name__}"
        raise _handler_error(run, error, problem) from error
    return clip(result, run.plan.limits.max_feedback_chars)


def _handler_error(run: _Run, error: AttemptError, problem: str) -> ErrorHandlerError:
    return ErrorHandlerError(
        problem,
        error=error,
        ai_message=getattr(error, "ai_message", None),
        attempt=run.progress["attempts"],
        usage=_usage(run.progress["usage"]),
    )


def _out_of_retries(run: _Run, error: AttemptError) -> bool:
    if run.progress["attempts"] > run.plan.max_retries:
        return True
    # A cut-off answer gets one more chance; a second one will not fare better.
    return error.kind == "truncation" and run.progress["kinds"].count("truncation") > 1


def _exhausted(run: _Run, error: AttemptError) -> Exception:
    if error.kind == "truncation":
        return error
    return StructuredOutputRetryError(
        run.errors,
        ai_message=getattr(error, "ai_message", None),
        usage=_usage(run.progress["usage"]),
    )


def _decide(policy: ErrorPolicy, error: AttemptError, context: ErrorContext) -> str | Invoke:
    """Turn the compiled `handle_errors` into feedback text, a call to make, or a raise."""
    if policy.mode == "raise":
        raise error
    if policy.mode == "call":
        assert policy.handler is not None  # compile_policy sets it for "call"
        args = (error, context) if policy.with_context else (error,)
        return Invoke(policy.handler, args)
    if policy.types is not None and not isinstance(error, policy.types):
        raise error
    if policy.types is None and error.kind == "refusal":
        raise error  # a refusal is an answer, not a mistake: never retried by default
    return policy.text if policy.text is not None else ERROR_TEMPLATE.format(error=str(error))


def with_history(messages: Sequence[BaseMessage], step: CallModel) -> list[BaseMessage]:
    """The conversation for one call: the caller's messages, then this run's retries."""
    return [*messages, *step.history]
