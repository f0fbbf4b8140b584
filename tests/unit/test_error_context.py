"""Run-time failures are created with their context and never changed afterwards."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from langchain_core.messages import AIMessage
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
