"""The agent face's plumbing: reading its state, extending its requests, writing back.

`middleware.py` holds the public middleware classes; this module holds what they
do to LangChain's `ModelRequest` and `ModelResponse`. The errors a run keeps
between its model steps are `_agent_errors`' part.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired, Union, cast, get_args, get_origin

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command
from typing_extensions import TypedDict

from langchain_structx import streaming
from langchain_structx._dialects.traversal import find_cycle
from langchain_structx._engine import shell as _shell
from langchain_structx._engine.progress import Progress
from langchain_structx._engine.run import CallModel, RunResult
from langchain_structx._request.plan import CallSpec, Plan, build_plan
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY

JUMP_KEY = "jump_to"
"""LangChain's state key through which a step names the node to go to next."""

PROGRESS_KEY = "structx_progress"
"""Private state key: the bookkeeping of a run that spans model steps."""

TYPES_FIELD = "response_types"
"""Field of the progress key's type, never written: declares our types for checkpoint allowlists."""

ANSWER_KEYS = (RESPONSE_KEY, KIND_KEY, REPORT_KEY)
"""The state keys that hold a turn's answer."""

JSON_MODE = {"type": "json_object"}
"""The prompted route's JSON mode setting, a `response_format` with no schema."""

KEPT_OVERRIDES = 64
"""Replaced response formats whose plans one middleware keeps."""


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
    """`progress_in` for a model request.

    The state's messages are read, not the request's: an outer middleware may
    add a message to one call's request (a reminder), which is no new question.
    """
    progress = request.state.get(PROGRESS_KEY)
    if not progress:  # a first model step: no run to continue
        return None, False
    messages = request.state.get("messages", request.messages)
    return progress_in(cast("Progress", progress), messages)


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
        if progress.get("turn_over"):
            return None, False
        return None, _only_tool_results_after(messages, progress["answer_id"])
    last_id = progress.get("last_id")
    # (A run checkpointed before runs recorded their last message goes on.)
    if last_id is not None and not _only_tool_results_after(messages, last_id):
        return None, False
    return progress, False


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
    """The response of a model step whose turn was already answered: the turn ends."""
    value = request.state.get(RESPONSE_KEY)
    return ExtendedModelResponse(
        model_response=ModelResponse(result=[], structured_response=value),
        command=Command(update=turn_ended(request.state)),
    )


