"""LangChain's own error types, through the official clients: a refusal, a refused request.

LangChain's chat models raise `ModelRefusalError` from `with_structured_output`
when the model refuses, and classify a request the provider refuses (HTTP 400) as
`ModelInvalidRequestError`; its `ModelRetryMiddleware` retries neither by default.
Our errors for the same events are those types too, so one `except` clause and
LangChain's middleware treat both packages alike. A conversation too long for
the model is the client's own `ContextOverflowError`, and reaches the caller
as it is, after one request.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import ModelRefusalMiddleware, ModelRetryMiddleware
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelInvalidRequestError,
    ModelRefusalError,
)
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    ProviderRejectedError,
    ProviderStrategy,
    StructuredOutputRefusal,
    ToolStrategy,
    create_agent,
    with_structured_output,
)

from .clients import PROVIDERS, client, fake
from .wire import Ask, Reply

pytestmark = pytest.mark.integration

ASK = {"messages": [("user", "Describe the parcel.")]}


class Parcel(BaseModel):
    label: str


def _refuses(ask: Ask) -> Reply:
    return Reply(text="I will not.", stop="refusal")


def _rejects(ask: Ask) -> Reply:
    return Reply(reject=(400, "Invalid parameter: response_format, tools and tool_choice"))


def _retry() -> ModelRetryMiddleware:
    return ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refusal_is_caught_as_langchain_catches_its_own(provider: str) -> None:
    with fake(provider, _refuses) as server:
        model = client(provider, server)
        with pytest.raises(ModelRefusalError) as theirs:
            model.with_structured_output(Parcel).invoke("Describe the parcel.")
        with pytest.raises(ModelRefusalError) as ours:
            with_structured_output(model, Parcel).invoke("Describe the parcel.")
    assert not isinstance(theirs.value, StructuredOutputRefusal)
    error = ours.value
    assert isinstance(error, StructuredOutputRefusal)
    assert error.raw_message is error.ai_message
    assert error.ai_message is not None
    assert error.is_retryable is False
    assert len(server.requests) == 2  # one each
    assert server.violations == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_include_raw_returns_a_refusal_as_langchain_does(provider: str) -> None:
    with fake(provider, _refuses) as server:
        model = client(provider, server)
        theirs = model.with_structured_output(Parcel, include_raw=True).invoke("Parcel?")
        ours = with_structured_output(model, Parcel, include_raw=True).invoke("Parcel?")
    assert isinstance(theirs["parsing_error"], ModelRefusalError)
    assert isinstance(ours["parsing_error"], ModelRefusalError)
    assert theirs["parsed"] is None and ours["parsed"] is None
    assert server.violations == []


@pytest.mark.parametrize("strategy", [ToolStrategy, ProviderStrategy])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_model_retry_middleware_does_not_ask_again_after_a_refusal(
    provider: str, strategy: Any
) -> None:
    with fake(provider, _refuses) as server:
        agent = create_agent(
            client(provider, server), response_format=strategy(Parcel), middleware=[_retry()]
        )
        with pytest.raises(StructuredOutputRefusal):
            agent.invoke(ASK)
    assert len(server.requests) == 1
    assert server.violations == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_model_refusal_middleware_beside_ours_raises_its_refusal_error(provider: str) -> None:
    with fake(provider, _refuses) as server:
        agent = create_agent(
            client(provider, server),
            response_format=ProviderStrategy(Parcel),
            middleware=[ModelRefusalMiddleware()],
        )
        with pytest.raises(ModelRefusalError):
            agent.invoke(ASK)
    assert len(server.requests) == 1
    assert server.violations == []


def _rejected_run(middleware: list[Any]) -> tuple[ProviderRejectedError, int]:
    with fake("openai", _rejects) as server:
        agent = create_agent(
            client("openai", server), response_format=AutoStrategy(Parcel), middleware=middleware
        )
        with pytest.raises(ProviderRejectedError) as info:
            agent.invoke(ASK)
    assert server.violations == []
    return info.value, len(server.requests)


def test_a_request_refused_on_every_route_is_langchain_invalid_request_error() -> None:
    error, alone = _rejected_run([])
    assert isinstance(error, ModelInvalidRequestError)
    assert error.is_retryable is False
    # What the client raised for the last refusal is LangChain's type as well.
    assert isinstance(error.__cause__, ModelInvalidRequestError)
    _, beside_retry = _rejected_run([_retry()])
    # Provider, tool, prompted with JSON mode, then prompted without it.
    assert alone == 4
    assert beside_retry == alone  # not run again: the same request would be refused again


# Each provider's answer to a prompt over the model's context window: OpenAI's
# (code `context_length_exceeded`, Chat Completions and Responses alike; its
# newer models word it so), Anthropic's "prompt is too long", Gemini's token
# count over the limit.
_OPENAI_OVERFLOW = (
    400,
    "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in"
    " 301234 tokens. Please reduce the length of the messages.",
    "context_length_exceeded",
)
OVERFLOWS: dict[str, tuple[int, str] | tuple[int, str, str]] = {
    "openai": _OPENAI_OVERFLOW,
    "openai_responses": _OPENAI_OVERFLOW,
    "anthropic": (400, "prompt is too long: 213456 tokens > 200000 maximum"),
    "gemini": (
        400,
        "The input token count (1213456) exceeds the maximum number of tokens allowed (1048576).",
    ),
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_context_overflow_reaches_the_caller_as_the_clients_own_error(provider: str) -> None:
    with fake(provider, lambda ask: Reply(reject=OVERFLOWS[provider])) as server:
        model = client(provider, server)
        with pytest.raises(ContextOverflowError) as theirs:
            model.with_structured_output(Parcel).invoke("Describe the parcel.")
        with pytest.raises(ContextOverflowError) as ours:
            with_structured_output(model, AutoStrategy(Parcel)).invoke("Describe the parcel.")
        with pytest.raises(ContextOverflowError) as agent:
            create_agent(model, response_format=Parcel, middleware=[_retry()]).invoke(ASK)
    # The client's own error, not one of ours around it: a middleware that
    # shortens the history catches it as it would without us.
    assert type(ours.value) is type(agent.value) is type(theirs.value)
    assert len(server.requests) == 3  # one each: no other route is tried
    assert server.violations == []
