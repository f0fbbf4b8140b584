"""Workers AI through `langchain-cloudflare` (native and OpenAI-compatible routes) and
through `ChatOpenAI` on the compatible route, against the fake of `workers.py`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderRejectedError,
    ProviderStrategy,
    ToolStrategy,
    create_agent,
)
from langchain_structx._capabilities import is_rejection

from .wire import Ask, Reply
from .workers import ACCOUNT, FakeWorkersAI

pytestmark = pytest.mark.integration

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # JSON mode and tools
SMALL = "@cf/meta/llama-3.1-8b-instruct"  # JSON mode, no tools
HERMES = "@hf/nousresearch/hermes-2-pro-mistral-7b"  # JSON mode and tools, "mistral" in its name
VALUE = {"label": "box", "weight": None}


class Parcel(BaseModel):
    label: str
    weight: int | None = None


def _client(server: FakeWorkersAI, via: str, model: str = LLAMA) -> Any:
    if via == "openai":
        from langchain_openai import ChatOpenAI

        base = f"{server.url}/client/v4/accounts/{ACCOUNT}/ai/v1"
        return ChatOpenAI(model=model, base_url=base, api_key="token", max_retries=0)
    from langchain_cloudflare import ChatCloudflareWorkersAI

    route = "openai_compatible" if via == "cloudflare_compatible" else "workers_ai"
    return ChatCloudflareWorkersAI(
        model=model,
        account_id=ACCOUNT,
        api_token="token",
        base_url=f"{server.url}/client/v4",
        endpoint_format=route,
    )


def _answer(ask: Ask) -> Reply:
    if ask.kind == "tool":
        return Reply(calls=((ask.forced or next(iter(ask.tools)), VALUE),))
    return Reply(text=json.dumps(VALUE))


def _run(model: Any, strategy: Any, *, stream: bool) -> dict[str, Any]:
    agent = create_agent(model, response_format=strategy)
    ask = {"messages": [("user", "Describe the parcel as JSON.")]}
    if not stream:
        return dict(agent.invoke(ask))
    last: dict[str, Any] = {}
    for mode, chunk in agent.stream(ask, stream_mode=["messages", "values"]):
        if mode == "values":
            last = chunk
    return last


STRATEGIES = {
    "tool": lambda: ToolStrategy(Parcel),
    "provider": lambda: ProviderStrategy(Parcel),
    "auto": lambda: AutoStrategy(Parcel),
    "prompted": lambda: PromptedStrategy(Parcel),
    "json_mode": lambda: PromptedStrategy(Parcel, json_mode=True),
}


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("via", ["cloudflare", "cloudflare_compatible", "openai"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_on_every_route(strategy: str, via: str, stream: bool) -> None:
    with FakeWorkersAI(_answer) as server:
        state = _run(_client(server, via), STRATEGIES[strategy](), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    assert server.violations == []
    assert server.rejected == 0
    # Structured calls are never streamed to Workers AI (see `_quirks`).
    assert all(body.get("stream") is False for body in server.requests)
    if strategy in ("provider", "json_mode"):
        assert all(body.get("response_format") for body in server.requests)


def test_a_plain_call_still_streams_on_both_routes() -> None:
    with FakeWorkersAI(lambda ask: Reply(text="Hello there, parcel.")) as server:
        for via in ("cloudflare", "cloudflare_compatible"):
            pieces = [c.content for c in _client(server, via).stream("Say hello.")]
            assert "".join(str(p) for p in pieces) == "Hello there, parcel."
    assert [body.get("stream") for body in server.requests] == [True, True]
    assert server.violations == []


def test_the_fake_refuses_json_mode_with_streaming() -> None:
    with FakeWorkersAI(_answer) as server:
        model = _client(server, "cloudflare").bind(response_format={"type": "json_object"})
        with pytest.raises(Exception) as info:
            list(model.stream("Describe the parcel as JSON."))
    assert server.violations == ["JSON Mode doesn't support streaming"]
    assert "400" in str(info.value)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("via", ["cloudflare", "openai"])
def test_tools_refused_by_the_model_fall_back_to_a_prompt(via: str, stream: bool) -> None:
    with FakeWorkersAI(_answer) as server:
        state = _run(_client(server, via, SMALL), AutoStrategy(Parcel), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    report = state["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert server.rejected == 1
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_json_mode_that_cannot_be_met_is_a_typed_rejection(stream: bool) -> None:
    # Tools are refused by the model (a fallback), then JSON mode cannot be met on
    # the last strategy: the rejection is read from the body, streamed or not.
    def model(ask: Ask) -> Reply:
        if ask.body.get("response_format"):
            return Reply(reject=(400, "AiError: JSON Mode couldn't be met"))
        return _answer(ask)

    with FakeWorkersAI(model) as server:
        strategy = AutoStrategy(Parcel, json_mode=True)
        with pytest.raises(ProviderRejectedError) as info:
            _run(_client(server, "cloudflare", SMALL), strategy, stream=stream)
    assert info.value.strategy == "prompted"
    assert server.rejected == 2
    assert server.violations == []


def test_json_mode_rejection_is_read_from_the_body() -> None:
    def model(ask: Ask) -> Reply:
        return Reply(reject=(400, "AiError: JSON Mode couldn't be met"))

    with FakeWorkersAI(model) as server:
        bound = _client(server, "cloudflare").bind(response_format={"type": "json_object"})
        with pytest.raises(Exception) as info:
            bound.invoke("Describe the parcel as JSON.")
    assert "couldn't be met" not in str(info.value)  # the client's message leaves it out
    assert is_rejection(info.value, "prompted")


# langchain-cloudflare sends JSON mode as `guided_json` for every model named "mistral".
def test_mistral_named_model_loses_json_mode_in_langchain_cloudflare() -> None:
    with FakeWorkersAI(_answer) as server:
        state = _run(_client(server, "cloudflare", HERMES), ProviderStrategy(Parcel), stream=False)
    assert state["structured_response"] == Parcel(label="box")
    assert "response_format" not in server.requests[0]
    assert server.ignored == [f"guided_json on {HERMES}"]


def test_mistral_named_model_keeps_json_mode_through_chat_openai() -> None:
    with FakeWorkersAI(_answer) as server:
        state = _run(_client(server, "openai", HERMES), ProviderStrategy(Parcel), stream=True)
    assert state["structured_response"] == Parcel(label="box")
    assert server.requests[0]["response_format"]["type"] == "json_schema"
    assert server.ignored == []
    assert server.violations == []
