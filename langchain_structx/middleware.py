"""Structured output for LangChain agents: a middleware and a drop-in `create_agent`.

`StructuredOutputMiddleware` gives any `langchain.agents.create_agent` agent our
strategies; `create_agent` is LangChain's own with that middleware added for you.

Examples:
    >>> from pydantic import BaseModel
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_structx.strategies import ToolStrategy
    >>> from langchain_structx.testing import ScriptedChatModel
    >>> class Contact(BaseModel):
    ...     name: str
    >>> model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[
    ...     {"name": "Contact", "args": {"name": "Ada"}, "id": "c1"}])])
    >>> agent = create_agent(model, response_format=ToolStrategy(Contact))
    >>> agent.invoke({"messages": [("user", "Ada here")]})["structured_response"]
    Contact(name='Ada')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, Union, cast

from langchain.agents import create_agent as _langchain_create_agent
from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    OmitFromInput,
    PrivateStateAttr,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.runtime import Runtime
from langgraph.types import Command

from langchain_structx import _drive, _engine, streaming
from langchain_structx._capabilities import FallbackMemory
from langchain_structx._deprecated import moved
from langchain_structx._plan import CallSpec, Plan, build_plan
from langchain_structx.nodes import reset_structured_output
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY, StructuredReport

PROGRESS_KEY = "structx_progress"


class StructuredAgentState(AgentState[Any]):
    """Agent state with the keys our middleware writes.

    `structured_response` is LangChain's key; `structured_response_kind` names the
    variant it matched; `structured_output_report` says how it was obtained.
    """

    structured_response_kind: NotRequired[Annotated[str | None, OmitFromInput]]
    structured_output_report: NotRequired[Annotated[StructuredReport | None, OmitFromInput]]
    structx_progress: NotRequired[Annotated[_engine.Progress | None, PrivateStateAttr]]


class StructuredOutputMiddleware(AgentMiddleware[StructuredAgentState, Any]):
    """Adds reliable structured output to a LangChain agent.

    Args:
        response_format: One of our strategies, LangChain's `ToolStrategy`,
            `ProviderStrategy` or `AutoStrategy`, or a bare schema (auto).
        fallback_memory: Where `AutoStrategy` remembers the strategies a model
            rejected. By default each middleware has its own; pass one
            `FallbackMemory` to several middlewares to share what they learn.

    Raises:
        UserError: When the format cannot be used, or (when the model is
            called) a user tool is named like a structured-output variant.

    Examples:
        >>> from langchain.agents import create_agent as langchain_create_agent
        >>> from langchain_structx.strategies import PromptedStrategy
        >>> from langchain_structx.testing import ScriptedChatModel
        >>> model = ScriptedChatModel(responses=['{"city": "Oslo"}'])
        >>> schema = {"title": "City", "type": "object",
        ...           "properties": {"city": {"type": "string"}}, "required": ["city"]}
        >>> agent = langchain_create_agent(
        ...     model, middleware=[StructuredOutputMiddleware(PromptedStrategy(schema))])
        >>> agent.invoke({"messages": [("user", "Where?")]})["structured_response"]
        {'city': 'Oslo'}
    """

    state_schema = StructuredAgentState

    def __init__(
        self, response_format: Any, *, fallback_memory: FallbackMemory | None = None
    ) -> None:
        super().__init__()
        self.plan: Plan = build_plan(response_format)
        self.fallback_memory = fallback_memory if fallback_memory is not None else FallbackMemory()
        self.tools = []
        self.state_schema = typed_state_schema(StructuredAgentState, self.plan)
        self._overrides: dict[int, tuple[Any, Plan]] = {}

    def before_agent(self, state: StructuredAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Clear what an earlier turn left, so it never leaks into this one.

        Model calls overwrite these keys too; this step also covers a turn that
        fails before any answer, which leaves no writes of its own.
        """
        return {**reset_structured_output(state), PROGRESS_KEY: None}

    async def abefore_agent(
        self, state: StructuredAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any]:
        """Async form of `before_agent`."""
        return self.before_agent(state, runtime)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Run the attempt loop around the model call."""
        progress, answered = _progress_of(request)
        if answered:
            return _already_answered(request)
        plan = self._plan_for(request)
        sink = streaming.EventSink()

        def call(step: _engine.CallModel) -> AIMessage:
            return streaming.watched(
                sink, plan, step, lambda: _ai_message(handler(_extend(request, step)))
            )

        return _respond(_drive.drive(self._loop(plan, request, progress), call), sink)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async form of `wrap_model_call`."""
        progress, answered = _progress_of(request)
        if answered:
            return _already_answered(request)
        plan = self._plan_for(request)
        sink = streaming.EventSink()

        async def call(step: _engine.CallModel) -> AIMessage:
            async def once() -> AIMessage:
                return _ai_message(await handler(_extend(request, step)))

            return await streaming.awatched(sink, plan, step, once)

        loop = self._loop(plan, request, progress)
        response = _respond(await _drive.adrive(loop, call), sink)
        await sink.flush()
        return response

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Pass tool calls through unchanged.

        Defining this hook is what lets the structured-output tools reach the
        model as `BaseTool` objects, exactly as LangChain binds its own: LangChain
        checks middleware-added tools only when no middleware wraps tool calls.
        """
        return handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async form of `wrap_tool_call`."""
        return await handler(request)

    def _plan_for(self, request: ModelRequest[Any]) -> Plan:
        # An outer middleware may narrow or replace the response format for one
        # call (LangChain allows this through `request.override`); honour it.
        override = request.response_format
        if override is None:
            return self.plan
        cached = self._overrides.get(id(override))
        if cached is None or cached[0] is not override:
            cached = (override, build_plan(override))
            self._overrides[id(override)] = cached
        return cached[1]

    def _loop(
        self, plan: Plan, request: ModelRequest[Any], progress: _engine.Progress | None
    ) -> Any:
        return _engine.attempt_loop(
            plan,
            model=request.model,
            state=request.state,
            progress=progress,
            memory=self.fallback_memory,
            tools=request.tools,
        )


