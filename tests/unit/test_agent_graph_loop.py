"""Every attempt is a model call that LangChain's middleware, traces and checkpoints see.

Our `create_agent` puts a retry router first and our middleware last: each failed
attempt ends the model step with its feedback, and the router sends the agent
back to the model, through every other middleware's hooks, as LangChain's own
structured-output retries do.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ModelRetryMiddleware,
)
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel
from trace_recording import Recorder

from langchain_structx import (
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputMiddleware,
    ToolStrategy,
    create_agent,
    structured_output_node,
)
from langchain_structx.errors import (
    EarlierAttemptError,
    InvalidOutputError,
    StructuredOutputFailure,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    StructxError,
)
from langchain_structx.testing import ScriptedChatModel, tool_call


class Contact(BaseModel):
    name: str
    email: str


@tool
def lookup(name: str) -> str:
    """Look a person up."""
    return f"{name}: ada@example.org"


BAD_TOOL = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada"})])
GOOD_TOOL = AIMessage(
    "", tool_calls=[tool_call("Contact", {"name": "Ada", "email": "ada@example.org"})]
)
GOOD_BOB = AIMessage(
    "", tool_calls=[tool_call("Contact", {"name": "Bob", "email": "bob@example.org"})]
)
BAD_TEXT = '{"name": "Ada"}'
GOOD_TEXT = '{"name": "Ada", "email": "ada@example.org"}'

STRATEGIES = {
    "tool": (ToolStrategy, BAD_TOOL, GOOD_TOOL),
    "prompted": (PromptedStrategy, BAD_TEXT, GOOD_TEXT),
    "provider": (ProviderStrategy, BAD_TEXT, GOOD_TEXT),
}


def never_valid(strategy: str) -> tuple[Any, ScriptedChatModel]:
    cls, bad, _ = STRATEGIES[strategy]
    return cls(Contact, max_retries=5), ScriptedChatModel(responses=[bad] * 10)


def invoke(agent: Any, mode: str, value: Any, config: Any = None) -> Any:
    if mode == "sync":
        return agent.invoke(value, config)
    import asyncio

    return asyncio.run(agent.ainvoke(value, config))


QUESTION = {"messages": [("user", "Ada, ada@example.org")]}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("tools", [[], [lookup]], ids=["no-tools", "with-tools"])
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_call_limit_stops_our_agent_where_it_stops_langchains(
    strategy: str, tools: list[Any], mode: str
) -> None:
    stock_model = ScriptedChatModel(responses=[BAD_TOOL] * 10)
    stock = langchain_create_agent(
        stock_model,
        tools,
        response_format=LangChainToolStrategy(Contact),
        middleware=[ModelCallLimitMiddleware(run_limit=2)],
    )
    invoke(stock, mode, QUESTION)
    response_format, model = never_valid(strategy)
    ours = create_agent(
        model,
        tools,
        response_format=response_format,
        middleware=[ModelCallLimitMiddleware(run_limit=2)],
    )
    state = invoke(ours, mode, QUESTION)
    assert len(stock_model.calls) == 2
    assert len(model.calls) == len(stock_model.calls)
    assert state.get("structured_response") is None


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_call_limit_that_raises_raises_at_the_same_call(strategy: str) -> None:
    response_format, model = never_valid(strategy)
    limit = ModelCallLimitMiddleware(run_limit=3, exit_behavior="error")
    agent = create_agent(model, response_format=response_format, middleware=[limit])
    with pytest.raises(ModelCallLimitExceededError):
        agent.invoke(QUESTION)
    assert len(model.calls) == 3


class Hooks(AgentMiddleware[Any, Any]):
    """Records the order in which its hooks see the agent's model calls."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def before_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("before_model")

    def after_model(self, state: Any, runtime: Any) -> None:
        self.seen.append("after_model")

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self.seen.append("wrap")
        return handler(request)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_other_middleware_sees_every_attempt_in_order(strategy: str) -> None:
    cls, bad, good = STRATEGIES[strategy]
    hooks = Hooks()
    model = ScriptedChatModel(responses=[bad, bad, good])
    agent = create_agent(model, response_format=cls(Contact), middleware=[hooks])
    state = agent.invoke(QUESTION)
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    assert state["structured_output_report"]["attempts"] == 3
    assert hooks.seen == ["before_model", "wrap", "after_model"] * 3


