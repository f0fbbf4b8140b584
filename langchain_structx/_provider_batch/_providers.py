"""Which batch API serves a chat model: OpenAI's Batch API or Anthropic's Message Batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_structx._exceptions import UserError
from langchain_structx._provider_batch._wire import Provider


def provider_of(chat: Any) -> tuple[str, Callable[..., Provider]]:
    """The name and batch API of a chat model's provider.

    Raises:
        UserError: For a model whose provider has no batch API here.
    """
    names = {base.__name__ for base in type(chat).__mro__}
    if "BaseChatOpenAI" in names:
        from langchain_structx._provider_batch._openai import OpenAIBatches

        return "openai", OpenAIBatches
    if "ChatAnthropic" in names:
        from langchain_structx._provider_batch._anthropic import AnthropicBatches

        return "anthropic", AnthropicBatches
    raise UserError(
        f"provider batches work with ChatOpenAI and ChatAnthropic models, not {type(chat).__name__}"
    )
