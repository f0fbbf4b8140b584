"""The test double takes the structured-output route its script implies."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from langchain_structx.middleware import create_agent
from langchain_structx.testing import ScriptedChatModel, tool_call

TICKET: dict[str, Any] = {
    "title": "Ticket",
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}
ASK = {"messages": [{"role": "user", "content": "The printer is on fire."}]}


def test_a_script_of_json_texts_takes_the_prompted_route_with_a_bare_schema() -> None:
    # The trap: a broken JSON text, then a good one. On the tool route both
    # were "no tool call", the run fell back to prompted and ran out of script.
    model = ScriptedChatModel(responses=['{"summary": "fire"', '{"summary": "fire"}'])
    result = create_agent(model, response_format=TICKET).invoke(ASK)
    report = result["structured_output_report"]
    assert result["structured_response"] == {"summary": "fire"}
    assert (report["strategy"], report["attempts"]) == ("prompted", 2)
    assert len(model.calls) == 2 and model.remaining == 0
    assert all(call.tools == [] for call in model.calls)


def test_a_script_with_a_tool_call_takes_the_tool_route() -> None:
    reply = AIMessage(content="", tool_calls=[tool_call("Ticket", {"summary": "fire"})])
    model = ScriptedChatModel(responses=[reply])
    result = create_agent(model, response_format=TICKET).invoke(ASK)
    assert result["structured_output_report"]["strategy"] == "tool"
    assert model.calls[0].tools[0]["function"]["name"] == "Ticket"


def test_a_profile_the_test_sets_wins_over_the_script() -> None:
    model = ScriptedChatModel(
        responses=['{"summary": "fire"}'],
        profile={"structured_output": True, "tool_calling": True},
    )
    result = create_agent(model, response_format=TICKET).invoke(ASK)
    assert result["structured_output_report"]["strategy"] == "provider"
    assert model.calls[0].response_format is not None


def test_reset_follows_the_new_script_unless_the_profile_was_set() -> None:
    model = ScriptedChatModel(responses=['{"summary": "a"}'])
    assert model.profile is not None and model.profile["tool_calling"] is False
    model.reset([AIMessage(content="", tool_calls=[tool_call("Ticket", {"summary": "a"})])])
    assert model.profile["tool_calling"] is True
    fixed = ScriptedChatModel(responses=["x"], profile={"tool_calling": True})
    fixed.reset(["y"])
    assert fixed.profile == {"tool_calling": True}
