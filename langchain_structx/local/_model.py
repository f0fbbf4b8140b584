"""`LocalChatModel`: a LangChain chat model running llama.cpp in this process."""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCallChunk
from langchain_core.messages.ai import UsageMetadata
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from langchain_structx._models.chat_model import ToolChoice, ToolLike, WholeReplyChatModel
from langchain_structx.local._context import typed_chunks, typed_overflow
from langchain_structx.local._definitions import refers_to_itself
from langchain_structx.local._grammar import (
    OutputConstraint,
    check_shape,
    checked_json,
    constrain_output,
)
from langchain_structx.local._guidance import SchemaMask, compiled, matcher_for
from langchain_structx.local._messages import (
    encodable,
    message_for,
    to_llama_messages,
    with_shape,
    with_tools,
)
from langchain_structx.local._vocab import tokenizer_for
from langchain_structx.local._weights import DEFAULT_WEIGHTS, ensure_weights, validate_gguf


@dataclass
class _Loaded:
    """One llama.cpp model, the lock that serialises its use, and its tokenizer."""

    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    tokenizer: Any = None
    """llguidance's tokenizer for this vocabulary, built on the first constrained call."""


_CACHE: dict[tuple[str, int, int, str | None], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    # Free models while llama_cpp's module globals still exist; left to __del__
    # at interpreter shutdown, llama.cpp's cleanup fails with a TypeError.
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.llama.close()
        _CACHE.clear()


def _load(path: Path, n_ctx: int, n_threads: int, chat_format: str | None) -> _Loaded:
    """Load a model once per process and configuration; later calls share it."""
    key = (str(path), n_ctx, n_threads, chat_format)
    with _CACHE_LOCK:
        loaded = _CACHE.get(key)
        if loaded is None:
            from llama_cpp import Llama

            llama = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                chat_format=chat_format,
                verbose=False,
            )
            loaded = _CACHE[key] = _Loaded(llama)
    return loaded


def _constraint(loaded: _Loaded, grammar: str) -> list[Any]:
    """The logits processors that hold one request to `grammar` (call under the lock)."""
    if loaded.tokenizer is None:
        loaded.tokenizer = tokenizer_for(loaded.llama)
    matcher = matcher_for(loaded.tokenizer, grammar)
    return [SchemaMask(matcher, loaded.tokenizer.vocab_size)]


def _arguments(tool: ToolLike) -> dict[str, Any] | None:
    """The JSON schema of `tool`'s arguments with its references, where it has one."""
    source: Any = tool
    if isinstance(tool, BaseTool):
        if isinstance(tool.args_schema, dict):
            return tool.args_schema
        source = tool.tool_call_schema
    if isinstance(source, type) and issubclass(source, BaseModel):
        return source.model_json_schema()
    return None


def _openai_tool(tool: ToolLike) -> dict[str, Any]:
    """`tool` as an OpenAI function definition.

    LangChain's conversion inlines references and cuts a recursive schema short
    (`"items": {}`), after which the decoder no longer holds the answer's shape.
    A tool whose arguments refer to themselves (a Pydantic model such as a tree, a
    tool taking one, or a JSON schema like the structured-output tools of a
    recursive model) keeps its schema with the references: the decoder reads
    them (see `_definitions`).
    """
    schema = _arguments(tool)
    if schema is not None:
        check_shape(schema)  # before LangChain's conversion walks it
    converted = convert_to_openai_tool(tool)
    if schema is not None and refers_to_itself(schema):
        converted["function"]["parameters"] = schema
    return converted


