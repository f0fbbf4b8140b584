"""What every face of the engine does around the attempt loop, written once.

A face (the agent middleware, the graph node) differs only in how it calls the
model and what it writes back. `run` and `arun` are the rest: a stream-event
sink, the loop's driver, model calls labelled with the attempt in the trace,
the result turned into the face's update, and the buffered events flushed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from contextvars import Token
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from langchain_structx import streaming
from langchain_structx._engine import drive as _drive
from langchain_structx._engine.run import CallModel, RunResult, Step
from langchain_structx._request.plan import Plan
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY

T = TypeVar("T")

Loop = Generator[Step, Any, RunResult]
Finish = Callable[[RunResult, streaming.EventSink], T]

ATTEMPT_KEY = "structx_attempt"
STRATEGY_KEY = "structx_strategy"
VARIANT_KEY = "structx_variant"


def run(plan: Plan, loop: Loop, call: Callable[[CallModel], AIMessage], finish: Finish[T]) -> T:
    """Drive `loop` synchronously, calling the model with `call`, and `finish` its result."""
    sink = streaming.open_sink()
    if not sink.observed:
        return finish(_drive.drive(loop, call), sink)

    def watched(step: CallModel) -> AIMessage:
        with labelled(plan, step):
            return streaming.watched(sink, plan, step, lambda: call(step))

    return finish(_drive.drive(loop, watched), sink)


async def arun(
    plan: Plan,
    loop: Loop,
    call: Callable[[CallModel], Awaitable[AIMessage]],
    finish: Finish[T],
) -> T:
    """Async form of `run`; stream events buffered by the sink are flushed at the end."""
    sink = streaming.open_sink()
    if not sink.observed:
        return finish(await _drive.adrive(loop, call), sink)

    async def watched(step: CallModel) -> AIMessage:
        with labelled(plan, step):
            return await streaming.awatched(sink, plan, step, lambda: call(step))

    result = finish(await _drive.adrive(loop, watched), sink)
    await sink.flush()
    return result


def with_history(messages: Sequence[BaseMessage], step: CallModel) -> list[BaseMessage]:
    """The conversation for one call: the caller's messages, then this run's retries.

    Messages of a route given up stay in the state but are not shown again.
    """
    if step.hidden:
        messages = [m for m in messages if m.id not in step.hidden]
    return [*messages, *step.history]


def with_system(conversation: list[BaseMessage], text: str) -> list[BaseMessage]:
    """`conversation` with `text` in its system message, which stays one and first.

    Several system messages, or one that is not first, are refused by some
    providers: a conversation that opens with one gets `text` at its end.

    Examples:
        >>> [m.type for m in with_system([SystemMessage("Be brief.")], "Answer in JSON.")]
        ['system']
    """
    if not text:
        return conversation
    if conversation and isinstance(conversation[0], SystemMessage):
        return [with_system_text(conversation[0], text), *conversation[1:]]
    return [SystemMessage(text), *conversation]


def with_system_text(system: SystemMessage | None, text: str) -> SystemMessage:
    """`system` with `text` added at its end, or a new system message of `text`.

    A system message of content blocks keeps its blocks (with their cache
    settings) and its id: the text goes in as one more text block.

    Examples:
        >>> print(with_system_text(SystemMessage("Be brief."), "Answer in JSON.").content)
        Be brief.
        <BLANKLINE>
        Answer in JSON.
        >>> blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
        >>> with_system_text(SystemMessage(blocks), "Answer in JSON.").content[1]
        {'type': 'text', 'text': 'Answer in JSON.'}
    """
    if system is None:
        return SystemMessage(text)
    content = system.content
    if isinstance(content, str):
        joined: str | list[Any] = f"{content}\n\n{text}".strip()
    else:
        joined = [*content, {"type": "text", "text": text}]
    return system.model_copy(update={"content": joined})


def labels(plan: Plan, step: CallModel) -> RunnableConfig:
    """Run metadata and tags naming the attempt, strategy and (if fixed) variant.

    Examples:
        >>> from langchain_structx._request.plan import build_plan, CallSpec
        >>> plan = build_plan({"title": "Tag", "type": "object"})
        >>> step = CallModel(CallSpec(strategy="tool"), (), attempt=2)
        >>> labels(plan, step)["tags"]
        ['structx:attempt:2', 'structx:strategy:tool']
    """
    strategy = step.spec.strategy
    metadata: dict[str, Any] = {ATTEMPT_KEY: step.attempt, STRATEGY_KEY: strategy}
    if not plan.schemas.is_union:
        metadata[VARIANT_KEY] = plan.schemas.names[0]
    tags = [f"structx:attempt:{step.attempt}", f"structx:strategy:{strategy}"]
    return {"metadata": metadata, "tags": tags}


class labelled:  # noqa: N801 - used as a context manager, like contextlib's
    """Label the model runs started inside with `labels(plan, step)`.

    The faces call the model with no config of their own; LangChain then takes
    the config of the surrounding run from a context variable, which this sets
    for the duration of the call. (A class rather than a generator: it runs
    around every model call.)
    """

    __slots__ = ("_label", "_token")

    def __init__(self, plan: Plan, step: CallModel) -> None:
        self._label = labels(plan, step)
        self._token: Token[RunnableConfig | None]

    def __enter__(self) -> None:
        outer: RunnableConfig = var_child_runnable_config.get() or {}
        label = self._label
        # The two keys merged by hand: merge_configs would also copy the callbacks.
        config: RunnableConfig = {
            **outer,
            "tags": [*outer.get("tags", ()), *label["tags"]],
            "metadata": {**outer.get("metadata", {}), **label["metadata"]},
        }
        self._token = var_child_runnable_config.set(config)

    def __exit__(self, *exc_info: object) -> None:
        var_child_runnable_config.reset(self._token)


def reset_structured_output(state: Any) -> dict[str, Any]:
    """A graph node that clears the structured-output keys at the start of a turn.

    A node that fails writes nothing, so without this a turn whose extraction
    fails would leave the previous turn's `structured_response` in the thread.
    Put it first: `graph.add_node("reset", reset_structured_output)` and
    `graph.add_edge(START, "reset")`. (Our `create_agent` does this by itself.)

    Examples:
        >>> reset_structured_output({"structured_response": 1})["structured_response"] is None
        True
    """
    return {RESPONSE_KEY: None, KIND_KEY: None, REPORT_KEY: None}
