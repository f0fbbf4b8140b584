"""What a script entry is, and how a call and an entry become a recorded call and a reply."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.messages.tool import tool_call as _make_tool_call

from langchain_structx.errors import StructxError

# `BaseChatModel.stream()` and `generate()` strip this key before `_stream` and
# `_generate` see it, so `bind_tools` also binds a copy under a private name that
# survives, letting `RecordedCall.kwargs` show how structured output was asked for.
FORMAT_KEY = "ls_structured_output_format"
FORMAT_COPY_KEY = "_scripted_ls_structured_output_format"

# How much of the conversation a `ScriptExhaustedError` shows.
_SHOWN_MESSAGES = 3
_SHOWN_CHARS = 200


@dataclass(frozen=True)
class RecordedCall:
    """One call the model received, as the model saw it.

    Attributes:
        messages: The messages sent to the model, in order.
        tools: Bound tools in OpenAI format, `[]` if none were bound.
        tool_choice: The bound `tool_choice`, `None` if none was given.
        response_format: The bound `response_format` (provider-native structured
            output), `None` if none was given.
        kwargs: Every other bound or call-time keyword argument, such as `stop` or
            `ls_structured_output_format`.

    Examples:
        >>> from langchain_structx.testing import ScriptedChatModel
        >>> model = ScriptedChatModel(responses=["ok"])
        >>> _ = model.bind(response_format={"type": "json_object"}).invoke("hi", stop=["!"])
        >>> call = model.calls[0]
        >>> call.response_format, call.kwargs, call.tools
        ({'type': 'json_object'}, {'stop': ['!']}, [])
    """

    messages: list[BaseMessage]
    tools: list[dict[str, Any]]
    tool_choice: Any
    response_format: Any
    kwargs: dict[str, Any]


ScriptFunction: TypeAlias = Callable[[list[BaseMessage], RecordedCall], AIMessage | str | Exception]
"""A dynamic script entry: given the messages and the recorded call, it returns the reply."""

ScriptedResponse: TypeAlias = AIMessage | str | Exception | ScriptFunction
"""One entry of a script: a reply, plain text, an exception to raise, or a function."""


class ScriptExhaustedError(StructxError, RuntimeError):
    """The model was called more times than it has scripted responses.

    Attributes:
        scripted: How many responses the script held in total.
        call: The call that found the script empty.

    Examples:
        >>> from langchain_structx.testing import ScriptedChatModel, ScriptExhaustedError
        >>> model = ScriptedChatModel(responses=["only one"])
        >>> _ = model.invoke("first")
        >>> try:
        ...     model.invoke("second")
        ... except ScriptExhaustedError as error:
        ...     print(error.scripted, error.call.messages[-1].content)
        1 second
    """

    def __init__(self, message: str, *, scripted: int, call: RecordedCall) -> None:
        super().__init__(message)
        self.scripted = scripted
        self.call = call


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> ToolCall:
    """Build a tool call for a scripted `AIMessage`.

    Leave `id` out to let the model fill in a unique one when the reply is served.

    Args:
        name: The tool's name.
        args: The tool's arguments; `{}` if omitted.
        id: The tool call id, or `None` for a generated one.

    Returns:
        A LangChain `ToolCall` dict.

    Examples:
        >>> from langchain_structx.testing import tool_call
        >>> tool_call("search", {"query": "weather"}, id="call_1")
        {'name': 'search', 'args': {'query': 'weather'}, 'id': 'call_1', 'type': 'tool_call'}
    """
    return _make_tool_call(name=name, args=args or {}, id=id)


def checked_script(value: Any) -> list[ScriptedResponse]:
    """Copy a script into a list, rejecting entries that could never be served."""
    if isinstance(value, (str, AIMessage)) or not isinstance(value, Sequence):
        msg = f"responses must be a sequence of script entries, not {type(value).__name__}"
        raise TypeError(msg)
    for position, entry in enumerate(value):
        if not isinstance(entry, (AIMessage, str, Exception)) and not callable(entry):
            msg = (
                f"responses[{position}] has type {type(entry).__name__}; expected an AIMessage, "
                "a str, an exception instance or a callable"
            )
            raise TypeError(msg)
    return list(value)


def record_call(
    messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
) -> RecordedCall:
    """Split the keyword arguments of one call into the fields of a `RecordedCall`."""
    rest = dict(kwargs)
    tools = list(rest.pop("tools", None) or [])
    tool_choice = rest.pop("tool_choice", None)
    response_format = rest.pop("response_format", None)
    if FORMAT_COPY_KEY in rest:
        rest[FORMAT_KEY] = rest.pop(FORMAT_COPY_KEY)
    if stop is not None:
        rest["stop"] = stop
    return RecordedCall(
        messages=list(messages),
        tools=tools,
        tool_choice=tool_choice,
        response_format=response_format,
        kwargs=rest,
    )


def resolve(entry: ScriptedResponse, call: RecordedCall) -> AIMessage:
    """Turn one script entry into the reply, raising it if it is an exception."""
    if not isinstance(entry, (AIMessage, str, Exception)):
        entry = entry(list(call.messages), call)
    if isinstance(entry, Exception):
        raise entry
    if isinstance(entry, str):
        return AIMessage(content=entry)
    if isinstance(entry, AIMessage):
        return entry
    msg = (
        f"A script function must return an AIMessage, str or Exception, not {type(entry).__name__}"
    )
    raise TypeError(msg)


def with_ids(message: AIMessage) -> AIMessage:
    """Copy the reply, filling in a message id and tool call ids where missing.

    Copying keeps the script untouched, so one scripted message can be served twice.
    """
    message_id = message.id or f"run-scripted-{uuid.uuid4().hex}"
    tool_calls = [
        {**call, "id": call["id"] or f"call-{message_id}-{index}"}
        for index, call in enumerate(message.tool_calls)
    ]
    offset = len(tool_calls)
    invalid_tool_calls = [
        {**call, "id": call["id"] or f"call-{message_id}-{offset + index}"}
        for index, call in enumerate(message.invalid_tool_calls)
    ]
    return message.model_copy(
        deep=True,
        update={
            "id": message_id,
            "tool_calls": tool_calls,
            "invalid_tool_calls": invalid_tool_calls,
        },
    )


def exhausted_error(
    model_name: str, scripted: int, call: RecordedCall, number: int
) -> ScriptExhaustedError:
    """Build the error for call `number`, past the end of a script of `scripted` entries."""
    noun = "response was" if scripted == 1 else "responses were"
    shown = call.messages[-_SHOWN_MESSAGES:]
    lines = [
        f"ScriptedChatModel {model_name!r} has no response left for call "
        f"#{number}: {scripted} {noun} scripted and all have been used.",
        f"The call received {len(call.messages)} message(s); the last {len(shown)}:",
        *(f"  {_describe(message)}" for message in shown),
    ]
    if call.tools:
        names = ", ".join(_tool_name(tool) for tool in call.tools)
        lines.append(f"Tools bound: {names}")
    lines.append("Script another response, or check why the model was called again.")
    return ScriptExhaustedError("\n".join(lines), scripted=scripted, call=call)


def _describe(message: BaseMessage) -> str:
    """Render one message on one line for an error report."""
    label = message.type
    if isinstance(message, ToolMessage):
        label = f"tool {message.name or message.tool_call_id}"
    text = f"[{label}] {_shorten(message.text)!r}"
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(
            f"{call['name']}({json.dumps(call['args'])})" for call in message.tool_calls
        )
        text += f" tool_calls: {_shorten(calls)}"
    return text


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, dict) and "name" in function:
        return str(function["name"])
    return str(tool.get("name") or tool.get("type") or "?")
