"""A stand-in model that echoes the user's text, and the extraction graph served on it.

For demos, tests and benchmarks of `structx extract --server` and LangGraph Server
deployments: no weights, no network, and a deterministic answer.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from langchain_structx.graphs import MAX_RETRIES_LIMIT, build_extraction_graph
from langchain_structx.testing._model import ScriptedChatModel
from langchain_structx.testing._script import RecordedCall, tool_call


def _echo_reply(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    """Answer with the user's text: as a call of the first tool when tools are bound."""
    text = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    if call.tools:
        try:
            args = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
            args = None
        if isinstance(args, dict):
            name = call.tools[0]["function"]["name"]
            return AIMessage("", tool_calls=[tool_call(name, args)])
    return AIMessage(text)


def echo_model(calls: int = MAX_RETRIES_LIMIT + 1) -> ScriptedChatModel:
    """A stand-in model that answers each of `calls` attempts with the user's text.

    A record whose text is the JSON of a valid object extracts to that object; any
    other text fails validation on every attempt, as a hopeless input would.
    """
    return ScriptedChatModel(model_name="structx-echo", responses=[_echo_reply] * calls)


def offline_extraction_graph(config: RunnableConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph factory for LangGraph Server: extraction on `echo_model`, no weights needed."""
    return _offline()


@functools.cache
def _offline() -> CompiledStateGraph[Any, Any, Any, Any]:
    return build_extraction_graph(echo_model)
