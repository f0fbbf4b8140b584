"""The user classes and graphs that the checkpoint tests (SQLite and PostgreSQL) share.

Test modules and the worker processes they start import this module by the same
name, so a checkpoint written by one is read back by another with the same classes
(`checkpoint_graphs.Contact`), as strict msgpack requires.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NotRequired, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from langchain_structx.middleware import create_agent
from langchain_structx.nodes import reset_structured_output, structured_output_node
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel


class Contact(BaseModel):
    """A person's contact details."""

    name: str
    email: str


@dataclass
class Event:
    """Something happening on a day."""

    title: str
    day: str


class Card(TypedDict):
    """A TypedDict answer holding a model: the model is what a checkpoint must allow."""

    contact: Contact


T = TypeVar("T")


@dataclass
class Pair(Generic[T]):
    """A generic dataclass, given as `Pair[Contact]`."""

    first: T
    second: T


class NodeState(MessagesState):
    """What a user writes for their own graph: the response annotated with their classes."""

    structured_response: NotRequired[Contact | Event | None]
    structured_response_kind: NotRequired[str | None]
    structured_output_report: NotRequired[StructuredReport | None]


FORMAT = ToolStrategy([Contact, Event], max_retries=2)
prepare_runs: list[str] = []
"""One entry per run of `prepare` in this process, so a resumed run shows it is not repeated."""


def build_agent(model: ScriptedChatModel, saver: Any, **kwargs: Any) -> Any:
    return create_agent(model, response_format=FORMAT, checkpointer=saver, **kwargs)


def prepare(state: Any) -> dict[str, Any]:
    """A node before the structured one; with `approve` in the text it asks a human first."""
    if "approve" in state["messages"][0].text:
        answer = interrupt("approve extraction?")
        assert answer == "yes"
    prepare_runs.append("prepare")
    asked = state["messages"][-1].id
    return {"messages": [HumanMessage("(context: customer since 2019)", id=f"ctx-{asked}")]}


def build_node_graph(model: ScriptedChatModel, saver: Any, state: type[Any] = NodeState) -> Any:
    builder = StateGraph(state)
    builder.add_node("reset", reset_structured_output)
    builder.add_node("prepare", prepare)
    builder.add_node("extract", structured_output_node(model, FORMAT))
    builder.add_edge(START, "reset")
    builder.add_edge("reset", "prepare")
    builder.add_edge("prepare", "extract")
    builder.add_edge("extract", END)
    return builder.compile(checkpointer=saver)


BUILDERS: dict[str, Callable[..., Any]] = {"agent": build_agent, "node": build_node_graph}


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def summary(messages: list[BaseMessage]) -> list[tuple[str, str | None]]:
    """Each message as (type, id), a tool message as (tool, tool_call_id)."""
    return [
        ("tool", m.tool_call_id) if isinstance(m, ToolMessage) else (m.type, m.id) for m in messages
    ]
