"""Streams whose chunks a provider splits or repeats in ways langchain-core merges oddly."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from pydantic import BaseModel

from langchain_structx import PromptedStrategy, ToolStrategy, with_structured_output
from langchain_structx._engine.stops import stop_reason
from langchain_structx.errors import TruncatedOutputError
from langchain_structx.middleware import create_agent
from langchain_structx.testing import ScriptedChatModel, tool_call

Reshape = Callable[[list[AIMessageChunk]], list[AIMessageChunk]]


class ReshapedChatModel(ScriptedChatModel):
    """The scripted model, with its streamed chunks rearranged as a server might send them."""

    reshape: Any = None

    def _reply_chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Iterator[AIMessageChunk]:
        chunks = list(super()._reply_chunks(messages, stop, kwargs))
        return iter(self.reshape(chunks) if self.reshape else chunks)


class Doc(BaseModel):
    title: str
    items: list[int] = []


class Note(BaseModel):
    text: str


def _end_said_twice(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    *body, last = chunks
    reason = last.response_metadata["finish_reason"]
    repeated = AIMessageChunk(content=last.content, response_metadata={"finish_reason": reason})
    return [*body, repeated, last]


def _end_then_stop(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    *body, last = chunks
    last.response_metadata = {"finish_reason": "stop"}
    cut = AIMessageChunk(content=last.content, response_metadata={"finish_reason": "length"})
    return [*body, cut, last]


CUT_TOOL = AIMessage(
    "",
    tool_calls=[tool_call("Doc", {"title": "The quick brown fox"})],
    response_metadata={"finish_reason": "length"},
)


@pytest.mark.parametrize("reshape", [_end_said_twice, _end_then_stop], ids=["twice", "then-stop"])
def test_a_truncation_reported_in_two_chunks_is_still_a_truncation(reshape: Reshape) -> None:
    model = ReshapedChatModel(responses=[CUT_TOOL], reshape=reshape)
    runnable = with_structured_output(model, ToolStrategy(Doc, max_retries=0))

    with pytest.raises(TruncatedOutputError, match="cut off by the token limit"):
        list(runnable.stream("Describe it."))


def test_joined_reasons_read_as_the_one_that_matters() -> None:
    chunks = [
        AIMessageChunk(content="", response_metadata={"finish_reason": reason})
        for reason in ("length", "length")
    ]
    merged = chunks[0] + chunks[1]

    assert merged.response_metadata["finish_reason"] == "lengthlength"  # langchain-core's merge
    assert stop_reason(merged) == "length"
    refused = AIMessage("", response_metadata={"stop_reason": "refusalrefusal"})
    assert stop_reason(refused) == "refusal"
    assert stop_reason(AIMessage("", response_metadata={"finish_reason": "stop"})) == "stop"


def _partials(model: Any, strategy: Any) -> list[dict[str, Any]]:
    agent = create_agent(model, tools=[], response_format=strategy)
    ask = {"messages": [HumanMessage("Read the gauges.")]}
    return [
        event for event in agent.stream(ask, stream_mode="custom") if event["phase"] == "partial"
    ]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_partials_never_hold_nan_or_infinity(literal: str) -> None:
    text = '{"items": [1, ' + literal + ', 2], "title": "readings of the gauges, all of them"}'
    good = '{"title": "readings of the gauges", "items": [1, 2]}'
    model = ScriptedChatModel(
        responses=[text, good], profile={"structured_output": False, "tool_calling": False}
    )

    partials = _partials(model, PromptedStrategy(Doc, max_retries=1))

    assert partials, "the stream showed nothing"
    for event in partials:
        json.dumps(event["value"], allow_nan=False)  # raises on NaN or an infinity


def _two_calls_on_one_index(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    *body, last = chunks
    first = '{"title": "Eve Example, a different person", "items": '
    second = '{"title": "Ada Lovelace, who wrote the first program"}'
    return [
        AIMessageChunk(
            content="",
            tool_call_chunks=[tool_call_chunk(name="Doc", args=first, id="call_A", index=0)],
        ),
        AIMessageChunk(
            content="",
            tool_call_chunks=[tool_call_chunk(name="Doc", args=second, id="call_B", index=0)],
        ),
        last,
    ]


def _name_changes_on_one_index(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    *body, last = chunks
    head = '{"title": "A long title that keeps going'
    return [
        AIMessageChunk(
            content="",
            tool_call_chunks=[tool_call_chunk(name="Doc", args=head, id="call_A", index=0)],
        ),
        AIMessageChunk(
            content="",
            tool_call_chunks=[
                tool_call_chunk(
                    name="Note",
                    args=' on and on and on and on", "items": [1, 2, 3]}',
                    id=None,
                    index=0,
                )
            ],
        ),
        last,
    ]


@pytest.mark.parametrize(
    "reshape", [_two_calls_on_one_index, _name_changes_on_one_index], ids=["new-id", "new-name"]
)
def test_a_second_call_on_the_same_index_stops_the_partials_of_the_first(reshape: Reshape) -> None:
    reply = AIMessage("", tool_calls=[tool_call("Doc", {"title": "x"})])
    fixed = AIMessage("", tool_calls=[tool_call("Doc", {"title": "Ada Lovelace"})])
    model = ReshapedChatModel(responses=[reply, fixed], chunk_size=10_000, reshape=None)
    shaped = iter([reshape, None])
    original = model._reply_chunks

    def once(messages: Any, stop: Any, kwargs: Any) -> Iterator[AIMessageChunk]:
        chunks = list(original(messages, stop, kwargs))
        step = next(shaped)
        return iter(step(chunks) if step else chunks)

    object.__setattr__(model, "_reply_chunks", once)

    partials = _partials(model, ToolStrategy(Doc | Note, max_retries=1))

    first_attempt = [event["value"] for event in partials if event["attempt"] == 1]
    assert first_attempt == [{"title": first_attempt[0]["title"]}]
    assert first_attempt[0]["title"].startswith(("Eve Example", "A long title"))
    assert all(event["kind"] == "Doc" for event in partials)
