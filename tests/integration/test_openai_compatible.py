"""A bare schema through `ChatOpenAI` with its default profile, against a local server.

The user points `ChatOpenAI` at llama-cpp-python's OpenAI-compatible server on
127.0.0.1 (serving the embedded weights) and says nothing about what it can do.
The server names itself on `GET /v1/models` (`owned_by: "me"`), so the provider
route sends the schema where this server reads it, `response_format`
`{"type": "json_object", "schema": ...}` (in the client's `extra_body`, beside
the client's own settings), and the server constrains decoding with a grammar
built from it. Each run must end with a valid answer in one call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from local_tasks import SYSTEM_PROMPT, TASKS
from pydantic import TypeAdapter

from langchain_structx import ProviderStrategy, create_agent

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.integration

_BY_ID = {task.id: task for task in TASKS}


class Requests(BaseCallbackHandler):
    """Records the invocation parameters of every chat-model request."""

    def __init__(self) -> None:
        self.params: list[dict[str, Any]] = []

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.params.append(dict(kwargs.get("invocation_params") or {}))


def _run(model: ChatOpenAI, response_format: Any, task_id: str) -> tuple[Any, Requests]:
    task = _BY_ID[task_id]
    agent = create_agent(model, response_format=response_format, system_prompt=SYSTEM_PROMPT)
    seen = Requests()
    state = agent.invoke(
        {"messages": [("user", task.text)]}, {"callbacks": [seen], "recursion_limit": 12}
    )
    return state, seen


@pytest.mark.parametrize("task_id", ["contact", "action_item"])
def test_bare_schema_on_default_profile_is_answered(
    server_chat_model: ChatOpenAI, task_id: str
) -> None:
    task = _BY_ID[task_id]
    assert server_chat_model.profile is None  # what a user gets without saying more

    state, seen = _run(server_chat_model, task.schema, task_id)

    answer = state["structured_response"]
    TypeAdapter(task.schema).validate_python(answer)  # valid, checked apart from the agent
    report = state["structured_output_report"]
    assert (report["strategy"], report["attempts"], report["fallbacks"]) == ("provider", 1, [])
    (params,) = seen.params
    sent = params["extra_body"]
    assert sent["max_tokens"] == server_chat_model.extra_body["max_tokens"]  # kept
    assert sent["response_format"]["type"] == "json_object"
    assert set(sent["response_format"]["schema"]["properties"]) == set(
        TypeAdapter(task.schema).json_schema()["properties"]
    )
    assert "tools" not in params and "response_format" not in params


def test_an_explicit_provider_strategy_is_answered(server_chat_model: ChatOpenAI) -> None:
    # Before the engine was recognised, every json_schema request got an HTTP 500.
    task = _BY_ID["contact"]

    state, seen = _run(server_chat_model, ProviderStrategy(task.schema), "contact")

    TypeAdapter(task.schema).validate_python(state["structured_response"])
    assert state["structured_output_report"]["attempts"] == 1
    assert len(seen.params) == 1


def test_a_union_is_answered_through_the_envelope(server_chat_model: ChatOpenAI) -> None:
    task = _BY_ID["union_complaint"]

    state, _ = _run(server_chat_model, task.schema, task.id)

    assert isinstance(state["structured_response"], tuple(task.schema))  # one of the variants
    assert state["structured_output_report"]["strategy"] == "provider"
