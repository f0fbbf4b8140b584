"""The agent face's plumbing: reading its state, extending its requests, writing back.

`middleware.py` holds the public middleware classes; this module holds what they
do to LangChain's `ModelRequest` and `ModelResponse`, and the cache of error
objects a run keeps between its model steps.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Annotated, Any, NotRequired, TypeGuard, Union, cast, get_args, get_origin

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command
from typing_extensions import TypedDict

from langchain_structx import _engine, _shell, streaming
from langchain_structx._plan import CallSpec, Plan, build_plan
from langchain_structx._progress import Progress, new_progress
from langchain_structx.errors import AttemptError, StructuredOutputFailure, StructxError
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY

JUMP_KEY = "jump_to"
"""LangChain's state key through which a step names the node to go to next."""

PROGRESS_KEY = "structx_progress"
"""Private state key: the bookkeeping of a run that spans model steps."""

TYPES_KEY = "structx_response_types"
"""Private state key, never written: declares our types for checkpoint allowlists."""

ANSWER_KEYS = (RESPONSE_KEY, KIND_KEY, REPORT_KEY)
"""The state keys that hold a turn's answer."""

KEPT_RUNS = 1024
"""Runs whose error objects one middleware keeps between model steps."""

KEPT_OVERRIDES = 64
"""Replaced response formats whose plans one middleware keeps."""


class ErrorCache:
    """The error objects of unfinished runs, by run id, most recent last.

    The checkpoint keeps each error's text; the objects themselves (with their
    AI message and issues) are kept here, so that `handle_errors` and the final
    `StructuredOutputRetryError` see them in full when the run goes on in the
    same process. Each entry is kept with the last message its run added, so a
    fork of the thread (two resumptions of one checkpoint) never borrows the
    other branch's errors. Bounded: the oldest runs are forgotten first.
    """

    def __init__(self, size: int = KEPT_RUNS) -> None:
        self._size = size
        self._runs: OrderedDict[str, tuple[str | None, tuple[AttemptError, ...]]] = OrderedDict()
        self._deferred: OrderedDict[str, StructxError] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, progress: Progress | None) -> tuple[AttemptError, ...]:
        """The errors kept for the run `progress` belongs to, as of that progress."""
        run_id = progress.get("run_id") if progress else None
        if not run_id:
            return ()
        with self._lock:
            kept = self._runs.get(run_id)
        if kept is None or kept[0] != progress.get("last_id"):  # type: ignore[union-attr]
            return ()
        return kept[1]

    def keep(self, result: _engine.RunResult) -> None:
        """Keep the errors of an unfinished run; forget a finished one."""
        progress = result.progress
        run_id = progress.get("run_id") if progress else None
        if not run_id:
            return
        with self._lock:
            if result.report is not None or not result.errors:
                self._runs.pop(run_id, None)
                return
            self._runs[run_id] = (progress.get("last_id"), result.errors)  # type: ignore[union-attr]
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)

    def forget(self, progress: Progress | None) -> None:
        """Drop what is kept for the run `progress` belongs to (it has failed)."""
        run_id = progress.get("run_id") if progress else None
        if run_id:
            with self._lock:
                self._runs.pop(run_id, None)

    def defer(self, error: StructxError) -> str:
        """Keep a failure to raise at the run's next step; returns its key."""
        key = uuid.uuid4().hex
        with self._lock:
            self._deferred[key] = error
            while len(self._deferred) > self._size:
                self._deferred.popitem(last=False)
        return key

    def take_deferred(self, key: str) -> StructxError | None:
        """The failure kept under `key`, if this process kept it; it is kept no longer.

        Taken once, so that failures (and the replies they hold) never pile up:
        a retry middleware that calls the model step again gets the failure's
        wording instead.
        """
        with self._lock:
            return self._deferred.pop(key, None)


class RequestPlans:
    """The plan for each model request, built once per response format.

    An outer middleware may narrow or replace the response format for one call
    (LangChain allows this through `request.override`); its plan is built on
    first sight and kept with the format object. Bounded: a middleware that makes
    a new format object per call costs a plan per call, never unbounded memory.
    """

    def __init__(self, plan: Plan, size: int = KEPT_OVERRIDES) -> None:
        self._plan = plan
        self._size = size
        self._overrides: OrderedDict[int, tuple[Any, Plan]] = OrderedDict()

    def for_request(self, request: ModelRequest[Any]) -> Plan:
        """The plan for `request`: the middleware's own unless the format was replaced."""
        override = request.response_format
        if override is None:
            return self._plan
        cached = self._overrides.get(id(override))
        if cached is None or cached[0] is not override:
            cached = (override, build_plan(override))
            self._overrides[id(override)] = cached
            if len(self._overrides) > self._size:
                self._overrides.popitem(last=False)
        return cached[1]


