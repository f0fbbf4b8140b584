"""How AutoStrategy picks and leaves a route, and which tool choice it sends.

- An explicit profile (`structured_output: False`, `tool_calling: False`) beats
  the model-name rules, LangChain's and ours.
- A strategy whose replies keep failing in a way that says its route is broken
  on this model is given up within the retry budget, and remembered.
- A request whose only tool is one structured tool names it in `tool_choice`.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from langchain_structx._models.capabilities import (
    ROUTE_STRIKES,
    FallbackMemory,
    auto_order,
    model_identity,
    route_broken,
    supported_strategies,
)
from langchain_structx._request.plan import build_plan
from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import AutoStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
TOOLS_ONLY = {"structured_output": False, "tool_calling": True}
NATIVE = {"structured_output": True, "tool_calling": True}
ORDER = ("provider", "tool", "prompted")


class Contact(BaseModel):
    name: str
    age: int


class Event(BaseModel):
    title: str


ADA = Contact(name="Ada", age=36)
JSON_ANSWER = '{"name": "Ada", "age": 36}'
PROSE = "Sure! I would call Contact with name Ada, age 36."
TOOL_ANSWER = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36})])
WRONG_ARGS = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": "old"})])


def openai(name: str, **profile: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=name, api_key="placeholder", base_url="http://127.0.0.1:9/v1", profile=profile
    )


def strategy_of(call: Any) -> str:
    if call.tools:
        return "tool"
    if call.response_format and call.response_format.get("type") == "json_schema":
        return "provider"
    return "prompted"


# --- Point 6: an explicit profile is the user's word --------------------------------


def test_name_rule_grants_native_output_without_a_profile_word():
    # The baseline the next tests overrule: LangChain's name patterns match "gpt-4o".
    assert "provider" in supported_strategies(openai("gpt-4o", tool_calling=True))


def test_profile_without_structured_output_beats_the_name_rule():
    model = openai("gpt-4o", structured_output=False, tool_calling=True)
    assert supported_strategies(model) == {"tool", "prompted"}
    assert auto_order(model, ORDER, FallbackMemory()) == ("tool", "prompted")


def test_profile_without_tool_calling_beats_a_bind_tools_override():
    # ChatOpenAI overrides bind_tools, which alone would count as tool support.
    model = openai("gpt-4o", structured_output=False, tool_calling=False)
    assert auto_order(model, ORDER, FallbackMemory()) == ("prompted",)


def test_explicit_profile_decides_the_first_request_of_an_agent():
    model = ScriptedChatModel(
        responses=[TOOL_ANSWER], profile=TOOLS_ONLY, model_name="gpt-4o-2024-08-06"
    )
    state = create_agent(model, response_format=Contact).invoke(ASK)
    assert state["structured_response"] == ADA
    assert [strategy_of(c) for c in model.calls] == ["tool"]


# --- Point 8b: the decision, as a pure function --------------------------------------


@pytest.mark.parametrize(
    ("strategy", "outcomes", "alternatives", "expected"),
    [
        ("tool", [("tool", "no_output")] * 2, 1, True),
        ("tool", [("tool", "no_output")], 1, False),  # one strike is not a pattern
        ("tool", [("tool", "validation")] * 2, 1, False),  # content, not route
        ("tool", [("tool", "parse")] * 2, 1, False),  # broken JSON in a real tool call
        ("tool", [("tool", "no_output"), ("tool", "validation")], 1, False),
        ("tool", [("tool", "validation"), ("tool", "no_output")], 1, False),
        ("tool", [("tool", "no_output")] * 2, 0, False),  # nowhere to go
        ("provider", [("provider", "parse")] * 2, 2, True),
        ("provider", [("provider", "no_output"), ("provider", "parse")], 2, True),
        ("provider", [("provider", "validation")] * 2, 2, False),
        ("provider", [("provider", "refusal")] * 2, 2, False),
        ("provider", [("provider", "truncation")] * 2, 2, False),
        # The earlier strike belonged to another strategy: this one has one.
        ("prompted", [("tool", "no_output"), ("prompted", "no_output")], 1, False),
        ("tool", [("provider", "parse"), ("tool", "no_output")], 1, False),
        ("prompted", [("prompted", "parse")] * 3, 1, False),  # no route judged for it
    ],
)
def test_route_broken(strategy, outcomes, alternatives, expected):
    assert route_broken(strategy, outcomes, alternatives) is expected


def test_route_broken_counts_strikes():
    three = [("tool", "no_output")] * 3
    assert route_broken("tool", three[:2], 1, strikes=3) is False
    assert route_broken("tool", three, 1, strikes=3) is True
    assert route_broken("tool", three, 1, strikes=0) is False
    assert ROUTE_STRIKES == 2


# --- Point 8b: in a run ---------------------------------------------------------------


def agent_with(
    model: ScriptedChatModel, strategy: Any, memory: FallbackMemory, *, graph: bool = False
) -> Any:
    middleware = StructuredOutputMiddleware(strategy, fallback_memory=memory)
    stack = [middleware.retry_router(), middleware] if graph else [middleware]
    return langchain_create_agent(model, middleware=stack)


@pytest.mark.parametrize("graph", [False, True], ids=["in-one-call", "through-the-graph"])
def test_tool_route_written_as_prose_moves_to_prompted_and_is_remembered(graph: bool):
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[PROSE, PROSE, JSON_ANSWER], profile=TOOLS_ONLY)
    state = agent_with(model, AutoStrategy(Contact), memory, graph=graph).invoke(ASK)

    assert state["structured_response"] == ADA
    report = state["structured_output_report"]
    assert [strategy_of(c) for c in model.calls] == ["tool", "tool", "prompted"]
    assert report["strategy"] == "prompted"
    assert report["attempts"] == 3
    assert [(f["from_strategy"], f["to_strategy"]) for f in report["fallbacks"]] == [
        ("tool", "prompted")
    ]
    assert report["fallbacks"][0]["reason"].startswith("MissingOutputError")
    # The prompted request starts from the caller's messages, not the tool feedback.
    assert [m.type for m in model.calls[2].messages if m.type != "system"] == ["human"]
    assert memory.rejected(model_identity(model)) == frozenset({"tool"})
    # Through the graph, the given-up attempts stay in the state (each was a step).
    kept = [m.type for m in state["messages"]]
    assert kept == (["human", "ai", "human", "ai", "human", "ai"] if graph else ["human", "ai"])

    model.reset([JSON_ANSWER])
    again = agent_with(model, AutoStrategy(Contact), memory).invoke(ASK)
    assert [strategy_of(c) for c in model.calls] == ["prompted"]
    assert again["structured_output_report"]["fallbacks"] == []


def test_native_route_answered_in_prose_moves_to_tools():
    model = ScriptedChatModel(responses=[PROSE, PROSE, TOOL_ANSWER], profile=NATIVE)
    state = agent_with(model, AutoStrategy(Contact), FallbackMemory()).invoke(ASK)
    assert state["structured_response"] == ADA
    assert [strategy_of(c) for c in model.calls] == ["provider", "provider", "tool"]


def test_content_mistakes_stay_on_the_route():
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[WRONG_ARGS, WRONG_ARGS, TOOL_ANSWER], profile=TOOLS_ONLY)
    state = agent_with(model, AutoStrategy(Contact), memory).invoke(ASK)
    assert state["structured_response"] == ADA
    assert [strategy_of(c) for c in model.calls] == ["tool"] * 3
    assert state["structured_output_report"]["fallbacks"] == []
    assert memory.rejected(model_identity(model)) == frozenset()


def test_an_explicit_strategy_is_never_left():
    model = ScriptedChatModel(responses=[PROSE, PROSE, TOOL_ANSWER], profile=TOOLS_ONLY)
    state = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)
    assert state["structured_response"] == ADA
    assert [strategy_of(c) for c in model.calls] == ["tool"] * 3


def test_the_fallback_stays_within_the_retry_budget():
    model = ScriptedChatModel(responses=[PROSE, PROSE, JSON_ANSWER], profile=TOOLS_ONLY)
    agent = agent_with(model, AutoStrategy(Contact, max_retries=1), FallbackMemory())
    with pytest.raises(StructuredOutputRetryError):
        agent.invoke(ASK)
    assert len(model.calls) == 2


# --- Point 8a: a named tool choice -----------------------------------------------------


def test_single_structured_tool_alone_is_named():
    spec = build_plan(ToolStrategy(Contact)).call_spec("tool", alone=True)
    assert spec.tool_choice == "Contact"


def test_union_keeps_any():
    plan = build_plan(ToolStrategy(Contact | Event))
    assert plan.call_spec("tool", alone=True).tool_choice == "any"


def test_not_alone_keeps_any():
    assert build_plan(ToolStrategy(Contact)).call_spec("tool").tool_choice == "any"


def test_agent_names_the_tool_only_without_user_tools():
    @tool
    def lookup(name: str) -> str:
        """Look a person up."""
        return "36"

    alone = ScriptedChatModel(responses=[TOOL_ANSWER])
    create_agent(alone, response_format=ToolStrategy(Contact)).invoke(ASK)
    assert alone.calls[0].tool_choice == "Contact"

    with_tools = ScriptedChatModel(responses=[TOOL_ANSWER])
    create_agent(with_tools, tools=[lookup], response_format=ToolStrategy(Contact)).invoke(ASK)
    assert with_tools.calls[0].tool_choice == "any"


@pytest.mark.parametrize("graph", [False, True], ids=["in-one-call", "through-the-graph"])
def test_a_hopeless_input_costs_the_model_no_route(graph: bool):
    # Prose on every route: the run leaves the tool route, but nothing answers, so
    # the route is not remembered as broken for later runs.
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[PROSE] * 4, profile=TOOLS_ONLY)
    with pytest.raises(StructuredOutputRetryError):
        agent_with(model, AutoStrategy(Contact), memory, graph=graph).invoke(ASK)
    assert [strategy_of(c) for c in model.calls] == ["tool", "tool", "prompted", "prompted"]
    assert memory.rejected(model_identity(model)) == frozenset()


def test_azure_clients_of_other_endpoints_or_api_versions_are_other_models() -> None:
    # Both were left out: two tenants' Azure resources (signed in with tokens, so
    # no key told them apart) shared what one of them had been refused.
    from langchain_openai import AzureChatOpenAI

    def azure(endpoint: str, version: str) -> Any:
        return AzureChatOpenAI(
            azure_endpoint=endpoint,
            api_version=version,
            azure_deployment="gpt-4o",
            azure_ad_token_provider=lambda: "token",
        )

    a = azure("https://tenant-a.openai.azure.com", "2024-10-21")
    b = azure("https://tenant-b.openai.azure.com", "2024-10-21")
    older = azure("https://tenant-a.openai.azure.com", "2024-06-01")
    identities = {model_identity(a), model_identity(b), model_identity(older)}
    assert len(identities) == 3
    assert model_identity(a) == model_identity(
        azure("https://tenant-a.openai.azure.com", "2024-10-21")
    )
