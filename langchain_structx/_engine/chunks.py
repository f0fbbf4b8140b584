"""The chunks of one streamed reply, joined into the reply in time linear in its size.

langchain-core joins tool-call chunks by appending each one's arguments to the
text so far, a copy per chunk: a long call streamed in small pieces costs time
quadratic in its length. Runs of chunks that only carry more of one call's
arguments are joined here first, as one string, and the few chunks left are then
added as langchain-core adds them, so the reply is the one it would build.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, AIMessageChunk, message_chunk_to_message
from langchain_core.messages.tool import tool_call_chunk

from langchain_structx._engine.stops import CUT_REASON
from langchain_structx._parsing.partial_json import MIN_STEP


class Reply:
    """The chunks of one streamed reply, and when the reply so far is due to be joined.

    Args:
        limit: The most text and argument characters kept (`max_reply_chars`).
    """

    def __init__(self, limit: int) -> None:
        self.chunks: list[AIMessageChunk] = []
        self._limit = limit
        self._size = 0
        self._next_join = 0

    def add(self, chunk: AIMessageChunk) -> bool:
        """Keep `chunk` and count its text and argument characters.

        Returns:
            False once the reply holds more than the limit: the stream is to be
            left there, and the reply is `cut()`.
        """
        self.chunks.append(chunk)
        text = chunk.content if isinstance(chunk.content, str) else str(chunk.content)
        self._size += len(text) + sum(len(c.get("args") or "") for c in chunk.tool_call_chunks)
        return self._size <= self._limit

    def cut(self) -> AIMessage:
        """The reply so far, ended with the stop reason `CUT_REASON` (read as a cut-off)."""
        message = joined(self.chunks)
        metadata = {**message.response_metadata, "finish_reason": CUT_REASON}
        return message.model_copy(update={"response_metadata": metadata})

    def due(self) -> bool:
        """Whether the reply has grown by half (and `MIN_STEP`) since the last join."""
        if self._size < self._next_join:
            return False
        self._next_join = self._size + max(MIN_STEP, self._size // 2)
        return True


def joined(chunks: list[AIMessageChunk]) -> AIMessage:
    """The reply the chunks make, as langchain-core's addition of them makes it.

    Examples:
        >>> parts = [tool_call_chunk(name="f", args='{"a": ', id="1", index=0)]
        >>> parts += [tool_call_chunk(name=None, args=piece, id=None, index=0) for piece in "12}"]
        >>> reply = joined([AIMessageChunk(content="", tool_call_chunks=[p]) for p in parts])
        >>> reply.tool_calls[0]["args"]
        {'a': 12}
    """
    chunks = _runs_joined(chunks)
    if not chunks:
        return AIMessage(content="")
    # One addition of the whole list: langchain-core then merges once per chunk.
    merged = chunks[0] + chunks[1:] if len(chunks) > 1 else chunks[0]
    message = message_chunk_to_message(merged)
    return message if isinstance(message, AIMessage) else AIMessage(content=message.content)


def _runs_joined(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    """`chunks` with each run of bare argument chunks of one call made one chunk."""
    out: list[AIMessageChunk] = []
    run: list[str] = []
    run_index: int | None = None
    for chunk in chunks:
        index = _bare_index(chunk)
        if index is not None and index == run_index and chunk.id == out[-1].id:
            run.append(chunk.tool_call_chunks[0]["args"] or "")
            continue
        _close(out, run, run_index)
        out.append(chunk)
        run = [] if index is None else [chunk.tool_call_chunks[0]["args"] or ""]
        run_index = index
    _close(out, run, run_index)
    return out


def _close(out: list[AIMessageChunk], run: list[str], index: int | None) -> None:
    """Replace the run's first chunk, the last in `out`, by one that holds the whole run."""
    if index is None or len(run) < 2:
        return
    first = out[-1]
    empty: str | list[str | dict[str, object]] = "" if isinstance(first.content, str) else []
    part = tool_call_chunk(name=None, args="".join(run), id=None, index=index)
    # Built without validation: it would read the arguments as partial JSON, which
    # the addition that follows does once for the whole reply anyway.
    out[-1] = AIMessageChunk.model_construct(content=empty, id=first.id, tool_call_chunks=[part])


def _bare_index(chunk: AIMessageChunk) -> int | None:
    """The call index of a chunk that carries nothing but more of one call's arguments."""
    if (
        len(chunk.tool_call_chunks) != 1
        or chunk.content
        or chunk.additional_kwargs
        or chunk.response_metadata
        or chunk.usage_metadata
        or chunk.chunk_position is not None
    ):
        return None
    part = chunk.tool_call_chunks[0]
    index = part.get("index")
    if part.get("name") is not None or part.get("id") is not None or not isinstance(index, int):
        return None
    return index if isinstance(part.get("args"), str) else None
