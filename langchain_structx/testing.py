"""A scripted chat model for testing your own agents and graphs.

`ScriptedChatModel` is a real `BaseChatModel` that answers from a list you give
it instead of calling a provider, much like `httpx.MockTransport` answers HTTP
requests in tests. It works wherever a chat model does: `invoke`, `ainvoke`,
`stream`, `astream`, `batch`, `bind_tools`, `with_structured_output`,
`langchain.agents.create_agent` and LangGraph nodes. Every call is recorded, so a
test can assert on what the graph sent as well as on what it did with the reply.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_structx.testing import ScriptedChatModel, tool_call
    >>> model = ScriptedChatModel(
    ...     responses=[
    ...         AIMessage(content="", tool_calls=[tool_call("add", {"a": 2, "b": 2})]),
    ...         "2 + 2 = 4",
    ...     ]
    ... )
    >>> model.invoke("What is 2 + 2?").tool_calls[0]["args"]
    {'a': 2, 'b': 2}
    >>> model.invoke("And now?").content
    '2 + 2 = 4'
    >>> [call.messages[-1].content for call in model.calls]
    ['What is 2 + 2?', 'And now?']
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Annotated, Any, TypeAlias

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call as _make_tool_call
from langchain_core.messages.tool import tool_call_chunk as _make_tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, SkipValidation, field_validator

from langchain_structx.errors import StructxError

__all__ = (
    "RecordedCall",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedChatModel",
    "ScriptedResponse",
    "tool_call",
)

# `BaseChatModel.stream()` and `generate()` strip this key before `_stream` and
# `_generate` see it, so `bind_tools` also binds a copy under a private name that
# survives, letting `RecordedCall.kwargs` show how structured output was asked for.
_FORMAT_KEY = "ls_structured_output_format"
_FORMAT_COPY_KEY = "_scripted_ls_structured_output_format"

# One lock for every instance: the critical section is a few list operations, and
# keeping the lock off the instance lets `copy.deepcopy` copy a model.
_SCRIPT_LOCK = threading.Lock()

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


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script, for testing agents and graphs.

    Each call takes the next entry of `responses`:

    - an `AIMessage` is returned as scripted (content, tool calls, invalid tool
      calls, `additional_kwargs`, `response_metadata`, `usage_metadata`, id);
    - a `str` is shorthand for `AIMessage(content=...)`;
    - an exception instance is raised, to simulate a provider error;
    - a callable `(messages, call) -> AIMessage | str | Exception` decides at call
      time.

    A reply scripted without an id gets a unique `run-scripted-...` id, and its tool
    calls without ids get ids derived from it (script ids yourself when a test
    needs them stable). Unless `profile` is given, the model reports that it takes
    tools and `tool_choice` and streams tool calls but has no native structured
    output. A call past the end raises `ScriptExhaustedError`. Popping
    the script and recording the call happen under one lock, so concurrent calls
    each get a distinct entry and `calls[i]` is the call that received entry `i`.

    Attributes:
        model_name: The model's identity, reported in tracing parameters.
        responses: The script, one entry per call.
        chunk_size: How many characters each streamed text or argument piece holds.

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_structx.testing import ScriptedChatModel
        >>> model = ScriptedChatModel(
        ...     responses=[
        ...         AIMessage(content="cut off", response_metadata={"finish_reason": "length"}),
        ...         "streamed",
        ...         ValueError("HTTP 400: bad request"),
        ...     ],
        ...     profile={"structured_output": False, "tool_calling": True},
        ... )
        >>> model.invoke("hi").response_metadata
        {'finish_reason': 'length'}
        >>> [chunk.content for chunk in model.stream("hi")]
        ['stre', 'amed', '']
        >>> model.invoke("hi")
        Traceback (most recent call last):
            ...
        ValueError: HTTP 400: bad request
    """

    model_name: str = "scripted"
    """The model's identity, reported as `ls_model_name` and in `_identifying_params`."""

    # Pydantic would try to build an `AIMessage` out of every string (and fail
    # inside LangChain's validators), so entries are only type-checked here.
    responses: Annotated[list[ScriptedResponse], SkipValidation] = Field(default_factory=list)
    """The script: one entry per call, consumed in order."""

    chunk_size: int = Field(default=4, ge=1)
    """Characters per streamed piece of text or tool-call arguments."""

    _cursor: int = PrivateAttr(default=0)
    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)

    @field_validator("responses", mode="before")
    @classmethod
    def _check_script(cls, value: Any) -> list[ScriptedResponse]:
        return _checked_script(value)

    @property
    def calls(self) -> list[RecordedCall]:
        """The calls received so far, oldest first.

        Returns:
            A copy of the recorded calls, including any that failed.

        Examples:
            >>> from langchain_structx.testing import ScriptedChatModel
            >>> model = ScriptedChatModel(responses=["a", "b"])
            >>> _ = model.batch(["one", "two"], config={"max_concurrency": 1})
            >>> [call.messages[0].content for call in model.calls]
            ['one', 'two']
        """
        with _SCRIPT_LOCK:
            return list(self._calls)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet.

        Returns:
            The number of entries left in the script.

        Examples:
            >>> from langchain_structx.testing import ScriptedChatModel
            >>> model = ScriptedChatModel(responses=["a", "b"])
            >>> _ = model.invoke("hi")
            >>> model.remaining
            1
        """
        with _SCRIPT_LOCK:
            return len(self.responses) - self._cursor

    def reset(self, responses: Sequence[ScriptedResponse] | None = None) -> None:
        """Rewind the script and forget recorded calls.

        Args:
            responses: A new script to use; `None` replays the current one.

        Examples:
            >>> from langchain_structx.testing import ScriptedChatModel
            >>> model = ScriptedChatModel(responses=["a"])
            >>> _ = model.invoke("hi")
            >>> model.reset(["b"])
            >>> model.invoke("hi").content, len(model.calls)
            ('b', 1)
        """
        with _SCRIPT_LOCK:
            if responses is not None:
                self.responses = _checked_script(responses)
            self._cursor = 0
            self._calls = []

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way provider chat models do, so calls record them.

        Args:
            tools: Tools as dicts (kept as given), Pydantic models, `TypedDict`s,
                functions or `BaseTool`s (converted to OpenAI format).
            tool_choice: Which tool the model is asked to call, if any.
            **kwargs: Further arguments to bind, such as `response_format`.

        Returns:
            The model bound with `tools`, `tool_choice` and `kwargs`.

        Examples:
            >>> from langchain_structx.testing import ScriptedChatModel
            >>> def add(a: int, b: int) -> int:
            ...     '''Add two numbers.'''
            ...     return a + b
            >>> model = ScriptedChatModel(responses=["ok"])
            >>> _ = model.bind_tools([add], tool_choice="any").invoke("hi")
            >>> call = model.calls[0]
            >>> call.tools[0]["function"]["name"], call.tool_choice
            ('add', 'any')
        """
        formatted = [
            tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in tools
        ]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        if _FORMAT_KEY in kwargs:
            kwargs[_FORMAT_COPY_KEY] = kwargs[_FORMAT_KEY]
        return self.bind(tools=formatted, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "chunk_size": self.chunk_size}

    def _resolve_model_profile(self) -> ModelProfile | None:
        # What the fake really does: it takes tools and tool_choice and streams
        # tool-call chunks, but enforces no schema itself, so agents default to
        # the tool strategy unless a test sets `profile` explicitly.
        return {
            "tool_calling": True,
            "tool_choice": True,
            "tool_call_streaming": True,
            "structured_output": False,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "scripted"
        params["ls_model_name"] = self.model_name
        return params

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(messages, stop, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # No executor hop: serving a reply never blocks, so a thread per call
        # would only add overhead and reorder concurrent callers.
        return self._generate(messages, stop, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # The base class reports each chunk to callbacks itself, so this only yields.
        message = self._reply(messages, stop, kwargs)
        for chunk in _to_chunks(message, self.chunk_size):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop, **kwargs):
            yield chunk

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        """Record the call, take the next script entry and turn it into a reply."""
        call = _record(messages, stop, kwargs)
        with _SCRIPT_LOCK:
            self._calls.append(call)
            number = len(self._calls)
            entry = self._take()
        if entry is None:
            raise _exhausted(self, call, number)
        return _with_ids(_resolve(entry, call))

    def _take(self) -> ScriptedResponse | None:
        """Pop the next script entry; the caller holds the lock."""
        if self._cursor >= len(self.responses):
            return None
        entry = self.responses[self._cursor]
        self._cursor += 1
        return entry


def _checked_script(value: Any) -> list[ScriptedResponse]:
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


def _record(
    messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
) -> RecordedCall:
    """Split the keyword arguments of one call into the fields of a `RecordedCall`."""
    rest = dict(kwargs)
    tools = list(rest.pop("tools", None) or [])
    tool_choice = rest.pop("tool_choice", None)
    response_format = rest.pop("response_format", None)
    if _FORMAT_COPY_KEY in rest:
        rest[_FORMAT_KEY] = rest.pop(_FORMAT_COPY_KEY)
    if stop is not None:
        rest["stop"] = stop
    return RecordedCall(
        messages=list(messages),
        tools=tools,
        tool_choice=tool_choice,
        response_format=response_format,
        kwargs=rest,
    )


def _resolve(entry: ScriptedResponse, call: RecordedCall) -> AIMessage:
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


def _with_ids(message: AIMessage) -> AIMessage:
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


def _pieces(text: str, size: int) -> list[str]:
    """Cut `text` into consecutive pieces of at most `size` characters."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def _tool_call_chunks(message: AIMessage, size: int, first_index: int) -> list[ToolCallChunk]:
    """Stream each tool call as a header chunk followed by its arguments in pieces.

    Indexes start at `first_index`, after the content blocks, the way Anthropic
    numbers them: with `output_version="v1"` LangChain merges streamed blocks by
    index, so a tool call sharing index 0 with the text would be glued onto it.
    """
    raw: list[tuple[str | None, str, str | None]] = [
        (call["name"], json.dumps(call["args"]), call["id"]) for call in message.tool_calls
    ]
    raw += [(call["name"], call["args"] or "", call["id"]) for call in message.invalid_tool_calls]
    chunks: list[ToolCallChunk] = []
    for index, (name, args, call_id) in enumerate(raw, start=first_index):
        chunks.append(_make_tool_call_chunk(name=name, args="", id=call_id, index=index))
        chunks += [
            _make_tool_call_chunk(name=None, args=piece, id=None, index=index)
            for piece in _pieces(args, size)
        ]
    return chunks


def _to_chunks(message: AIMessage, size: int) -> list[AIMessageChunk]:
    """Split a reply into the chunks a streaming provider would send.

    Text arrives in `size`-character pieces (a list of content blocks arrives one
    block per chunk), then tool calls, then a closing chunk with the metadata.
    """
    content = message.content
    text_like = isinstance(content, str)

    def empty() -> str | list[str | dict[Any, Any]]:
        # Every chunk keeps the reply's content type, or merging would mix them.
        return "" if text_like else []

    pieces: list[str | list[str | dict[Any, Any]]] = (
        list(_pieces(content, size)) if isinstance(content, str) else [[block] for block in content]
    )
    chunks = [AIMessageChunk(content=piece, id=message.id) for piece in pieces]
    chunks += [
        AIMessageChunk(content=empty(), tool_call_chunks=[piece], id=message.id)
        for piece in _tool_call_chunks(message, size, first_index=_block_count(content))
    ]
    chunks.append(
        AIMessageChunk(
            content=empty(),
            id=message.id,
            response_metadata=deepcopy(message.response_metadata),
            usage_metadata=deepcopy(message.usage_metadata),
            chunk_position="last",
        )
    )
    # Provider extras such as OpenAI's `refusal` come first, as soon as they are known.
    chunks[0].additional_kwargs = deepcopy(message.additional_kwargs)
    return chunks


def _block_count(content: str | list[str | dict[Any, Any]]) -> int:
    """Count the content blocks a reply's content streams as."""
    if isinstance(content, str):
        return 1 if content else 0
    return len(content)


def _exhausted(model: ScriptedChatModel, call: RecordedCall, number: int) -> ScriptExhaustedError:
    """Build the error for a call past the end, showing what the caller asked for."""
    scripted = len(model.responses)
    noun = "response was" if scripted == 1 else "responses were"
    shown = call.messages[-_SHOWN_MESSAGES:]
    lines = [
        f"ScriptedChatModel {model.model_name!r} has no response left for call "
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
