"""The caller's own tools beside AutoStrategy, through the official OpenAI client.

On Chat Completions, langchain-openai marks every tool strict when a request
carries a response format (the SDK's parser wants strict tools), and strict mode
refuses a tool with an optional argument. The fake server enforces that rule and
answers with the API's own wording; AutoStrategy must then ask through the tool
route, where the caller's tools go as they are, and keep doing so for that agent.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx import AutoStrategy, ProviderStrategy, create_agent

from .clients import client, fake
from .wire import Ask, Reply

pytestmark = pytest.mark.integration


class City(BaseModel):
    """A city."""

    name: str


@tool
def lookup(query: str, limit: int = 3) -> str:
    """Look something up."""
    return query[:limit]


def _answers(ask: Ask) -> Reply:
    if ask.kind == "tool":
        return Reply(calls=(("City", {"name": "Oslo"}),))
    return Reply(text=json.dumps({"name": "Oslo"}))


ASK = {"messages": [("user", "Capital of Norway?")]}


def test_a_tool_strict_mode_refuses_moves_auto_to_the_tool_route_for_good() -> None:
    with fake("openai", _answers) as server:
        agent = create_agent(client("openai", server), [lookup], response_format=City)

        first = agent.invoke(ASK)
        second = agent.invoke(ASK)

    assert first["structured_response"] == second["structured_response"] == City(name="Oslo")
    assert first["structured_output_report"]["fallbacks"][0]["to_strategy"] == "tool"
    assert second["structured_output_report"]["fallbacks"] == []
    # One refused request, then the tool route, where the caller's tool is not strict.
    assert len(server.violations) == 1
    assert "Invalid schema for function 'lookup'" in server.violations[0]
    sent = [[t["function"].get("strict") for t in r["tools"]] for r in server.requests]
    assert sent == [[True], [None, None], [None, None]]


def test_an_explicit_provider_strategy_gives_the_providers_error() -> None:
    from openai import BadRequestError

    with fake("openai", _answers) as server:
        agent = create_agent(
            client("openai", server), [lookup], response_format=ProviderStrategy(City)
        )
        with pytest.raises(BadRequestError, match="Invalid schema for function 'lookup'"):
            agent.invoke(ASK)

    assert len(server.requests) == 1


def test_auto_without_the_users_tools_keeps_the_provider_route() -> None:
    with fake("openai", _answers) as server:
        state = create_agent(client("openai", server), response_format=AutoStrategy(City)).invoke(
            ASK
        )

    assert state["structured_output_report"]["strategy"] == "provider"
    assert server.violations == []
