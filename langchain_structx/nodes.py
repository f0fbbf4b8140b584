"""Structured output as parts of any LangGraph `StateGraph`.

`structured_output_node` builds a node that reads the conversation from the state,
runs the same engine as our agents (strategies, retries, `handle_errors`,
fallbacks, streaming) and writes `structured_response`,
`structured_response_kind` and `structured_output_report`. `route_by_kind` is a
conditional-edge router from the variant's name to a node.

Examples:
    >>> from typing import Any
    >>> from langchain_core.messages import AIMessage
    >>> from langgraph.graph import START, MessagesState, StateGraph
    >>> from langchain_structx.strategies import PromptedStrategy
    >>> from langchain_structx.testing import ScriptedChatModel
    >>> class State(MessagesState):
    ...     structured_response: Any
    ...     structured_response_kind: str | None
    >>> model = ScriptedChatModel(responses=['{"city": "Oslo"}'])
    >>> schema = {"title": "City", "type": "object", "properties": {"city": {"type": "string"}}}
    >>> graph = StateGraph(State)
    >>> _ = graph.add_node("extract", structured_output_node(model, PromptedStrategy(schema)))
    >>> _ = graph.add_edge(START, "extract")
    >>> graph.compile().invoke({"messages": [("user", "Oslo!")]})["structured_response"]
    {'city': 'Oslo'}
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Literal, overload

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.types import Command
from typing_extensions import TypedDict, TypeForm, TypeVar, Unpack

from langchain_structx._engine import loop as _engine
from langchain_structx._engine import shell as _shell
from langchain_structx._engine.run import CallModel, RunResult
from langchain_structx._engine.shell import reset_structured_output
from langchain_structx._faces import durable as _durable
from langchain_structx._faces.kind_routing import KindRouter, check_routes, route_by_kind
from langchain_structx._models.capabilities import FallbackMemory
from langchain_structx._request.plan import CallSpec, Plan, build_plan
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY
from langchain_structx.strategies import AnyStrategy
from langchain_structx.streaming import EventSink

ResponseT = TypeVar("ResponseT", default=Any)


class StructuredOutputNode(Generic[ResponseT]):
    """A graph node that turns the conversation into a validated object.

    Build it with `structured_output_node`. It is callable with the state (sync)
    and has `ainvoke`-friendly async support through `acall`; `as_runnable()`
    gives a `Runnable` with both.

    Attributes:
        plan: The response format's plan.
        variant_names: Names of the variants the answer may take.
        routes: Variant name to node name, when the node routes by itself.
        fallback_memory: Where `AutoStrategy` remembers rejected strategies.
    """

    def __init__(
        self,
        model: BaseChatModel,
        plan: Plan,
        *,
        messages_key: str,
        system_prompt: str | None,
        routes: Mapping[str, str] | None,
        record_messages: bool,
        fallback_memory: FallbackMemory | None = None,
    ) -> None:
        self.model = model
        self.plan = plan
        self.messages_key = messages_key
        self.system_prompt = system_prompt
        self.routes = dict(routes) if routes is not None else None
        self.record_messages = record_messages
        self.fallback_memory = fallback_memory if fallback_memory is not None else FallbackMemory()
        if self.routes:
            self.__call__ = _announcing(self, self.routes.values())  # type: ignore[method-assign]

    @property
    def variant_names(self) -> tuple[str, ...]:
        """Names of the variants the answer may take."""
        return self.plan.schemas.names

    def __call__(self, state: Any) -> dict[str, Any] | Command[Any]:
        """Run the node synchronously."""
        messages = self._messages(state)

        def call(step: CallModel) -> AIMessage:
            bound, prompt = self._request(step, messages)
            return _durable.invoke(bound, prompt)

        return _shell.run(self.plan, self._loop(state), call, self._update)

    async def acall(self, state: Any) -> dict[str, Any] | Command[Any]:
        """Run the node asynchronously."""
        messages = self._messages(state)

        async def call(step: CallModel) -> AIMessage:
            bound, prompt = self._request(step, messages)
            return await _durable.ainvoke(bound, prompt)

        return await _shell.arun(self.plan, self._loop(state), call, self._update)

    def as_runnable(self) -> Runnable[Any, Any]:
        """This node as a `Runnable` with sync and async paths.

        With `routes`, LangGraph learns the destinations from it as from the node.
        """
        if not self.routes:
            return RunnableLambda(self.__call__, afunc=self.acall, name="structured_output")
        runnable = _RoutedRunnable(self.__call__, afunc=self.acall, name="structured_output")
        runnable.__call__ = _announcing(runnable, self.routes.values())  # type: ignore[method-assign]
        return runnable

    def _loop(self, state: Any) -> Any:
        mapping = state if isinstance(state, Mapping) else _as_mapping(state)
        return _engine.attempt_loop(
            self.plan,
            model=self.model,
            state=mapping,
            memory=self.fallback_memory,
            runs_tools=False,
        )

    def _messages(self, state: Any) -> list[BaseMessage]:
        if isinstance(state, Mapping):
            found = state.get(self.messages_key)
        else:
            found = getattr(state, self.messages_key, None)
        if found is None:
            raise KeyError(f"the state has no {self.messages_key!r} key to read messages from")
        return list(found)

    def _request(
        self, step: CallModel, messages: Sequence[BaseMessage]
    ) -> tuple[Runnable[Any, Any], list[BaseMessage]]:
        return _bind(self.model, step.spec), self._prompt(step, messages)

    def _prompt(self, step: CallModel, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        parts = [p for p in (self.system_prompt, step.spec.system_suffix) if p]
        return _shell.with_system(_shell.with_history(messages, step), "\n\n".join(parts))

    def _update(self, result: RunResult, sink: EventSink) -> dict[str, Any] | Command[Any]:
        # A node runs no tools: its run ends with an answer or raises.
        assert result.report is not None
        sink.finish(result.value, result.report)
        update: dict[str, Any] = {
            RESPONSE_KEY: result.value,
            KIND_KEY: result.variant,
            REPORT_KEY: result.report,
        }
        if self.record_messages:
            update[self.messages_key] = result.messages
        if self.routes is None:
            return update
        return Command(update=update, goto=self.routes[str(result.variant)])


def _announcing(node: Any, targets: Any) -> Any:
    """`node.__call__`, annotated to return `Command[Literal[<targets>]]`.

    LangGraph reads that annotation to learn where a node may go, and then
    refuses at compile time a route to a node the graph does not have, instead
    of dropping the `goto` silently at run time.
    """
    names = tuple(dict.fromkeys(targets))

    def call(self: Any, state: Any) -> Any:
        return type(self).__call__(self, state)

    call.__annotations__ = {"state": Any, "return": Command[Literal[names]]}  # type: ignore[valid-type]
    call.__doc__ = StructuredOutputNode.__call__.__doc__
    return types.MethodType(call, node)


class _RoutedRunnable(RunnableLambda[Any, Any]):
    """`as_runnable()` of a node with routes.

    LangGraph reads a node's destinations from the annotations of its
    `__call__` (and its input schema from the signature of the class's), so
    this runnable has one, set per instance by `_announcing`.
    """

    def __call__(self, state: Any) -> Any:
        """Run the node synchronously."""
        return self.invoke(state)


def _bind(model: BaseChatModel, spec: CallSpec) -> Runnable[Any, Any]:
    if spec.tools:
        return model.bind_tools(
            list(spec.tools), tool_choice=spec.tool_choice, **dict(spec.model_settings)
        )
    if spec.model_settings:
        return model.bind(**dict(spec.model_settings))
    return model


def _as_mapping(state: Any) -> Mapping[str, Any]:
    """A state object's fields as they are (messages stay messages), for error handlers."""
    fields = getattr(type(state), "model_fields", None)
    if isinstance(fields, Mapping):  # Pydantic: not dumped, which would turn objects to dicts
        return {**{name: getattr(state, name) for name in fields}, **(state.model_extra or {})}
    if dataclasses.is_dataclass(state):  # slotted ones have no __dict__
        return {field.name: getattr(state, field.name) for field in dataclasses.fields(state)}
    return dict(vars(state)) if hasattr(state, "__dict__") else {}


class _NodeOptions(TypedDict, total=False):
    messages_key: str
    system_prompt: str | None
    routes: Mapping[str, str] | None
    record_messages: bool
    fallback_memory: FallbackMemory | None


@overload
def structured_output_node(
    model: BaseChatModel | str,
    response_format: AnyStrategy[ResponseT],
    **options: Unpack[_NodeOptions],
) -> StructuredOutputNode[ResponseT]: ...
@overload
def structured_output_node(
    model: BaseChatModel | str,
    response_format: TypeForm[ResponseT],
    **options: Unpack[_NodeOptions],
) -> StructuredOutputNode[ResponseT]: ...
@overload
def structured_output_node(
    model: BaseChatModel | str,
    response_format: dict[str, Any] | Sequence[Any],
    **options: Unpack[_NodeOptions],
) -> StructuredOutputNode[Any]: ...


def structured_output_node(
    model: BaseChatModel | str,
    response_format: Any,
    *,
    messages_key: str = "messages",
    system_prompt: str | None = None,
    routes: Mapping[str, str] | None = None,
    record_messages: bool = True,
    fallback_memory: FallbackMemory | None = None,
) -> StructuredOutputNode[Any]:
    """Build a graph node that produces a validated structured response.

    Args:
        model: A chat model or an `init_chat_model` string such as
            `"openai:gpt-4.1-mini"`.
        response_format: A strategy or a bare schema (meaning `AutoStrategy`).
        messages_key: State key holding the conversation.
        system_prompt: Optional system prompt placed before the conversation.
        routes: Variant name to node name; the node then returns
            `Command(goto=...)`. Every variant needs a route.
        record_messages: Whether the model's messages (retries included) are
            appended to `messages_key`.
        fallback_memory: Where `AutoStrategy` remembers the strategies the
            model rejected; by default the node has its own.

    Returns:
        The node; add it with `graph.add_node(name, node)`. With `routes`, the
        graph learns the node's destinations from it, so compiling a graph
        without one of the routed-to nodes fails.

    Raises:
        RouteError: When `routes` misses a variant, names an unknown one, or
            routes to something that is not a node name.
    """
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    plan = build_plan(response_format)
    if routes is not None:
        check_routes(plan.schemas.names, routes)
    return StructuredOutputNode(
        model,
        plan,
        messages_key=messages_key,
        system_prompt=system_prompt,
        routes=routes,
        record_messages=record_messages,
        fallback_memory=fallback_memory,
    )


__all__ = (
    "KindRouter",
    "StructuredOutputNode",
    "check_routes",
    "reset_structured_output",
    "route_by_kind",
    "structured_output_node",
)