def progress_of(request: ModelRequest[Any]) -> tuple[Progress | None, bool]:
    """`progress_in` for a model request."""
    progress = cast("Progress | None", request.state.get(PROGRESS_KEY))
    return progress_in(progress, request.messages)


def progress_in(progress: Progress | None, messages: Sequence[Any]) -> tuple[Progress | None, bool]:
    """The run to continue, and whether this turn's answer is already in.

    A run goes on while nothing but tool results follows the last message it
    added. A finished run whose answer is followed only by tool results means
    the model called ordinary tools beside its answer: they have run, and the
    turn is over. Anything else after a run (a new question) starts a new run,
    so a run that failed never lends its count to the next turn.
    """
    if not progress:
        return None, False
    if progress["done"]:
        return None, _only_tool_results_after(messages, progress["answer_id"])
    last_id = progress.get("last_id")
    # (A run checkpointed before runs recorded their last message goes on.)
    if last_id is not None and not _only_tool_results_after(messages, last_id):
        return None, False
    return progress, False


def raise_deferred(progress: Progress | None, errors: ErrorCache) -> None:
    """Raise the failure an earlier step of this run put off, if there is one.

    Raises:
        StructxError: The failure, as it was raised; a generic
            `StructuredOutputFailure` with its wording when another process kept it.
    """
    key = progress.get("deferred") if progress else None
    if not key:
        return
    error = errors.take_deferred(key)
    if error is None:
        text = "; ".join(progress["errors"][-1:]) if progress else ""
        error = StructuredOutputFailure(f"The structured-output run failed: {text}")
    raise error


def may_defer(
    error: Exception, request: ModelRequest[Any], progress: Progress | None
) -> TypeGuard[StructxError]:
    """Whether a failed first step should clear an earlier turn's answer before raising.

    A node that raises writes nothing, so a turn that fails at its first model
    step would leave the previous turn's answer in the thread. Only our own
    failures are put off (a model's own exception stays with the retry middleware
    around us), and only when there is an answer to clear.
    """
    if progress is not None or not isinstance(error, StructxError):
        return False
    return any(request.state.get(key) is not None for key in ANSWER_KEYS)


def put_off(
    error: Exception,
    request: ModelRequest[Any],
    progress: Progress | None,
    errors: ErrorCache,
    one_call: bool,
) -> ExtendedModelResponse[Any]:
    """Raise `error`, or put it off for a step that first clears an earlier answer.

    Only a run with one attempt per model step (`one_call`) can put it off: the
    next model step, which raises it, comes through the graph.
    """
    if isinstance(error, StructxError):
        errors.forget(progress)  # the run is over; a model's own exception may be retried
    if not (one_call and may_defer(error, request, progress)):
        raise error
    return deferral(error, request, errors)


def deferral(
    error: StructxError, request: ModelRequest[Any], errors: ErrorCache
) -> ExtendedModelResponse[Any]:
    """The model step that clears the answer keys and sends the run back to raise `error`."""
    progress = new_progress()
    progress["retry"] = True
    progress["deferred"] = errors.defer(error)
    progress["errors"] = [f"{type(error).__name__}: {error}"]
    if request.messages:
        progress["last_id"] = request.messages[-1].id
    update = {PROGRESS_KEY: progress, JUMP_KEY: "model", **_shell.reset_structured_output(None)}
    return ExtendedModelResponse(
        model_response=ModelResponse(result=[], structured_response=None),
        command=Command(update=update),
    )


def _only_tool_results_after(messages: Sequence[Any], message_id: str | None) -> bool:
    """Whether the message `message_id` is followed by nothing but tool results."""
    if message_id is None:
        return False
    for message in reversed(messages):
        if message.id == message_id:
            return True
        if not isinstance(message, ToolMessage):
            return False
    return False


