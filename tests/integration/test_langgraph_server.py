"""The triage example served by LangGraph Server (`langgraph dev`), driven by langgraph-sdk.

The server runs the repository's `langgraph.json` on a free loopback port, with
analytics, version checks and tracing off, in a scratch working directory (where
`langgraph dev` keeps its `.langgraph_api` state). It is always stopped, whatever
the outcome.
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0
RUN_TIMEOUT = 60.0
LOCAL_RUN_TIMEOUT = 600.0

# Everything that could make the server or the CLI talk to anything but loopback.
QUIET_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "OTEL_ENABLED": "false",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
DROPPED_ENV = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


@dataclass(frozen=True)
class Server:
    url: str
    log: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll `/ok` (bounded by START_TIMEOUT); fail with the log if the server dies."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            pytest.fail(f"langgraph dev exited with {process.returncode}:\n{tail}")
        try:
            with opener.open(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:]
    pytest.fail(f"langgraph dev did not answer within {START_TIMEOUT:.0f}s:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group (the CLI and anything it started)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("langgraph_cli", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_api", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_sdk", reason="needs langgraph-sdk")
    port = _free_port()
    # `langgraph dev` resolves graph paths and keeps its state (.langgraph_api) in its
    # working directory: give it a scratch one that looks like the repository root.
    workdir = tmp_path_factory.mktemp("langgraph-server")
    shutil.copy(ROOT / "langgraph.json", workdir / "langgraph.json")
    (workdir / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    log = workdir / "server.log"
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV} | QUIET_ENV
    # The repository root first, so `langchain_structx` and `examples` import from here.
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    command = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        "langgraph.json",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
        "--server-log-level",
        "WARNING",
    ]
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_up(url, process, log)
        yield Server(url=url, log=log)
    finally:
        _stop(process)


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

    assert {"triage", "triage_offline"} <= graphs


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
