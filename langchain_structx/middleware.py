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
from typing import TYPE_CHECKING, Annotated, Any, Generic, NotRequired, TypeAlias, overload

from langchain.agents import create_agent as _langchain_create_agent
from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    InputAgentState,
    ModelRequest,
    ModelResponse,
    OmitFromInput,
    OutputAgentState,
    PrivateStateAttr,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import TypeForm, TypeVar, Unpack

from langchain_structx._engine import loop as _engine
from langchain_structx._engine import shell as _shell
from langchain_structx._engine.progress import Progress
from langchain_structx._engine.run import CallModel, RunResult
from langchain_structx._faces import agent as _agent
from langchain_structx._faces import agent_errors as _agent_errors
from langchain_structx._faces import retry_router as _router
from langchain_structx._faces.agent import PROGRESS_KEY
from langchain_structx._faces.deprecated import moved
from langchain_structx._faces.retry_router import StructuredOutputRetryRouter
from langchain_structx._models.capabilities import FallbackMemory
from langchain_structx._request.plan import Plan, build_plan
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import AnyStrategy

ResponseT = TypeVar("ResponseT", default=Any)


class StructuredAgentState(AgentState[Any]):
    """Agent state with the keys our middleware writes.

    `structured_response` is LangChain's key; `structured_response_kind` names the
    variant it matched; `structured_output_report` says how it was obtained.
    """

    structured_response_kind: NotRequired[Annotated[str | None, OmitFromInput]]
    structured_output_report: NotRequired[Annotated[StructuredReport | None, OmitFromInput]]
    structx_progress: NotRequired[Annotated[Progress | None, PrivateStateAttr]]