def already_answered(request: ModelRequest[Any]) -> ExtendedModelResponse[Any]:
    """The response of a model step whose turn was already answered."""
    value = request.state.get(RESPONSE_KEY)
    return ExtendedModelResponse(model_response=ModelResponse(result=[], structured_response=value))


def typed_state_schema(base: type[Any], plan: Plan) -> type[Any]:
    """A subclass of `base` whose private `structx_response_types` key names our types.

    LangGraph builds its checkpoint allowlist (under `LANGGRAPH_STRICT_MSGPACK`)
    from the types in the state schema. The key is never written; declaring it is
    what lets Pydantic models and dataclasses in `structured_response` (or inside a
    TypedDict answer) survive a checkpoint round trip with no configuration.
    """
    variants = plan.schemas.variants
    # TypedDicts too, for the models in their fields. LangGraph does not look inside a
    # generic class given its arguments (`Pair[Point]`): the class and each argument.
    sources = [v.source for v in variants if v.origin != "json_schema"]
    parts = (p for s in sources for p in (s, get_origin(s), *get_args(s)) if p is not None)
    classes = tuple(dict.fromkeys(parts))
    if not classes:
        return base
    annotation = NotRequired[Annotated[Union[classes], PrivateStateAttr]]  # noqa: UP007
    namespace = {"__annotations__": {TYPES_KEY: annotation}, "__module__": base.__module__}
    metaclass: Any = type(base)
    return cast("type[Any]", metaclass(base.__name__, (base,), namespace))


def extend(request: ModelRequest[Any], step: _engine.CallModel) -> ModelRequest[Any]:
    """The caller's request with this attempt's tools, settings and system text added."""
    spec = step.spec
    system = request.system_message
    if spec.system_suffix:
        system = _shell.with_system_text(system, spec.system_suffix)
    return request.override(
        messages=cast("list[AnyMessage]", _shell.with_history(request.messages, step)),
        tools=[*request.tools, *_as_tools(spec)],
        tool_choice=spec.tool_choice if spec.tool_choice is not None else request.tool_choice,
        model_settings={**request.model_settings, **spec.model_settings},
        system_message=system,
        response_format=None,
    )


def _never(**_: Any) -> str:
    raise RuntimeError("structured-output tools are answered by the middleware, never run")


def _as_tools(spec: CallSpec) -> tuple[BaseTool, ...]:
    # Specs are cached per plan, so their tools are built once per spec.
    found: tuple[BaseTool, ...] | None = spec.derived.get("tools")
    if found is None:
        found = spec.derived["tools"] = tuple(
            StructuredTool(
                name=tool["function"]["name"],
                description=tool["function"]["description"],
                args_schema=tool["function"]["parameters"],
                func=_never,
            )
            for tool in spec.tools
        )
    return found


def ai_message(response: ModelResponse[Any] | AIMessage) -> AIMessage:
    """The AI message of a model handler's response."""
    if isinstance(response, AIMessage):
        return response
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    raise TypeError("the model call returned no AI message")


def respond(result: _engine.RunResult, sink: streaming.EventSink) -> ExtendedModelResponse[Any]:
    """The model step's response: the run's messages, value and state keys.

    A step that wants another attempt says so in LangChain's `jump_to` key,
    which the edge right after the model step reads (the retry router says it
    again when other middleware's `after_model` hooks run in between).
    """
    update: dict[str, Any] = {PROGRESS_KEY: result.progress}
    if result.report is None:
        # Every model call writes these keys, so nothing from an earlier turn survives.
        update.update(_shell.reset_structured_output(None))
    else:
        # LangChain writes the answer itself, from the model response.
        update.update({KIND_KEY: result.variant, REPORT_KEY: result.report})
        sink.finish(result.value, result.report)
    if result.retry:
        update[JUMP_KEY] = "model"
    return ExtendedModelResponse(
        model_response=ModelResponse(result=result.messages, structured_response=result.value),
        command=Command(update=update),
    )


class AgentOptions(TypedDict, total=False):
    """The keyword arguments of `create_agent` besides `response_format`, for its overloads."""

    system_prompt: str | SystemMessage | None
    middleware: Sequence[AgentMiddleware[Any, Any]]
    state_schema: type[AgentState[Any]] | None
    context_schema: type[Any] | None
    checkpointer: Any
    store: Any
    interrupt_before: list[str] | None
    interrupt_after: list[str] | None
    debug: bool
    name: str | None
    cache: Any
    transformers: Sequence[Any] | None
