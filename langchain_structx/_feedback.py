"""What the attempt loop does with a failed attempt: feedback, a handler call, or a raise.

The user's `handle_errors` was compiled once into an `ErrorPolicy` when the plan
was built; here it is only applied. Everything in this module is driven by
`_engine.attempt_loop`, which owns the run's bookkeeping.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.exceptions import ModelRefusalError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata

from langchain_structx._clip import NAME_CHARS, clip
from langchain_structx._integers import fits_bits
from langchain_structx._match import Failed, Found
from langchain_structx._plan import Plan
from langchain_structx._policy import ErrorPolicy
from langchain_structx.errors import (
    AttemptError,
    EarlierAttemptError,
    ErrorHandlerError,
    FailureKind,
    StructuredOutputRetryError,
)
from langchain_structx.limits import Limits
from langchain_structx.strategies import ErrorContext, StrategyName

ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""Default feedback, worded as LangChain words it."""

SEE_ABOVE = "Error: see the message for the first structured call."
"""Feedback for the structured calls of a message past the first `FULL_REPLIES`,
so that thousands of calls do not each cost a full feedback message."""

FULL_REPLIES = 8
"""Structured calls of one message that each get the full feedback, as in LangChain."""

NO_SUCH_TOOL = "Error: {name} is not a valid tool here; answer with the structured output only."
"""The answer to a call of a tool the caller does not have, beside a structured call."""

# A call name every provider takes back in a history: OpenAI's and Anthropic's
# tool-name charset, narrowed as Gemini's reference narrows it (a leading letter
# or underscore). Another name goes back as `UNNAMED`; the feedback quotes it.
_PORTABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
UNNAMED = "invalid_tool_name"
"""The name a call to no declared tool goes back under when its own would be refused."""


@dataclass(frozen=True, slots=True)
class Invoke:
    """Step: call a user function, awaiting it if it returns an awaitable."""

    fn: Any
    args: tuple[Any, ...]


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


def replies(failed: Failed, text: str, declared: frozenset[str]) -> list[BaseMessage]:
    """The messages that carry `text` back to the model: a tool answer per call, or a turn.

    Calls to tools the caller does not have, beside the ones that carry `text`,
    are each told so. Each answer names its call as `resendable` sends it back.
    """
    if not failed.call_ids:
        return [HumanMessage(content=text, id=_new_id())]
    answers = [
        (call_id, name, text if n < FULL_REPLIES else SEE_ABOVE)
        for n, (call_id, name) in enumerate(failed.call_ids)
    ]
    answers += [
        (call_id, name, NO_SUCH_TOOL.format(name=clip(name, NAME_CHARS)))
        for call_id, name in failed.stray_ids
    ]
    # Ids are set here, so a run can later tell its own messages in the state.
    return [
        ToolMessage(
            content=content,
            tool_call_id=call_id,
            name=_sendable(name, declared),
            status="error",
            id=_new_id(),
        )
        for call_id, name, content in answers
    ]


def resendable(message: AIMessage, limits: Limits, declared: frozenset[str]) -> AIMessage:
    """`message` as a client can send it back, with the feedback, for the next attempt.

    Some clients parse NaN or an infinity in a reply's tool-call arguments but
    refuse to serialise one (Anthropic's SDK), so the failed reply would break
    the retry; an integer wider than `limits.max_integer_bits` would break the
    checkpoint that stores it. Such numbers go back as null; the feedback names
    them. A call to none of the `declared` tools whose name a provider would
    refuse in a history (empty, too long, or with other characters; Gemini
    documents the rule) goes back as `UNNAMED`, like the tool message that
    answers it.
    """
    message = portable(message, declared)
    calls = message.tool_calls
    fixed = [{**call, "args": _storable_copy(call["args"], limits)} for call in calls]
    if all(new["args"] is old["args"] for new, old in zip(fixed, calls, strict=True)):
        return message
    return message.model_copy(update={"tool_calls": fixed})


def portable(message: AIMessage, declared: frozenset[str]) -> AIMessage:
    """`message` with each call to none of the `declared` tools named as any provider takes it.

    A reply that goes on to the caller's tool node keeps its calls, but one to a
    tool nobody declared, under a name a provider would refuse in a history, is
    renamed `UNNAMED`: the tool node answers it as an invalid tool under that name,
    and the next request still goes through.
    """
    calls = message.tool_calls
    if all(_sendable(call["name"], declared) == call["name"] for call in calls):
        return message
    fixed = [{**call, "name": _sendable(call["name"], declared)} for call in calls]
    return message.model_copy(update={"tool_calls": fixed})


def _sendable(name: str, declared: frozenset[str]) -> str:
    """`name`, or `UNNAMED` for a tool nobody declared whose name a provider could refuse.

    Examples:
        >>> _sendable("lookup", frozenset()), _sendable("no such tool", frozenset())
        ('lookup', 'invalid_tool_name')
        >>> _sendable("9lives", frozenset({"9lives"}))
        '9lives'
    """
    return name if name in declared or _PORTABLE_NAME.fullmatch(name) else UNNAMED


def _storable_copy(value: Any, limits: Limits) -> Any:
    """`value` with NaN, infinities and too wide integers as None; `value` itself without any.

    Containers nested deeper than `limits.max_depth` become None too, so the copy
    is bounded whatever the value (even one that contains itself).

    Examples:
        >>> _storable_copy({"a": [1.5, float("nan"), 2**64], "b": "NaN"}, Limits())
        {'a': [1.5, None, None], 'b': 'NaN'}
    """
    if not _holds_unstorable(value, limits):
        return value
    if not isinstance(value, _CONTAINERS):
        return None
    root: Any = {} if isinstance(value, dict) else [None] * len(value)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        for key, item in source.items() if isinstance(source, dict) else enumerate(source):
            if _unstorable(item, limits.max_integer_bits):
                item = None
            elif isinstance(item, _CONTAINERS):
                copy: Any = {} if isinstance(item, dict) else [None] * len(item)
                if depth < limits.max_depth:
                    stack.append((item, copy, depth + 1))
                item = copy if depth < limits.max_depth else None
            target[key] = item
    return root


def _holds_unstorable(value: Any, limits: Limits) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if _unstorable(node, limits.max_integer_bits):
            return True
        if isinstance(node, _CONTAINERS):
            if depth >= limits.max_depth:
                return True  # cut off in the copy
            stack.extend((item, depth + 1) for item in _values(node))
    return False


def _unstorable(item: Any, bits: int) -> bool:
    """A NaN or an infinity, or an integer wider than `bits`."""
    if isinstance(item, float):
        return not math.isfinite(item)
    return isinstance(item, int) and not fits_bits(item, bits)


def _values(node: Any) -> Any:
    return node.values() if isinstance(node, dict) else node


_CONTAINERS = (dict, list, tuple)


def _new_id() -> str:
    return f"structx-{uuid.uuid4().hex}"


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


def answered(plan: Plan, message: AIMessage, found: Found) -> list[BaseMessage]:
    """The messages of a valid answer: the reply, and the answer to its structured call."""
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
        text = str(value)
    except Exception:  # noqa: BLE001 - any failure to render falls back to the type
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else clip(text, limit)


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
