"""Models as LangChain users hand them over: bound with call arguments, with system blocks.

- `with_structured_output(model.bind(stop=...), schema)` keeps the bound
  arguments and config on every call (LangChain's own method drops them);
- a bound model that already carries tools or a response format is refused;
- the schema text joins a system message of content blocks as one more block,
  so cache settings and the message id survive, in the runnable and the agent.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from langchain_structx import PromptedStrategy, create_agent, with_structured_output
from langchain_structx.errors import UserError
from langchain_structx.testing import ScriptedChatModel, tool_call


class City(BaseModel):
    name: str


ANSWER = AIMessage("", tool_calls=[tool_call("City", {"name": "Oslo"})])
CACHED = {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}


class Tags(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.tags.append(list(kwargs.get("tags") or []))


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_bound_model_keeps_its_arguments_on_every_call(mode: str) -> None:
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[]), ANSWER])
    runnable = with_structured_output(model.bind(stop=["END"], temperature=0), City)
    result = runnable.invoke("Where?") if mode == "sync" else await runnable.ainvoke("Where?")
    assert result == City(name="Oslo")
    assert len(model.calls) == 2
    assert all(call.kwargs.get("stop") == ["END"] for call in model.calls)
    assert all(call.kwargs.get("temperature") == 0 for call in model.calls)


def test_a_model_with_config_keeps_its_tags_under_the_calls_own() -> None:
    handler = Tags()
    model = ScriptedChatModel(responses=[ANSWER])
    runnable = with_structured_output(model.with_config(tags=["mine"]).bind(stop=["END"]), City)
    assert runnable.invoke("Where?", {"callbacks": [handler]}) == City(name="Oslo")
    (tags,) = handler.tags
    assert "mine" in tags and "structx:attempt:1" in tags


@pytest.mark.parametrize(
    "bind",
    [
        lambda m: m.bind_tools([City]),
        lambda m: m.bind(response_format={"type": "json_object"}),
    ],
    ids=["tools", "response-format"],
)
def test_a_model_bound_with_what_the_runnable_sets_is_refused(bind: Any) -> None:
    with pytest.raises(UserError, match="sets itself"):
        with_structured_output(bind(ScriptedChatModel(responses=[])), City)


def test_something_that_is_no_chat_model_is_refused_even_bound() -> None:
    from langchain_core.runnables import RunnableLambda

    with pytest.raises(UserError, match="must be a chat model"):
        with_structured_output(RunnableLambda(lambda x: x).bind(stop=["x"]), City)


def test_the_runnable_adds_the_schema_as_a_block_of_a_system_message_of_blocks() -> None:
    model = ScriptedChatModel(responses=['{"name": "Oslo"}'])
    system = SystemMessage([CACHED], id="sys-1")
    runnable = with_structured_output(model, PromptedStrategy(City))
    assert runnable.invoke([system, HumanMessage("Where?")]) == City(name="Oslo")
    sent = model.calls[0].messages[0]
    assert isinstance(sent, SystemMessage) and sent.id == "sys-1"
    assert sent.content[0] == CACHED
    assert sent.content[1]["type"] == "text" and "City" in sent.content[1]["text"]
    assert len(sent.content) == 2


def test_the_agent_adds_the_schema_as_a_block_of_a_system_message_of_blocks() -> None:
    model = ScriptedChatModel(responses=['{"name": "Oslo"}'])
    agent = create_agent(
        model, system_prompt=SystemMessage([CACHED]), response_format=PromptedStrategy(City)
    )
    state = agent.invoke({"messages": [HumanMessage("Where?")]})
    assert state["structured_response"] == City(name="Oslo")
    sent = model.calls[0].messages[0]
    assert sent.content[0] == CACHED and "City" in sent.content[1]["text"]


def test_a_plain_system_prompt_still_gets_the_schema_after_a_blank_line() -> None:
    model = ScriptedChatModel(responses=['{"name": "Oslo"}'])
    runnable = with_structured_output(model, PromptedStrategy(City))
    runnable.invoke([SystemMessage("You are terse."), HumanMessage("Where?")])
    text = model.calls[0].messages[0].content
    assert isinstance(text, str) and text.startswith("You are terse.\n\n") and "City" in text
