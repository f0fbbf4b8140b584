"""Our agent beside LangChain's own middleware: no hook acts on a finished turn or a stale answer.

With other middleware that has model hooks, the retry router runs first among the
`before_model` hooks: it ends a turn whose answer is in once the ordinary tools
called beside it have run, and clears an earlier turn's answer when a new run
starts. Also here: the error objects a run keeps between its steps belong to one
branch of a thread, and are let go when the run fails; and a turn whose failure
another middleware answers ends with no answer, as in LangChain.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    ModelRetryMiddleware,
)
from langchain.agents.structured_output import ProviderStrategy as LangChainProviderStrategy
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from langchain_structx import StructuredOutputMiddleware, ToolStrategy, create_agent
from langchain_structx.errors import InvalidOutputError, StructuredOutputRetryError
from langchain_structx.testing import ScriptedChatModel, tool_call


class Contact(BaseModel):
    name: str
    email: str


SENT: list[str] = []


@tool
def send(to: str) -> str:
    """Send an email."""
    SENT.append(to)
    return "sent"


@tool
def ask_human(question: str) -> str:
    """Ask a human."""
    return str(interrupt(question))


def send_and_answer() -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            tool_call("send", {"to": "bob"}, id="s1"),
            tool_call("Contact", {"name": "Ada", "email": "ada@example.org"}, id="c1"),
        ],
    )


def answer(name: str) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": name, "email": f"{name}@x"})])


BAD = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])
APPROVE = Command(resume={"decisions": [{"type": "approve"}]})


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


@pytest.fixture(autouse=True)
def _no_mail() -> None:
    SENT.clear()


def test_human_review_asks_once_for_a_call_made_beside_the_answer() -> None:
    model = ScriptedChatModel(responses=[send_and_answer()])
    agent = create_agent(
        model,
        [send],
        response_format=ToolStrategy(Contact),
        checkpointer=InMemorySaver(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send": True})],
    )
    state = agent.invoke({"messages": [("user", "Mail Bob about Ada")]}, thread("a"))
    asked = 0
    while "__interrupt__" in state:
        asked += 1
        state = agent.invoke(APPROVE, thread("a"))
    assert asked == 1 and SENT == ["bob"] and len(model.calls) == 1
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_run_call_limit_of_one_is_not_spent_by_an_answered_turn(mode: str) -> None:
    model = ScriptedChatModel(responses=[send_and_answer()])
    agent = create_agent(
        model,
        [send],
        response_format=ToolStrategy(Contact),
        middleware=[ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    question = {"messages": [("user", "Mail Bob about Ada")]}
    state = agent.invoke(question) if mode == "sync" else await agent.ainvoke(question)
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    assert SENT == ["bob"] and len(model.calls) == 1


def test_a_turn_a_call_limit_ends_early_does_not_return_the_last_answer() -> None:
    model = ScriptedChatModel(responses=[answer("first"), answer("second")])
    agent = create_agent(
        model,
        response_format=ToolStrategy(Contact),
        checkpointer=InMemorySaver(),
        middleware=[ModelCallLimitMiddleware(thread_limit=1, exit_behavior="end")],
    )
    first = agent.invoke({"messages": [("user", "one")]}, thread("b"))
    assert first["structured_response"].name == "first"
    second = agent.invoke({"messages": [("user", "two")]}, thread("b"))
    assert len(model.calls) == 1
    assert second["structured_response"] is None
    assert second["structured_output_report"] is None


def test_a_failed_first_step_raises_before_any_review_of_the_last_turn() -> None:
    model = ScriptedChatModel(responses=[send_and_answer(), BAD])
    agent = create_agent(
        model,
        [send],
        response_format=ToolStrategy(Contact, handle_errors=False),
        checkpointer=InMemorySaver(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send": True})],
    )
    agent.invoke({"messages": [("user", "one")]}, thread("c"))
    agent.invoke(APPROVE, thread("c"))
    with pytest.raises(InvalidOutputError):
        agent.invoke({"messages": [("user", "two")]}, thread("c"))
    assert SENT == ["bob"]
    assert agent.get_state(thread("c")).values["structured_response"] is None


def test_two_branches_of_a_thread_never_share_their_error_objects() -> None:
    # Each call answers without the email and asks a human, so every attempt
    # fails and the run waits; resuming one checkpoint twice forks the thread.
    numbers = itertools.count(1)

    def reply(messages: Any, call: Any) -> AIMessage:
        n = next(numbers)
        return AIMessage(
            "",
            tool_calls=[
                tool_call("Contact", {"name": f"call-{n}"}, id=f"c{n}"),
                tool_call("ask_human", {"question": "?"}, id=f"h{n}"),
            ],
        )

    model = ScriptedChatModel(responses=[reply] * 6)
    agent = create_agent(
        model,
        [ask_human],
        response_format=ToolStrategy(Contact, max_retries=2),
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [("user", "go")]}, thread("d"))  # call-1
    fork = agent.get_state(thread("d")).config
    agent.invoke(Command(resume="ok"), fork)  # branch 1: call-2
    branch = agent.get_state(thread("d")).config
    agent.invoke(Command(resume="ok"), fork)  # branch 2: call-3
    with pytest.raises(StructuredOutputRetryError) as caught:
        agent.invoke(Command(resume="ok"), branch)  # branch 1: call-4, the last
    own = {
        m.tool_calls[0]["args"]["name"]
        for m in agent.get_state(branch).values["messages"]
        if isinstance(m, AIMessage)
    } | {"call-4"}
    seen = {e.ai_message.tool_calls[0]["args"]["name"] for e in caught.value.errors if e.ai_message}
    assert "call-4" in seen and seen <= own
    assert len(caught.value.errors) == 3


def test_a_failed_run_lets_go_of_the_errors_it_kept() -> None:
    structured = StructuredOutputMiddleware(ToolStrategy(Contact, max_retries=2))
    agent = langchain_create_agent(
        ScriptedChatModel(responses=[BAD] * 3),
        middleware=[structured.retry_router(), structured],
    )
    with pytest.raises(StructuredOutputRetryError) as caught:
        agent.invoke({"messages": [("user", "go")]})
    assert [e.attempt for e in caught.value.errors] == [1, 2, 3]
    assert all(e.ai_message is not None for e in caught.value.errors)
    assert structured._errors._runs == {}


@pytest.mark.parametrize("routed", [False, True], ids=["alone", "with-router"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_failure_another_middleware_answers_leaves_no_answer_as_in_langchain(
    asynchronous: bool, routed: bool
) -> None:
    # ModelRetryMiddleware turns the last failure into an AI message by default:
    # the turn ends normally, and its state must say there is no answer. (Beside
    # LangChain's ToolStrategy that message sends the agent back to the model
    # without end, so LangChain's side uses its ProviderStrategy.)
    states = []
    for make, strategy, reply in (
        (create_agent, ToolStrategy(Contact, max_retries=0), BAD),
        (langchain_create_agent, LangChainProviderStrategy(Contact), AIMessage("prose")),
    ):
        model = ScriptedChatModel(responses=[reply] * 3)
        middleware: list[Any] = [ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)]
        if routed:  # a middleware with model hooks: our retry router comes too
            middleware.append(ModelCallLimitMiddleware(run_limit=5))
        agent = make(model, response_format=strategy, middleware=middleware)
        ask = {"messages": [("user", "Who?")]}
        states.append(await agent.ainvoke(ask) if asynchronous else agent.invoke(ask))
    ours, theirs = states
    assert theirs["structured_response"] is None
    assert ours["structured_response"] is None
    assert ours["structured_output_report"] is None
    assert ours["messages"][-1].content.startswith("Model call failed after 3 attempts")


def test_alone_our_agent_answers_in_one_graph_step() -> None:
    model = ScriptedChatModel(responses=[answer("ada")])
    agent = create_agent(model, response_format=ToolStrategy(Contact))
    steps = [step for step in agent.stream({"messages": [("user", "Who?")]}, stream_mode="updates")]
    assert [list(step) for step in steps] == [["model"]]