class StructuredOutputMiddleware(AgentMiddleware[StructuredAgentState, Any], Generic[ResponseT]):
    """Adds reliable structured output to a LangChain agent.

    Each model call of the agent makes one attempt. With its `retry_router()`
    first in the middleware list, a failed attempt sends the agent back to its
    model step, so every retry is a model call that the other middleware
    (call limits, summarisation, human review) and the checkpointer see, as in
    LangChain. Without the router, retries happen inside the model call.
    Our `create_agent` sets all this up for you, in fewer graph steps (it needs
    the router only beside other middleware with model hooks).

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
        >>> structured = StructuredOutputMiddleware(PromptedStrategy(schema))
        >>> agent = langchain_create_agent(
        ...     model, middleware=[structured.retry_router(), structured])
        >>> agent.invoke({"messages": [("user", "Where?")]})["structured_response"]
        {'city': 'Oslo'}
    """

    state_schema = StructuredAgentState
    _one_call = False  # one attempt per model call: set by `retry_router()`

    if TYPE_CHECKING:

        @overload
        def __init__(
            self,
            response_format: AnyStrategy[ResponseT],
            *,
            fallback_memory: FallbackMemory | None = None,
        ) -> None: ...
        @overload
        def __init__(
            self,
            response_format: TypeForm[ResponseT],
            *,
            fallback_memory: FallbackMemory | None = None,
        ) -> None: ...
        @overload
        def __init__(
            self: StructuredOutputMiddleware[Any],
            response_format: dict[str, Any] | Sequence[Any],
            *,
            fallback_memory: FallbackMemory | None = None,
        ) -> None: ...

    def __init__(
        self, response_format: Any, *, fallback_memory: FallbackMemory | None = None
    ) -> None:
        super().__init__()
        self.plan: Plan = build_plan(response_format)
        self.fallback_memory = fallback_memory if fallback_memory is not None else FallbackMemory()
        self.tools = []
        self.state_schema = _agent.typed_state_schema(StructuredAgentState, self.plan)
        self._plans = _agent.RequestPlans(self.plan)
        self._errors = _agent_errors.ErrorCache()

    def retry_router(self) -> StructuredOutputRetryRouter:
        """The companion that sends each retry back through the agent's model step.

        Put it first in the agent's middleware list (this middleware goes last):
        its `after_model` hook runs after every other one, so each retry passes
        every other hook and is checkpointed; its `before_model` hook runs before
        every other one, to end a turn already answered and clear a stale answer.

        Returns:
            The router; from now on this middleware makes one attempt per call.
        """
        self._one_call = True
        return StructuredOutputRetryRouter(self.state_schema)

    def before_agent(self, state: StructuredAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Clear what an earlier turn left, so it never leaks into this one.

        Model calls overwrite these keys too; this step covers a turn that fails
        (or whose failure another middleware answers) before our step writes.
        """
        return {**_shell.reset_structured_output(state), PROGRESS_KEY: None}

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
        """Make the next attempt (or, without the router, every attempt) of the run."""
        progress, answered = _agent.progress_of(request)
        if answered:
            return _agent.already_answered(request)
        progress = _agent_errors.raise_deferred(progress, self._errors)
        plan = self._plans.for_request(request)

        def call(step: CallModel) -> AIMessage:
            return _agent.ai_message(handler(_agent.extend(request, step)))

        try:
            return _shell.run(plan, self._loop(plan, request, progress), call, self._respond)
        except Exception as error:  # noqa: BLE001 - re-raised unless put off
            return _agent_errors.put_off(error, request, progress, self._errors, self._one_call)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async form of `wrap_model_call`."""
        progress, answered = _agent.progress_of(request)
        if answered:
            return _agent.already_answered(request)
        progress = _agent_errors.raise_deferred(progress, self._errors)
        plan = self._plans.for_request(request)

        async def call(step: CallModel) -> AIMessage:
            return _agent.ai_message(await handler(_agent.extend(request, step)))

        try:
            return await _shell.arun(plan, self._loop(plan, request, progress), call, self._respond)
        except Exception as error:  # noqa: BLE001 - re-raised unless put off
            return _agent_errors.put_off(error, request, progress, self._errors, self._one_call)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Pass tool calls through unchanged.

        LangChain builds a tool node only beside tools or this hook; a retry's step
        back to the model needs that graph, also in an agent with no tools.
        """
        return handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async form of `wrap_tool_call`."""
        return await handler(request)

    def _loop(self, plan: Plan, request: ModelRequest[Any], progress: Progress | None) -> Any:
        return _engine.attempt_loop(
            plan,
            model=request.model,
            state=request.state,
            progress=progress,
            memory=self.fallback_memory,
            tools=request.tools,
            one_call=self._one_call,
            earlier=self._errors.get(progress) if progress else (),
        )

    def _respond(self, result: RunResult, sink: Any) -> ExtendedModelResponse[Any]:
        self._errors.keep(result)
        return _agent.respond(result, sink)


class _LoopedMiddleware(StructuredOutputMiddleware[ResponseT]):
    """Our middleware as our `create_agent` adds it: one attempt per model step.

    A failed attempt asks for the next through `jump_to`. Its `before_agent` step
    clears the answer keys where no router does, as another middleware that wraps
    the model call may answer in our place (`ModelRetryMiddleware` does so).
    """

    _one_call = True

    @property
    def name(self) -> str:  # noqa: D102 - the graph's nodes show the public class's name
        return StructuredOutputMiddleware.__name__


class _OneStepMiddleware(_LoopedMiddleware[ResponseT]):
    """Where nothing else wraps the model call, or the router writes the keys: no `before_agent`."""

    before_agent = AgentMiddleware.before_agent  # type: ignore[assignment]
    abefore_agent = AgentMiddleware.abefore_agent  # type: ignore[assignment]


Agent: TypeAlias = (
    "CompiledStateGraph[AgentState[ResponseT], Any, InputAgentState, OutputAgentState[ResponseT]]"
)
"""The compiled agent graph, typed by its structured response."""


@overload
def create_agent(
    model: Any,
    tools: Sequence[Any] | None = None,
    *,
    response_format: AnyStrategy[ResponseT],
    **options: Unpack[_agent.AgentOptions],
) -> Agent[ResponseT]: ...
@overload
def create_agent(
    model: Any,
    tools: Sequence[Any] | None = None,
    *,
    response_format: TypeForm[ResponseT],
    **options: Unpack[_agent.AgentOptions],
) -> Agent[ResponseT]: ...
@overload
def create_agent(
    model: Any,
    tools: Sequence[Any] | None = None,
    *,
    response_format: dict[str, Any] | Sequence[Any] | None = None,
    **options: Unpack[_agent.AgentOptions],
) -> Agent[Any]: ...


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
) -> Agent[Any]:
    """Create an agent like `langchain.agents.create_agent`, with reliable structured output.

    Takes exactly LangChain's arguments. `response_format` also accepts
    `ToolStrategy`, `ProviderStrategy`, `PromptedStrategy` and `AutoStrategy` from
    this package; a bare schema or Union means `AutoStrategy`. The final state has
    `structured_response`, `structured_response_kind` and `structured_output_report`.

    Args:
        model: A chat model or an `init_chat_model` string.
        tools: Tools the agent may call.
        system_prompt: System prompt for every model call.
        middleware: Further middleware. Ours wraps the model call innermost;
            beside any with model hooks, our retry router goes first, so each
            retry passes every hook and none acts on a turn already answered.
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
        routed = any(_router.has_model_hooks(m) for m in middleware)
        wrapped = not routed and any(_router.wraps_model_calls(m) for m in middleware)
        ours = (_LoopedMiddleware if wrapped else _OneStepMiddleware)(response_format)
        ours.plan.check_tools(list(tools or ()))
        stack = [*stack, ours]
        if routed:
            # Their hooks run between our step and LangChain's edge, past which our
            # `jump_to` does not last; the router also ends answered turns first.
            stack.insert(0, ours.retry_router())
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
    "StructuredOutputRetryRouter",
    "create_agent",
)

_MOVED = dict.fromkeys(
    ("AutoStrategy", "PromptedStrategy", "ProviderStrategy", "ToolStrategy"),
    "langchain_structx.strategies",
)

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        return moved(__name__, name, _MOVED)
