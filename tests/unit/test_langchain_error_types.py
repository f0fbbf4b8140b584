"""Our run-time errors are LangChain's standard model errors where the event is the same.

A refusal is LangChain's `ModelRefusalError`, a request refused on every route is
its `ModelInvalidRequestError`, and the final failure to read an answer is its
`OutputParserException`, on every face, sync and async; LangChain's
refusal error raised inside ours is judged as our refusal; and its
`ContextOverflowError` is never read as a refusal of our request. The provider
clients' own tests are in `tests/integration/providers/test_langchain_errors.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware import ModelRefusalMiddleware, ModelRetryMiddleware
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelInvalidRequestError,
    ModelRefusalError,
    OutputParserException,
)
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    FallbackMemory,
    ProviderRejectedError,
    StructuredOutputMiddleware,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    ToolStrategy,
    create_agent,
    with_structured_output,
)
from langchain_structx.nodes import structured_output_node
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [("user", "Who is it?")]}


class Contact(BaseModel):
    name: str


class State(MessagesState):
    structured_response: Any


class BadRequest(Exception):
    status_code = 400


def refusal() -> AIMessage:
    return AIMessage("", additional_kwargs={"refusal": "I can't share that."})


def answer() -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"}, id="c1")])


def node_graph(model: ScriptedChatModel, strategy: Any) -> Any:
    graph = StateGraph(State)
    graph.add_node("extract", structured_output_node(model, strategy))
    graph.add_edge(START, "extract")
    return graph.compile()


FACES = {
    "agent": lambda model, strategy: create_agent(model, response_format=strategy),
    "node": node_graph,
    "runnable": lambda model, strategy: with_structured_output(model, strategy),
}


async def run(face: str, model: ScriptedChatModel, strategy: Any, asynchronous: bool) -> Any:
    runnable = FACES[face](model, strategy)
    given = "Who is it?" if face == "runnable" else ASK
    if asynchronous:
        return await runnable.ainvoke(given)
    return runnable.invoke(given)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("face", sorted(FACES))
async def test_a_refusal_is_langchain_model_refusal_error(face: str, asynchronous: bool) -> None:
    model = ScriptedChatModel(responses=[refusal(), answer()])
    with pytest.raises(ModelRefusalError) as info:
        await run(face, model, ToolStrategy(Contact), asynchronous)
    error = info.value
    assert isinstance(error, StructuredOutputRefusal)
    assert error.raw_message is error.ai_message
    assert error.raw_message is not None
    assert error.raw_message.additional_kwargs["refusal"] == "I can't share that."
    assert error.is_retryable is False
    assert len(model.calls) == 1


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("face", sorted(FACES))
async def test_an_unreadable_answer_is_langchain_output_parser_exception(
    face: str, asynchronous: bool
) -> None:
    # What `model.with_structured_output` raises for an answer it cannot read, so
    # that `except OutputParserException` around it still catches ours.
    seen: list[Any] = []

    def handler(error: Any) -> str:
        seen.append(error)
        return "Give the name."

    prose = [AIMessage("No idea, sorry."), AIMessage("Still no idea.")]
    model = ScriptedChatModel(responses=prose)
    strategy = ToolStrategy(Contact, max_retries=1, handle_errors=handler)
    with pytest.raises(OutputParserException) as info:
        await run(face, model, strategy, asynchronous)
    error = info.value
    assert isinstance(error, StructuredOutputRetryError)
    assert error.llm_output == "Still no idea."
    assert error.send_to_llm is False and error.observation is None
    # An attempt's error is not one: `handle_errors=ValueError` must match what it
    # matches in LangChain's agent.
    assert [type(e).__name__ for e in seen] == ["MissingOutputError"]
    assert not isinstance(seen[0], ValueError)


def test_naming_langchain_refusal_type_in_handle_errors_retries_it() -> None:
    model = ScriptedChatModel(responses=[refusal(), answer()])
    strategy = ToolStrategy(Contact, handle_errors=ModelRefusalError)
    result = create_agent(model, response_format=strategy).invoke(ASK)
    assert result["structured_response"] == Contact(name="Ada")
    assert len(model.calls) == 2


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_model_retry_middleware_leaves_a_refusal_alone(asynchronous: bool) -> None:
    model = ScriptedChatModel(responses=[refusal(), answer(), answer()])
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    agent = create_agent(model, response_format=ToolStrategy(Contact), middleware=[retry])
    with pytest.raises(StructuredOutputRefusal):
        if asynchronous:
            await agent.ainvoke(ASK)
        else:
            agent.invoke(ASK)
    assert len(model.calls) == 1


def rejection() -> BadRequest:
    return BadRequest("response_format, tools and tool_choice are not supported")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("face", sorted(FACES))
async def test_every_route_refused_is_langchain_invalid_request_error(
    face: str, asynchronous: bool
) -> None:
    model = ScriptedChatModel(responses=[rejection() for _ in range(6)])
    with pytest.raises(ModelInvalidRequestError) as info:
        await run(face, model, AutoStrategy(Contact), asynchronous)
    assert isinstance(info.value, ProviderRejectedError)
    assert info.value.is_retryable is False
    assert isinstance(info.value.__cause__, BadRequest)


def test_model_retry_middleware_does_not_run_refused_routes_again() -> None:
    counts = []
    for middleware in ([], [ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)]):
        model = ScriptedChatModel(responses=[rejection() for _ in range(12)])
        agent = create_agent(model, response_format=AutoStrategy(Contact), middleware=middleware)
        with pytest.raises(ProviderRejectedError):
            agent.invoke(ASK)
        counts.append(len(model.calls))
    assert counts[0] == counts[1] == 3


def inner_refusal_agent(strategy: ToolStrategy[Contact]) -> tuple[Any, ScriptedChatModel]:
    # LangChain's ModelRefusalMiddleware inside ours raises its own error for a
    # reply with a standard refusal block; ours reads the reply it carries.
    standard = AIMessage([{"type": "refusal", "refusal": "No."}])
    model = ScriptedChatModel(responses=[standard, answer()])
    middleware = [StructuredOutputMiddleware(strategy), ModelRefusalMiddleware()]
    return langchain_create_agent(model, middleware=middleware), model


def test_a_refusal_error_from_inside_is_judged_as_our_refusal() -> None:
    agent, model = inner_refusal_agent(ToolStrategy(Contact))
    with pytest.raises(StructuredOutputRefusal) as info:
        agent.invoke(ASK)
    assert info.value.refusal == "No."
    assert info.value.attempt == 1
    assert info.value.raw_message is not None
    assert info.value.raw_message.content == [{"type": "refusal", "refusal": "No."}]
    assert len(model.calls) == 1


def test_a_refusal_error_from_inside_goes_to_handle_errors() -> None:
    agent, model = inner_refusal_agent(ToolStrategy(Contact, handle_errors=lambda e: "Public."))
    assert agent.invoke(ASK)["structured_response"] == Contact(name="Ada")
    assert len(model.calls) == 2


class Overflow(BadRequest, ContextOverflowError):
    """A client's context-overflow 400, worded as if it named our request."""


