"""Workers AI through `langchain-cloudflare` (native and OpenAI-compatible routes) and
through `ChatOpenAI` on the compatible route, against the fake of `workers.py`."""

from __future__ import annotations

import json

import pytest

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    create_agent,
)
from langchain_structx._models.capabilities import is_rejection

from .wire import Ask, Reply
from .workers import (
    HERMES,
    PLAIN,
    ROUTES,
    SMALL,
    FakeWorkersAI,
    Parcel,
    answer,
    client,
    drive,
    strategies,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("via", ROUTES)
@pytest.mark.parametrize("strategy", list(strategies(Parcel)))
def test_every_strategy_on_every_route(strategy: str, via: str, stream: bool) -> None:
    with FakeWorkersAI(answer) as server:
        state = drive(client(server, via), strategies(Parcel)[strategy], stream=stream)
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
            pieces = [c.content for c in client(server, via).stream("Say hello.")]
            assert "".join(str(p) for p in pieces) == "Hello there, parcel."
    assert [body.get("stream") for body in server.requests] == [True, True]
    assert server.violations == []


def test_the_fake_refuses_json_mode_with_streaming() -> None:
    with FakeWorkersAI(answer) as server:
        model = client(server, "cloudflare").bind(response_format={"type": "json_object"})
        with pytest.raises(Exception) as info:
            list(model.stream("Describe the parcel as JSON."))
    assert server.violations == ["JSON Mode doesn't support streaming"]
    assert "400" in str(info.value)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("via", ["cloudflare", "openai"])
def test_tools_refused_by_the_model_fall_back_to_a_prompt(via: str, stream: bool) -> None:
    with FakeWorkersAI(answer) as server:
        state = drive(client(server, via, SMALL), AutoStrategy(Parcel), stream=stream)
    assert state["structured_response"] == Parcel(label="box")
    report = state["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert server.rejected == 1
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_json_mode_that_cannot_be_met_is_asked_again_without_it(stream: bool) -> None:
    # Tools are refused by the model (a fallback), then JSON mode cannot be met on
    # the last strategy: the rejection is read from the body, streamed or not, and
    # the same prompt goes again without JSON mode; the reply is read locally.
    def model(ask: Ask) -> Reply:
        if ask.body.get("response_format"):
            return Reply(reject=(400, "AiError: JSON Mode couldn't be met"))
        return answer(ask)

    with FakeWorkersAI(model) as server:
        state = drive(
            client(server, "cloudflare", SMALL), AutoStrategy(Parcel, json_mode=True), stream=stream
        )
    assert state["structured_response"] == Parcel(label="box")
    report = state["structured_output_report"]
    assert [(f["from_strategy"], f["to_strategy"]) for f in report["fallbacks"]] == [
        ("tool", "prompted"),
        ("prompted", "prompted"),
    ]
    assert server.rejected == 2
    assert "response_format" not in server.requests[-1]
    assert server.violations == []


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("via", ["cloudflare", "openai"])
def test_a_model_without_json_mode_or_tools_is_asked_in_the_prompt(via: str, stream: bool) -> None:
    # The tutorial's case: a model with neither tools nor JSON mode. The fake
    # refuses both, as Workers AI does. Its refusal of tools says the model takes
    # none, so the agent remembers it against the tool route; the refusal of JSON
    # mode is remembered as a setting (the prompted route itself works). The next
    # run asks once, in the prompt, without JSON mode.
    with FakeWorkersAI(answer) as server:
        agent = create_agent(
            client(server, via, PLAIN), response_format=AutoStrategy(Parcel, json_mode=True)
        )
        ask = {"messages": [("user", "Describe the parcel as JSON.")]}
        if stream:
            final = [s for s in agent.stream(ask, stream_mode="values")][-1]
        else:
            final = agent.invoke(ask)
        assert final["structured_response"] == Parcel(label="box")
        assert server.rejected == 2
        first_run = len(server.requests)
        assert agent.invoke(ask)["structured_response"] == Parcel(label="box")
    assert server.rejected == 2
    asked = [("tools" in b, "response_format" in b) for b in server.requests[first_run:]]
    assert asked == [(False, False)]
    assert server.violations == []


def test_an_explicit_json_mode_that_is_refused_is_a_typed_rejection() -> None:
    with FakeWorkersAI(answer) as server:
        strategy = PromptedStrategy(Parcel, json_mode=True)
        with pytest.raises(Exception) as info:
            drive(client(server, "cloudflare", PLAIN), strategy, stream=False)
    assert is_rejection(info.value, "prompted")
    assert server.rejected == 1


def test_json_mode_rejection_is_read_from_the_body() -> None:
    def model(ask: Ask) -> Reply:
        return Reply(reject=(400, "AiError: JSON Mode couldn't be met"))

    with FakeWorkersAI(model) as server:
        bound = client(server, "cloudflare").bind(response_format={"type": "json_object"})
        with pytest.raises(Exception) as info:
            bound.invoke("Describe the parcel as JSON.")
    assert "couldn't be met" not in str(info.value)  # the client's message leaves it out
    assert is_rejection(info.value, "prompted")


# langchain-cloudflare sends JSON mode as `guided_json` for every model named "mistral".
def test_mistral_named_model_loses_json_mode_in_langchain_cloudflare() -> None:
    with FakeWorkersAI(answer) as server:
        state = drive(client(server, "cloudflare", HERMES), ProviderStrategy(Parcel), stream=False)
    assert state["structured_response"] == Parcel(label="box")
    assert "response_format" not in server.requests[0]
    assert server.ignored == [f"guided_json on {HERMES}"]


def test_auto_skips_the_routes_the_client_cannot_send_for_that_model() -> None:
    # The client's own table says it renames response_format and drops tool_choice
    # for this family, so AutoStrategy asks in the prompt instead of losing both.
    with FakeWorkersAI(answer) as server:
        state = drive(client(server, "cloudflare", HERMES), AutoStrategy(Parcel), stream=False)
    assert state["structured_response"] == Parcel(label="box")
    assert state["structured_output_report"]["strategy"] == "prompted"
    assert state["structured_output_report"]["attempts"] == 1
    assert "guided_json" not in server.requests[0]
    assert "tools" not in server.requests[0]
    assert server.ignored == []
    assert server.violations == []


def test_mistral_named_model_keeps_json_mode_through_chat_openai() -> None:
    with FakeWorkersAI(answer) as server:
        state = drive(client(server, "openai", HERMES), ProviderStrategy(Parcel), stream=True)
    assert state["structured_response"] == Parcel(label="box")
    assert server.requests[0]["response_format"]["type"] == "json_schema"
    assert server.ignored == []
    assert server.violations == []


@pytest.mark.parametrize("via", ROUTES)
def test_a_fenced_reply_is_read(via: str) -> None:
    fenced = "Here it is:\n```json\n" + json.dumps({"label": "box"}) + "\n```"
    with FakeWorkersAI(lambda ask: Reply(text=fenced)) as server:
        state = drive(client(server, via), strategies(Parcel)["prompted"], stream=True)
    assert state["structured_response"] == Parcel(label="box")
    assert state["structured_output_report"]["repairs"]
    assert server.violations == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("via", ROUTES)
@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_the_runnable_never_streams_a_structured_call(method: str, via: str, mode: str) -> None:
    # `stream()` on a LangChain model sends `stream: true` whatever it was bound
    # with: the runnable's stream sent JSON mode with streaming (refused) and lost
    # the tool calls of the compatible route.
    import asyncio

    from langchain_structx import with_structured_output

    with FakeWorkersAI(answer) as server:
        runnable = with_structured_output(client(server, via), Parcel, method=method)
        if mode == "sync":
            items = list(runnable.stream("Describe the parcel as JSON."))
        else:

            async def collect() -> list[object]:
                return [item async for item in runnable.astream("Describe the parcel as JSON.")]

            items = asyncio.run(collect())
    assert items == [Parcel(label="box")]
    assert [body.get("stream") for body in server.requests] == [False]
    assert server.violations == []


def test_the_unstreamed_request_has_its_own_cache_of_built_pieces() -> None:
    # It shared its spec's cache, so a binding made for a streamed call on one
    # model could be taken for the unstreamed call on Workers AI, and back.
    from langchain_structx._request.plan import CallSpec
    from langchain_structx._request.quirks import for_model

    with FakeWorkersAI(answer) as server:
        model = client(server, "cloudflare")
    spec = CallSpec(strategy="prompted")
    spec.derived["lcel"] = "bound for another model"
    unstreamed = for_model(spec, model)

    assert unstreamed.model_settings == {"stream": False}
    assert "lcel" not in unstreamed.derived
    assert for_model(spec, model) is unstreamed
