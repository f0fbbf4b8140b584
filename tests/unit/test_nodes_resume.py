"""A graph node's run across a checkpoint resume, and replies no checkpoint can keep."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.nodes import structured_output_node
from langchain_structx.strategies import PromptedStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

TICKET: dict[str, Any] = {
    "title": "Ticket",
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}
CONFIG: Any = {"configurable": {"thread_id": "t1"}}
LONE = '{"summary": "fire \\ud800"}'
"""A reply whose JSON escape decodes to a lone surrogate."""


class State(MessagesState):
    structured_response: Any
    structured_response_kind: Any
    structured_output_report: Any


def graph(model: ScriptedChatModel, saver: Any, strategy: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("extract", structured_output_node(model, strategy))
    builder.add_edge(START, "extract")
    builder.add_edge("extract", END)
    return builder.compile(checkpointer=saver)


def _crash_in_retry(saver: Any, strategy: Any) -> None:
    model = ScriptedChatModel(responses=['{"title": 1}', RuntimeError("connection reset")])
    with pytest.raises(RuntimeError, match="connection reset"):
        graph(model, saver, strategy).invoke({"messages": [HumanMessage("fire!", id="h1")]}, CONFIG)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_node_resumed_mid_retry_keeps_its_attempts(use_async: bool) -> None:
    saver, strategy = InMemorySaver(), PromptedStrategy(TICKET, max_retries=3)
    _crash_in_retry(saver, strategy)
    model = ScriptedChatModel(responses=['{"summary": "fire"}'])
    resumed = graph(model, saver, strategy)
    result = await resumed.ainvoke(None, CONFIG) if use_async else resumed.invoke(None, CONFIG)
    report = result["structured_output_report"]
    assert result["structured_response"] == {"summary": "fire"}
    assert report["attempts"] == 2 and len(report["errors"]) == 1
    assert "summary" in report["errors"][0]
    # The resumed call sees the failed answer and its feedback, as the agent's does.
    assert len(model.calls) == 1
    assert [m.type for m in model.calls[0].messages] == ["system", "human", "ai", "human"]


def test_a_node_resumed_mid_retry_keeps_its_retry_budget() -> None:
    saver, strategy = InMemorySaver(), PromptedStrategy(TICKET, max_retries=1)
    _crash_in_retry(saver, strategy)
    model = ScriptedChatModel(responses=['{"title": 2}', '{"summary": "never asked"}'])
    with pytest.raises(StructuredOutputRetryError) as caught:
        graph(model, saver, strategy).invoke(None, CONFIG)
    assert caught.value.attempt == 2  # one before the crash, one after: the budget
    assert len(model.calls) == 1


def test_a_node_without_a_checkpointer_calls_the_model_directly() -> None:
    model = ScriptedChatModel(responses=['{"summary": "fire"}'])
    node = structured_output_node(model, PromptedStrategy(TICKET))
    assert node({"messages": [HumanMessage("fire!")]})["structured_response"] == {"summary": "fire"}


# A lone surrogate: refused and fed back, never stored as "?".


@pytest.mark.parametrize(
    ("strategy", "bad"),
    [
        (PromptedStrategy(TICKET), LONE),
        (
            ToolStrategy(TICKET),
            AIMessage("", tool_calls=[tool_call("Ticket", {"summary": "fire " + chr(0xD800)})]),
        ),
    ],
    ids=["text", "tool-call"],
)
def test_a_lone_surrogate_is_refused_and_fed_back(strategy: Any, bad: Any) -> None:
    good: Any = '{"summary": "fire \\ud83d\\udd25"}'
    if isinstance(strategy, ToolStrategy):
        good = AIMessage("", tool_calls=[tool_call("Ticket", {"summary": "fire 🔥"})])
    model = ScriptedChatModel(responses=[bad, good])
    saver = InMemorySaver()
    result = graph(model, saver, strategy).invoke({"messages": [("user", "fire!")]}, CONFIG)
    assert result["structured_response"] == {"summary": "fire 🔥"}
    report = result["structured_output_report"]
    assert report["attempts"] == 2 and "lone surrogate" in report["errors"][0]
    assert "lone surrogate" in model.calls[1].messages[-1].text
    stored = graph(model, saver, strategy).get_state(CONFIG).values
    assert stored["structured_response"] == result["structured_response"]


def test_a_lone_surrogate_in_a_key_is_refused() -> None:
    from langchain_structx._validation.bounds import SURROGATE_KEY, shape_issue
    from langchain_structx.limits import Limits

    issue = shape_issue({"a": {"k" + chr(0xDC00): 1}}, Limits()).issue
    assert issue is not None and issue.message == SURROGATE_KEY and issue.path == ("a",)
    lone = shape_issue(chr(0xD800), Limits()).issue
    assert lone is not None and "lone surrogate" in lone.message


async def test_many_sync_nodes_in_a_graph_run_asynchronously_all_finish() -> None:
    # LangGraph runs a sync node on its loop's thread pool: more nodes waiting on
    # their kept model calls than the pool has threads must still all finish.
    import asyncio

    saver, strategy = InMemorySaver(), PromptedStrategy(TICKET, max_retries=1)
    model = ScriptedChatModel(responses=['{"summary": "fire"}'] * 40)
    built = graph(model, saver, strategy)
    runs = [
        built.ainvoke(
            {"messages": [HumanMessage("fire!")]}, {"configurable": {"thread_id": f"t{n}"}}
        )
        for n in range(40)
    ]
    results = await asyncio.wait_for(asyncio.gather(*runs), timeout=60)
    assert [r["structured_response"] for r in results] == [{"summary": "fire"}] * 40
    kept = built.get_state({"configurable": {"thread_id": "t7"}}).values
    assert kept["structured_output_report"]["attempts"] == 1