def turn_ended(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state update that ends the turn of a finished run.

    A later model step with no new message (an agent invoked again with
    `{"messages": []}`) then starts a new run and calls the model, as LangChain's
    agent does, instead of finding this turn's answer again.
    """
    return {PROGRESS_KEY: {**state[PROGRESS_KEY], "turn_over": True}}


def typed_state_schema(base: type[Any], plan: Plan) -> type[Any]:
    """A subclass of `base` whose private progress key is typed with our types too.

    LangGraph builds its checkpoint allowlist (under `LANGGRAPH_STRICT_MSGPACK`)
    from the types in the state schema. The progress key's type gets a field that
    is never written, typed with the answer's classes: that is what lets Pydantic
    models and dataclasses in `structured_response` (or inside a TypedDict answer)
    survive a checkpoint round trip with no configuration, at the cost of no
    state channel (LangGraph works on every channel at every step, written or not).
    """
    variants = plan.schemas.variants
    # TypedDicts too, for the models in their fields. LangGraph does not look inside a
    # generic class given its arguments (`Pair[Point]`): the class and each argument.
    sources = [v.source for v in variants if v.origin != "json_schema"]
    parts = (p for s in sources for p in (s, get_origin(s), *get_args(s)) if p is not None)
    classes = tuple(dict.fromkeys(parts))
    if not classes:
        return base
    progress = _subclass(Progress, {TYPES_FIELD: NotRequired[Union[classes]]})  # noqa: UP007
    annotation = NotRequired[Annotated[Union[progress, None], PrivateStateAttr]]  # noqa: UP007
    return _subclass(base, {PROGRESS_KEY: annotation})


def _subclass(base: type[Any], annotations: dict[str, Any]) -> type[Any]:
    """A TypedDict subclass of `base`, of the same name, with `annotations` added or replaced."""
    namespace = {"__annotations__": annotations, "__module__": base.__module__}
    metaclass: Any = type(base)
    return cast("type[Any]", metaclass(base.__name__, (base,), namespace))


def extend(request: ModelRequest[Any], step: CallModel) -> ModelRequest[Any]:
    """The caller's request with this attempt's tools, settings and system text added."""
    spec = step.spec
    # Only what the attempt changes: this runs around every model call.
    changes: dict[str, Any] = {"tools": [*request.tools, *_bound(spec)], "response_format": None}
    if step.history or step.hidden:
        changes["messages"] = _shell.with_history(request.messages, step)
    if spec.tool_choice is not None:
        changes["tool_choice"] = spec.tool_choice
    settings = spec.model_settings
    if request.tools and settings.get("response_format") == JSON_MODE:
        # Beside the caller's tools LangChain binds the settings with `bind_tools`,
        # which reads a `response_format` as a schema to enforce: JSON mode (which
        # has none) would fail in the client (ChatOpenAI raises ValueError). The
        # prompt asks alone; a provider route's schema is still sent.
        settings = {k: v for k, v in settings.items() if k != "response_format"}
    if settings:
        changes["model_settings"] = {**request.model_settings, **settings}
    if spec.system_suffix:
        changes["system_message"] = _shell.with_system_text(
            request.system_message, spec.system_suffix
        )
    return request.override(**changes)


def _bound(spec: CallSpec) -> tuple[dict[str, Any], ...]:
    """Our tools as LangChain binds a tool, converted once per spec (specs are cached).

    Every client's `bind_tools` takes an OpenAI-format dict as it is, where a
    `BaseTool` would be converted again on every model call.
    """
    found: tuple[dict[str, Any], ...] | None = spec.derived.get("tools")
    if found is None:
        found = spec.derived["tools"] = tuple(_as_bound(tool) for tool in spec.tools)
    return found


def _as_bound(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    parameters = function["parameters"]
    if find_cycle(parameters.get("$defs") or {}) is not None:
        # LangChain's conversion inlines the definitions and cuts a loop after two
        # levels: a recursive schema goes whole, as the runnable sends it.
        return tool
    as_tool = StructuredTool(
        name=function["name"],
        description=function["description"],
        args_schema=parameters,
        func=_never,
    )
    return convert_to_openai_tool(as_tool)


def _never(**_: Any) -> str:
    raise RuntimeError("structured-output tools are answered by the middleware, never run")


def ai_message(response: ModelResponse[Any] | AIMessage) -> AIMessage:
    """The AI message of a model handler's response."""
    # The handler's ModelResponse is tested first: a test against a message class
    # is one of Pydantic's slower ABC checks, and this runs after every model call.
    if not isinstance(response, ModelResponse) and isinstance(response, AIMessage):
        return response
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    raise TypeError("the model call returned no AI message")


def respond(result: RunResult, sink: streaming.EventSink) -> ExtendedModelResponse[Any]:
    """The model step's response: the run's messages, value and state keys.

    A step that wants another attempt says so in LangChain's `jump_to` key,
    which the edge right after the model step reads (the retry router says it
    again when other middleware's `after_model` hooks run in between).
    """
    if result.report is None:
        # Every model call writes these keys, so nothing from an earlier turn survives.
        update = {PROGRESS_KEY: result.progress, **_shell.reset_structured_output(None)}
    else:
        # LangChain writes the answer itself, from the model response.
        update = {
            PROGRESS_KEY: result.progress,
            KIND_KEY: result.variant,
            REPORT_KEY: result.report,
        }
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
