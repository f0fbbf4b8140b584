"""Structured output on a real PostgreSQL checkpointer, shared by several processes.

The suite starts its own PostgreSQL (the build `pgserver` ships, on a unix socket,
see `embedded_postgres`), and each test gets a fresh database on it. Worker
processes run `postgres_workers.main()` with strict msgpack on and warnings as
errors, as a hardened deployment would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from checkpoint_graphs import BUILDERS, Contact, config
from embedded_postgres import EmbeddedPostgres, start_postgres, stop_postgres
from langchain_core.messages import AIMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from postgres_workers import (
    RETRIED_USAGE,
    ask,
    async_pool,
    expected_contact,
    flavour_of,
    outcome,
    retrying_model,
    sync_saver,
)
from psycopg import sql

from langchain_structx.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER_TIMEOUT = 180
THREADS, WORKERS = 200, 8


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    server = start_postgres()
    try:
        yield server
    finally:
        stop_postgres(server)


@pytest.fixture
def database(postgres: EmbeddedPostgres) -> Iterator[str]:
    """A new database with the checkpoint tables, dropped after the test."""
    name = f"test_{uuid.uuid4().hex[:12]}"  # a plain identifier: no quoting in the URI
    with psycopg.connect(postgres.uri(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    uri = postgres.uri(name)
    try:
        with sync_saver(uri) as saver:
            saver.setup()  # once, here: concurrent setup() calls from workers would race
        yield uri
    finally:
        with psycopg.connect(postgres.uri(), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def expected_messages(flavour: str, number: int, *, attempts: tuple[str, ...]) -> list[list[str]]:
    asked = [["human", f"h-{number}"]]
    if flavour == "node":
        asked.append(["human", f"ctx-h-{number}"])
    replies = [[kind, f"{prefix}ai-{number}-{a}"] for a in attempts for kind, prefix in _PAIR]
    return asked + replies


_PAIR = (("ai", ""), ("tool", "call-"))


def assert_retried_contact(state: dict[str, Any], flavour: str, number: int) -> None:
    """One retry, one response: the thread's own contact, with both calls' usage."""
    assert state["response"] == expected_contact(number).model_dump()
    assert state["kind"] == "Contact"
    assert state["report"]["attempts"] == 2
    assert len(state["report"]["errors"]) == 1
    assert state["report"]["usage"] == RETRIED_USAGE
    assert state["messages"] == expected_messages(flavour, number, attempts=("bad", "good"))


def as_json(values: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(outcome(values)))


# -- one process: the sync and the async saver --------------------------------------------


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_sync_saver_stores_a_retried_response(flavour: str, database: str) -> None:
    with sync_saver(database) as saver:
        result = BUILDERS[flavour](retrying_model(), saver).invoke(ask(1), config("t"))
    assert isinstance(result["structured_response"], Contact)

    # A new connection and a new graph, as after a restart.
    with sync_saver(database) as saver:
        graph = BUILDERS[flavour](retrying_model(), saver)
        stored = graph.get_state(config("t"))
        history = list(graph.get_state_history(config("t")))

    assert stored.next == ()
    assert isinstance(stored.values["structured_response"], Contact)
    assert_retried_contact(as_json(stored.values), flavour, 1)
    assert as_json(result) == as_json(stored.values)
    assert len(history) >= 3  # input, each step, end: every step was checkpointed


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_a_reply_with_an_integer_too_wide_to_store_is_retried_not_a_crashed_run(
    flavour: str, database: str
) -> None:
    # MessagePack integers hold 64 bits: stored as it came, this reply failed the write.
    wide = {"name": "Ada", "email": "ada@example.com", "rank": 2**64}
    replies = [
        AIMessage("", id="ai-wide", tool_calls=[tool_call("Contact", wide, id="c-wide")]),
        AIMessage("", id="ai-ok", tool_calls=[tool_call("Contact", {**wide, "rank": 1})]),
    ]
    with sync_saver(database) as saver:
        graph = BUILDERS[flavour](ScriptedChatModel(responses=replies), saver)
        result = graph.invoke(ask(1), config("w"))
    with sync_saver(database) as saver:
        stored = BUILDERS[flavour](ScriptedChatModel(responses=[]), saver).get_state(config("w"))
    report = result["structured_output_report"]
    assert (report["attempts"], report["variant"]) == (2, "Contact")
    assert "at $.rank: integer does not fit in 64 bits" in report["errors"][0]
    assert stored.values["structured_response"] == Contact(name="Ada", email="ada@example.com")
    failed = next(m for m in stored.values["messages"] if m.id == "ai-wide")
    assert failed.tool_calls[0]["args"]["rank"] is None


async def run_async(database: str, flavour: str, numbers: range) -> list[dict[str, Any]]:
    model = retrying_model(len(numbers))
    async with async_pool(database, size=3) as pool:
        graph = BUILDERS[flavour](model, AsyncPostgresSaver(pool))
        await asyncio.gather(*(graph.ainvoke(ask(n), config(f"a-{n}")) for n in numbers))
    # Read back on a fresh pool: what the runs returned is what the database holds.
    async with async_pool(database, size=1) as pool:
        graph = BUILDERS[flavour](retrying_model(), AsyncPostgresSaver(pool))
        states = [await graph.aget_state(config(f"a-{n}")) for n in numbers]
    return [as_json(state.values) for state in states]


@pytest.mark.parametrize("flavour", ["agent", "node"])
async def test_async_saver_runs_threads_at_once_without_mixing_them(
    flavour: str, database: str
) -> None:
    numbers = range(10)

    states = await run_async(database, flavour, numbers)

    for number, state in zip(numbers, states, strict=True):
        assert_retried_contact(state, flavour, number)


# -- several processes --------------------------------------------------------------------


def worker(*args: str) -> subprocess.Popen[str]:
    """Start `postgres_workers.main()` in a new interpreter, strict msgpack, -W error."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import postgres_workers as w; w.main()"
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true", "PYTHONPATH": path}
    command = [sys.executable, "-W", "error", "-c", code, *args]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=HERE
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    """Wait for a worker; its last stdout line is its JSON report."""
    try:
        stdout, stderr = process.communicate(timeout=WORKER_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr[-3000:]
    report: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    assert report.pop("strict") is True  # the worker really ran with strict msgpack
    return report


def wait_for(marker: Path, process: subprocess.Popen[str]) -> None:
    """Poll until the worker writes `marker`, failing if it exits or takes too long."""
    deadline = time.monotonic() + WORKER_TIMEOUT
    while not marker.exists():
        if process.poll() is not None:
            pytest.fail(f"worker exited with {process.returncode}: {process.communicate()[1]}")
        if time.monotonic() > deadline:
            pytest.fail("the worker never reached its retry")
        time.sleep(0.05)


def wait_until_stored(database: str, thread: str, message_id: str) -> None:
    """Poll until the thread's checkpoints or pending writes hold `message_id`."""
    query = (
        "SELECT (SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %(t)s"
        " AND position(%(m)s::bytea IN blob) > 0)"
        " + (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %(t)s"
        " AND position(%(m)s::bytea IN blob) > 0) AS n"
    )
    deadline = time.monotonic() + WORKER_TIMEOUT
    with sync_saver(database) as saver, saver.conn.cursor() as cursor:
        while True:
            cursor.execute(query, {"t": thread, "m": message_id.encode()})
            row = cursor.fetchone()
            if row is not None and row["n"]:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"the reply {message_id} was never stored")
            time.sleep(0.05)


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_worker_killed_mid_retry_is_finished_by_another_process(
    flavour: str, database: str, tmp_path: Path
) -> None:
    marker = tmp_path / "retrying"
    doomed = worker("block", database, flavour, "killed", str(marker))
    try:
        wait_for(marker, doomed)
        assert int(marker.read_text()) == doomed.pid  # blocked inside the retry's model call
        # LangGraph stores a node's finished model call from a background thread:
        # the test is of a worker killed after its first reply was kept.
        wait_until_stored(database, "killed", "ai-7-bad")
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.communicate(timeout=WORKER_TIMEOUT)
    assert doomed.returncode == -signal.SIGKILL

    resumed = finish(worker("resume", database, flavour, "killed"))

    structured = {"agent": "model", "node": "extract"}[flavour]
    assert resumed["pending"] == [structured]  # committed steps kept, the dead one not
    assert resumed["prepare_runs"] == 0  # and not run again
    if flavour == "agent":
        # Each attempt of an agent is its own step: the failed attempt was committed
        # with its feedback and usage, and only the retry that died runs again.
        asked = expected_messages(flavour, 7, attempts=("bad",))
        assert [call[: len(asked)] for call in resumed["calls"]] == [asked]
    else:
        # A node's attempts share its step, but each model call's reply was kept as
        # it came (a LangGraph task): the resumed node replays the failed reply and
        # calls the model once, for the retry that died.
        asked = expected_messages(flavour, 7, attempts=("bad",))
        assert [call[: len(asked)] for call in resumed["calls"]] == [asked]
    assert_retried_contact(resumed, flavour, 7)
    with sync_saver(database) as saver:
        stored = BUILDERS[flavour](retrying_model(), saver).get_state(config("killed"))
    assert as_json(stored.values) == {key: resumed[key] for key in as_json(stored.values)}


def test_many_threads_over_many_processes_keep_to_themselves(database: str) -> None:
    started = [
        worker("share", database, str(i), str(WORKERS), str(THREADS)) for i in range(WORKERS)
    ]
    reports = [finish(process) for process in started]

    assert len({report["pid"] for report in reports}) == WORKERS
    assert sorted(n for report in reports for n in report["threads"]) == list(range(THREADS))
    assert all(report["calls"] == 2 * len(report["threads"]) for report in reports)
    with sync_saver(database) as saver:
        graphs = {flavour: build(retrying_model(), saver) for flavour, build in BUILDERS.items()}
        for number in range(THREADS):
            flavour = flavour_of(number)
            state = graphs[flavour].get_state(config(f"many-{number}")).values
            assert_retried_contact(as_json(state), flavour, number)
        with saver.conn.cursor() as cursor:
            cursor.execute("SELECT count(DISTINCT thread_id) AS n FROM checkpoints")
            row = cursor.fetchone()
    assert row is not None and row["n"] == THREADS