def test_without_the_router_the_middleware_retries_inside_one_model_call() -> None:
    hooks = Hooks()
    model = ScriptedChatModel(responses=[BAD_TOOL, GOOD_TOOL])
    structured = StructuredOutputMiddleware(ToolStrategy(Contact))
    agent = langchain_create_agent(model, middleware=[hooks, structured])
    state = agent.invoke(QUESTION)
    assert state["structured_output_report"]["attempts"] == 2
    assert hooks.seen == ["before_model", "wrap", "after_model"]


def test_with_the_router_a_raw_middleware_loops_through_the_graph() -> None:
    hooks = Hooks()
    model = ScriptedChatModel(responses=[BAD_TEXT, GOOD_TEXT])
    structured = StructuredOutputMiddleware(PromptedStrategy(Contact))
    agent = langchain_create_agent(model, middleware=[structured.retry_router(), hooks, structured])
    state = agent.invoke(QUESTION)
    assert state["structured_output_report"]["attempts"] == 2
    assert hooks.seen == ["before_model", "wrap", "after_model"] * 2


class Crash(RuntimeError):
    """The process died during a model call."""


def crash(messages: list[BaseMessage], call: Any) -> Exception:
    return Crash("killed")


@pytest.mark.parametrize("same_process", [True, False], ids=["same-agent", "new-agent"])
def test_attempts_usage_and_budget_survive_a_resume_from_a_checkpoint(same_process: bool) -> None:
    saver = InMemorySaver()
    thread = {"configurable": {"thread_id": "t"}}
    bad = AIMessage(
        BAD_TEXT, usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    )
    model = ScriptedChatModel(responses=[bad, crash, bad])
    strategy = PromptedStrategy(Contact, max_retries=1)
    agent = create_agent(model, response_format=strategy, checkpointer=saver)
    with pytest.raises(Crash):
        agent.invoke(QUESTION, thread)
    saved = agent.get_state(thread).values["structx_progress"]
    assert saved["attempts"] == 1
    assert saved["usage"]["total_tokens"] == 15
    if not same_process:
        agent = create_agent(model, response_format=strategy, checkpointer=saver)
    # The resumed run has one retry left of its budget, not a fresh one.
    with pytest.raises(StructuredOutputRetryError) as caught:
        agent.invoke(None, thread)
    error = caught.value
    assert error.n_attempts == 2
    assert error.usage is not None and error.usage["total_tokens"] == 30
    first = error.errors[0]
    assert isinstance(first, EarlierAttemptError) is not same_process
    assert first.kind == "validation" and first.attempt == 1
    assert "email" in str(first)
    # The same wording as the error it stands for, with no `kind: ` before it.
    assert str(first).startswith("The answer does not match Contact")
    assert len(model.calls) == 3


