"""with_structured_output over LangChain's configurable model, as `init_chat_model` makes it.

The model is LangChain's own: `init_chat_model` builds a real `ChatOpenAI` for each
call, pointed at the fake OpenAI server of the provider tests (on 127.0.0.1), which
checks every request against OpenAI's documented rules and answers with the name of
the model it was asked for. So each test shows what reached the wire:

- every invocation builds its own model from its config, and the strategy, the
  request and the binding are those of that model (invoke, stream, batch, sync
  and async, `include_raw=True`, a `config_prefix`);
- call arguments and config bound around the configurable model, or queued on it
  by `with_config`, go with every call;
- queued tools or structured output, which the runnable sets itself, are refused;
- LangChain's own error for an unknown provider or a missing model is raised as is;
- our `create_agent` and graph node decide the route and strict dialect from the
  chat model each call builds, as the runnable does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.chat_models import init_chat_model
from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from langchain_structx import StructuredOutputRetryError, ToolStrategy, with_structured_output
from langchain_structx.errors import UserError

from .fakes import FakeOpenAI
from .wire import Ask, Reply

pytestmark = pytest.mark.integration

MODES = ["invoke", "ainvoke", "stream", "astream"]


class City(BaseModel):
    name: str


def answer_with_model_name(ask: Ask) -> Reply:
    """Answers `{"name": <the model the request names>}` by the route asked for."""
    value = {"name": ask.body["model"]}
    if ask.kind == "tool":
        return Reply(calls=((ask.forced or next(iter(ask.tools)), value),))
    return Reply(text=json.dumps(value))


@pytest.fixture(scope="module")
def running() -> Iterator[FakeOpenAI]:
    # One server for the module: stopping one takes half a second.
    with FakeOpenAI(answer_with_model_name) as fake:
        yield fake


@pytest.fixture
def server(running: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's server, with no requests yet and the default answers."""
    running.requests.clear()
    running.violations.clear()
    running.model = answer_with_model_name
    yield running
    assert running.violations == []


UNUSED = "http://127.0.0.1:9"
"""A loopback address nothing listens on, for tests that send no request."""


def configurable(server: FakeOpenAI | str, **options: Any) -> Any:
    url = server if isinstance(server, str) else server.url
    options = {"configurable_fields": ("model",), **options}
    return init_chat_model(
        "model-a",
        model_provider="openai",
        base_url=f"{url}/v1",
        api_key="test",
        max_retries=0,
        **options,
    )


def pick(name: str) -> dict[str, Any]:
    return {"configurable": {"model": name}}


async def run(mode: str, runnable: Any, config: Any = None) -> Any:
    """The runnable's result in `mode`; for a stream, its last item."""
    if mode == "invoke":
        return runnable.invoke("Where?", config)
    if mode == "ainvoke":
        return await runnable.ainvoke("Where?", config)
    if mode == "stream":
        return list(runnable.stream("Where?", config))[-1]
    return [item async for item in runnable.astream("Where?", config)][-1]


