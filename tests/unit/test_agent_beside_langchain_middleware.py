"""Our agent beside each of LangChain's ready-made middleware ends a run as LangChain's does.

For every middleware in `langchain.agents.middleware` that acts on model or tool
calls, the same script runs through LangChain's `create_agent` with its
`ToolStrategy` and through ours with our `ToolStrategy`: both must end with the
same answer, the same conversation (message kinds, tool calls, human and tool
texts) or the same exception type. `ModelRetryMiddleware`, `ModelCallLimitMiddleware`,
`ModelFallbackMiddleware`, `HumanInTheLoopMiddleware` and `ModelRefusalMiddleware`
have their own tests (`test_agent_beside_middleware.py`, `test_agent_graph_loop.py`,
`test_langchain_error_types.py`); the tool-only middleware (shell, file search,
auto mode) never sees the structured call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    LLMToolSelectorMiddleware,
    PIIDetectionError,
    PIIMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
)
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from langchain_structx import StructuredOutputMiddleware, ToolStrategy, create_agent
from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.testing import ScriptedChatModel, tool_call


class Contact(BaseModel):
    name: str
    email: str


@tool
def send(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


FAILURES: list[str] = []


@tool
def flaky(query: str) -> str:
    """Fails on its first call of each run."""
    if not FAILURES:
        FAILURES.append(query)
        raise ValueError("the service is busy")
    return f"flaky found {query}"


def call(name: str, args: dict[str, Any]) -> Callable[[], AIMessage]:
    return lambda: AIMessage("", tool_calls=[tool_call(name, args)])


GOOD = call("Contact", {"name": "Ada", "email": "ada@example.org"})
BAD = call("Contact", {"name": "Ada"})
SEND = call("send", {"to": "bob"})
FLAKY = call("flaky", {"query": "ada"})
TODOS = call("write_todos", {"todos": [{"content": "find Ada", "status": "completed"}]})


def send_and_answer() -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            tool_call("send", {"to": "bob"}),
            tool_call("Contact", {"name": "Ada", "email": "ada@example.org"}),
        ],
    )


def summaries() -> ScriptedChatModel:
    return ScriptedChatModel(responses=[AIMessage("Ada wants her contact card.")] * 6)


def selections() -> ScriptedChatModel:
    chosen = tool_call("ToolSelectionResponse", {"tools": ["send"]})
    return ScriptedChatModel(responses=[AIMessage("", tool_calls=[chosen])] * 6)


@dataclass(frozen=True)
class Case:
    script: tuple[Callable[[], AIMessage], ...]
    middleware: Callable[[], list[AgentMiddleware[Any, Any]]]
    tools: tuple[BaseTool, ...] = (send, lookup)
    ask: str = "Find Ada's contact card, please."
    raises: type[Exception] | None = None


CASES = {
    "summarization": Case(
        (SEND, BAD, GOOD),
        lambda: [
            SummarizationMiddleware(summaries(), trigger=("messages", 3), keep=("messages", 2))
        ],
    ),
    "tool call limit, continue": Case((SEND, GOOD), lambda: [ToolCallLimitMiddleware(run_limit=1)]),
    "tool call limit, end": Case(
        (SEND, GOOD), lambda: [ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")]
    ),
    "tool call limit, error": Case(
        (SEND, GOOD),
        lambda: [ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")],
        raises=ToolCallLimitExceededError,
    ),
    "tool call limit on one tool": Case(
        (send_and_answer,), lambda: [ToolCallLimitMiddleware(tool_name="send", run_limit=1)]
    ),
    "to-do list": Case((TODOS, GOOD), lambda: [TodoListMiddleware()]),
    "tool selector": Case(
        (SEND, GOOD), lambda: [LLMToolSelectorMiddleware(model=selections(), max_tools=1)]
    ),
    "context editing": Case(
        (SEND, BAD, GOOD),
        lambda: [ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=10, keep=0)])],
    ),
    "tool retry": Case(
        (FLAKY, GOOD),
        lambda: [ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)],
        tools=(flaky,),
    ),
    "tool error": Case(
        (FLAKY, GOOD),
        lambda: [ToolErrorMiddleware(on_error=lambda error, request: f"failed: {error}")],
        tools=(flaky,),
    ),
    "PII redacted": Case(
        (GOOD,),
        lambda: [PIIMiddleware("email", strategy="redact", apply_to_output=True)],
        ask="Ada is ada@example.org",
    ),
    "PII blocked": Case(
        (GOOD,),
        lambda: [PIIMiddleware("email", strategy="block")],
        ask="Ada is ada@example.org",
        raises=PIIDetectionError,
    ),
}


def conversation(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What both agents must agree on: each message's kind, calls and shown text."""
    shown = []
    for message in messages:
        names = tuple(c["name"] for c in getattr(message, "tool_calls", None) or ())
        text = message.text if message.type in ("human", "tool") else ""
        # Our feedback words a failed call in our own way; the kind of message is what matters.
        shown.append((message.type, names, "" if text.startswith("Error") else text))
    return shown


