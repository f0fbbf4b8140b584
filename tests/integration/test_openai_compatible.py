"""A bare schema through `ChatOpenAI` with its default profile, against a local server.

The user points `ChatOpenAI` at llama-cpp-python's OpenAI-compatible server on
127.0.0.1 (serving the embedded weights) and says nothing about what it can do.
AutoStrategy then asks through the tool route; the request carries one
structured tool and no tools of the user's, so `tool_choice` names it, which
this server enforces with a grammar (it ignores `"required"`). Each run must end
with a valid answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from local_tasks import SYSTEM_PROMPT, TASKS
from pydantic import TypeAdapter

from langchain_structx import create_agent

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.integration

_BY_ID = {task.id: task for task in TASKS}


class ToolChoices(BaseCallbackHandler):
    """Records the `tool_choice` of every chat-model request."""

    def __init__(self) -> None:
        self.choices: list[Any] = []

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.choices.append((kwargs.get("invocation_params") or {}).get("tool_choice"))


@pytest.mark.parametrize("task_id", ["contact", "action_item"])
def test_bare_schema_on_default_profile_is_answered(
    server_chat_model: ChatOpenAI, task_id: str
) -> None:
    task = _BY_ID[task_id]
    assert server_chat_model.profile is None  # what a user gets without saying more
    agent = create_agent(
        server_chat_model, response_format=task.schema, system_prompt=SYSTEM_PROMPT
    )
    seen = ToolChoices()

    state = agent.invoke(
        {"messages": [("user", task.text)]}, {"callbacks": [seen], "recursion_limit": 12}
    )

    answer = state["structured_response"]
    TypeAdapter(task.schema).validate_python(answer)  # valid, checked apart from the agent
    report = state["structured_output_report"]
    assert report["strategy"] == "tool"
    assert report["attempts"] <= 2
    named = {"type": "function", "function": {"name": task.kind}}
    assert seen.choices[0] == named
