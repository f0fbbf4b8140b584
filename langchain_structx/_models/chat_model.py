"""What the package's two chat models share with each other.

The embedded model and the scripted test model both make each reply whole before
LangChain sees it, accept `bind_tools` arguments in LangChain's forms, and name a
provider in tracing parameters. This module holds that common part once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeAlias

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool

ToolLike: TypeAlias = "dict[str, Any] | type | Callable[..., Any] | BaseTool"
"""A tool as `bind_tools` accepts it: an OpenAI-format dict, a class, a function or a tool."""

ToolChoice: TypeAlias = "str | dict[str, Any] | bool | None"
"""Which tool the model must call: a name, `"auto"`, `"any"`/`"required"`, `"none"`,
an OpenAI-format choice dict, True (the only tool) or None (the model decides)."""


class WholeReplyChatModel(BaseChatModel):
    """A chat model whose subclass makes a reply, or its chunks, in one method each.

    Subclasses implement `_reply` and `_reply_chunks`, set `ls_provider` and name
    the model as `model_name` in `_identifying_params`; this class turns them into
    LangChain's `_generate`, `_stream` and tracing parameters.
    """

    ls_provider: ClassVar[str]
    """The provider name reported to tracing as `ls_provider`."""

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        """Make the whole reply to `messages`."""
        raise NotImplementedError

    def _reply_chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Iterator[AIMessageChunk]:
        """Make the reply to `messages` as the chunks a streaming caller sees."""
        raise NotImplementedError

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self.ls_provider
        # A per-call `model` is what the caller asked for, so traces name it.
        params["ls_model_name"] = str(kwargs.get("model") or self._identifying_params["model_name"])
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

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # LangChain reports each chunk to the callbacks itself, so this only yields.
        for chunk in self._reply_chunks(messages, stop, kwargs):
            yield ChatGenerationChunk(message=chunk)


__all__ = ("ToolChoice", "ToolLike", "WholeReplyChatModel")
