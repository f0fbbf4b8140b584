"""Run-time failures are created with their context and never changed afterwards."""

from __future__ import annotations

import contextvars
import copy
import dataclasses
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    ErrorContext,
    PromptedStrategy,
    ToolStrategy,
    create_agent,
    structured_output_node,
)
from langchain_structx.errors import (
    AttemptError,
    ProviderRejectedError,
    StructuredOutputFailure,
    StructuredOutputRetryError,
)
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [("user", "Ada")]}
USAGE = {"input_tokens": 4, "output_tokens": 3, "total_tokens": 7}


class Contact(BaseModel):
    name: str
    email: str


def reply(text: str) -> AIMessage:
    return AIMessage(text, usage_metadata=dict(USAGE))  # type: ignore[arg-type]


def snapshot(error: BaseException) -> dict[str, Any]:
    return {
        "attempt": getattr(error, "attempt", None),
        "usage": copy.deepcopy(getattr(error, "usage", None)),
        "ai_message": getattr(error, "ai_message", None),
        "args": error.args,
    }


@pytest.mark.parametrize("face", ["agent", "node"])
def test_each_attempt_error_arrives_complete_and_stays_as_it_was(face: str) -> None:
    seen: list[tuple[AttemptError, dict[str, Any]]] = []

    def handler(error: AttemptError, context: ErrorContext) -> str:
        seen.append((error, snapshot(error)))
        return "again"

    replies = [reply('{"name": "Ada"}'), reply("no json"), reply('{"name": "Ada"}')]
    model = ScriptedChatModel(responses=replies)
    strategy = PromptedStrategy(Contact, handle_errors=handler, max_retries=2)
    if face == "agent":
        runnable: Any = create_agent(model, response_format=strategy)
    else:
        runnable = structured_output_node(model, strategy).as_runnable()
    with pytest.raises(StructuredOutputRetryError) as caught:
        runnable.invoke(ASK)
    # What the handler saw is what it was created with: attempt, usage and reply.
    assert [s["attempt"] for _, s in seen] == [1, 2]
    assert [s["usage"]["total_tokens"] for _, s in seen] == [7, 14]
    assert [s["ai_message"].text for _, s in seen] == ['{"name": "Ada"}', "no json"]
    # ...and nothing changed it afterwards.
    assert [snapshot(error) for error, _ in seen] == [s for _, s in seen]
    final = caught.value
    assert final.attempt == 3 and final.usage is not None and final.usage["total_tokens"] == 21
    assert [e.attempt for e in final.errors] == [1, 2, 3]


def test_a_rejection_carries_attempt_usage_and_no_reply() -> None:
    model = ScriptedChatModel(
        responses=[NotImplementedError("no JSON mode")], profile={"tool_calling": False}
    )
    with pytest.raises(ProviderRejectedError) as caught:
        create_agent(model, response_format=AutoStrategy(Contact)).invoke(ASK)
    error = caught.value
    assert isinstance(error, StructuredOutputFailure)
    assert error.ai_message is None
    assert error.attempt == 0
    assert error.usage == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def test_the_nodes_no_tools_failure_carries_its_context() -> None:
    ordinary = AIMessage(
        "", tool_calls=[tool_call("search", {"q": "Ada"})], usage_metadata=dict(USAGE)
    )  # type: ignore[arg-type]
    model = ScriptedChatModel(responses=[ordinary])
    node = structured_output_node(model, ToolStrategy(Contact, max_retries=0))
    with pytest.raises(StructuredOutputRetryError) as caught:
        node(ASK)
    (error,) = caught.value.errors
    assert error.ai_message is not None
    assert error.ai_message.tool_calls[0]["name"] == "search"
    assert error.attempt == 1
    assert error.usage is not None and error.usage["total_tokens"] == 7


class PydanticState(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]
    structured_response: Any = None


@dataclasses.dataclass(slots=True)
class SlottedState:
    messages: Annotated[list[AnyMessage], add_messages]
    structured_response: Any = None


@pytest.mark.parametrize("state_schema", [PydanticState, SlottedState], ids=["pydantic", "slots"])
def test_a_handler_sees_a_state_objects_fields_as_they_are(state_schema: type) -> None:
    seen: list[dict[str, Any]] = []

    def handler(error: AttemptError, context: ErrorContext) -> str:
        seen.append(dict(context.state))
        return "again"

    earlier = Contact(name="Bob", email="bob@example.com")
    model = ScriptedChatModel(
        responses=[reply("no json"), reply('{"name": "Ada", "email": "a@b"}')]
    )
    node = structured_output_node(model, PromptedStrategy(Contact, handle_errors=handler))
    graph = StateGraph(state_schema)
    graph.add_node("extract", node)
    graph.add_edge(START, "extract")
    graph.compile().invoke({"messages": [HumanMessage("Ada")], "structured_response": earlier})

    (state,) = seen
    assert isinstance(state["messages"][-1], HumanMessage)
    assert state["structured_response"] == earlier


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


@pytest.mark.parametrize("face", ["agent", "node"])
def test_an_async_handler_in_a_sync_run_keeps_the_callers_context(face: str) -> None:
    seen: list[tuple[str, Any]] = []

    async def handler(error: AttemptError, context: ErrorContext) -> str:
        seen.append((REQUEST_ID.get(), get_config().get("metadata", {}).get("tenant")))
        return "again"

    model = ScriptedChatModel(
        responses=[reply("no json"), reply('{"name": "Ada", "email": "a@b"}')]
    )
    strategy = PromptedStrategy(Contact, handle_errors=handler)
    if face == "agent":
        runnable: Any = create_agent(model, response_format=strategy)
    else:
        runnable = structured_output_node(model, strategy).as_runnable()
    token = REQUEST_ID.set("req-42")
    try:
        result = runnable.invoke(ASK, {"metadata": {"tenant": "t1"}})
    finally:
        REQUEST_ID.reset(token)

    assert seen == [("req-42", "t1")]
    assert result["structured_response"] == Contact(name="Ada", email="a@b")
