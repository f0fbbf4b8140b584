"""Joining a streamed reply's chunks gives the reply langchain-core's own addition gives."""

from __future__ import annotations

import functools
import operator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessageChunk, message_chunk_to_message
from langchain_core.messages.tool import tool_call_chunk

from langchain_structx._engine.chunks import joined


def _stock(chunks: list[AIMessageChunk]) -> Any:
    return message_chunk_to_message(functools.reduce(operator.add, chunks))


def _same(ours: Any, stock: Any) -> bool:
    keys = ("content", "tool_calls", "invalid_tool_calls", "response_metadata", "id")
    return all(getattr(ours, key) == getattr(stock, key) for key in keys)


pieces = st.text(alphabet='{}[]":, abc123', max_size=6)


@st.composite
def replies(draw: Any) -> list[AIMessageChunk]:
    """Chunks as streaming servers send them: headers, argument pieces, text, a last chunk."""
    chunks: list[AIMessageChunk] = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["args", "args", "args", "header", "text"]))
        index = draw(st.sampled_from([0, 0, 1]))
        chunk_id = draw(st.sampled_from(["run-1", "run-1", "run-2"]))
        if kind == "text":
            chunks.append(AIMessageChunk(content=draw(pieces), id=chunk_id))
            continue
        name, call_id = (
            (draw(st.sampled_from(["f", "g"])), f"call_{index}")
            if kind == "header"
            else (None, None)
        )
        part = tool_call_chunk(name=name, args=draw(pieces), id=call_id, index=index)
        chunks.append(AIMessageChunk(content="", id=chunk_id, tool_call_chunks=[part]))
    meta = {"finish_reason": draw(st.sampled_from(["tool_calls", "length"]))}
    chunks.append(AIMessageChunk(content="", id="run-1", response_metadata=meta))
    return chunks


@settings(max_examples=300, deadline=None)
@given(replies())
def test_joined_equals_langchain_cores_addition(chunks: list[AIMessageChunk]) -> None:
    assert _same(joined(chunks), _stock(chunks))


def test_a_long_call_in_small_pieces_is_one_call_with_every_piece() -> None:
    head = tool_call_chunk(name="Doc", args='{"text": "', id="call_1", index=0)
    chunks = [AIMessageChunk(content="", tool_call_chunks=[head])]
    chunks += [
        AIMessageChunk(
            content="", tool_call_chunks=[tool_call_chunk(name=None, args=f"{n % 10}", index=0)]
        )
        for n in range(5_000)
    ]
    chunks.append(
        AIMessageChunk(content="", tool_call_chunks=[tool_call_chunk(args='"}', index=0)])
    )

    reply = joined(chunks)

    assert _same(reply, _stock(chunks))
    assert reply.tool_calls[0]["args"]["text"] == "".join(str(n % 10) for n in range(5_000))
