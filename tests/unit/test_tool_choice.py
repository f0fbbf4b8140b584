"""A refused forced tool choice: the tool route asks again, leaving the choice to the model.

A model that is thinking takes no forced tool choice (Anthropic, and the thinking
modes of Qwen and DeepSeek servers, answer a 400 naming `tool_choice`). Any tool
strategy, auto or chosen, then asks again on the same route without forcing, for
the rest of the run; the refusal is in the report's fallbacks and is not
remembered against the route. A second refusal, or a 400 about something else,
is handled as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import BaseModel

from langchain_structx import with_structured_output
from langchain_structx._models.capabilities import FallbackMemory, client_setup, model_identity
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.nodes import structured_output_node
from langchain_structx.strategies import AutoStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}


class Contact(BaseModel):
    name: str
    age: int


class HTTPError(Exception):
    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.status_code = status_code


def refused() -> HTTPError:
    return HTTPError("Thinking may not be enabled when tool_choice forces tool use.")


ANSWER = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36})])
WRONG = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])
ADA = Contact(name="Ada", age=36)


class NodeState(MessagesState):
    structured_response: Contact
    structured_output_report: Any


def run(face: str, model: ScriptedChatModel, strategy: Any) -> tuple[Any, Any]:
    """The answer and the report, through one face."""
    if face == "agent":
        state = create_agent(model, response_format=strategy).invoke(ASK)
        return state["structured_response"], state["structured_output_report"]
    if face == "node":
        graph = StateGraph(NodeState)
        graph.add_node("extract", structured_output_node(model, strategy))
        graph.add_edge(START, "extract")
        graph.add_edge("extract", END)
        state = graph.compile().invoke(ASK)
        return state["structured_response"], state["structured_output_report"]
    out = with_structured_output(model, strategy, include_raw=True).invoke(ASK["messages"])
    return out["parsed"], out["raw"].response_metadata["structured_output_report"]


FACES = ["agent", "node", "runnable"]


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("strategy", [ToolStrategy(Contact), AutoStrategy(Contact)])
def test_a_refused_forced_choice_is_asked_again_unforced(face: str, strategy: Any) -> None:
    error = refused()
    model = ScriptedChatModel(responses=[error, ANSWER])

    value, report = run(face, model, strategy)

    assert value == ADA
    assert [call.tool_choice for call in model.calls] == ["Contact", None]
    assert [call.tools[0]["function"]["name"] for call in model.calls] == ["Contact"] * 2
    assert report["strategy"] == "tool" and report["attempts"] == 1
    assert report["fallbacks"] == [
        {"from_strategy": "tool", "to_strategy": "tool", "reason": f"HTTPError: {error}"}
    ]


def test_later_attempts_of_the_run_stay_unforced() -> None:
    # The retry is a later graph step of the agent: the run's progress keeps the choice.
    model = ScriptedChatModel(responses=[refused(), WRONG, ANSWER])

    value, report = run("agent", model, ToolStrategy(Contact))

    assert value == ADA
    assert [call.tool_choice for call in model.calls] == ["Contact", None, None]
    assert report["attempts"] == 2


@pytest.mark.parametrize("strategy", [ToolStrategy(Contact), AutoStrategy(Contact)])
def test_the_next_run_starts_unforced(strategy: Any) -> None:
    # The memory keeps the refused setting, not a refusal of the route.
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[refused(), ANSWER, ANSWER])
    middleware = StructuredOutputMiddleware(strategy, fallback_memory=memory)
    agent = create_agent(model, middleware=[middleware])

    agent.invoke(ASK)
    second = agent.invoke(ASK)

    assert second["structured_response"] == ADA
    assert second["structured_output_report"]["fallbacks"] == []
    assert [call.tool_choice for call in model.calls] == ["Contact", None, None]
    assert memory.refused_settings(model_identity(model)) == {"tool_choice"}
    assert memory.rejected(model_identity(model)) == frozenset()


def test_another_model_is_still_forced() -> None:
    memory = FallbackMemory()
    thinking = ScriptedChatModel(model_name="thinking", responses=[refused(), ANSWER])
    plain = ScriptedChatModel(model_name="plain", responses=[ANSWER])
    for model in (thinking, plain):
        with_structured_output(model, ToolStrategy(Contact), fallback_memory=memory).invoke("Ada?")

    assert [call.tool_choice for call in plain.calls] == ["Contact"]


class CompatibleClient(ScriptedChatModel):
    """A client of an OpenAI-compatible server, whose thinking mode is switched per client."""

    extra_body: dict[str, Any] | None = None


def test_a_client_that_does_not_think_is_still_forced_beside_one_that_does() -> None:
    # Same model, endpoint and key; only the thinking switch differs.
    memory = FallbackMemory()
    thinking_body = {"chat_template_kwargs": {"enable_thinking": True}}
    thinking = CompatibleClient(extra_body=thinking_body, responses=[refused(), ANSWER])
    plain = CompatibleClient(responses=[ANSWER])
    again = CompatibleClient(extra_body=dict(thinking_body), responses=[ANSWER])
    for model in (thinking, plain, again):
        with_structured_output(model, ToolStrategy(Contact), fallback_memory=memory).invoke("Ada?")

    assert [call.tool_choice for call in thinking.calls] == ["Contact", None]
    assert [call.tool_choice for call in plain.calls] == ["Contact"]
    assert [call.tool_choice for call in again.calls] == [None]
    assert model_identity(thinking) == model_identity(plain)
    # One model: forgetting it forgets what each of its client setups refused.
    memory.forget(model_identity(plain))
    assert memory.refused_settings(model_identity(thinking), client_setup(thinking)) == frozenset()


def test_a_chosen_tool_strategy_raises_the_second_refusal() -> None:
    second = refused()
    model = ScriptedChatModel(responses=[refused(), second])

    with pytest.raises(HTTPError) as info:
        run("agent", model, ToolStrategy(Contact))

    assert info.value is second
    assert [call.tool_choice for call in model.calls] == ["Contact", None]


def test_auto_falls_back_to_the_prompt_after_a_second_refusal() -> None:
    # A script of refusals and a text would imply the prompted route: the tool
    # route this test starts on is set by the profile.
    model = ScriptedChatModel(
        responses=[refused(), refused(), '{"name": "Ada", "age": 36}'],
        profile={"tool_calling": True, "tool_choice": True, "structured_output": False},
    )

    value, report = run("agent", model, AutoStrategy(Contact))

    assert value == ADA
    assert [call.tool_choice for call in model.calls] == ["Contact", None, None]
    assert [bool(call.tools) for call in model.calls] == [True, True, False]
    assert [(f["from_strategy"], f["to_strategy"]) for f in report["fallbacks"]] == [
        ("tool", "tool"),
        ("tool", "prompted"),
    ]


def test_a_refusal_of_something_else_still_surfaces_at_once() -> None:
    error = HTTPError("tools.0.input_schema: type must be object")
    model = ScriptedChatModel(responses=[error, ANSWER])

    with pytest.raises(HTTPError) as info:
        run("agent", model, ToolStrategy(Contact))

    assert info.value is error
    assert len(model.calls) == 1


def test_a_remembered_setting_expires_and_is_kept_apart_from_rejections() -> None:
    now = [0.0]
    memory = FallbackMemory(ttl_seconds=60, clock=lambda: now[0])
    memory.remember_setting("m", "tool_choice")
    memory.remember("m", "provider")

    assert memory.refused_settings("m") == {"tool_choice"}
    assert memory.rejected("m") == {"provider"}
    now[0] = 61.0
    assert memory.refused_settings("m") == frozenset()
    memory.remember_setting("m", "json_mode")
    memory.forget("m")
    assert memory.refused_settings("m") == frozenset() and memory.rejected("m") == frozenset()


def test_the_official_clients_thinking_switches_set_their_settings_apart() -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_google_genai import ChatGoogleGenerativeAI
    from langchain_openai import ChatOpenAI

    pairs = [
        (
            ChatOpenAI(model="qwen3", base_url="http://127.0.0.1:9/v1", api_key="k"),
            ChatOpenAI(
                model="qwen3",
                base_url="http://127.0.0.1:9/v1",
                api_key="k",
                extra_body={"chat_template_kwargs": {"enable_thinking": True}},
            ),
        ),
        (
            ChatOpenAI(model="o4-mini", api_key="k"),
            ChatOpenAI(model="o4-mini", api_key="k", reasoning_effort="high"),
        ),
        (
            ChatAnthropic(model="claude-sonnet-4-5", api_key="k"),
            ChatAnthropic(
                model="claude-sonnet-4-5",
                api_key="k",
                thinking={"type": "enabled", "budget_tokens": 1024},
            ),
        ),
        (
            ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="k"),
            ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="k", thinking_budget=0),
        ),
    ]
    for plain, thinking in pairs:
        assert model_identity(plain) == model_identity(thinking)
        assert client_setup(plain) == ""
        assert client_setup(thinking) != ""