def _progress_of(request: ModelRequest[Any]) -> tuple[_engine.Progress | None, bool]:
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


def _already_answered(request: ModelRequest[Any]) -> ExtendedModelResponse[Any]:
    value = request.state.get(RESPONSE_KEY)
    return ExtendedModelResponse(model_response=ModelResponse(result=[], structured_response=value))


TYPES_KEY = "structx_response_types"


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


def _extend(request: ModelRequest[Any], step: _engine.CallModel) -> ModelRequest[Any]:
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


def _ai_message(response: ModelResponse[Any] | AIMessage) -> AIMessage:
    if isinstance(response, AIMessage):
        return response
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    raise TypeError("the model call returned no AI message")


def _respond(result: _engine.RunResult, sink: streaming.EventSink) -> ExtendedModelResponse[Any]:
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


def create_agent(
    model: Any,
    tools: Sequence[Any] | None = None,
    *,
    system_prompt: str | SystemMessage | None = None,
    middleware: Sequence[AgentMiddleware[Any, Any]] = (),
    response_format: Any = None,
    state_schema: type[AgentState[Any]] | None = None,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    name: str | None = None,
    cache: Any = None,
    transformers: Sequence[Any] | None = None,
) -> Any:
    """Create an agent like `langchain.agents.create_agent`, with reliable structured output.

    Takes exactly LangChain's arguments. `response_format` also accepts
    `ToolStrategy`, `ProviderStrategy`, `PromptedStrategy` and `AutoStrategy` from
    this package; a bare schema or Union means `AutoStrategy`. The final state has
    `structured_response`, `structured_response_kind` and `structured_output_report`.

    Args:
        model: A chat model or an `init_chat_model` string.
        tools: Tools the agent may call.
        system_prompt: System prompt for every model call.
        middleware: Further middleware; ours runs innermost, next to the model.
        response_format: The structured-output strategy or schema, or None.
        state_schema: Custom state schema.
        context_schema: Runtime context schema.
        checkpointer: Checkpointer for persistence.
        store: Cross-thread store.
        interrupt_before: Nodes to interrupt before.
        interrupt_after: Nodes to interrupt after.
        debug: Verbose graph logging.
        name: Name of the graph and of the AI messages.
        cache: Node cache.
        transformers: Stream transformers, as in LangChain.

    Returns:
        The compiled agent graph.

    Raises:
        UserError: When a tool is named like a structured-output variant.
    """
    stack = list(middleware)
    if response_format is not None:
        ours = StructuredOutputMiddleware(response_format)
        ours.plan.check_tools(list(tools or ()))
        stack.append(ours)
    extra: dict[str, Any] = {}
    if transformers is not None:
        extra["transformers"] = transformers
    return _langchain_create_agent(
        model,
        tools,
        system_prompt=system_prompt,
        middleware=stack,
        response_format=None,
        state_schema=state_schema,
        context_schema=context_schema,
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
        cache=cache,
        **extra,
    )


__all__ = (
    "StructuredAgentState",
    "StructuredOutputMiddleware",
    "create_agent",
)

_MOVED = dict.fromkeys(
    ("AutoStrategy", "PromptedStrategy", "ProviderStrategy", "ToolStrategy"),
    "langchain_structx.strategies",
)

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        return moved(__name__, name, _MOVED)