async def outcome(agent: Any, ask: str, asynchronous: bool) -> Any:
    FAILURES.clear()
    given = {"messages": [("user", ask)]}
    try:
        state = await agent.ainvoke(given) if asynchronous else agent.invoke(given)
    except Exception as error:  # noqa: BLE001 - the type is compared below
        return type(error)
    return state["structured_response"], conversation(state["messages"])


def model_for(case: Case) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[reply() for reply in case.script])


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_run_ends_as_in_langchain(name: str, asynchronous: bool) -> None:
    case = CASES[name]
    theirs = langchain_create_agent(
        model_for(case),
        list(case.tools),
        response_format=LangChainToolStrategy(Contact),
        middleware=case.middleware(),
    )
    ours = create_agent(
        model_for(case),
        list(case.tools),
        response_format=ToolStrategy(Contact),
        middleware=case.middleware(),
    )
    expected = await outcome(theirs, case.ask, asynchronous)
    got = await outcome(ours, case.ask, asynchronous)
    assert got == expected
    if case.raises is None:
        assert got[0] == Contact(name="Ada", email="ada@example.org")
    else:
        assert got is case.raises


def test_the_tool_selector_before_ours_leaves_our_tool_in_every_call() -> None:
    # The selector keeps only the tools it picks, so in LangChain's create_agent
    # ours goes after it (docs/compatibility.md), as our create_agent places it.
    model = ScriptedChatModel(responses=[SEND(), GOOD()])
    selector = LLMToolSelectorMiddleware(model=selections(), max_tools=1)
    ours = StructuredOutputMiddleware(ToolStrategy(Contact))
    agent = langchain_create_agent(model, [send, lookup], middleware=[selector, ours])
    state = agent.invoke({"messages": [("user", "Find Ada.")]})
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    offered = [[t["function"]["name"] for t in call.tools] for call in model.calls]
    assert offered == [["send", "Contact"], ["send", "Contact"]]
    assert [call.tool_choice for call in model.calls] == ["any", "any"]


def test_the_retry_bound_holds_when_summaries_replace_the_failed_attempts() -> None:
    # Summaries remove the failed calls from the conversation; the count of
    # attempts lives in the state, so the bound still holds.
    model = ScriptedChatModel(responses=[BAD(), BAD(), BAD(), GOOD()])
    summary = SummarizationMiddleware(summaries(), trigger=("messages", 2), keep=("messages", 1))
    agent = create_agent(
        model, [send], response_format=ToolStrategy(Contact, max_retries=1), middleware=[summary]
    )
    with pytest.raises(StructuredOutputRetryError) as info:
        agent.invoke({"messages": [("user", "Find Ada.")]})
    assert info.value.attempt == 2
    assert len(info.value.errors) == 2
    assert len(model.calls) == 2
