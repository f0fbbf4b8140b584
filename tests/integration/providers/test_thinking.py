"""The tool strategy on a Claude model that is thinking: the tool choice is not forced.

Anthropic refuses a forced tool choice while the model thinks ("Thinking may not
be enabled when tool_choice forces tool use"), and the fake server enforces it.
Where the client says the model thinks (`thinking` enabled or adaptive, or a
model that thinks on every request), the tool route leaves the choice to the
model from the first request. Where the request thinks without the client
saying so (`reasoning_effort` turns adaptive thinking on for the newest models),
the first request is refused and the same route asks again unforced. Either way
the answer is still validated, and a reply without the call is a failed attempt
that is asked again with feedback.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from pydantic import BaseModel

from langchain_structx import StructuredReport, ToolStrategy, create_agent, with_structured_output

from .clients import client, fake
from .wire import Ask, Reply

pytestmark = pytest.mark.integration

REFUSED = "Thinking may not be enabled when tool_choice forces tool use."


class Contact(BaseModel):
    """A person to reach."""

    name: str
    email: str


ADA = Contact(name="Ada", email="ada@example.org")


def chooses(prose_first: bool = False) -> Any:
    """A model that calls the tool it was offered, after one reply in prose if asked."""
    said: list[str] = []

    def model(ask: Ask) -> Reply:
        if prose_first and not said:
            said.append("prose")
            return Reply(text="Ada can be reached at ada@example.org.")
        return Reply(calls=((next(iter(ask.tools)), ADA.model_dump()),))

    return model


def run(face: str, chat_model: Any) -> tuple[Contact, StructuredReport]:
    strategy = ToolStrategy(Contact)
    if face == "runnable":
        out = with_structured_output(chat_model, strategy, include_raw=True).invoke("Ada?")
        return out["parsed"], out["raw"].response_metadata["structured_output_report"]
    state = create_agent(chat_model, response_format=strategy).invoke(
        {"messages": [("user", "Ada?")]}
    )
    return state["structured_response"], state["structured_output_report"]


def forced(body: dict[str, Any]) -> bool:
    return (body.get("tool_choice") or {}).get("type") in ("any", "tool")


@pytest.mark.parametrize("face", ["agent", "runnable"])
@pytest.mark.parametrize(
    "options",
    [
        {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        {"thinking": {"type": "adaptive"}, "model": "claude-opus-4-7"},
        {"model": "claude-opus-5-5"},
    ],
    ids=["thinking-enabled", "thinking-adaptive", "always-thinking-model"],
)
def test_a_thinking_model_is_never_forced(face: str, options: dict[str, Any]) -> None:
    with fake("anthropic", chooses()) as server, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value, report = run(face, client("anthropic", server, **options))
    assert value == ADA
    assert report["attempts"] == 1 and report["fallbacks"] == []
    assert server.violations == []
    assert [forced(body) for body in server.requests] == [False]
    # The client drops a forced choice itself, warning on every call; none was sent.
    assert not [w for w in seen if "tool_choice is forced" in str(w.message)]


@pytest.mark.parametrize("face", ["agent", "runnable"])
def test_a_refused_forced_choice_is_asked_again_unforced(face: str) -> None:
    # The client turns adaptive thinking on for reasoning_effort without saying so.
    with fake("anthropic", chooses()) as server:
        chat_model = client("anthropic", server, model="claude-opus-4-7", reasoning_effort="high")
        value, report = run(face, chat_model)
    assert value == ADA
    assert server.violations == [REFUSED]
    assert [forced(body) for body in server.requests] == [True, False]
    assert report["attempts"] == 1
    [fallback] = report["fallbacks"]
    assert fallback["from_strategy"] == fallback["to_strategy"] == "tool"
    assert REFUSED in fallback["reason"]


@pytest.mark.parametrize("face", ["agent", "runnable"])
def test_an_unforced_reply_in_prose_is_asked_again(face: str) -> None:
    with fake("anthropic", chooses(prose_first=True)) as server:
        value, report = run(face, client("anthropic", server, model="claude-opus-5-5"))
    assert value == ADA
    assert report["attempts"] == 2
    assert report["errors"][0].startswith("no_output:")
    assert server.violations == []
    assert [forced(body) for body in server.requests] == [False, False]


def test_langchains_own_tool_strategy_is_refused_where_ours_is_not() -> None:
    # The comparison behind the docs: stock forces the choice on a thinking model.
    with fake("anthropic", chooses()) as server:
        agent = langchain_create_agent(
            client("anthropic", server, model="claude-opus-5-5"),
            response_format=LangChainToolStrategy(Contact),
        )
        with pytest.raises(Exception, match="tool_choice forces tool use"):
            agent.invoke({"messages": [("user", "Ada?")]})
    assert server.violations == [REFUSED]


def wrong_then_right() -> Any:
    """A model whose first call breaks the schema (no email), then gets it right."""
    calls: list[int] = []

    def model(ask: Ask) -> Reply:
        calls.append(1)
        args = {"name": "Ada"} if len(calls) == 1 else ADA.model_dump()
        return Reply(calls=((next(iter(ask.tools)), args),))

    return model


@pytest.mark.parametrize("face", ["agent", "runnable", "runnable-stream"])
def test_a_retry_sends_the_thinking_back_with_the_call(face: str) -> None:
    # The fake replies with a thinking block first, and refuses a history whose
    # tool-using turn lost it: the retry must send the failed reply back whole.
    options = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    with fake("anthropic", wrong_then_right()) as server:
        chat_model = client("anthropic", server, **options)
        if face == "runnable-stream":
            chunks = list(with_structured_output(chat_model, ToolStrategy(Contact)).stream("Ada?"))
            value, attempts = chunks[-1], len(server.requests)
        else:
            value, report = run(face, chat_model)
            attempts = report["attempts"]
    assert value == ADA
    assert attempts == 2
    assert server.violations == []
    resent = server.requests[1]["messages"][1]
    assert resent["role"] == "assistant"
    assert [block["type"] for block in resent["content"]] == ["thinking", "tool_use"]
