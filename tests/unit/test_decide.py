"""Deciding once per model and tool set: what is kept between runs, and what is not.

A plan keeps, per model object and set of tool objects, what it sends that model
beside those tools. Kept answers must never go stale or leak: the model's own
settings are read at every call, a clash or an unsendable schema is met at every
run, a configurable model is decided per call, and the routes kept are bounded.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.chat_models import init_chat_model
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx import DialectError, ProviderStrategy, UserError, create_agent
from langchain_structx._request import model_route as _decide
from langchain_structx._request.plan import build_plan
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}


class Contact(BaseModel):
    name: str


ANSWER = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])


class ChatAnthropic(ScriptedChatModel):
    """A scripted model that passes for Anthropic's, whose thinking takes no forced choice."""

    model: str = "claude-sonnet-4-5"
    thinking: dict[str, Any] | None = None


class ChatOpenAI(ScriptedChatModel):
    """A scripted model that passes for OpenAI's, which has a strict mode."""


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return query


@tool
def Contact_tool(query: str) -> str:  # noqa: N802 - named below like the variant
    """Clashes with the variant once renamed."""
    return query


def test_the_same_model_and_tools_reuse_one_route() -> None:
    plan = build_plan(ToolStrategy(Contact))
    model = ScriptedChatModel(responses=[])
    first = _decide.route(plan, model, [lookup])
    assert _decide.route(plan, model, [lookup]) is first  # a new list of the same tools
    assert first.user_tools == frozenset({"lookup"})
    assert first.declared == frozenset({"lookup", "Contact"})
    assert _decide.route(plan, model, []) is not first
    assert _decide.route(plan, ScriptedChatModel(responses=[]), [lookup]) is not first


def test_routes_kept_are_bounded_and_the_oldest_goes_first() -> None:
    plan = build_plan(ToolStrategy(Contact))
    model = ScriptedChatModel(responses=[])
    first = _decide.route(plan, model, [])
    tools = [[{"type": "function", "function": {"name": f"t{i}"}}] for i in range(64)]
    for one in tools:
        _decide.route(plan, model, one)
    assert _decide.route(plan, model, tools[-1]) is _decide.route(plan, model, tools[-1])
    assert _decide.route(plan, model, []) is not first  # forgotten, decided again


def test_a_clashing_tool_is_refused_at_every_run() -> None:
    plan = build_plan(ToolStrategy(Contact))
    model = ScriptedChatModel(responses=[])
    clash = Contact_tool.model_copy(update={"name": "Contact"})
    for _ in range(2):
        with pytest.raises(UserError, match="clash"):
            _decide.route(plan, model, [clash])


def test_a_model_changed_after_its_first_call_is_asked_as_it_now_is() -> None:
    model = ChatAnthropic(responses=[ANSWER, ANSWER])
    agent = create_agent(model, response_format=ToolStrategy(Contact))
    agent.invoke(ASK)
    model.thinking = {"type": "enabled", "budget_tokens": 2048}
    agent.invoke(ASK)
    assert [call.tool_choice for call in model.calls] == ["Contact", None]


def test_a_schema_the_provider_cannot_take_fails_at_every_run() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(12):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    model = ChatOpenAI(responses=["{}"], profile={"structured_output": True})
    strategy = ProviderStrategy({"title": "Deep", **deep}, strict=True)
    agent = create_agent(model, response_format=strategy)
    for _ in range(2):
        with pytest.raises(DialectError):
            agent.invoke(ASK)
    assert model.calls == []


def test_a_configurable_model_is_decided_for_the_model_each_call_builds() -> None:
    plan = build_plan(ToolStrategy(Contact))
    configurable = init_chat_model(
        "openai:gpt-4o-mini", configurable_fields="any", api_key="sk-test"
    )
    first = _decide.route(plan, configurable, [])
    assert type(first.model).__name__ == "ChatOpenAI"
    assert first.native == "openai"
    assert _decide.route(plan, configurable, []) is not first


class ChatCloudflareWorkersAI(ScriptedChatModel):
    """A scripted model that passes for Workers AI's client, whose structured calls never stream."""


class OpenAICompatible(ScriptedChatModel):
    """A scripted model with the OpenAI client's endpoint field."""

    openai_api_base: str | None = None


WORKERS_AI = "https://api.cloudflare.com/client/v4/accounts/acct/ai/v1"


@pytest.mark.parametrize(
    ("model", "plain", "stream"),
    [
        (ScriptedChatModel(responses=[ANSWER]), True, None),
        (ChatAnthropic(responses=[ANSWER]), False, None),
        (ChatCloudflareWorkersAI(responses=[ANSWER]), False, False),
        (OpenAICompatible(responses=[ANSWER], openai_api_base=WORKERS_AI), False, False),
        (OpenAICompatible(responses=[ANSWER]), False, None),
    ],
    ids=["scripted", "anthropic", "workers-ai", "openai-on-workers-ai", "openai-elsewhere"],
)
def test_only_a_class_no_provider_quirk_can_reach_skips_reading_the_model(
    model: ScriptedChatModel, plain: bool, stream: bool | None
) -> None:
    # A plain class is decided once from the class; the others are read at every call,
    # and a model on Workers AI (by class or by endpoint) is asked without streaming.
    assert _decide.quirks.plain(model) is plain
    create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)
    assert model.calls[0].kwargs.get("stream") is stream
    assert model.calls[0].tool_choice == "Contact"


def test_an_object_of_no_pydantic_class_is_never_plain() -> None:
    class Odd:
        openai_api_base = WORKERS_AI

    assert _decide.quirks.plain(Odd()) is False
