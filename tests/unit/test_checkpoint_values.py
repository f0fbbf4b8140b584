"""Values a checkpoint cannot store: refused as failed attempts, never a crashed run.

LangGraph stores a checkpointed run's state with MessagePack, whose integers hold
64 bits and whose values nest at most 255 levels; an answer (or a stored reply)
past either failed the write with a bare `TypeError`, so one hostile reply
crashed the run. These tests run on LangGraph's own in-memory checkpointer, which
serialises every write as the SQLite and PostgreSQL ones do (the PostgreSQL case
is in the integration suite).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from langchain_structx import Limits, create_agent, with_structured_output
from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.strategies import PromptedStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("How many?")]}
THREAD = {"configurable": {"thread_id": "t"}}
WIDE = 2**64


class Count(BaseModel):
    n: int


COUNT_SCHEMA = {
    "title": "Count",
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


def call(n: Any) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Count", {"n": n})])


def checkpointed(model: ScriptedChatModel, strategy: Any) -> Any:
    return create_agent(model, response_format=strategy, checkpointer=InMemorySaver())


@pytest.mark.parametrize("schema", [Count, COUNT_SCHEMA], ids=["pydantic", "json_schema"])
@pytest.mark.parametrize("wide", [WIDE, -(2**63) - 1, 10**30])
def test_a_wide_integer_in_a_call_is_a_failed_attempt_and_the_run_is_stored(
    schema: Any, wide: int
) -> None:
    model = ScriptedChatModel(responses=[call(wide), call(5)])
    agent = checkpointed(model, ToolStrategy(schema))
    state = agent.invoke(ASK, THREAD)
    answer = state["structured_response"]
    assert (answer.n if isinstance(answer, Count) else answer["n"]) == 5
    assert state["structured_output_report"]["attempts"] == 2
    assert "does not fit in 64 bits" in state["structured_output_report"]["errors"][0]
    # The failed reply is stored with the number as null, as the feedback says.
    assert state["messages"][1].tool_calls[0]["args"] == {"n": None}
    assert "does not fit in 64 bits" in model.calls[1].messages[-1].content
    assert agent.get_state(THREAD).values["structured_response"] == answer


def test_a_string_a_validator_reads_as_a_wide_integer_is_refused() -> None:
    # Pydantic reads a string of digits into an int field: the reply held no integer.
    digits = " 1_" + "0" * 24 + ".0 "
    model = ScriptedChatModel(responses=[call(digits), call("7")])
    state = checkpointed(model, ToolStrategy(Count)).invoke(ASK, THREAD)
    assert state["structured_response"] == Count(n=7)
    assert (
        "at $.n: integer does not fit in 64 bits" in state["structured_output_report"]["errors"][0]
    )
    assert state["messages"][1].tool_calls[0]["args"] == {"n": digits}  # a string stores


def test_a_wide_key_a_validator_makes_is_refused() -> None:
    class Tally(BaseModel):
        counts: dict[int, str]

    wide_key = {"counts": {"9" * 30: "many"}}
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[tool_call("Tally", wide_key)]),
            AIMessage("", tool_calls=[tool_call("Tally", {"counts": {"3": "few"}})]),
        ]
    )
    state = checkpointed(model, ToolStrategy(Tally)).invoke(ASK, THREAD)
    assert state["structured_response"] == Tally(counts={3: "few"})
    assert "at $.counts: integer does not fit" in state["structured_output_report"]["errors"][0]


def test_a_wide_integer_in_text_is_refused_too() -> None:
    model = ScriptedChatModel(responses=[f'{{"n": {10**25}}}', '{"n": 3}'])
    state = checkpointed(model, PromptedStrategy(Count)).invoke(ASK, THREAD)
    assert state["structured_response"] == Count(n=3)


@pytest.mark.parametrize("edge", [2**64 - 1, -(2**63)])
def test_the_widest_integers_a_checkpoint_stores_are_answers(edge: int) -> None:
    agent = checkpointed(ScriptedChatModel(responses=[call(edge)]), ToolStrategy(Count))
    agent.invoke(ASK, THREAD)
    assert agent.get_state(THREAD).values["structured_response"] == Count(n=edge)


def test_a_wider_bound_takes_wider_integers_where_nothing_is_stored() -> None:
    wide = 10**30
    limits = Limits(max_integer_bits=128)
    runnable = with_structured_output(
        ScriptedChatModel(responses=[call(wide)]), ToolStrategy(Count, limits=limits)
    )
    assert runnable.invoke("How many?") == Count(n=wide)
    strict = with_structured_output(
        ScriptedChatModel(responses=[call(wide)] * 4), ToolStrategy(Count, max_retries=0)
    )
    with pytest.raises(StructuredOutputRetryError, match="does not fit in 64 bits"):
        strict.invoke("How many?")


@pytest.mark.parametrize("bits", [0, -64, 1.5])
def test_the_bound_must_be_a_positive_whole_number(bits: Any) -> None:
    with pytest.raises(ValueError, match="max_integer_bits"):
        Limits(max_integer_bits=bits)


def test_a_count_given_as_a_whole_float_is_that_count() -> None:
    # A float count used to reach a slice or a shift and fail there with a TypeError.
    limits = Limits(max_issues=2.0, max_integer_bits=64.0, max_reply_chars=1e6)
    assert (limits.max_issues, limits.max_integer_bits, limits.max_reply_chars) == (2, 64, 10**6)
    assert all(isinstance(v, int) for v in (limits.max_issues, limits.max_integer_bits))
    assert Limits(validation_seconds=0.5).validation_seconds == 0.5  # a time stays a float
    with pytest.raises(ValueError, match="max_issues must be a whole number"):
        Limits(max_issues=2.5)


FREE_FORM = {"title": "Tree", "type": "object", "properties": {"x": {}}, "required": ["x"]}


def test_a_value_nested_past_what_a_checkpoint_stores_is_a_failed_attempt() -> None:
    # 253 lists in the arguments: within the old bound (256), past MessagePack's 255
    # levels once the state wraps the stored reply.
    deep: Any = "leaf"
    for _ in range(253):
        deep = [deep]
    replies = [
        AIMessage("", tool_calls=[tool_call("Tree", {"x": deep})]),
        AIMessage("", tool_calls=[tool_call("Tree", {"x": [[1]]})]),
    ]
    agent = checkpointed(ScriptedChatModel(responses=replies), ToolStrategy(FREE_FORM))
    state = agent.invoke(ASK, THREAD)
    assert state["structured_response"] == {"x": [[1]]}
    assert "nested deeper than 128 levels" in state["structured_output_report"]["errors"][0]
    stored: Any = state["messages"][1].tool_calls[0]["args"]["x"]
    levels = 1
    while isinstance(stored, list):
        stored, levels = stored[0], levels + 1
    assert (stored, levels) == (None, 128)  # the stored reply is cut at the bound


def test_the_deepest_value_the_default_takes_is_stored() -> None:
    deep: Any = 1
    for _ in range(127):
        deep = [deep]
    agent = checkpointed(
        ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("Tree", {"x": deep})])]),
        ToolStrategy(FREE_FORM),
    )
    agent.invoke(ASK, THREAD)
    assert agent.get_state(THREAD).values["structured_response"] == {"x": deep}


class Item(BaseModel):
    count: Count


def test_the_answer_types_are_declared_without_a_state_channel_of_their_own() -> None:
    # LangGraph's strict checkpoint allowlist is read from the state schema's types;
    # every channel costs every graph step, so the declaration rides on the private
    # progress key, whose type gets a field that is never written.
    from langgraph._internal._serde import collect_allowlist_from_schemas

    agent = create_agent(ScriptedChatModel(responses=[]), response_format=ToolStrategy(Item))
    stock = create_agent(ScriptedChatModel(responses=[]), response_format=None)
    ours = set(agent.builder.channels) - set(stock.builder.channels)
    assert ours == {
        "structured_response_kind",
        "structured_output_report",
        "structx_progress",
    }
    allowed = collect_allowlist_from_schemas(schemas=[agent.builder.state_schema])
    assert {(__name__, "Item"), (__name__, "Count")} <= allowed