def labelled(handler: Recorder) -> list[tuple[Any, Any, Any]]:
    return [
        (m.get("structx_attempt"), m.get("structx_strategy"), m.get("structx_variant"))
        for _, m in handler.models
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("face", ["agent", "node"])
def test_every_model_call_carries_its_attempt_strategy_and_variant(face: str, mode: str) -> None:
    handler = Recorder()
    model = ScriptedChatModel(responses=[BAD_TOOL, GOOD_TOOL])
    if face == "agent":
        runnable: Any = create_agent(model, response_format=ToolStrategy(Contact))
    else:
        runnable = structured_output_node(model, ToolStrategy(Contact)).as_runnable()
    invoke(runnable, mode, QUESTION, {"callbacks": [handler]})
    assert labelled(handler) == [(1, "tool", "Contact"), (2, "tool", "Contact")]
    # The report rides on the outputs of the traced runs, where LangSmith shows it.
    assert handler.reports and handler.reports[-1]["attempts"] == 2
    tags = [t for tags, _ in handler.models for t in tags if t.startswith("structx:")]
    assert tags == [
        "structx:attempt:1",
        "structx:strategy:tool",
        "structx:attempt:2",
        "structx:strategy:tool",
    ]


def steps(agent: Any, value: Any, config: Any = None) -> list[str]:
    return [
        name for update in agent.stream(value, config, stream_mode="updates") for name in update
    ]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_an_answer_at_once_is_one_graph_step_as_in_langchain(strategy: str) -> None:
    cls, _, good = STRATEGIES[strategy]
    ours = create_agent(ScriptedChatModel(responses=[good]), response_format=cls(Contact))
    stock = langchain_create_agent(
        ScriptedChatModel(responses=[GOOD_TOOL]), response_format=LangChainToolStrategy(Contact)
    )
    assert steps(ours, QUESTION) == steps(stock, QUESTION) == ["model"]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_each_retry_is_one_model_step_when_no_other_hook_runs_after_the_model(
    strategy: str,
) -> None:
    cls, bad, good = STRATEGIES[strategy]
    agent = create_agent(
        ScriptedChatModel(responses=[bad, bad, good]), response_format=cls(Contact)
    )
    assert steps(agent, QUESTION) == ["model"] * 3


def test_with_another_after_model_hook_the_router_sends_each_retry_back() -> None:
    agent = create_agent(
        ScriptedChatModel(responses=[BAD_TEXT, GOOD_TEXT]),
        response_format=PromptedStrategy(Contact),
        middleware=[Hooks()],
    )
    assert (
        steps(agent, QUESTION)
        == [
            "StructuredOutputRetryRouter.before_model",
            "Hooks.before_model",
            "model",
            "Hooks.after_model",
            "StructuredOutputRetryRouter.after_model",
        ]
        * 2
    )


def earlier_answer_then(
    second: list[Any], middleware: tuple[Any, ...] = ()
) -> tuple[Any, ScriptedChatModel, InMemorySaver]:
    model = ScriptedChatModel(responses=[GOOD_TOOL, *second])
    saver = InMemorySaver()
    agent = create_agent(
        model,
        response_format=ToolStrategy(Contact, max_retries=0),
        checkpointer=saver,
        middleware=middleware,
    )
    agent.invoke(QUESTION, {"configurable": {"thread_id": "t"}})
    return agent, model, saver


@pytest.mark.parametrize(
    ("mode", "hooks"),
    [("sync", False), ("async", False), ("sync", True)],
    ids=["sync", "async", "sync-with-after-model-hook"],  # `Hooks` is sync only
)
def test_a_first_step_failure_clears_the_earlier_answer_then_raises_its_own_error(
    mode: str, hooks: bool
) -> None:
    agent, model, _ = earlier_answer_then([BAD_TOOL], (Hooks(),) if hooks else ())
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(StructuredOutputRetryError) as caught:
        invoke(agent, mode, {"messages": [("user", "And Bob?")]}, thread)
    assert caught.value.attempt == 1
    assert caught.value.ai_message is not None
    assert caught.value.ai_message.tool_calls[0]["args"] == {"name": "Ada"}
    assert len(model.calls) == 2  # the raising step does not call the model
    state = agent.get_state(thread).values
    assert state["structured_response"] is None
    assert state["structured_response_kind"] is None
    assert state["structured_output_report"] is None


def test_a_put_off_failure_resumed_elsewhere_is_raised_as_what_it_was() -> None:
    model = ScriptedChatModel(responses=[GOOD_TOOL, BAD_TOOL])
    saver = InMemorySaver()
    thread = {"configurable": {"thread_id": "t"}}
    options = {"response_format": ToolStrategy(Contact, max_retries=0), "checkpointer": saver}
    create_agent(model, **options).invoke(QUESTION, thread)
    paused = create_agent(model, interrupt_after=["model"], **options)
    paused.invoke({"messages": [("user", "And Bob?")]}, thread)
    assert paused.get_state(thread).values["structured_response"] is None

    # Another process has none of the first one's error objects: it rebuilds the
    # retry error from the checkpoint (it used to raise a bare failure).
    elsewhere = create_agent(model, **options)
    with pytest.raises(StructuredOutputRetryError) as caught:
        elsewhere.invoke(None, thread)
    error = caught.value
    assert error.n_attempts == 1 and error.attempt == 1
    (first,) = error.errors
    assert isinstance(first, EarlierAttemptError)
    assert first.kind == "validation"
    assert str(first).startswith("Failed to parse structured output for tool 'Contact'")
    assert "email" in str(first)
    assert len(model.calls) == 2


REFUSAL = AIMessage("", additional_kwargs={"refusal": "I can't help with that."})


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("reply", "strategy", "expected"),
    [
        (REFUSAL, ToolStrategy(Contact), StructuredOutputRefusal),
        (BAD_TOOL, ToolStrategy(Contact, handle_errors=False), InvalidOutputError),
    ],
    ids=["refusal", "handle_errors=False"],
)
def test_a_put_off_attempt_error_resumed_elsewhere_keeps_its_class(
    mode: str, reply: AIMessage, strategy: Any, expected: type[Exception]
) -> None:
    def run_to_failure(resumed_elsewhere: bool) -> BaseException:
        model = ScriptedChatModel(responses=[GOOD_TOOL, reply])
        saver = InMemorySaver()
        thread = {"configurable": {"thread_id": "t"}}
        options = {"response_format": strategy, "checkpointer": saver}
        create_agent(model, **options).invoke(QUESTION, thread)
        ask = {"messages": [("user", "And Bob?")]}
        if not resumed_elsewhere:
            with pytest.raises(StructxError) as caught:
                invoke(create_agent(model, **options), mode, ask, thread)
            return caught.value
        invoke(create_agent(model, interrupt_after=["model"], **options), mode, ask, thread)
        with pytest.raises(StructxError) as caught:
            invoke(create_agent(model, **options), mode, None, thread)
        return caught.value

    here, elsewhere = run_to_failure(False), run_to_failure(True)

    assert type(here) is type(elsewhere) is expected
    assert str(elsewhere) == str(here)
    assert (elsewhere.attempt, elsewhere.kind) == (here.attempt, here.kind)  # type: ignore[attr-defined]
    assert elsewhere.ai_message is None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_turn_resumed_after_its_put_off_failure_asks_the_model_again(mode: str) -> None:
    # As LangChain's model step does when a thread is resumed after an error.
    # The step that raised the failure used to raise it again on every resume.
    agent, model, _ = earlier_answer_then([BAD_TOOL, GOOD_BOB])
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(StructuredOutputRetryError):
        invoke(agent, mode, {"messages": [("user", "And Bob?")]}, thread)
    assert len(model.calls) == 2

    state = invoke(agent, mode, None, thread)

    assert state["structured_response"] == Contact(name="Bob", email="bob@example.org")
    assert state["structured_output_report"]["attempts"] == 1
    assert len(model.calls) == 3


