"""Tool calls that once escaped a bound: invented tools, oversized arguments,
non-finite numbers sent back, and calls cut off by the token limit.

- a model that only calls tools nobody has runs out of retries like any other
  wrong answer; a call to one of the agent's own tools still runs;
- parsed tool-call arguments count against `max_reply_chars`, as reply text does;
- a failed call whose arguments hold NaN goes back to the model with null there,
  so a client that cannot serialise NaN does not break the retry;
- a call to no declared tool whose name a provider would refuse in a history
  goes back (and is answered) under a placeholder name;
- a structured call in a reply stopped by the token limit is truncated, however
  whole its (leniently merged) arguments look.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx import ProviderStrategy, ToolStrategy, create_agent
from langchain_structx.errors import (
    InvalidOutputError,
    MissingOutputError,
    StructuredOutputRetryError,
    TruncatedOutputError,
)
from langchain_structx.limits import Limits
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [("user", "Describe the parcel.")]}


class Parcel(BaseModel):
    label: str
    weight: float | None = None


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def calls(*named: tuple[str, dict[str, Any]], **metadata: Any) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[tool_call(name, args) for name, args in named],
        response_metadata=metadata,
    )


GOOD = calls(("Parcel", {"label": "box"}))


@pytest.mark.parametrize(
    "strategy",
    [ToolStrategy(Parcel, max_retries=1), ProviderStrategy(Parcel, max_retries=1)],
    ids=["tool", "provider"],
)
def test_a_model_that_keeps_calling_invented_tools_runs_out_of_retries(strategy: Any) -> None:
    invented = calls(("nope", {"q": "x"}))
    model = ScriptedChatModel(responses=[invented] * 50)
    agent = create_agent(model, tools=[lookup], response_format=strategy)

    with pytest.raises(StructuredOutputRetryError) as info:
        agent.invoke(ASK)

    assert len(model.calls) == 2
    assert all(isinstance(e, MissingOutputError) for e in info.value.errors)
    assert "nope is not a valid tool here" in str(info.value.errors[0])


def test_a_call_to_the_agents_own_tool_still_runs_and_is_no_attempt() -> None:
    model = ScriptedChatModel(responses=[calls(("lookup", {"query": "box"})), GOOD])
    agent = create_agent(model, tools=[lookup], response_format=ToolStrategy(Parcel, max_retries=0))

    state = agent.invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    ran = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "lookup"]
    assert [m.content for m in ran] == ["found box"]
    assert state["structured_output_report"]["attempts"] == 1


def test_an_invented_tool_beside_a_real_one_is_left_to_the_tool_node() -> None:
    mixed = calls(("lookup", {"query": "box"}), ("nope", {}))
    model = ScriptedChatModel(responses=[mixed, GOOD])
    agent = create_agent(model, tools=[lookup], response_format=ToolStrategy(Parcel, max_retries=0))

    state = agent.invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    answers = {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert answers["lookup"].content == "found box"
    assert answers["nope"].status == "error"


@pytest.mark.parametrize("name", ["", "no such tool!", "t" * 300, "9lives"])
def test_an_invented_tool_under_a_name_no_provider_takes_back_reaches_the_tool_node_renamed(
    name: str,
) -> None:
    mixed = calls(("lookup", {"query": "box"}), (name, {"x": 1}))
    model = ScriptedChatModel(responses=[mixed, GOOD])
    agent = create_agent(model, tools=[lookup], response_format=ToolStrategy(Parcel, max_retries=0))

    state = agent.invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    sent, *answers = model.calls[1].messages[1:]
    assert isinstance(sent, AIMessage)
    assert [(c["name"], c["args"]) for c in sent.tool_calls] == [
        ("lookup", {"query": "box"}),
        ("invalid_tool_name", {"x": 1}),
    ]
    assert [(m.tool_call_id, m.name, m.status) for m in answers] == [
        (sent.tool_calls[0]["id"], "lookup", "success"),
        (sent.tool_calls[1]["id"], "invalid_tool_name", "error"),
    ]


def test_an_answer_beside_a_real_tool_and_an_unnamed_one_is_kept_with_the_call_renamed() -> None:
    both = calls(("Parcel", {"label": "box"}), ("lookup", {"query": "box"}), ("", {}))
    model = ScriptedChatModel(responses=[both])
    agent = create_agent(model, tools=[lookup], response_format=ToolStrategy(Parcel, max_retries=0))

    state = agent.invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    reply = next(m for m in state["messages"] if isinstance(m, AIMessage))
    assert [c["name"] for c in reply.tool_calls] == ["Parcel", "lookup", "invalid_tool_name"]
    answered = {m.tool_call_id: m.name for m in state["messages"] if isinstance(m, ToolMessage)}
    assert sorted(answered.values()) == ["Parcel", "invalid_tool_name", "lookup"]


def test_parsed_arguments_longer_than_a_reply_may_be_are_refused() -> None:
    huge = calls(("Parcel", {"label": "a" * 2_000}))
    strategy = ToolStrategy(Parcel, max_retries=1, limits=Limits(max_reply_chars=1_000))
    model = ScriptedChatModel(responses=[huge, GOOD])

    state = create_agent(model, response_format=strategy).invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    (error,) = state["structured_output_report"]["errors"]
    assert "holds more than 1000 characters" in error


def test_keys_count_towards_the_size_of_the_arguments() -> None:
    wide = calls(("Parcel", {"label": "x", **{"k" * 600 + str(i): 1 for i in range(3)}}))
    strategy = ToolStrategy(Parcel, max_retries=0, limits=Limits(max_reply_chars=1_000))
    model = ScriptedChatModel(responses=[wide])

    with pytest.raises(StructuredOutputRetryError) as info:
        create_agent(model, response_format=strategy).invoke(ASK)

    (error,) = info.value.errors
    assert isinstance(error, InvalidOutputError)
    assert "holds more than 1000 characters" in str(error)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_failed_call_with_a_non_finite_number_goes_back_with_null(number: float) -> None:
    bad = calls(("Parcel", {"label": "box", "weight": number, "tags": [number, 1.5]}))
    model = ScriptedChatModel(responses=[bad, GOOD])

    state = create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    sent_back = model.calls[1].messages[1]
    assert isinstance(sent_back, AIMessage)
    assert sent_back.tool_calls[0]["args"] == {"label": "box", "weight": None, "tags": [None, 1.5]}


def test_a_failed_call_with_finite_numbers_goes_back_as_it_was() -> None:
    bad = calls(("Parcel", {"weight": 2.5}))
    model = ScriptedChatModel(responses=[bad, GOOD])

    create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    sent_back = model.calls[1].messages[1]
    assert isinstance(sent_back, AIMessage)
    assert sent_back.tool_calls[0]["args"] == {"weight": 2.5}


@pytest.mark.parametrize("name", ["", "no such tool!", "t" * 65, "9lives"])
def test_a_call_under_a_name_no_provider_takes_back_is_renamed_when_sent_back(name: str) -> None:
    bad = calls(("Parcel", {"weight": 2.5}), (name, {"x": 1}))
    model = ScriptedChatModel(responses=[bad, GOOD])

    create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    sent_back, *answers = model.calls[1].messages[1:]
    assert isinstance(sent_back, AIMessage)
    assert [c["name"] for c in sent_back.tool_calls] == ["Parcel", "invalid_tool_name"]
    assert [c["args"] for c in sent_back.tool_calls] == [{"weight": 2.5}, {"x": 1}]
    assert [(m.tool_call_id, m.name) for m in answers] == [
        (c["id"], c["name"]) for c in sent_back.tool_calls
    ]
    assert "is not a valid tool here" in answers[1].content


def test_a_lone_call_under_such_a_name_is_answered_under_the_name_it_goes_back_with() -> None:
    model = ScriptedChatModel(responses=[calls(("no such tool!", {})), GOOD])

    create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    sent_back, answer = model.calls[1].messages[1:]
    assert isinstance(sent_back, AIMessage)
    assert isinstance(answer, ToolMessage)
    assert [c["name"] for c in sent_back.tool_calls] == ["invalid_tool_name"]
    assert (answer.tool_call_id, answer.name) == (
        sent_back.tool_calls[0]["id"],
        "invalid_tool_name",
    )
    assert "no such tool!" in answer.content


def test_declared_tools_keep_their_names_when_sent_back() -> None:
    # "9lives" is declared (the schema's title), so the provider took it.
    schema = {"title": "9lives", "type": "object", "required": ["n"]}
    bad = calls(("9lives", {}), ("invented one", {}))
    good = calls(("9lives", {"n": 9}))
    model = ScriptedChatModel(responses=[bad, good])

    state = create_agent(model, response_format=ToolStrategy(schema, max_retries=1)).invoke(ASK)

    assert state["structured_response"] == {"n": 9}
    sent_back = model.calls[1].messages[1]
    assert isinstance(sent_back, AIMessage)
    assert [c["name"] for c in sent_back.tool_calls] == ["9lives", "invalid_tool_name"]


def test_a_call_with_a_portable_name_goes_back_as_it_was() -> None:
    bad = calls(("Parcel", {"weight": 2.5}), ("no_such_tool", {}))
    model = ScriptedChatModel(responses=[bad, GOOD])

    create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    sent_back = model.calls[1].messages[1]
    assert isinstance(sent_back, AIMessage)
    assert [(c["name"], c["args"]) for c in sent_back.tool_calls] == [
        ("Parcel", {"weight": 2.5}),
        ("no_such_tool", {}),
    ]


@pytest.mark.parametrize(
    "metadata",
    [
        {"finish_reason": "length"},
        {"stop_reason": "max_tokens"},
        {"finish_reason": "MAX_TOKENS"},
        {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    ],
    ids=["openai", "anthropic", "gemini", "responses"],
)
def test_a_call_stopped_by_the_token_limit_is_truncated(metadata: dict[str, Any]) -> None:
    # What a client's lenient merge of streamed arguments makes of `{"label": "bo`.
    cut = calls(("Parcel", {"label": "bo"}), **metadata)
    model = ScriptedChatModel(responses=[cut, GOOD])

    state = create_agent(model, response_format=ToolStrategy(Parcel, max_retries=1)).invoke(ASK)

    assert state["structured_response"] == Parcel(label="box")
    (error,) = state["structured_output_report"]["errors"]
    assert error.startswith("truncation:")
    # With no retry left, the error is raised as it is.
    with pytest.raises(TruncatedOutputError):
        create_agent(
            ScriptedChatModel(responses=[cut]), response_format=ToolStrategy(Parcel, max_retries=0)
        ).invoke(ASK)
