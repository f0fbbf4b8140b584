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

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from typing_extensions import TypedDict

from langchain_structx import _capabilities as caps
from langchain_structx._extract import Failed, Found, interpret
from langchain_structx._plan import CallSpec, Plan
from langchain_structx.errors import (
    AttemptError,
    DialectError,
    ProviderRejectedError,
    StructuredOutputRetryError,
)
from langchain_structx.report import FallbackRecord, StructuredReport, TokenUsage
from langchain_structx.strategies import ErrorContext, StrategyName

ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""Default feedback, worded as LangChain words it."""


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
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        self.progress["fallbacks"].append(
            {"from_strategy": old, "to_strategy": new, "reason": reason}
        )

    def fail(self, error: AttemptError) -> None:
        error.attempt = self.progress["attempts"]
        error.usage = _usage(self.progress["usage"])
        self.errors.append(error)
        self.progress["errors"].append(f"{error.kind}: {error}")
        self.progress["kinds"].append(error.kind)

    def finish(
        self, strategy: StrategyName, found: Found, messages: list[BaseMessage]
    ) -> RunResult:
        self.progress["repairs"].extend(f"{r.kind}: {r.detail}" for r in found.repairs)
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
    memory: caps.FallbackMemory = caps.FALLBACKS,
    tools: Sequence[Any] = (),
) -> Generator[Step, Any, RunResult]:
    """Ask for structured output until it validates, retries run out, or tools must run.

    Args:
        plan: The response format's plan.
        model: The chat model (for capabilities and identity only; never called here).
        state: Agent or graph state, shown to error handlers.
        progress: Bookkeeping carried over from an earlier step of the same run.
        memory: Where rejected strategies are remembered.
        tools: The caller's own tools (some models cannot combine them with
            native structured output).

    Yields:
        Steps for the driver to perform.

    Returns:
        What to add to the state.
    """
    run = _Run(plan, state, progress or new_progress())
    order = plan.candidates
    if plan.auto:
        order = caps.auto_order(model, plan.candidates, memory, tools)
    dialect = plan.strict_dialect(caps.model_dialect(model))
    while True:
        strategy = order[0]
        try:
            spec = plan.call_spec(strategy, dialect=dialect)
        except DialectError as exc:
            # The schema does not fit the provider's strict mode: ask another way.
            order = _fall_back(run, order, exc)
            continue
        try:
            message = yield CallModel(spec, tuple(run.history), run.progress["attempts"] + 1)
        except Exception as exc:
            if not (plan.auto and caps.is_rejection(exc, strategy)):
                raise
            memory.remember(caps.model_identity(model), strategy)
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
        run.history.extend([message, *replies])


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
    content = plan.tool_message_content or f"Returning structured response: {found.value}"
    reply = ToolMessage(content=content, tool_call_id=found.call_id, name=found.variant)
    return [message, reply]


def _feedback_messages(failed: Failed, feedback: str) -> list[BaseMessage]:
    if failed.call_ids:
        return [
            ToolMessage(content=feedback, tool_call_id=call_id, name=name)
            for call_id, name in failed.call_ids
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
    decision = _decide(run.plan.handle_errors, error, context)
    if isinstance(decision, str):
        return decision
    result = yield decision
    if not isinstance(result, str):
        raise TypeError(f"handle_errors must return a str, got {type(result).__name__}")
    return result


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


def _decide(handle_errors: Any, error: AttemptError, context: ErrorContext) -> str | Invoke:
    """Turn the user's `handle_errors` into feedback text, a call to make, or a raise."""
    default = ERROR_TEMPLATE.format(error=str(error))
    if handle_errors is False:
        raise error
    if error.kind == "refusal" and (handle_errors is True or isinstance(handle_errors, str)):
        raise error  # a refusal is an answer, not a mistake: never retried by default
    if handle_errors is True:
        return default
    if isinstance(handle_errors, str):
        return handle_errors
    if isinstance(handle_errors, type) or isinstance(handle_errors, tuple):
        if isinstance(error, handle_errors):
            return default
        raise error
    if _takes_context(handle_errors):
        return Invoke(handle_errors, (error, context))
    return Invoke(handle_errors, (error,))


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


ModelCaller: TypeAlias = Callable[[CallModel], AIMessage]
AsyncModelCaller: TypeAlias = Callable[[CallModel], Awaitable[AIMessage]]


def drive(loop: Generator[Step, Any, RunResult], call_model: ModelCaller) -> RunResult:
    """Run the loop synchronously."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = loop.throw(error) if error is not None else loop.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = call_model(step) if isinstance(step, CallModel) else _invoke_sync(step)
        except StopIteration as exc:
            # Thrown into a generator it would turn into a RuntimeError; keep it as is.
            raise exc
        except Exception as exc:
            error = exc


async def adrive(loop: Generator[Step, Any, RunResult], call_model: AsyncModelCaller) -> RunResult:
    """Run the loop asynchronously."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = loop.throw(error) if error is not None else loop.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            if isinstance(step, CallModel):
                send = await call_model(step)
            else:
                send = step.fn(*step.args)
                if inspect.isawaitable(send):
                    send = await send
        except StopIteration as exc:
            # Thrown into a generator it would turn into a RuntimeError; keep it as is.
            raise exc
        except Exception as exc:
            error = exc


def _invoke_sync(step: Invoke) -> Any:
    result = step.fn(*step.args)
    if not inspect.isawaitable(result):
        return result
    # An async handler in a sync run: finish it on a private loop in its own
    # thread, which works whether or not this thread already runs a loop.
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(_await(result))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner, name="structx-handle-errors")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def with_history(messages: Sequence[BaseMessage], step: CallModel) -> list[BaseMessage]:
    """The conversation for one call: the caller's messages, then this run's retries."""
    return [*messages, *step.history]
