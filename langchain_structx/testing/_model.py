"""`ScriptedChatModel`: a real chat model that answers from a script."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Annotated, Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, SkipValidation, field_validator

from langchain_structx._models.chat_model import ToolChoice, ToolLike, WholeReplyChatModel
from langchain_structx.testing._chunks import to_chunks
from langchain_structx.testing._route import implied_profile
from langchain_structx.testing._script import (
    FORMAT_COPY_KEY,
    FORMAT_KEY,
    RecordedCall,
    ScriptedResponse,
    checked_script,
    exhausted_error,
    record_call,
    resolve,
    with_ids,
)

# One lock for every instance: the critical section is a few list operations, and
# keeping the lock off the instance lets `copy.deepcopy` copy a model.
_SCRIPT_LOCK = threading.Lock()


class ScriptedChatModel(WholeReplyChatModel):
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
    needs them stable). Unless `profile` is given, the model reports the route
    its script implies: a script of text replies only takes no tools, so a bare
    schema is asked for in the prompt; a script with a tool call (or a function
    entry, or none) takes tools and `tool_choice` and streams tool calls. Neither
    has native structured output: set `profile` to test that route. A call past
    the end raises `ScriptExhaustedError`. Popping the script and recording the
    call happen under one lock, so concurrent calls each get a distinct entry
    and `calls[i]` is the call that received entry `i`.

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

    ls_provider: ClassVar[str] = "scripted"

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
        return checked_script(value)

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
                if self.profile == implied_profile(self.responses):  # not set by the test
                    self.profile = implied_profile(checked_script(responses))
                self.responses = checked_script(responses)
            self._cursor = 0
            self._calls = []

    def bind_tools(
        self, tools: Sequence[ToolLike], *, tool_choice: ToolChoice = None, **kwargs: Any
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
        if FORMAT_KEY in kwargs:
            kwargs[FORMAT_COPY_KEY] = kwargs[FORMAT_KEY]
        return self.bind(tools=formatted, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "chunk_size": self.chunk_size}

    def _resolve_model_profile(self) -> ModelProfile | None:
        # What the fake does: it takes tools and tool_choice and streams tool-call
        # chunks, but enforces no schema itself. Which route a bare schema takes
        # follows the script (see `_route`), unless a test sets `profile`.
        return implied_profile(self.responses)

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

    def _reply_chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Iterator[AIMessageChunk]:
        return iter(to_chunks(self._reply(messages, stop, kwargs), self.chunk_size))

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
        call = record_call(messages, stop, kwargs)
        with _SCRIPT_LOCK:
            self._calls.append(call)
            number = len(self._calls)
            entry = self._take()
        if entry is None:
            raise exhausted_error(self.model_name, len(self.responses), call, number)
        return with_ids(resolve(entry, call))

    def _take(self) -> ScriptedResponse | None:
        """Pop the next script entry; the caller holds the lock."""
        if self._cursor >= len(self.responses):
            return None
        entry = self.responses[self._cursor]
        self._cursor += 1
        return entry