class Tags(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.tags.append(list(kwargs.get("tags") or []))


@pytest.mark.parametrize("mode", MODES)
async def test_each_invocation_reaches_the_server_with_the_model_its_config_names(
    server: FakeOpenAI, mode: str
) -> None:
    # One strategy for both models: a binding cached for the first model would
    # send its name again for the second.
    runnable = with_structured_output(configurable(server), ToolStrategy(City))
    names = ["model-b", "model-c", "model-b"]
    results = [await run(mode, runnable, pick(name)) for name in names]
    assert results == [City(name=name) for name in names]
    assert [request["model"] for request in server.requests] == names
    assert [request["tool_choice"]["function"]["name"] for request in server.requests] == [
        "City"
    ] * 3


async def test_without_a_configurable_value_the_default_model_answers(
    server: FakeOpenAI,
) -> None:
    runnable = with_structured_output(configurable(server), City)
    assert runnable.invoke("Where?") == City(name="model-a")
    assert await runnable.ainvoke("Where?") == City(name="model-a")
    assert [request["model"] for request in server.requests] == ["model-a", "model-a"]


@pytest.mark.parametrize("mode", ["batch", "abatch"])
async def test_one_batch_with_a_config_per_input_asks_each_model(
    server: FakeOpenAI, mode: str
) -> None:
    runnable = with_structured_output(configurable(server), City)
    inputs, configs = ["Where?"] * 3, [pick("model-b"), pick("model-c"), pick("model-d")]
    if mode == "batch":
        results = runnable.batch(inputs, configs)
    else:
        results = await runnable.abatch(inputs, configs)
    assert results == [City(name="model-b"), City(name="model-c"), City(name="model-d")]
    assert sorted(request["model"] for request in server.requests) == [
        "model-b",
        "model-c",
        "model-d",
    ]


async def test_auto_strategy_and_strict_dialect_follow_the_model_of_each_call(
    server: FakeOpenAI,
) -> None:
    runnable = with_structured_output(configurable(server), City)
    assert runnable.invoke("Where?", pick("gpt-4o")) == City(name="gpt-4o")
    assert runnable.invoke("Where?", pick("model-b")) == City(name="model-b")
    assert runnable.invoke("Where?", pick("gpt-4o")) == City(name="gpt-4o")
    native, tool, native_again = server.requests
    # gpt-4o's profile has native structured output: OpenAI's strict json_schema.
    assert native["response_format"]["json_schema"]["strict"] is True
    assert native["response_format"]["json_schema"]["schema"]["additionalProperties"] is False
    assert "tools" not in native
    # An unknown model name has no such profile: the tool route.
    assert "response_format" not in tool
    assert [t["function"]["name"] for t in tool["tools"]] == ["City"]
    assert native_again["response_format"] == native["response_format"]
    assert "tools" not in native_again


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_returns_the_chosen_models_message(server: FakeOpenAI, mode: str) -> None:
    runnable = with_structured_output(configurable(server), City, include_raw=True)
    result = await run(mode, runnable, pick("model-b"))
    assert result["parsed"] == City(name="model-b")
    assert result["parsing_error"] is None
    assert result["raw"].response_metadata["model_name"] == "model-b"
    assert result["raw"].response_metadata["structured_output_report"]["attempts"] == 1


async def test_include_raw_returns_a_failed_answer_of_the_chosen_model(
    server: FakeOpenAI,
) -> None:
    server.model = lambda ask: Reply(text="somewhere in Norway")
    runnable = with_structured_output(
        configurable(server), ToolStrategy(City, max_retries=1), include_raw=True
    )
    result = await runnable.ainvoke("Where?", pick("model-b"))
    assert result["parsed"] is None
    assert isinstance(result["parsing_error"], StructuredOutputRetryError)
    assert [request["model"] for request in server.requests] == ["model-b", "model-b"]


def test_a_config_prefix_is_honoured(server: FakeOpenAI) -> None:
    runnable = with_structured_output(configurable(server, config_prefix="writer"), City)
    config = {"configurable": {"writer_model": "model-b", "model": "model-x"}}
    assert runnable.invoke("Where?", config) == City(name="model-b")
    assert server.requests[0]["model"] == "model-b"


@pytest.mark.parametrize("mode", MODES)
async def test_a_stop_bound_around_the_configurable_model_is_sent(
    server: FakeOpenAI, mode: str
) -> None:
    runnable = with_structured_output(configurable(server).bind(stop=["END"]), City)
    assert await run(mode, runnable, pick("model-b")) == City(name="model-b")
    assert server.requests[0]["stop"] == ["END"]
    assert server.requests[0]["model"] == "model-b"


def test_a_binding_may_choose_the_model_and_the_call_may_override_it(
    server: FakeOpenAI,
) -> None:
    bound = configurable(server).bind(stop=["END"]).with_config(pick("model-b"))
    runnable = with_structured_output(bound, City)
    assert runnable.invoke("Where?") == City(name="model-b")
    assert runnable.invoke("Where?", pick("model-c")) == City(name="model-c")
    assert [request["model"] for request in server.requests] == ["model-b", "model-c"]
    assert all(request["stop"] == ["END"] for request in server.requests)


def test_a_queued_with_config_chooses_the_model_and_tags_every_call(server: FakeOpenAI) -> None:
    handler = Tags()
    model = configurable(server).with_config(configurable={"model": "model-b"}, tags=["mine"])
    runnable = with_structured_output(model, City)
    assert runnable.invoke("Where?", {"callbacks": [handler]}) == City(name="model-b")
    assert server.requests[0]["model"] == "model-b"
    (tags,) = handler.tags
    assert "mine" in tags and "structx:attempt:1" in tags


@pytest.mark.parametrize(
    "prepare",
    [
        lambda m: m.bind_tools([City]),
        lambda m: m.bind_tools([City]).bind(stop=["END"]),
        lambda m: m.with_config(tags=["mine"]).bind_tools([City]),
        lambda m: m.with_structured_output(City),
        lambda m: m.bind(tools=[{"type": "function", "function": {"name": "f"}}]),
        lambda m: m.bind(response_format={"type": "json_object"}),
    ],
    ids=[
        "queued-bind-tools",
        "queued-bind-tools-then-bound",
        "with-config-then-queued-bind-tools",
        "queued-structured-output",
        "bound-tools",
        "bound-response-format",
    ],
)
def test_tools_or_a_format_on_the_configurable_model_are_refused(prepare: Any) -> None:
    with pytest.raises(UserError, match="sets itself"):
        with_structured_output(prepare(configurable(UNUSED)), City)


def no_model() -> Any:
    return init_chat_model(configurable_fields=("model", "model_provider"))


@pytest.mark.parametrize(
    "config",
    [None, {"configurable": {"model": "model-a", "model_provider": "no-such-provider"}}],
    ids=["no-model", "unknown-provider"],
)
@pytest.mark.parametrize("include_raw", [False, True])
@pytest.mark.parametrize("mode", MODES)
async def test_langchains_own_error_is_raised_unwrapped(
    config: Any, include_raw: bool, mode: str
) -> None:
    with pytest.raises(Exception) as langchain_raised:
        no_model().invoke("Where?", config)
    runnable = with_structured_output(no_model(), City, include_raw=include_raw)
    with pytest.raises(type(langchain_raised.value)) as raised:
        await run(mode, runnable, config)
    assert type(raised.value) is type(langchain_raised.value)
    assert str(raised.value) == str(langchain_raised.value)


# --- the agent and the graph node -----------------------------------------------------
# They call the configurable model through LangChain, which builds the chat model
# per call; what the engine decides from the model (route, strict dialect, quirks,
# fallback memory) must be decided from that same chat model, as the runnable does.


def _routes(server: FakeOpenAI) -> list[tuple[str, str]]:
    """`(model, route)` of each request: strict json_schema, plain json_schema or tools."""
    routes = []
    for request in server.requests:
        if "tools" in request:
            route = "tools"
        elif request["response_format"]["json_schema"].get("strict") is True:
            route = "strict json_schema"
        else:
            route = "json_schema"
        routes.append((request["model"], route))
    return routes


async def test_the_agent_decides_from_the_model_each_call_builds(server: FakeOpenAI) -> None:
    from langchain_structx import create_agent

    agent = create_agent(configurable(server), response_format=City)
    for name in ("gpt-4o", "model-b", "gpt-4o"):
        state = await agent.ainvoke({"messages": [("user", "Where?")]}, pick(name))
        assert state["structured_response"] == City(name=name)
    assert _routes(server) == [
        ("gpt-4o", "strict json_schema"),
        ("model-b", "tools"),
        ("gpt-4o", "strict json_schema"),
    ]


def test_a_graph_node_decides_from_the_model_each_call_builds(server: FakeOpenAI) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    from langchain_structx import structured_output_node

    class State(MessagesState):
        structured_response: City | None
        structured_response_kind: str | None
        structured_output_report: dict[str, Any] | None

    builder = StateGraph(State)
    builder.add_node("extract", structured_output_node(configurable(server), City))
    builder.add_edge(START, "extract")
    graph = builder.compile()
    for name in ("model-b", "gpt-4o"):
        state = graph.invoke({"messages": [("user", "Where?")]}, pick(name))
        assert state["structured_response"] == City(name=name)
    assert _routes(server) == [("model-b", "tools"), ("gpt-4o", "strict json_schema")]


def test_a_configurable_model_that_cannot_be_built_fails_as_langchain_fails(
    server: FakeOpenAI,
) -> None:
    from langchain_structx import create_agent

    model = configurable(server, configurable_fields=("model", "model_provider"))
    agent = create_agent(model, response_format=City)
    config = {"configurable": {"model_provider": "no-such-provider"}}
    with pytest.raises(ValueError, match="no_such_provider"):
        model.invoke("Where?", config)
    with pytest.raises(ValueError, match="no_such_provider"):
        agent.invoke({"messages": [("user", "Where?")]}, config)
    assert server.requests == []
