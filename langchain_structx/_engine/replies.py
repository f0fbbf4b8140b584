"""The messages a run adds to the conversation, shaped so any provider takes them back.

A valid answer's reply and the tool message that answers its structured call;
the feedback that goes back after a failed attempt (a tool answer per call, or a
user turn); and a failed reply made sendable again: calls under names a provider
would refuse renamed, numbers a client or a checkpoint cannot store nulled.
"""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_structx._clip import NAME_CHARS, clip
from langchain_structx._engine.match import Failed, Found
from langchain_structx._request.plan import Plan
from langchain_structx._validation.integers import fits_bits
from langchain_structx.limits import Limits

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
    checkpoint that stores it; no client can send text holding a lone surrogate.
    Such values go back as null; the feedback names them. A call to none of the
    `declared` tools whose name a provider would refuse in a history (empty, too
    long, or with other characters; Gemini documents the rule) goes back as
    `UNNAMED`, like the tool message that answers it.
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
    """A NaN or an infinity, an integer wider than `bits`, or text with a lone surrogate.

    Examples:
        >>> _unstorable(chr(0xD800), 64), _unstorable("é", 64), _unstorable(2**70, 64)
        (True, False, True)
    """
    if isinstance(item, str):
        return not item.isascii() and _lone_surrogate(item)
    if isinstance(item, float):
        return not math.isfinite(item)
    return isinstance(item, int) and not fits_bits(item, bits)


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _values(node: Any) -> Any:
    return node.values() if isinstance(node, dict) else node


_CONTAINERS = (dict, list, tuple)


def _new_id() -> str:
    return f"structx-{uuid.uuid4().hex}"


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
