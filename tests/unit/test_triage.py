"""The triage example: each kind is routed to its own node, and the README shows the graph."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_structx.testing import ScriptedChatModel, tool_call

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "examples" / "triage" / "README.md"


@pytest.fixture(scope="module")
def triage() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("examples.triage.graph")


CASES = [
    (
        "SupportTicket",
        {"product": "invoices page", "summary": "It crashes on open.", "urgency": "high"},
        "support",
        "We opened a high-priority ticket about invoices page: It crashes on open.",
    ),
    (
        "SalesLead",
        {"interest": "the Pro plan", "company": "Initech", "seats": 25},
        "sales",
        "Thanks for your interest in the Pro plan for 25 seats! Our sales team will contact "
        "Initech.",
    ),
    ("Spam", {"reason": "lottery bait"}, "spam", "Filed as spam (lottery bait); no reply sent."),
]


def scripted(kind: str, args: dict[str, Any]) -> ScriptedChatModel:
    reply = AIMessage("", id="ai-1", tool_calls=[tool_call(kind, args, id="call-1")])
    return ScriptedChatModel(responses=[reply])


@pytest.mark.parametrize(("kind", "args", "node", "reply"), CASES)
def test_each_kind_is_routed_to_its_own_node(
    triage: ModuleType, kind: str, args: dict[str, Any], node: str, reply: str
) -> None:
    model = scripted(kind, args)
    graph = triage.build_graph(model)

    updates = list(graph.stream({"messages": [HumanMessage("hi", id="h1")]}, stream_mode="updates"))

    assert [next(iter(u)) for u in updates] == ["triage", node]
    triaged = updates[0]["triage"]
    schema = getattr(triage, kind)
    assert triaged["structured_response"] == schema(**args)
    assert triaged["structured_response_kind"] == kind
    assert updates[1][node]["reply"].endswith(reply)
    # The model was asked with the triage prompt and the three schemas as tools.
    call = model.calls[0]
    assert call.messages[0].type == "system" and "SupportTicket" in call.messages[0].text
    assert sorted(t["function"]["name"] for t in call.tools) == [
        "SalesLead",
        "Spam",
        "SupportTicket",
    ]


async def test_the_graph_runs_async(triage: ModuleType) -> None:
    graph = triage.build_graph(scripted("Spam", {"reason": "crypto"}))

    result = await graph.ainvoke({"messages": [HumanMessage("win big")]})

    assert result["structured_response"] == triage.Spam(reason="crypto")
    assert result["reply"] == "Filed as spam (crypto); no reply sent."
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]


def test_the_mermaid_diagram_has_the_three_routes(triage: ModuleType) -> None:
    mermaid = triage.build_graph(scripted("Spam", {"reason": "x"})).get_graph().draw_mermaid()

    routes = set(re.findall(r"^\s*triage -\.-> (\w+);$", mermaid, re.M))
    assert routes == {"support", "sales", "spam"}
    for node in ("support", "sales", "spam"):
        assert f"{node} --> __end__;" in mermaid


def test_the_readme_shows_the_graph_as_drawn(triage: ModuleType) -> None:
    mermaid = triage.build_graph(scripted("Spam", {"reason": "x"})).get_graph().draw_mermaid()
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```mermaid\n(.*?)```", text, re.S)

    assert block is not None
    assert block.group(1).strip() == mermaid.strip()


def test_without_a_model_the_graph_uses_the_embedded_local_model(triage: ModuleType) -> None:
    from langchain_structx.local import LocalChatModel

    runnable = triage.build_graph().builder.nodes["triage"].runnable
    node = runnable.func.__self__  # as_runnable() wraps the node's bound __call__

    assert isinstance(node.model, LocalChatModel)  # built lazily: nothing is loaded here


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The export button crashes the app, please help asap.", "SupportTicket"),
        ("Can I get a quote for 40 seats of the Team plan?", "SalesLead"),
        ("You are a WINNER! Click here to claim your prize.", "Spam"),
    ],
)
def test_the_offline_stand_in_sorts_by_keywords(triage: ModuleType, text: str, kind: str) -> None:
    graph = triage.offline_graph({})

    result = graph.invoke({"messages": [HumanMessage(text)]})

    assert result["structured_response_kind"] == kind
    assert isinstance(result["structured_response"], getattr(triage, kind))


def test_the_command_line_prints_the_kind_and_the_reply(
    triage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    triage.main(["--offline", "I want to buy 3 seats of the Pro plan."])

    out = capsys.readouterr().out
    assert "kind:  SalesLead" in out
    assert "reply: Thanks for your interest in the Pro plan for 3 seats!" in out


def test_langgraph_json_serves_both_graphs(triage: ModuleType) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))

    # The generic extraction graphs sit beside these; test_deploy_config checks them.
    assert {name: config["graphs"][name] for name in ("triage", "triage_offline")} == {
        "triage": "./examples/triage/graph.py:graph",
        "triage_offline": "./examples/triage/graph.py:offline_graph",
    }
