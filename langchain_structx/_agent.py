"""The agent face's plumbing: reading its state, extending its requests, writing back.

`middleware.py` holds the public middleware classes; this module holds what they
do to LangChain's `ModelRequest` and `ModelResponse`, and the cache of error
objects a run keeps between its model steps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Annotated, Any, NotRequired, Union, cast

from langchain.agents.middleware import hook_config
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
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import TypedDict

from langchain_structx import _engine, streaming
from langchain_structx._plan import CallSpec, Plan
from langchain_structx.errors import AttemptError
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY

PROGRESS_KEY = "structx_progress"
"""Private state key: the bookkeeping of a run that spans model steps."""

TYPES_KEY = "structx_response_types"
"""Private state key, never written: declares our types for checkpoint allowlists."""

KEPT_RUNS = 1024
"""Runs whose error objects one middleware keeps between model steps."""


class ErrorCache:
    """The error objects of unfinished runs, by run id, most recent last.

    The checkpoint keeps each error's text; the objects themselves (with their
    AI message and issues) are kept here, so that `handle_errors` and the final
    `StructuredOutputRetryError` see them in full when the run goes on in the
    same process. Bounded: the oldest runs are forgotten first.
    """

    def __init__(self, size: int = KEPT_RUNS) -> None:
        self._size = size
        self._runs: OrderedDict[str, tuple[AttemptError, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, progress: _engine.Progress | None) -> tuple[AttemptError, ...]:
        """The errors kept for the run `progress` belongs to."""
        run_id = progress.get("run_id") if progress else None
        with self._lock:
            return self._runs.get(run_id, ()) if run_id else ()

    def keep(self, result: _engine.RunResult) -> None:
        """Keep the errors of an unfinished run; forget a finished one."""
        run_id = result.progress.get("run_id") if result.progress else None
        if not run_id:
            return
        with self._lock:
            if result.report is not None or not result.errors:
                self._runs.pop(run_id, None)
                return
            self._runs[run_id] = result.errors
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)


class StructuredOutputRetryRouter(AgentMiddleware[Any, Any]):
    """Sends the agent back to its model step while a structured run wants a retry.

    Made by `StructuredOutputMiddleware.retry_router()`; goes first in the
    middleware list, so its `after_model` hook is the last to run.
    """

    def __init__(self, state_schema: type[Any]) -> None:
        super().__init__()
        self.state_schema = state_schema
        self.tools = []

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Jump back to the model when the last attempt failed and may be retried."""
        progress = cast("_engine.Progress | None", state.get(PROGRESS_KEY))
        if progress and progress.get("retry"):
            return {"jump_to": "model"}
        return None

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async form of `after_model`."""
        return self.after_model(state, runtime)


def progress_of(request: ModelRequest[Any]) -> tuple[_engine.Progress | None, bool]:
    """The run to continue, and whether this turn's answer is already in.

    A finished run whose answer is the last AI message, followed only by tool
    results, means the model called ordinary tools beside its answer: they have
    run, and the turn is over. A finished run followed by anything else is an
    earlier turn, so a new run starts.
    """
    progress = cast("_engine.Progress | None", request.state.get(PROGRESS_KEY))
    if not progress or not progress["done"]:
        return progress, False
    return None, _only_tool_results_after(request.messages, progress["answer_id"])


def _only_tool_results_after(messages: Sequence[Any], answer_id: str | None) -> bool:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return answer_id is not None and message.id == answer_id
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
    what lets Pydantic models and dataclasses in `structured_response` survive a
    checkpoint round trip with no configuration.
    """
    classes = tuple(v.source for v in plan.schemas.variants if v.kind in ("pydantic", "dataclass"))
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
        base = system.text if system is not None else ""
        system = SystemMessage(content=f"{base}\n\n{spec.system_suffix}".strip())
    return request.override(
        messages=cast("list[AnyMessage]", _engine.with_history(request.messages, step)),
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
    """The model step's response: the run's messages, value and state keys."""
    # Every model call writes these keys, so nothing from an earlier turn survives.
    update: dict[str, Any] = {PROGRESS_KEY: result.progress, KIND_KEY: None, REPORT_KEY: None}
    if result.report is None:
        update[RESPONSE_KEY] = None
    else:
        update.update({KIND_KEY: result.variant, REPORT_KEY: result.report})
        sink.finish(result.value, result.report)
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