def test_a_model_exception_reaches_the_retry_middleware_around_us() -> None:
    model = ScriptedChatModel(responses=[GOOD_TOOL, Crash("down"), GOOD_TOOL])
    retry = ModelRetryMiddleware(max_retries=1, retry_on=(Crash,), initial_delay=0, jitter=False)
    agent = create_agent(
        model,
        response_format=ToolStrategy(Contact, max_retries=0),
        middleware=[retry],
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "t"}}
    agent.invoke(QUESTION, thread)
    state = agent.invoke({"messages": [("user", "Ada again?")]}, thread)
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    assert len(model.calls) == 3


@pytest.mark.parametrize("middleware", [[], [Hooks()]], ids=["alone", "with-after-model-hook"])
def test_a_failed_turn_lends_neither_its_count_nor_its_answer_to_the_next(
    middleware: list[Any],
) -> None:
    model = ScriptedChatModel(responses=[BAD_TOOL, BAD_TOOL, GOOD_TOOL])
    agent = create_agent(
        model,
        response_format=ToolStrategy(Contact, max_retries=1),
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(StructuredOutputRetryError):
        agent.invoke(QUESTION, thread)
    state = agent.invoke({"messages": [("user", "Once more?")]}, thread)
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    assert state["structured_output_report"]["attempts"] == 1
    assert state["structured_output_report"]["errors"] == []


def test_the_message_stream_sees_each_attempt_labelled() -> None:
    # LangGraph's "messages" stream is a callback handler of its own: with no
    # callbacks of the caller's, the labels still reach it.
    model = ScriptedChatModel(responses=[BAD_TOOL, GOOD_TOOL])
    agent = create_agent(model, response_format=ToolStrategy(Contact))
    seen = {
        (meta.get("structx_attempt"), meta.get("structx_strategy"))
        for chunk, meta in agent.stream(QUESTION, stream_mode="messages")
        if isinstance(chunk, AIMessage)
    }
    assert seen == {(1, "tool"), (2, "tool")}


def test_a_run_checkpointed_without_its_last_message_goes_on() -> None:
    # Runs checkpointed by an earlier version carry no `last_id`: they go on,
    # so an upgrade never grants a run in flight a fresh retry budget.
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.messages import HumanMessage

    from langchain_structx._engine.progress import new_progress
    from langchain_structx._faces import agent as _agent

    progress = new_progress()
    progress.update({"attempts": 2, "retry": True})
    messages = [HumanMessage("Ada?", id="h1"), HumanMessage("Please fix it.", id="f1")]
    request = ModelRequest(
        model=ScriptedChatModel(responses=[]),
        messages=messages,
        state={"messages": messages, _agent.PROGRESS_KEY: progress},
    )
    assert _agent.progress_of(request) == (progress, False)
    progress["last_id"] = "h1"  # the run's own last message is followed by a question
    assert _agent.progress_of(request) == (None, False)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_with_tools_a_retry_still_goes_back_to_the_model(strategy: str) -> None:
    # LangChain ends a turn at a reply without tool calls unless `jump_to` says
    # otherwise: a failed prompted or provider answer must still be retried.
    cls, bad, good = STRATEGIES[strategy]
    look = AIMessage("", tool_calls=[tool_call("lookup", {"name": "Ada"}, id="l1")])
    model = ScriptedChatModel(responses=[look, bad, good])
    agent = create_agent(model, [lookup], response_format=cls(Contact))
    assert steps(agent, QUESTION) == ["model", "tools", "model", "model"]
    model.reset([look, bad, good])
    state = agent.invoke(QUESTION)
    assert state["structured_response"] == Contact(name="Ada", email="ada@example.org")
    assert state["structured_output_report"]["attempts"] == 2


def test_a_put_off_failure_is_kept_until_it_is_raised_and_no_longer() -> None:
    # The kept error holds the model's reply: it must not outlive its raise.
    from langchain_structx._faces.agent_errors import ErrorCache

    cache = ErrorCache(size=2)
    error = StructuredOutputFailure("bad")
    key = cache.defer(error)
    assert not cache.raised(key)
    assert cache.take_deferred(key) is error
    assert cache.take_deferred(key) is None
    assert cache.raised(key)  # only its key is remembered, to tell a resume
    keys = [cache.defer(StructuredOutputFailure(str(n))) for n in range(3)]
    assert cache.take_deferred(keys[0]) is None  # the oldest was let go
    assert not cache.raised(keys[0])
    assert str(cache.take_deferred(keys[2])) == "2"
    assert str(cache.take_deferred(keys[1])) == "1"
    assert [cache.raised(k) for k in (key, keys[2], keys[1])] == [False, True, True]  # bounded


def test_plans_of_replaced_formats_are_kept_per_format_and_bounded() -> None:
    # An outer middleware may replace the response format per call; a new format
    # object each time must not grow the middleware's memory without bound.
    from types import SimpleNamespace

    from langchain_structx._faces.agent import RequestPlans
    from langchain_structx._request.plan import build_plan

    own = build_plan(ToolStrategy(Contact))
    plans = RequestPlans(own, size=2)
    formats = [ToolStrategy(Contact) for _ in range(5)]
    kept = [plans.for_request(SimpleNamespace(response_format=f)) for f in formats]  # type: ignore[arg-type]

    assert plans.for_request(SimpleNamespace(response_format=None)) is own  # type: ignore[arg-type]
    assert all(p.strategy is f for p, f in zip(kept, formats, strict=True))
    assert len(plans._overrides) == 2
    # The newest stays cached: asking again gives the same plan object.
    assert plans.for_request(SimpleNamespace(response_format=formats[-1])) is kept[-1]  # type: ignore[arg-type]
