"""Graphs and worker processes for the PostgreSQL tests.

The test module and its worker processes both import this module by the same
name, so a checkpoint written by one is read back by the other with the same
classes (`checkpoint_graphs.Contact`), as strict msgpack requires.

Every scripted reply is decided from the thread's own input: the first attempt
of a thread leaves out the email (a validation failure, so a retry), the retry
answers with the name and email the thread was asked about. A thread that saw
another thread's messages would end with the other thread's contact.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from checkpoint_graphs import BUILDERS, Contact, config, prepare_runs, summary
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from langchain_structx.testing import RecordedCall, ScriptedChatModel, tool_call

# A blocked worker gives up after this long, so a test that fails to kill it
# cannot leave it behind for ever.
BLOCK_TIMEOUT = 120
INVALID_USAGE = {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
VALID_USAGE = {"input_tokens": 13, "output_tokens": 5, "total_tokens": 18}
RETRIED_USAGE = {"input_tokens": 24, "output_tokens": 8, "total_tokens": 32}


# -- threads and their scripted answers ------------------------------------------------


def ask(number: int) -> dict[str, Any]:
    """The input of thread `number`."""
    text = f"Person {number}, p{number}@example.org"
    return {"messages": [HumanMessage(text, id=f"h-{number}")]}


def expected_contact(number: int) -> Contact:
    return Contact(name=f"Person {number}", email=f"p{number}@example.org")


def flavour_of(number: int) -> str:
    """Even threads run the agent, odd ones the node graph, in the same processes."""
    return "agent" if number % 2 == 0 else "node"


def _thread_number(messages: list[BaseMessage]) -> int:
    match = re.match(r"Person (\d+),", messages[0].text)
    assert match is not None, messages[0].text
    return int(match.group(1))


def answer(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    """Leave out the email on a thread's first attempt; answer in full on the retry."""
    number = _thread_number(messages)
    if not any(isinstance(message, ToolMessage) for message in messages):
        args, id, usage = {"name": f"Person {number}"}, f"ai-{number}-bad", INVALID_USAGE
    else:
        args, id, usage = expected_contact(number).model_dump(), f"ai-{number}-good", VALID_USAGE
    call_ = tool_call("Contact", args, id=f"call-{id}")
    return AIMessage("", id=id, tool_calls=[call_], usage_metadata=usage)  # type: ignore[arg-type]


def retrying_model(threads: int = 1) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[answer] * (2 * threads))


def outcome(values: dict[str, Any]) -> dict[str, Any]:
    """What a run left in the state, as JSON."""
    response = values.get("structured_response")
    return {
        "response": response.model_dump() if isinstance(response, Contact) else repr(response),
        "kind": values.get("structured_response_kind"),
        "report": values.get("structured_output_report"),
        "messages": summary(values["messages"]),
    }


# -- worker processes --------------------------------------------------------------------


@contextmanager
def sync_saver(uri: str) -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(uri) as saver:
        yield saver


def async_pool(uri: str, size: int) -> AsyncConnectionPool[Any]:
    """The connection settings the async saver needs, on a pool of `size` connections."""
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    return AsyncConnectionPool(uri, min_size=1, max_size=size, kwargs=kwargs, open=False)


def _strict() -> bool:
    from langgraph.checkpoint.serde import _msgpack

    return bool(_msgpack.STRICT_MSGPACK_ENABLED)


async def run_share(uri: str, index: int, workers: int, threads: int) -> dict[str, Any]:
    """Run every thread `n` with `n % workers == index`, all at once, on one pool."""
    mine = [n for n in range(threads) if n % workers == index]
    model = retrying_model(len(mine))
    async with async_pool(uri, size=4) as pool:
        saver = AsyncPostgresSaver(pool)
        graphs = {flavour: build(model, saver) for flavour, build in BUILDERS.items()}
        runs = [graphs[flavour_of(n)].ainvoke(ask(n), config(f"many-{n}")) for n in mine]
        await asyncio.gather(*runs)
    return {"strict": _strict(), "pid": os.getpid(), "threads": mine, "calls": len(model.calls)}


def block_on_retry(marker: Path) -> Callable[[list[BaseMessage], RecordedCall], AIMessage]:
    """A reply that signals the retry has begun, then waits to be killed."""

    def blocked(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
        assert isinstance(messages[-1], ToolMessage) and "email" in messages[-1].text
        marker.write_text(str(os.getpid()))
        threading.Event().wait(BLOCK_TIMEOUT)
        raise AssertionError("the worker should have been killed during the retry")

    return blocked


def run_and_block(uri: str, flavour: str, thread: str, marker: str) -> None:
    """First attempt invalid, the retry blocks until the test kills the process."""
    model = ScriptedChatModel(responses=[answer, block_on_retry(Path(marker))])
    with sync_saver(uri) as saver:
        # "sync" durability: each step is committed before the next one starts.
        BUILDERS[flavour](model, saver).invoke(ask(7), config(thread), durability="sync")


def resume(uri: str, flavour: str, thread: str) -> dict[str, Any]:
    """Continue a thread another process left unfinished."""
    model = retrying_model()
    with sync_saver(uri) as saver:
        graph = BUILDERS[flavour](model, saver)
        pending = list(graph.get_state(config(thread)).next)
        result = graph.invoke(None, config(thread), durability="sync")
    return {
        **outcome(result),
        "pending": pending,
        "strict": _strict(),
        "prepare_runs": len(prepare_runs),
        "calls": [summary(call.messages) for call in model.calls],
    }


def main() -> None:
    """Entry point of the worker processes; prints one JSON line."""
    role, *args = sys.argv[1:]
    if role == "share":
        uri, index, workers, threads = args
        print(json.dumps(asyncio.run(run_share(uri, int(index), int(workers), int(threads)))))
    elif role == "block":
        run_and_block(*args)
    elif role == "resume":
        print(json.dumps(resume(*args)))
    else:
        raise SystemExit(f"unknown role {role!r}")
