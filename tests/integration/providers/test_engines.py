"""Each serving engine's own constrained decoding, through `ChatOpenAI` and `ChatOllama`.

The fakes (`engines.py`) enforce the schema only when it comes in the field the
engine documents and drop any other field with an HTTP 200, so a test passes
only when the engine's own field reached the wire through the official client.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    FallbackMemory,
    ProviderStrategy,
    StructuredOutputMiddleware,
    create_agent,
)
from langchain_structx._models import engines as _engines

from .engines import (
    MODEL,
    FakeEngine,
    FakeLMStudio,
    FakeOllama,
    FakeSGLang,
    FakeVLLM,
    answering,
)

pytestmark = pytest.mark.integration


class Contact(BaseModel):
    """A person to reach."""

    name: str
    email: str


ADA = {"name": "Ada", "email": "ada@example.org"}
PROSE = "Sure! The contact is Ada, and her email is ada@example.org."
LOOSE = {"contact": "Ada <ada@example.org>"}
QUESTION = {"messages": [("user", "Ada, ada@example.org")]}

ENGINES: dict[str, type[FakeEngine]] = {
    "vllm": FakeVLLM,
    "sglang": FakeSGLang,
    "ollama": FakeOllama,
    "lm-studio": FakeLMStudio,
}


def _model() -> Any:
    return answering(ADA, PROSE, LOOSE)


def _openai(server: FakeEngine, **options: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=MODEL, base_url=f"{server.url}/v1", api_key="none", max_retries=0, **options
    )


def _ollama(server: FakeEngine) -> Any:
    from langchain_ollama import ChatOllama

    return ChatOllama(model=MODEL, base_url=server.url)


def _schema_sent(body: dict[str, Any]) -> dict[str, Any]:
    return dict(body["response_format"]["json_schema"]["schema"])


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_bare_schema_asks_through_the_engines_own_field(engine: str) -> None:
    with ENGINES[engine](_model()) as server:
        agent = create_agent(_openai(server), tools=[], response_format=Contact)
        state = agent.invoke(QUESTION)
        again = agent.invoke(QUESTION)

    assert state["structured_response"] == Contact(**ADA)
    report = state["structured_output_report"]
    assert (report["strategy"], report["attempts"], report["fallbacks"]) == ("provider", 1, [])
    assert again["structured_output_report"]["attempts"] == 1
    assert len(server.requests) == 2  # one model call per answer
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    # The schema as it is (no strict rewriting), named by the title.
    schema = _schema_sent(sent)
    assert schema["required"] == ["name", "email"] and schema["title"] == "Contact"
    assert "strict" not in sent["response_format"]["json_schema"]
    assert "tools" not in sent
    # Asked once per agent: the second run reads the memory.
    assert server.gets.count("/v1/models") == 1
    assert server.violations == []


def test_ollama_is_recognised_by_its_version_endpoint() -> None:
    with FakeOllama(_model()) as server:
        create_agent(_openai(server), tools=[], response_format=Contact).invoke(QUESTION)

    assert server.gets == ["/v1/models", "/api/version"]


def test_lm_studio_is_recognised_by_its_own_model_list() -> None:
    class Unnamed(FakeLMStudio):
        owned_by = "someone"  # an `owned_by` no table knows: the native list decides

    with Unnamed(_model()) as server:
        state = create_agent(_openai(server), tools=[], response_format=Contact).invoke(QUESTION)

    assert server.gets == ["/v1/models", "/api/version", "/api/v0/models"]
    assert state["structured_output_report"]["strategy"] == "provider"


def test_chat_ollama_sends_format_on_the_native_route_without_a_probe() -> None:
    with FakeOllama(_model()) as server:
        state = create_agent(_ollama(server), tools=[], response_format=Contact).invoke(QUESTION)

    assert state["structured_response"] == Contact(**ADA)
    report = state["structured_output_report"]
    assert (report["strategy"], report["attempts"]) == ("provider", 1)
    (sent,) = server.requests
    assert sent["format"]["required"] == ["name", "email"]
    assert server.gets == []


def test_an_ignored_constraint_falls_back_at_once_and_is_remembered() -> None:
    # Ollama before 0.5 drops a json_schema response format: HTTP 200, free text.
    memory = FallbackMemory()
    with FakeOllama(_model(), version="0.4.7") as server:
        model = _openai(server)

        def agent() -> Any:
            middleware = StructuredOutputMiddleware(Contact, fallback_memory=memory)
            from langchain.agents import create_agent as langchain_create_agent

            return langchain_create_agent(model, middleware=[middleware])

        first = agent().invoke(QUESTION)
        second = agent().invoke(QUESTION)

    report = first["structured_output_report"]
    assert first["structured_response"] == Contact(**ADA)
    assert (report["strategy"], report["attempts"]) == ("tool", 2)
    (record,) = report["fallbacks"]
    assert (record["from_strategy"], record["to_strategy"]) == ("provider", "tool")
    assert "ignored the schema" in record["reason"]
    assert "response_format" in record["reason"]
    # The next agent sharing the memory asks by the tool route from the start.
    later = second["structured_output_report"]
    assert (later["strategy"], later["attempts"], later["fallbacks"]) == ("tool", 1, [])
    assert [("response_format" in r, "tools" in r) for r in server.requests] == [
        (True, False),
        (False, True),
        (False, True),
    ]
    assert server.gets.count("/v1/models") == 1  # one probe for the shared memory


def test_a_constraint_seen_honoured_is_trusted_with_a_failure_later() -> None:
    replies = iter([json.dumps(ADA), PROSE, PROSE, json.dumps(ADA)])

    def model(ask: Any) -> Any:
        from .wire import Reply

        if ask.kind == "tool":
            return Reply(calls=((ask.forced, ADA),))
        return Reply(text=next(replies))

    with FakeVLLM(model) as server:
        agent = create_agent(_openai(server), tools=[], response_format=Contact)
        agent.invoke(QUESTION)
        state = agent.invoke(QUESTION)

    # Trusted: one prose reply is a failed attempt like any other (the route is
    # left only after two in a row), not an ignored constraint.
    report = state["structured_output_report"]
    assert report["strategy"] == "tool" and report["attempts"] == 3
    assert "ignored" not in report["fallbacks"][0]["reason"]


def test_vllm_ignores_the_removed_guided_json_field() -> None:
    # What a client still sending `guided_json` gets from vLLM 0.12: free text.
    with FakeVLLM(_model()) as server:
        model = _openai(server, extra_body={"guided_json": Contact.model_json_schema()})
        reply = model.invoke("Ada, ada@example.org")

    assert reply.content == PROSE


def test_vllm_reads_the_structured_outputs_body_field() -> None:
    with FakeVLLM(_model()) as server:
        model = _openai(server, extra_body={"structured_outputs": {"json": {"type": "object"}}})
        reply = model.invoke("Ada, ada@example.org")

    assert json.loads(str(reply.content)) == ADA


def test_an_explicit_provider_strategy_uses_the_engines_field() -> None:
    with FakeSGLang(_model()) as server:
        agent = create_agent(_openai(server), tools=[], response_format=ProviderStrategy(Contact))
        state = agent.invoke(QUESTION)

    assert state["structured_response"] == Contact(**ADA)
    assert state["structured_output_report"]["attempts"] == 1
    assert server.requests[0]["response_format"]["type"] == "json_schema"


def test_an_unknown_server_keeps_the_tool_route() -> None:
    class Unknown(FakeEngine):
        owned_by = "acme"

    with Unknown(_model()) as server:
        state = create_agent(_openai(server), tools=[], response_format=Contact).invoke(QUESTION)

    report = state["structured_output_report"]
    assert (report["strategy"], report["attempts"]) == ("tool", 1)
    assert server.gets == ["/v1/models", "/api/version", "/api/v0/models"]


def test_a_profile_without_structured_output_keeps_the_route_off() -> None:
    with FakeVLLM(_model()) as server:
        model = _openai(server, profile={"structured_output": False, "tool_calling": True})
        state = create_agent(model, tools=[], response_format=Contact).invoke(QUESTION)

    assert state["structured_output_report"]["strategy"] == "tool"


def test_async_runs_probe_without_blocking() -> None:
    with FakeVLLM(_model()) as server:
        agent = create_agent(_openai(server), tools=[], response_format=AutoStrategy(Contact))
        state = asyncio.run(agent.ainvoke(QUESTION))

    assert state["structured_output_report"]["strategy"] == "provider"
    assert server.gets == ["/v1/models"]


def test_a_server_nobody_answers_on_is_not_named() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends
    assert (
        asyncio.run(_engines.probe(_engines.Endpoint(f"http://127.0.0.1:{port}/v1", "m"))) is None
    )


def test_the_runnable_and_the_node_use_the_engines_field() -> None:
    from langgraph.graph import END, START, MessagesState, StateGraph

    from langchain_structx import structured_output_node, with_structured_output

    with FakeLMStudio(_model()) as server:
        model = _openai(server)
        runnable = with_structured_output(model, Contact)
        streamed = list(runnable.stream("Ada, ada@example.org"))
        answer = asyncio.run(runnable.ainvoke("Ada, ada@example.org"))

        class State(MessagesState):
            structured_response: Contact

        graph = StateGraph(State)
        graph.add_node("extract", structured_output_node(model, Contact))
        graph.add_edge(START, "extract")
        graph.add_edge("extract", END)
        state = graph.compile().invoke(QUESTION)

    assert streamed[-1] == Contact(**ADA) and answer == Contact(**ADA)
    assert state["structured_response"] == Contact(**ADA)
    assert all(r["response_format"]["type"] == "json_schema" for r in server.requests)
    assert len(server.requests) == 3


def test_a_probe_reads_no_engine_from_html_and_stops_at_a_dropped_connection() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path != "/v1/models":
                self.close_connection = True  # no answer at all
                return
            page = b"<html>a web app, not a model server</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        where = _engines.Endpoint(f"http://{host}:{port}/v1", "m")
        assert asyncio.run(_engines.probe(where)) is None
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
