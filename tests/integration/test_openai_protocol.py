"""The OpenAI protocol, for real: our agent over `ChatOpenAI` and a llama.cpp server.

`python -m llama_cpp.server` runs the embedded weights on 127.0.0.1 and answers
the OpenAI `json_schema` response format with HTTP 500. So `AutoStrategy`, told by
the model's profile that native structured output exists (as a user would say of
an OpenAI-compatible server), must meet a real rejection, fall back within the
same run, end with a validated object, report the fallback, and skip the rejected
strategy on later runs with the same model.

The server is taken as one no engine table knows (the memory is told so: by
itself it recognises llama-cpp-python's server and sends the schema where that
server reads it, see `test_openai_compatible.py`), which is how any unknown
OpenAI-compatible server that refuses `json_schema` is met.

The profile says `tool_calling: False` because this server's default chat template
produces no tool calls for `tool_choice="required"` (the model writes the call as
plain text), so the next strategy after provider is the prompted one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from local_tasks import SYSTEM_PROMPT, TASKS, Task, as_data

from langchain_structx import (
    AutoStrategy,
    FallbackMemory,
    ProviderStrategy,
    StructuredOutputMiddleware,
)
from langchain_structx._models.capabilities import model_identity
from langchain_structx._models.engines import NO_ENGINE

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.integration

_MAX_TOKENS = 128
_BY_ID = {task.id: task for task in TASKS}


class CallCounter(BaseCallbackHandler):
    """Counts chat-model requests and the ones that ended in an error."""

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1

    def on_llm_error(self, *args: Any, **kwargs: Any) -> None:
        self.errors += 1


@pytest.fixture(scope="module")
def openai_model(server_chat_model: ChatOpenAI) -> ChatOpenAI:
    """The loopback `ChatOpenAI`, with longer answers and the profile a user would give it."""
    return server_chat_model.model_copy(
        update={
            "extra_body": {"max_tokens": _MAX_TOKENS},
            "profile": {"structured_output": True, "tool_calling": False},
        }
    )


def _unknown_server_memory(model: ChatOpenAI) -> FallbackMemory:
    """A memory that knows the server behind `model` as no engine of ours."""
    memory = FallbackMemory()
    memory.remember_fact(model_identity(model), "engine", NO_ENGINE)
    return memory


def _agent(model: ChatOpenAI, response_format: Any, memory: FallbackMemory) -> Any:
    from langchain.agents import create_agent as langchain_create_agent

    middleware = StructuredOutputMiddleware(response_format, fallback_memory=memory)
    return langchain_create_agent(model, middleware=[middleware], system_prompt=SYSTEM_PROMPT)


def _run(agent: Any, task: Task) -> tuple[dict[str, Any], CallCounter]:
    counter = CallCounter()
    config: Any = {"callbacks": [counter], "recursion_limit": 12}
    state = agent.invoke({"messages": [("user", task.text)]}, config)
    return state, counter


def test_a_server_error_falls_back_but_is_not_remembered(openai_model: ChatOpenAI) -> None:
    task = _BY_ID["contact"]
    memory = _unknown_server_memory(openai_model)
    agent = _agent(openai_model, AutoStrategy(task.schema), memory)

    state, counter = _run(agent, task)

    assert as_data(state["structured_response"]) == task.expected
    assert state["structured_response_kind"] == "Contact"
    report = state["structured_output_report"]
    assert report["strategy"] == "prompted"
    [fallback] = report["fallbacks"]
    assert fallback["from_strategy"] == "provider"
    assert fallback["to_strategy"] == "prompted"
    assert "500" in fallback["reason"] and "response_format" in fallback["reason"]
    assert report["attempts"] == 1 and report["errors"] == []
    assert report["usage"]["input_tokens"] > 0 and report["usage"]["output_tokens"] > 0
    # One rejected request, then the one that produced the answer.
    assert (counter.calls, counter.errors) == (2, 1)
    # A 5xx may be passing: it moves this run on but is never remembered.
    assert memory.rejected(model_identity(openai_model)) == frozenset()

    again, counter = _run(agent, task)

    assert as_data(again["structured_response"]) == task.expected
    assert again["structured_output_report"]["strategy"] == "prompted"
    assert len(again["structured_output_report"]["fallbacks"]) == 1
    assert (counter.calls, counter.errors) == (2, 1)


async def test_async_run_falls_back_on_a_union(openai_model: ChatOpenAI) -> None:
    task = _BY_ID["union_complaint"]
    agent = _agent(openai_model, AutoStrategy(task.schema), _unknown_server_memory(openai_model))
    counter = CallCounter()
    config: Any = {"callbacks": [counter], "recursion_limit": 12}

    state = await agent.ainvoke({"messages": [("user", task.text)]}, config)

    assert state["structured_response_kind"] == task.kind
    assert as_data(state["structured_response"]) == task.expected
    report = state["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert [(f["from_strategy"], f["to_strategy"]) for f in report["fallbacks"]] == [
        ("provider", "prompted")
    ]
    assert counter.errors == 1


def test_explicit_provider_strategy_lets_the_rejection_through(openai_model: ChatOpenAI) -> None:
    import openai

    task = _BY_ID["contact"]
    memory = _unknown_server_memory(openai_model)
    agent = _agent(openai_model, ProviderStrategy(task.schema), memory)
    with pytest.raises(openai.APIStatusError) as info:
        _run(agent, task)
    assert info.value.status_code == 500
