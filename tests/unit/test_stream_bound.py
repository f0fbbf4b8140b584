"""A streamed reply is read no further than `Limits.max_reply_chars`.

A server that never ends its reply (a loop in the model, a hostile endpoint)
must not make the runnable keep every chunk: past the bound the stream is left
and its connection closed, and the attempt is a cut-off answer, retried once
with feedback and then raised as `TruncatedOutputError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from pydantic import BaseModel

from langchain_structx import Limits, PromptedStrategy, ToolStrategy, with_structured_output
from langchain_structx.errors import TruncatedOutputError
from langchain_structx.testing import ScriptedChatModel, tool_call

LIMIT = 2_000
PIECE = 100
NEVER = 5_000_000
"""Characters after which the test model gives up: only code that never stops reads this far."""


class Doc(BaseModel):
    title: str


class EndlessChatModel(ScriptedChatModel):
    """The scripted model, whose replies numbered in `endless` go on streaming forever."""

    endless: frozenset[int] = frozenset()
    pulled: list[int] = []
    closed: list[int] = []

    def _reply_chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Iterator[AIMessageChunk]:
        chunks = list(super()._reply_chunks(messages, stop, kwargs))
        if len(self.calls) not in self.endless:
            return iter(chunks)
        return self._forever(chunks[:-1], as_call=bool(chunks[0].tool_call_chunks))

    def _forever(self, start: list[AIMessageChunk], *, as_call: bool) -> Iterator[AIMessageChunk]:
        number = len(self.calls)
        self.pulled.append(0)
        try:
            yield from start
            while self.pulled[-1] < NEVER:
                self.pulled[-1] += PIECE
                if as_call:
                    piece = tool_call_chunk(name=None, args="x" * PIECE, id=None, index=0)
                    yield AIMessageChunk(content="", tool_call_chunks=[piece])
                else:
                    yield AIMessageChunk(content="y" * PIECE)
            raise AssertionError("the stream was read far past max_reply_chars")
        finally:
            self.closed.append(number)


def _model(replies: list[AIMessage], endless: set[int]) -> EndlessChatModel:
    return EndlessChatModel(responses=replies, endless=frozenset(endless), pulled=[], closed=[])


def _streamed(runnable: Any, mode: str) -> list[Any]:
    if mode == "async":

        async def collect() -> list[Any]:
            return [chunk async for chunk in runnable.astream("Title it.")]

        return asyncio.run(collect())
    return list(runnable.stream("Title it."))


CALL = AIMessage("", tool_calls=[tool_call("Doc", {"title": "A long title"})])
TEXT = AIMessage('{"title": "A long title"}')
SHORT = {
    "tool": AIMessage("", tool_calls=[tool_call("Doc", {"title": "Short"})]),
    "prompted": AIMessage('{"title": "Short"}'),
}
STRATEGIES = {"tool": (ToolStrategy, CALL), "prompted": (PromptedStrategy, TEXT)}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("strategy", ["tool", "prompted"])
def test_an_endless_reply_is_left_at_the_bound_and_asked_again(strategy: str, mode: str) -> None:
    make, endless_reply = STRATEGIES[strategy]
    model = _model([endless_reply, SHORT[strategy]], endless={1})
    runnable = with_structured_output(model, make(Doc, limits=Limits(max_reply_chars=LIMIT)))

    chunks = _streamed(runnable, mode)

    assert chunks[-1] == Doc(title="Short")
    # Read up to the chunk that crossed the bound, then the stream was closed.
    assert LIMIT <= model.pulled[0] <= LIMIT + PIECE
    assert model.closed == [1]
    feedback = model.calls[1].messages[-1].text
    assert f"cut off after {LIMIT} characters" in feedback


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("strategy", ["tool", "prompted"])
def test_a_reply_cut_at_the_bound_twice_is_a_truncated_output_error(
    strategy: str, mode: str
) -> None:
    make, endless_reply = STRATEGIES[strategy]
    model = _model([endless_reply, endless_reply], endless={1, 2})
    runnable = with_structured_output(model, make(Doc, limits=Limits(max_reply_chars=LIMIT)))

    with pytest.raises(TruncatedOutputError, match=f"cut off after {LIMIT} characters") as caught:
        _streamed(runnable, mode)

    assert len(model.calls) == 2
    assert all(LIMIT <= pulled <= LIMIT + PIECE for pulled in model.pulled)
    assert model.closed == [1, 2]
    reply = caught.value.ai_message
    assert reply is not None
    assert reply.response_metadata["finish_reason"] == "max_reply_chars"


def test_the_wording_of_a_cut_call_names_the_bound_not_the_token_limit() -> None:
    model = _model([CALL], endless={1})
    strategy = ToolStrategy(Doc, max_retries=0, limits=Limits(max_reply_chars=LIMIT))

    with pytest.raises(TruncatedOutputError, match=f"after {LIMIT} characters"):
        list(with_structured_output(model, strategy).stream("Title it."))


def test_a_reply_within_the_bound_streams_whole() -> None:
    title = "z" * (LIMIT // 2)
    reply = AIMessage("", tool_calls=[tool_call("Doc", {"title": title})])
    model = ScriptedChatModel(responses=[reply], chunk_size=7)
    strategy = ToolStrategy(Doc, max_retries=0, limits=Limits(max_reply_chars=LIMIT))

    chunks = list(with_structured_output(model, strategy).stream("Title it."))

    assert chunks[-1] == Doc(title=title)