def overflow() -> Overflow:
    return Overflow("9000 tokens in the messages and the tools, over the 8192 of the model")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("face", sorted(FACES))
async def test_a_context_overflow_goes_out_unchanged_without_a_fallback(
    face: str, asynchronous: bool
) -> None:
    # Every route would overflow alike: the caller (or a middleware that shortens
    # the history) gets the client's error after one request.
    model = ScriptedChatModel(responses=[overflow(), answer(), answer()])
    with pytest.raises(Overflow):
        await run(face, model, AutoStrategy(Contact), asynchronous)
    assert len(model.calls) == 1


def test_a_context_overflow_is_not_remembered_as_a_refusal() -> None:
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[overflow(), answer()])
    with pytest.raises(Overflow):
        with_structured_output(model, AutoStrategy(Contact), fallback_memory=memory).invoke("x")
    raw = with_structured_output(
        model, AutoStrategy(Contact), fallback_memory=memory, include_raw=True
    ).invoke("Who is it?")
    assert raw["parsed"] == Contact(name="Ada")
    report = raw["raw"].response_metadata["structured_output_report"]
    assert (report["strategy"], report["fallbacks"]) == ("tool", [])


def test_a_context_overflow_naming_the_tool_choice_is_not_asked_again_unforced() -> None:
    # A refused forced choice is asked again unforced; an overflow is no such refusal.
    model = ScriptedChatModel(responses=[Overflow("tool_choice: prompt is too long"), answer()])
    with pytest.raises(Overflow):
        with_structured_output(model, ToolStrategy(Contact)).invoke("Who is it?")
    assert len(model.calls) == 1
