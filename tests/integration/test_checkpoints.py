"""Structured output across checkpoints, on a real SQLite file.

Each scenario runs twice: on our `create_agent` (the agent graph) and on a plain
`StateGraph` holding `structured_output_node`. A child Python process (this very
module, run as a script) plays the process that dies; the parent builds the same
graph on the same file and resumes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NotRequired

import pytest
from checkpoint_graphs import (
    BUILDERS,
    Card,
    Contact,
    Event,
    Pair,
    build_agent,
    build_node_graph,
    config,
    prepare_runs,
    summary,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import MessagesState
from langgraph.types import Command

from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import RecordedCall, ScriptedChatModel, tool_call

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
CHILD_TIMEOUT = 120


class UntypedState(MessagesState):
    """The same state with an untyped response: strict msgpack cannot allow the classes."""

    structured_response: NotRequired[Any]
    structured_response_kind: NotRequired[str | None]


STRUCTURED_NODE = {"agent": "model", "node": "extract"}


def open_saver(path: Path) -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


# -- scripted replies ------------------------------------------------------------------


def contact_call(email: str | None, *, id: str) -> AIMessage:
    args = {"name": "Ada"} if email is None else {"name": "Ada", "email": email}
    return AIMessage("", id=id, tool_calls=[tool_call("Contact", args, id=f"call-{id}")])


def event_call(*, id: str) -> AIMessage:
    args = {"title": "Launch", "day": "Friday"}
    return AIMessage("", id=id, tool_calls=[tool_call("Event", args, id=f"call-{id}")])


@pytest.fixture
def savers(tmp_path: Path) -> Iterator[Callable[[], SqliteSaver]]:
    """Open savers on one SQLite file; each call is a fresh connection, as after a restart."""
    opened: list[SqliteSaver] = []

    def fresh() -> SqliteSaver:
        opened.append(open_saver(tmp_path / "checkpoints.sqlite"))
        return opened[-1]

    yield fresh
    for saver in opened:
        saver.conn.close()


@pytest.fixture(autouse=True)
def _forget_prepare_runs() -> None:
    prepare_runs.clear()


def human_messages(flavour: str) -> list[tuple[str, str]]:
    """The messages the model must see first: the user's, then prepare's for the node."""
    first = [("human", "h1")]
    return first if flavour == "agent" else [*first, ("human", "ctx-h1")]


# -- (a) interrupted before the structured node -----------------------------------------


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_interrupted_run_resumes_to_a_structured_response(
    flavour: str, savers: Callable[[], SqliteSaver]
) -> None:
    first = ScriptedChatModel(responses=[])
    if flavour == "agent":
        graph = build_agent(first, savers(), interrupt_before=["model"])
    else:
        graph = build_node_graph(first, savers())
    paused = graph.invoke(
        {"messages": [HumanMessage("approve: Ada, ada@x.org", id="h1")]}, config()
    )

    assert first.calls == []  # stopped before any model call
    assert "structured_response" not in paused or paused["structured_response"] is None
    state = graph.get_state(config())
    if flavour == "node":
        assert state.next == ("prepare",)
        assert [i.value for i in state.interrupts] == ["approve extraction?"]
    else:
        assert state.next == ("model",)

    # A new process: a fresh connection to the same file and a freshly built graph.
    model = ScriptedChatModel(responses=[contact_call("ada@x.org", id="ai-1")])
    resumed = BUILDERS[flavour](model, savers())
    command = Command(resume="yes") if flavour == "node" else None
    result = resumed.invoke(command, config())

    assert result["structured_response"] == Contact(name="Ada", email="ada@x.org")
    assert result["structured_response_kind"] == "Contact"
    assert result["structured_output_report"]["attempts"] == 1
    seen = human_messages(flavour)
    assert summary(model.calls[0].messages) == seen
    assert summary(result["messages"]) == [*seen, ("ai", "ai-1"), ("tool", "call-ai-1")]
    assert resumed.get_state(config()).next == ()


# -- (b) a process killed in the middle of a retry ---------------------------------------


def kill_on_retry(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    """The retry's reply: check it is the retry, say so, and die without cleanup."""
    assert isinstance(messages[-1], ToolMessage) and "email" in messages[-1].text
    _await_stored_reply("ai-bad")
    print("retrying-after-failure", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


_child_db: list[Path] = []


def _await_stored_reply(message_id: str) -> None:
    """Wait until the checkpoint database holds the reply `message_id`.

    LangGraph stores a task's result from a background thread, so a process
    killed the instant a node's next call starts may not have stored it yet: the
    resumed run would then rightly call the model again. This test is about a
    process killed after the first reply was kept, so it waits for that.
    """
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with sqlite3.connect(_child_db[0]) as connection:
            blobs = connection.execute("SELECT value FROM writes").fetchall()
            blobs += connection.execute("SELECT checkpoint FROM checkpoints").fetchall()
        if any(message_id.encode() in bytes(blob) for (blob,) in blobs if blob):
            return
        time.sleep(0.05)
    raise AssertionError(f"the reply {message_id} was never stored")


def child_run_and_die(flavour: str, db: str) -> None:
    """Child process: first attempt fails validation, the retry kills the process."""
    _child_db.append(Path(db))
    model = ScriptedChatModel(responses=[contact_call(None, id="ai-bad"), kill_on_retry])
    graph = BUILDERS[flavour](model, open_saver(Path(db)))
    # "sync" durability: each step's checkpoint is on disk before the next step runs.
    graph.invoke(
        {"messages": [HumanMessage("Ada, ada@x.org", id="h1")]}, config(), durability="sync"
    )
    raise AssertionError("the retry should have killed this process")


def run_child(*args: str, strict: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `main()` of this module in a new interpreter (strict: strict msgpack, -W error)."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import test_checkpoints as t; t.main()"
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true" if strict else "false"}
    return subprocess.run(
        [sys.executable, *(["-W", "error"] if strict else []), "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        env=env,
        cwd=HERE,
    )


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_process_killed_mid_retry_resumes_without_loss_or_duplicates(
    flavour: str, tmp_path: Path, savers: Callable[[], SqliteSaver]
) -> None:
    db = tmp_path / "checkpoints.sqlite"
    child = run_child("die", flavour, str(db))
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert "retrying-after-failure" in child.stdout

    model = ScriptedChatModel(responses=[contact_call("ada@x.org", id="ai-good")])
    graph = BUILDERS[flavour](model, savers())
    before = graph.get_state(config())
    seen = human_messages(flavour)
    if flavour == "agent":
        # Each attempt of an agent is its own step: the failed one and its feedback
        # were committed before the retry began, and the retry is what died.
        assert before.values["structx_progress"]["attempts"] == 1
        assert summary(before.values["messages"]) == [
            *seen,
            ("ai", "ai-bad"),
            ("tool", "call-ai-bad"),
        ]
    else:
        # A node's attempts share its one step, but each model call's reply was kept
        # as it came: the resumed node replays the failed one and goes on from there.
        assert before.next == (STRUCTURED_NODE[flavour],)
        assert summary(before.values["messages"]) == seen
    seen = [*seen, ("ai", "ai-bad"), ("tool", "call-ai-bad")]

    result = graph.invoke(None, config())

    assert prepare_runs == []  # finished steps are not run again
    assert result["structured_response"] == Contact(name="Ada", email="ada@x.org")
    assert result["structured_response_kind"] == "Contact"
    # The resumed run goes on from where it was: its budget is not fresh, and its
    # report counts the attempt spent before the crash.
    report = result["structured_output_report"]
    assert report["attempts"] == 2
    assert len(report["errors"]) == 1 and "email" in report["errors"][0]
    assert len(model.calls) == 1
    assert summary(model.calls[0].messages) == seen
    assert summary(result["messages"]) == [*seen, ("ai", "ai-good"), ("tool", "call-ai-good")]
    stored = graph.get_state(config()).values
    assert summary(stored["messages"]) == summary(result["messages"])
    assert stored["structured_response"] == Contact(name="Ada", email="ada@x.org")


# -- (c) no leak from an earlier turn ------------------------------------------------------


def first_turn(flavour: str, savers: Callable[[], SqliteSaver], *later: Any) -> Any:
    model = ScriptedChatModel(responses=[contact_call("ada@x.org", id="ai-1"), *later])
    graph = BUILDERS[flavour](model, savers())
    done = graph.invoke({"messages": [HumanMessage("Ada, ada@x.org", id="h1")]}, config())
    assert done["structured_response"] == Contact(name="Ada", email="ada@x.org")
    return graph


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_a_later_turn_of_another_kind_replaces_the_response(
    flavour: str, savers: Callable[[], SqliteSaver]
) -> None:
    graph = first_turn(flavour, savers, event_call(id="ai-2"))

    result = graph.invoke({"messages": [HumanMessage("Launch on Friday", id="h2")]}, config())

    assert result["structured_response"] == Event(title="Launch", day="Friday")
    assert result["structured_response_kind"] == "Event"
    assert result["structured_output_report"]["variant"] == "Event"
    assert result["structured_output_report"]["attempts"] == 1
    stored = graph.get_state(config()).values
    assert stored["structured_response"] == Event(title="Launch", day="Friday")


@pytest.mark.parametrize("flavour", ["agent", "node"])
def test_a_failed_later_turn_keeps_no_earlier_response(
    flavour: str, savers: Callable[[], SqliteSaver]
) -> None:
    bad = [contact_call(None, id=f"ai-bad-{i}") for i in range(3)]
    graph = first_turn(flavour, savers, *bad)

    with pytest.raises(StructuredOutputRetryError):
        graph.invoke({"messages": [HumanMessage("someone, no email", id="h2")]}, config())

    stored = graph.get_state(config()).values
    if flavour == "agent":
        # Each failed attempt was its own step, committed with its feedback; the
        # last one raised, so it was not.
        attempts = [(("ai", f"ai-bad-{i}"), ("tool", f"call-ai-bad-{i}")) for i in range(2)]
        asked = [("human", "h2"), *(m for pair in attempts for m in pair)]
    else:
        asked = [("human", "h2"), ("human", "ctx-h2")]
    assert summary(stored["messages"])[-len(asked) :] == asked
    assert stored.get("structured_response") is None
    assert stored.get("structured_response_kind") is None
    assert stored.get("structured_output_report") is None


def test_node_graph_input_that_clears_the_keys_keeps_no_earlier_response(
    savers: Callable[[], SqliteSaver],
) -> None:
    # The documented workaround for the bug above: each turn's input resets the keys.
    bad = [contact_call(None, id=f"ai-bad-{i}") for i in range(3)]
    graph = first_turn("node", savers, *bad)
    turn = {
        "messages": [HumanMessage("someone, no email", id="h2")],
        "structured_response": None,
        "structured_response_kind": None,
        "structured_output_report": None,
    }

    with pytest.raises(StructuredOutputRetryError):
        graph.invoke(turn, config())

    stored = graph.get_state(config()).values
    assert summary(stored["messages"])[-2:] == [("human", "h2"), ("human", "ctx-h2")]
    assert stored["structured_response"] is None
    assert stored["structured_response_kind"] is None
    assert stored["structured_output_report"] is None


# -- (d) LANGGRAPH_STRICT_MSGPACK -----------------------------------------------------------

WARNING_MARKERS = ("Blocked deserialization", "unregistered type", "Deserializing unregistered")


def child_strict_round_trip(db: str, case: str) -> None:
    """Child process: run a graph, then read the checkpoint back through a fresh saver."""
    if case in ("agent-pydantic", "agent-raw-saver"):
        script, build, expected = [contact_call("ada@x.org", id="a")], build_agent, Contact
    elif case in ("agent-typeddict", "agent-generic"):
        schema: Any = Card if case == "agent-typeddict" else Pair[Contact]
        ada = {"name": "Ada", "email": "ada@x.org"}
        args = {"contact": ada} if schema is Card else {"first": ada, "second": ada}
        script = [AIMessage("", id="a", tool_calls=[tool_call(schema.__name__, args, id="c")])]
        expected = Contact  # the model inside the answer is what strict mode must allow

        def build(model: ScriptedChatModel, saver: SqliteSaver) -> Any:
            return create_agent(model, response_format=ToolStrategy(schema), checkpointer=saver)
    elif case == "agent-dataclass":
        script, build, expected = [event_call(id="a")], build_agent, Event
    elif case == "node-annotated":
        script, build, expected = [event_call(id="a")], build_node_graph, Event
    else:  # "node-untyped": the response key is typed Any
        script, expected = [contact_call("ada@x.org", id="a")], Contact

        def build(model: ScriptedChatModel, saver: SqliteSaver) -> Any:
            return build_node_graph(model, saver, UntypedState)

    thread = config(case)
    with _closing(open_saver(Path(db))) as writer:
        build(ScriptedChatModel(responses=script), writer).invoke(
            {"messages": [HumanMessage("Ada, ada@x.org; launch Friday", id="h1")]}, thread
        )
    with _closing(open_saver(Path(db))) as reader:
        if case == "agent-raw-saver":
            # Not through the graph: the saver as the caller holds it.
            found = reader.get_tuple(thread)
            assert found is not None
            restored = found.checkpoint["channel_values"]
        else:
            restored = build(ScriptedChatModel(responses=[]), reader).get_state(thread).values
    value = restored.get("structured_response")
    inside = {"agent-typeddict": lambda v: v["contact"], "agent-generic": lambda v: v.second}
    print(
        json.dumps(
            {
                "type": type(value).__name__,
                "isinstance": isinstance(inside.get(case, lambda v: v)(value), expected),
                "messages": [type(m).__name__ for m in restored["messages"]],
            }
        )
    )


class _closing:
    def __init__(self, saver: SqliteSaver) -> None:
        self.saver = saver

    def __enter__(self) -> SqliteSaver:
        return self.saver

    def __exit__(self, *exc: object) -> None:
        self.saver.conn.close()


def strict_child(tmp_path: Path, case: str) -> tuple[dict[str, Any], str]:
    child = run_child("strict", case, str(tmp_path / f"{case}.sqlite"), strict=True)
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.strip().splitlines()[-1]), child.stderr


@pytest.mark.parametrize(
    ("case", "type_name"),
    [
        ("agent-pydantic", "Contact"),
        ("agent-dataclass", "Event"),
        ("node-annotated", "Event"),
        ("agent-typeddict", "dict"),
        ("agent-generic", "Pair"),
    ],
)
def test_strict_msgpack_restores_user_types_without_warnings(
    case: str, type_name: str, tmp_path: Path
) -> None:
    restored, stderr = strict_child(tmp_path, case)

    assert restored["type"] == type_name
    assert restored["isinstance"] is True
    assert restored["messages"][0] == "HumanMessage"
    for marker in WARNING_MARKERS:
        assert marker not in stderr


def test_strict_msgpack_blocks_user_types_the_state_does_not_name(tmp_path: Path) -> None:
    # The control for the test above: strict mode is really on in the child, and
    # an untyped `structured_response` is what the annotation is needed for.
    restored, stderr = strict_child(tmp_path, "node-untyped")

    assert restored["isinstance"] is False
    assert "Blocked deserialization of checkpoint_graphs.Contact" in stderr


def test_strict_msgpack_allows_user_types_only_through_the_graph(tmp_path: Path) -> None:
    # LangGraph widens the allowlist on the graph's own copy of the saver; the
    # saver object the caller passed in stays strict (docs/graphs.md says so).
    restored, stderr = strict_child(tmp_path, "agent-raw-saver")

    assert restored["isinstance"] is False
    assert "Blocked deserialization of checkpoint_graphs.Contact" in stderr


def main() -> None:
    """Entry point of the child processes."""
    role, *args = sys.argv[1:]
    if role == "die":
        child_run_and_die(*args)
    elif role == "strict":
        child_strict_round_trip(args[1], args[0])
    else:
        raise SystemExit(f"unknown role {role!r}")
