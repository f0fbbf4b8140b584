"""What the attempt loop does with a failed attempt: feedback, a handler call, or a raise.

The user's `handle_errors` was compiled once into an `ErrorPolicy` when the plan
was built; here it is only applied. Everything in this module is driven by
`_engine.attempt_loop`, which owns the run's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.exceptions import ModelRefusalError
from langchain_core.messages.ai import UsageMetadata

from langchain_structx._clip import clip
from langchain_structx._policy import ErrorPolicy
from langchain_structx._request.plan import Plan
from langchain_structx.errors import (
    AttemptError,
    EarlierAttemptError,
    ErrorHandlerError,
    FailureKind,
    StructuredOutputRetryError,
)
from langchain_structx.strategies import ErrorContext, StrategyName

ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""Default feedback, worded as LangChain words it."""


@dataclass(frozen=True, slots=True)
class Invoke:
    """Step: call a user function, awaiting it if it returns an awaitable.

    Attributes:
        fn: The function.
        args: Its arguments.
        reusable: Its answer is a fact about the world (which engine serves an
            endpoint), the same for every run that asks with equal arguments: a
            driver of many runs at once may ask once and give all of them the answer.
    """

    fn: Any
    args: tuple[Any, ...]
    reusable: bool = False


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt as the policy sees it.

    Attributes:
        plan: The response format's plan.
        strategy: The strategy of the attempt.
        error: What went wrong, created with its attempt and usage.
        earlier: The errors of the run's earlier attempts.
        kinds: The failure kind of every attempt so far, this one included.
        state: Agent or graph state, shown to error handlers.
    """

    plan: Plan
    strategy: StrategyName
    error: AttemptError
    earlier: Sequence[AttemptError]
    kinds: Sequence[str]
    state: Mapping[str, Any]


def feedback(failure: Failure) -> Generator[Invoke, Any, str]:
    """The feedback text for a failed attempt, calling the user's handler if it is one.

    Raises:
        AttemptError: When the policy says not to retry this error, or a
            cut-off answer came twice.
        StructuredOutputRetryError: When the retry budget is spent.
        ErrorHandlerError: When the handler misbehaves.
    """
    error, plan = failure.error, failure.plan
    if _raised_as_it_is(plan.policy, error):
        raise error
    if _out_of_retries(failure):
        raise _exhausted(failure)
    context = ErrorContext(
        error=error,
        attempt=error.attempt,
        max_retries=plan.max_retries,
        ai_message=error.ai_message,
        variant_names=plan.schemas.names,
        kind=error.kind,
        strategy=failure.strategy,
        state=failure.state,
        previous_errors=tuple(failure.earlier),
    )
    decision = _decide(plan.policy, error, context)
    if isinstance(decision, str):
        return clip(decision, plan.limits.max_feedback_chars)
    try:
        result = yield decision
    except StopIteration as exc:
        raise _handler_error(error, "handle_errors raised StopIteration") from exc
    except RuntimeError as exc:
        # A coroutine turns an escaping StopIteration into this RuntimeError.
        if not isinstance(exc.__cause__, StopIteration):
            raise
        raise _handler_error(error, "handle_errors raised StopIteration") from exc.__cause__
    if not isinstance(result, str):
        problem = f"handle_errors must return a str, got {type(result).__name__}"
        raise _handler_error(error, problem) from error
    return clip(result, plan.limits.max_feedback_chars)


def _handler_error(error: AttemptError, problem: str) -> ErrorHandlerError:
    return ErrorHandlerError(
        problem,
        error=error,
        ai_message=error.ai_message,
        attempt=error.attempt,
        usage=error.usage,
    )


def _out_of_retries(failure: Failure) -> bool:
    if failure.error.attempt > failure.plan.max_retries:
        return True
    # A cut-off answer gets one more chance; a second one will not fare better.
    return failure.error.kind == "truncation" and failure.kinds.count("truncation") > 1


def _exhausted(failure: Failure) -> Exception:
    error = failure.error
    if error.kind == "truncation":
        return error
    usage: UsageMetadata | None = error.usage
    return StructuredOutputRetryError(
        [*failure.earlier, error], ai_message=error.ai_message, usage=usage
    )


def _raised_as_it_is(policy: ErrorPolicy, error: AttemptError) -> bool:
    """Whether the compiled `handle_errors` raises `error` at once, on any attempt."""
    if policy.mode == "call":
        return False
    if policy.mode == "raise":
        return True
    # A refusal is an answer, not a mistake: never retried unless named. Being
    # also a `StructuredOutputValidationError`, it would otherwise be retried by
    # the very type a handler ported from LangChain names for wrong answers.
    if error.kind == "refusal":
        return policy.types is None or not any(
            issubclass(named, ModelRefusalError) for named in policy.types
        )
    return policy.types is not None and not isinstance(error, policy.types)


def _decide(policy: ErrorPolicy, error: AttemptError, context: ErrorContext) -> str | Invoke:
    """Apply the compiled `handle_errors` to an error it retries: feedback text or a call."""
    if policy.mode == "call":
        assert policy.handler is not None  # compile_policy sets it for "call"
        args = (error, context) if policy.with_context else (error,)
        return Invoke(policy.handler, args)
    return policy.text if policy.text is not None else ERROR_TEMPLATE.format(error=str(error))


def earlier_errors(progress: Any, known: Sequence[AttemptError]) -> list[AttemptError]:
    """The run's earlier errors: those the shell kept, else rebuilt from the progress.

    A run resumed in another process has only the checkpointed text of its
    earlier errors; they come back as `EarlierAttemptError`s.
    """
    if len(known) == len(progress["errors"]):
        return list(known)
    # The checkpoint keeps each error as `kind: wording`.
    return [
        EarlierAttemptError(
            text.removeprefix(f"{kind}: "), kind=cast("FailureKind", kind), attempt=n
        )
        for n, (text, kind) in enumerate(zip(progress["errors"], progress["kinds"], strict=True), 1)
    ]