class LocalChatModel(WholeReplyChatModel):
    """Chat model running a GGUF model with llama.cpp inside this process.

    The weights load lazily on first use and are shared by every instance with the
    same path, context size and thread count. Tool calls and JSON output are
    held to their schema while the model writes them (llguidance), not left to the
    chat template.

    Examples:
        >>> from langchain_structx.local import LocalChatModel
        >>> model = LocalChatModel(max_tokens=64)
        >>> model.invoke("Say hi").content  # doctest: +SKIP
        'Hi! How can I help you today?'
    """

    ls_provider: ClassVar[str] = "llamacpp"

    model_path: str | Path | None = None
    """A GGUF file; `None` uses the packaged Qwen2.5-Coder-0.5B-Instruct weights."""
    n_ctx: int = 4096
    """Context window in tokens (prompt plus completion)."""
    n_threads: int | None = None
    """CPU threads; `None` uses every core (llama.cpp itself would use one)."""
    temperature: float = 0.0
    """Sampling temperature; 0 makes extraction reproducible."""
    max_tokens: int = 512
    """Upper bound on generated tokens per call."""
    seed: int | None = None
    """Sampling seed, for reproducible output at temperature > 0."""
    chat_format: str | None = None
    """A llama-cpp-python chat format; `None` uses the template in the GGUF file."""
    stop: list[str] | None = Field(default=None)
    """Extra stop sequences."""

    @property
    def _llm_type(self) -> str:
        return "langchain-structx-local"

    @property
    def model_name(self) -> str:
        """Stable identity such as `local:qwen2.5-coder-0.5b-instruct-q4_k_m`."""
        if self.model_path is None:
            return f"local:{DEFAULT_WEIGHTS.model_id}"
        return f"local:{Path(self.model_path).stem.lower()}"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "n_ctx": self.n_ctx, "max_tokens": self.max_tokens}

    def _resolve_model_profile(self) -> ModelProfile | None:
        return ModelProfile(
            max_input_tokens=self.n_ctx,
            max_output_tokens=self.n_ctx,
            text_inputs=True,
            text_outputs=True,
            open_weights=True,
            tool_calling=True,
            tool_choice=True,
            tool_call_streaming=True,
            structured_output=True,
            temperature=True,
        )

    def load(self) -> Any:
        """Load (or reuse) the underlying `llama_cpp.Llama` and return it.

        Returns:
            The shared `Llama` object; use it only while holding no other request.
        """
        return self._loaded().llama

    def _loaded(self) -> _Loaded:
        path = ensure_weights() if self.model_path is None else validate_gguf(self.model_path)
        threads = self.n_threads or os.cpu_count() or 1
        return _load(path, self.n_ctx, threads, self.chat_format)

    def bind_tools(
        self, tools: Sequence[ToolLike], *, tool_choice: ToolChoice = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools, optionally forcing a call.

        Args:
            tools: Tools as LangChain tools, functions, pydantic models or dicts.
            tool_choice: `"auto"`/`None` (model decides; best effort on small models),
                `"none"`, `"any"`/`"required"` (the decoder forces one call to some tool),
                a tool name or `{"type": "function", "function": {"name": ...}}`
                (the decoder forces that tool).
            **kwargs: Passed on to `bind`.

        Returns:
            A runnable that calls this model with the tools.

        Examples:
            >>> def add(a: int, b: int) -> int:
            ...     '''Add two numbers.'''
            ...     return a + b
            >>> bound = LocalChatModel().bind_tools([add], tool_choice="add")
        """
        formatted = [_openai_tool(tool) for tool in tools]
        constrain_output(formatted, tool_choice, None)  # Fail on a bad choice now, not later.
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _request(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[OutputConstraint, dict[str, Any]]:
        constraint = checked_json(
            constrain_output(
                kwargs.get("tools"), kwargs.get("tool_choice"), kwargs.get("response_format")
            )
        )
        prompt = to_llama_messages(messages, nudge=constraint.mode != "forced_tool")
        if constraint.mode in ("forced_tool", "auto_tool"):
            with_tools(prompt, constraint.tools, forced=constraint.mode == "forced_tool")
        elif constraint.schema is not None:
            with_shape(prompt, kwargs.get("response_format"), constraint.schema)
        request: dict[str, Any] = {
            "messages": encodable(prompt),
            "temperature": kwargs.get("temperature", self.temperature),
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
            "stop": [*(self.stop or []), *(stop or [])],
        }
        seed = kwargs.get("seed", self.seed)
        if seed is not None:
            request["seed"] = seed
        if constraint.schema is not None:
            request["json_grammar"] = compiled(constraint.schema)
        return constraint, request

    def _complete(self, loaded: _Loaded, request: dict[str, Any], stream: bool) -> Any:
        grammar = request.pop("json_grammar", None)
        if grammar is not None:
            request["logits_processor"] = _constraint(loaded, grammar)
        # Counting the prompt first would mean rendering the chat template twice:
        # llama-cpp-python's own check is exact, so its error is given a type.
        with typed_overflow():
            response = loaded.llama.create_chat_completion(stream=stream, **request)
        return typed_chunks(response) if stream else response

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        constraint, request = self._request(messages, stop, kwargs)
        loaded = self._loaded()
        with loaded.lock:
            response = self._complete(loaded, request, stream=False)
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        message, finish = message_for(constraint, text, choice.get("finish_reason") or "stop")
        usage = response.get("usage") or {}
        message.usage_metadata = UsageMetadata(
            input_tokens=usage.get("prompt_tokens", 0),
            output_tokens=usage.get("completion_tokens", 0),
            total_tokens=usage.get("total_tokens", 0),
        )
        message.response_metadata = {"finish_reason": finish, "model_name": self.model_name}
        return message

    def _reply_chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Iterator[AIMessageChunk]:
        constraint, request = self._request(messages, stop, kwargs)
        if constraint.mode in ("forced_tool", "auto_tool"):
            # A call is only known once complete: generate it whole, emit one chunk.
            yield self._tool_chunk(self._reply(messages, stop, kwargs))
            return
        loaded = self._loaded()
        finish, produced = "stop", 0
        with loaded.lock:
            for part in self._complete(loaded, request, stream=True):
                choice = part["choices"][0]
                finish = choice.get("finish_reason") or finish
                piece = choice["delta"].get("content")
                if piece:
                    produced += 1  # llama.cpp streams about one token per chunk.
                    yield AIMessageChunk(content=piece)
            # n_tokens counts prompt plus generated tokens held in the context.
            total = max(int(loaded.llama.n_tokens), produced)
        yield self._final_chunk(finish, total - produced, produced)

    def _final_chunk(self, finish: str, prompt: int, produced: int) -> AIMessageChunk:
        usage = UsageMetadata(
            input_tokens=prompt, output_tokens=produced, total_tokens=prompt + produced
        )
        return AIMessageChunk(
            content="",
            usage_metadata=usage,
            response_metadata={"finish_reason": finish, "model_name": self.model_name},
            chunk_position="last",
        )

    @staticmethod
    def _tool_chunk(message: AIMessage) -> AIMessageChunk:
        chunks = [
            ToolCallChunk(
                name=c["name"],
                args=json.dumps(c["args"]),
                id=c["id"],
                index=i,
                type="tool_call_chunk",
            )
            for i, c in enumerate(message.tool_calls)
        ]
        # Invalid calls are passed as such: as raw chunks, LangChain would repair the
        # truncated JSON into a plausible but wrong call.
        return AIMessageChunk(
            content=message.content,
            tool_call_chunks=chunks,
            invalid_tool_calls=message.invalid_tool_calls,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
            chunk_position="last",
        )
