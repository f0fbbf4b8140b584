"""A scripted reply cut into the chunks a streaming provider would send."""

from __future__ import annotations

import json
from copy import deepcopy
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, ToolCallChunk
from langchain_core.messages.tool import tool_call_chunk as _make_tool_call_chunk


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


def to_chunks(message: AIMessage, size: int) -> list[AIMessageChunk]:
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
