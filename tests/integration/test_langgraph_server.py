"""The triage example served by LangGraph Server (`langgraph dev`), driven by langgraph-sdk.

The server (started by `langgraph_dev.langgraph_dev`) runs the repository's
`langgraph.json` on a free loopback port and is always stopped, whatever the outcome.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph_dev import ROOT, Server, langgraph_dev

pytestmark = pytest.mark.integration

RUN_TIMEOUT = 60.0
LOCAL_RUN_TIMEOUT = 600.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("langgraph_cli", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_api", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_sdk", reason="needs langgraph-sdk")
    with langgraph_dev(tmp_path_factory.mktemp("langgraph-server")) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[Any]:
    from langgraph_sdk import get_sync_client

    with get_sync_client(url=server.url, timeout=RUN_TIMEOUT) as sdk:
        yield sdk


def load_triage() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("examples.triage.graph")


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_the_server_lists_both_triage_graphs(client: Any) -> None:
    graphs = {a["graph_id"] for a in client.assistants.search(limit=20)}

    assert {"triage", "triage_offline", "extract", "extract_offline"} <= graphs


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        (
            "Can I get a quote for 40 seats of the Team plan?",
            "SalesLead",
            {"interest": "the Team plan", "company": None, "seats": 40},
        ),
        (
            "The export button crashes the app, please help asap.",
            "SupportTicket",
            {
                "product": "our app",
                "summary": "The export button crashes the app, please help asap",
                "urgency": "high",
            },
        ),
    ],
)
def test_a_run_ends_with_the_structured_response(
    client: Any, text: str, kind: str, fields: dict[str, Any]
) -> None:
    thread = client.threads.create()

    final = client.runs.wait(thread["thread_id"], "triage_offline", input=ask(text))

    assert final["structured_response_kind"] == kind
    assert final["structured_response"] == fields  # a Pydantic model arrives as its JSON
    assert final["structured_output_report"]["attempts"] == 1
    assert [m["type"] for m in final["messages"]] == ["human", "ai", "tool", "ai"]
    stored = client.threads.get_state(thread["thread_id"])
    assert stored["next"] == []
    assert stored["values"]["structured_response"] == fields
    (run,) = client.runs.list(thread["thread_id"])
    assert run["status"] == "success"


def test_partial_objects_stream_through_the_server(client: Any) -> None:
    thread = client.threads.create()
    text = "Can I get a quote for 40 seats of the Team plan?"

    parts = client.runs.stream(
        thread["thread_id"], "triage_offline", input=ask(text), stream_mode="custom"
    )
    events = [p.data for p in parts if p.event == "custom"]

    assert [e["phase"] for e in events][-1] == "final"
    assert {e["kind"] for e in events} == {"SalesLead"}
    partial = [e["value"] for e in events if e["phase"] == "partial"]
    assert len(partial) >= 2
    assert events[-1]["value"] == {"interest": "the Team plan", "company": None, "seats": 40}


@pytest.mark.slow
def test_the_triage_graph_on_the_local_model(server: Server, default_weights: Path) -> None:
    # The real thing: the embedded model loads in the server on this first run.
    pytest.importorskip("llama_cpp", reason='needs "langchain-structx[local]"')
    from langgraph_sdk import get_sync_client

    text = "Hi, I'd like a quote for 25 seats of your Pro plan for Initech."
    with get_sync_client(url=server.url, timeout=LOCAL_RUN_TIMEOUT) as slow:
        thread = slow.threads.create()
        final = slow.runs.wait(thread["thread_id"], "triage", input=ask(text))

    # A small model may pick the wrong kind; what it returns must still validate.
    triage = load_triage()
    kind = final["structured_response_kind"]
    assert kind in triage.ROUTES
    getattr(triage, kind).model_validate(final["structured_response"])
    assert final["reply"]
