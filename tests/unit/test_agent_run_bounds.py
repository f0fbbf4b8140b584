"""The retry bound and the turn's end hold whatever other middleware does around our step.

Two ways other middleware used to make every model step look like a new run:
`ModelRetryMiddleware` answering our final error (the retry router then read the
last attempt's "retry" flag and sent the agent back), and a `wrap_model_call`
middleware adding a message to one call's request (a reminder), which our step
took for a new question.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRetryMiddleware,
    TodoListMiddleware,
    before_model,
)
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx import StructuredOutputMiddleware, ToolStrategy, create_agent
from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [("user", "Ada")]}
LIMIT = {"recursion_limit": 60}


class Contact(BaseModel):
    name: str
    email: str


@tool
def send(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@before_model
def looks(state: Any, runtime: Any) -> None:
    """Any middleware with a model hook: our create_agent then adds the retry router."""
    return None


class Reminder(AgentMiddleware):
    """Adds a message to every model call's request, not to the state."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(messages=[*request.messages, HumanMessage("Be exact.")]))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(
            request.override(messages=[*request.messages, HumanMessage("Be exact.")])
        )


def incomplete(*_: Any) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])


def complete(name: str) -> AIMessage:
    args = {"name": name, "email": f"{name.lower()}@example.com"}
    return AIMessage("", tool_calls=[tool_call("Contact", args)])


def run(agent: Any, asynchronous: bool) -> dict[str, Any]:
    if asynchronous:
        return asyncio.run(agent.ainvoke(ASK, LIMIT))  # type: ignore[no-any-return]
    return agent.invoke(ASK, LIMIT)  # type: ignore[no-any-return]


ASYNC = pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])


def _retrying_agents(model: ScriptedChatModel) -> dict[str, Any]:
    strategy = ToolStrategy(Contact, max_retries=1)
    ours = StructuredOutputMiddleware(strategy)
    return {
        "create_agent beside a model hook": create_agent(
            model, response_format=strategy, middleware=[ModelRetryMiddleware(max_retries=0), looks]
        ),
        "create_agent beside TodoList": create_agent(
            model,
            response_format=strategy,
            middleware=[ModelRetryMiddleware(max_retries=0), TodoListMiddleware()],
        ),
        "router in LangChain's agent": langchain_create_agent(
            model, middleware=[ours.retry_router(), ModelRetryMiddleware(max_retries=0), ours]
        ),
    }


@ASYNC
@pytest.mark.parametrize(
    "setup",
    [
        "create_agent beside a model hook",
        "create_agent beside TodoList",
        "router in LangChain's agent",
    ],
)
def test_a_final_error_answered_by_model_retry_ends_the_turn(
    setup: str, asynchronous: bool
) -> None:
    model = ScriptedChatModel(responses=[incomplete] * 10)

    state = run(_retrying_agents(model)[setup], asynchronous)

    # max_retries=1: two attempts, then ModelRetryMiddleware writes the error as
    # an AI message and the turn ends without an answer, as the docs say.
    assert len(model.calls) == 2
    assert state["structured_response"] is None
    assert "StructuredOutputRetryError" in state["messages"][-1].text


@ASYNC
def test_a_reminder_added_to_each_request_keeps_the_retry_bound(asynchronous: bool) -> None:
    model = ScriptedChatModel(responses=[incomplete] * 10)
    agent = create_agent(
        model, [send], response_format=ToolStrategy(Contact, max_retries=1), middleware=[Reminder()]
    )

    with pytest.raises(StructuredOutputRetryError) as caught:
        run(agent, asynchronous)

    assert len(model.calls) == 2
    assert caught.value.n_attempts == 2


@ASYNC
def test_a_reminder_added_to_each_request_keeps_the_attempt_count(asynchronous: bool) -> None:
    model = ScriptedChatModel(responses=[incomplete, complete("Ada")])
    agent = create_agent(
        model, [send], response_format=ToolStrategy(Contact), middleware=[Reminder()]
    )

    state = run(agent, asynchronous)

    assert state["structured_response"] == Contact(name="Ada", email="ada@example.com")
    assert state["structured_output_report"]["attempts"] == 2


@ASYNC
def test_a_reminder_does_not_reopen_a_turn_answered_beside_a_tool_call(asynchronous: bool) -> None:
    both = AIMessage("", tool_calls=[tool_call("send", {"to": "bob"}), *complete("Ada").tool_calls])
    ours = ScriptedChatModel(responses=[both, complete("Zed")])
    stock = ScriptedChatModel(responses=[both, complete("Zed")])
    answer = run(
        create_agent(ours, [send], response_format=ToolStrategy(Contact), middleware=[Reminder()]),
        asynchronous,
    )["structured_response"]
    expected = run(
        langchain_create_agent(
            stock, [send], response_format=LangChainToolStrategy(Contact), middleware=[Reminder()]
        ),
        asynchronous,
    )["structured_response"]

    assert answer == expected == Contact(name="Ada", email="ada@example.com")
    assert len(ours.calls) == len(stock.calls) == 1


def _reaches(root: object, marker: str, limit: int = 200_000) -> bool:
    """Whether a string holding `marker` can be reached from `root` by references."""
    import gc
    import types

    seen, pending = {id(root)}, [root]
    while pending and len(seen) < limit:
        found = pending.pop()
        if isinstance(found, str):
            if marker in found:
                return True
            continue
        if isinstance(found, (type, types.ModuleType)):
            continue
        for child in gc.get_referents(found):
            if id(child) not in seen:
                seen.add(id(child))
                pending.append(child)
    return False


def test_a_run_cut_short_between_attempts_keeps_no_conversation_alive() -> None:
    # The kept error's traceback held the attempt loop's frame, and with it the
    # whole state: every abandoned run kept its conversation until 1,024 more came.
    middleware = StructuredOutputMiddleware(ToolStrategy(Contact, max_retries=3))
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("Contact", {})])])
    agent = langchain_create_agent(model, middleware=[middleware.retry_router(), middleware])
    marker = "conversation-" + "x" * 1_000
    from langgraph.errors import GraphRecursionError

    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [HumanMessage(marker)]}, {"recursion_limit": 3})

    kept = middleware._errors._runs
    assert len(kept) == 1, "the run's first error is kept for its next step"
    assert not _reaches(kept, marker)
