"""Structured output as an LCEL `Runnable`: a drop-in for `model.with_structured_output`.

`with_structured_output(model, Schema)` returns a `Runnable` that takes what a chat
model takes (a string, a list of messages, a prompt value) and returns the
validated object. It runs the same engine as our agents and graph nodes: the
same strategies, repairs, retries with feedback, `handle_errors`, fallbacks
and errors. It composes like any runnable (`prompt | structured`,
`.with_config`, `.with_retry`, `.with_fallbacks`, `batch`, `astream_events`).

Examples:
    >>> from pydantic import BaseModel
    >>> from langchain_structx.testing import ScriptedChatModel, tool_call
    >>> from langchain_core.messages import AIMessage
    >>> class City(BaseModel):
    ...     name: str
    >>> model = ScriptedChatModel(responses=[
    ...     AIMessage("", tool_calls=[tool_call("City", {"name": "Oslo"})])])
    >>> with_structured_output(model, City).invoke("Where is the Nobel peace prize given?")
    City(name='Oslo')
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any, Generic, Literal, TypeAlias, overload

from langchain_core.callbacks.manager import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from typing_extensions import TypedDict, TypeForm, TypeVar, Unpack

from langchain_structx._engine import drive as _drive
from langchain_structx._faces.configurable import accept, check, fallback_chain, resolve
from langchain_structx._faces.lcel import (
    REPORT_EVENT,
    RETURNED_ERRORS,
    Bound,
    LcelRun,
    Method,
    strategy_for_method,
    to_messages,
)
from langchain_structx._models.capabilities import FallbackMemory
from langchain_structx._request.plan import Plan, build_plan
from langchain_structx.errors import UserError
from langchain_structx.strategies import (
    AnyStrategy,
)

T = TypeVar("T")
OutputT = TypeVar("OutputT", default=Any)


class RawOutput(TypedDict, Generic[T]):
    """What `include_raw=True` returns, as LangChain returns it.

    Attributes:
        raw: The model message that produced the answer (or the last one, on
            failure). On success its `response_metadata["structured_output_report"]`
            holds the run's `StructuredReport`.
        parsed: The validated object, or None when the run failed.
        parsing_error: The failure, or None on success.
    """

    raw: BaseMessage
    parsed: T | None
    parsing_error: BaseException | None


class StructuredOutputRunnable(Runnable[LanguageModelInput, OutputT]):
    """A `Runnable` from chat-model input to a validated structured object.

    Build it with `with_structured_output`. `stream` and `astream` yield the
    growing partial value of each attempt (plain JSON values, with
    `include_raw` wrapped in the raw dict) and then, last, the validated object.

    Attributes:
        model: The chat model, or LangChain's configurable model, whose chat
            model is built for each invocation from the invocation's config.
        plan: The response format's plan.
        include_raw: Whether outputs are `RawOutput` dicts.
        fallback_memory: Where `AutoStrategy` remembers rejected strategies.
        bound: What a binding around the caller's model adds to each call.
    """

    def __init__(
        self,
        model: BaseChatModel | Runnable[LanguageModelInput, Any],
        plan: Plan,
        *,
        include_raw: bool,
        fallback_memory: FallbackMemory | None = None,
        bound: Bound | None = None,
    ) -> None:
        self.model = model
        # None for a configurable model, whose chat model each invocation builds.
        self._chat = model if isinstance(model, BaseChatModel) else None
        if self._chat is None:
            check(model)
        self.bound = bound or Bound()
        self.plan = plan
        self.include_raw = include_raw
        self.fallback_memory = fallback_memory if fallback_memory is not None else FallbackMemory()
        self.name = "StructuredOutput"

    @property
    def InputType(self) -> Any:  # noqa: N802 - LangChain's name
        """What the runnable accepts: the input of a chat model."""
        return LanguageModelInput

    @property
    def OutputType(self) -> Any:  # noqa: N802 - LangChain's name
        """The validated object's type, or `dict` with `include_raw`."""
        variants = self.plan.schemas.variants
        if self.include_raw or len(variants) != 1 or not isinstance(variants[0].source, type):
            return dict if self.include_raw else Any
        return variants[0].source

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> OutputT:
        """Ask the model until the answer validates or retries run out.

        Raises:
            StructuredOutputFailure: A subclass saying why the run failed
                (returned as `parsing_error` instead with `include_raw=True`).
        """
        _no_kwargs(kwargs)
        return self._call_with_config(self._invoke, input, config)

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> OutputT:
        """Async form of `invoke`."""
        _no_kwargs(kwargs)
        return await self._acall_with_config(self._ainvoke, input, config)

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[OutputT]:
        """Stream partial values while the model streams, then the validated object."""
        _no_kwargs(kwargs)
        yield from self._transform_stream_with_config(iter([input]), self._stream, config)

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[OutputT]:
        """Async form of `stream`."""
        _no_kwargs(kwargs)
        stream = self._atransform_stream_with_config(_once(input), self._astream, config)
        async for item in stream:
            yield item

    def _run(self, input: LanguageModelInput, config: RunnableConfig) -> LcelRun:
        messages = to_messages(input)
        chat, bound = self._chat, self.bound
        per_run: dict[int, Runnable[Any, Any]] | None = None
        if chat is None:
            chat, bound = resolve(self.model, bound, config)
            per_run = {}
        return LcelRun(
            model=chat,
            plan=self.plan,
            memory=self.fallback_memory,
            messages=messages,
            config=config,
            include_raw=self.include_raw,
            bound=bound,
            per_run=per_run,
        )

    def _invoke(
        self,
        input: LanguageModelInput,
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Any:
        run = self._run(input, config)
        try:
            output, report = run.output(_drive.drive(run.loop(), run.call))
        except RETURNED_ERRORS as error:
            if not self.include_raw:
                raise
            return run.failure(error)
        dispatch_custom_event(REPORT_EVENT, report, config=config)
        return output

    async def _ainvoke(
        self,
        input: LanguageModelInput,
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Any:
        run = self._run(input, config)
        try:
            output, report = run.output(await _drive.adrive(run.loop(), run.acall))
        except RETURNED_ERRORS as error:
            if not self.include_raw:
                raise
            return run.failure(error)
        await adispatch_custom_event(REPORT_EVENT, report, config=config)
        return output

    def _stream(
        self,
        inputs: Iterator[LanguageModelInput],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Iterator[Any]:
        run = self._run(_last(inputs), config)
        try:
            for item in _drive.drive_stream(run.loop(), run.stream):
                if not isinstance(item, _drive.Done):
                    yield item
                    continue
                output, report = run.output(item.value)
        except RETURNED_ERRORS as error:
            if not self.include_raw:
                raise
            yield run.failure(error)
            return
        dispatch_custom_event(REPORT_EVENT, report, config=config)
        yield output

    async def _astream(
        self,
        inputs: AsyncIterator[LanguageModelInput],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[Any]:
        run = self._run([item async for item in inputs][-1], config)
        try:
            async for item in _drive.adrive_stream(run.loop(), run.astream):
                if not isinstance(item, _drive.Done):
                    yield item
                    continue
                output, report = run.output(item.value)
        except RETURNED_ERRORS as error:
            if not self.include_raw:
                raise
            yield run.failure(error)
            return
        await adispatch_custom_event(REPORT_EVENT, report, config=config)
        yield output


def _no_kwargs(kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise UserError(
            f"Unsupported arguments {sorted(kwargs)}; bind them to the model "
            "(with_structured_output(model.bind(...), ...)) instead."
        )


def _last(inputs: Iterator[LanguageModelInput]) -> LanguageModelInput:
    return list(inputs)[-1]


async def _once(value: LanguageModelInput) -> AsyncIterator[LanguageModelInput]:
    yield value


ChatModelInput: TypeAlias = "BaseChatModel | Runnable[LanguageModelInput, Any] | str"
"""A chat model (configurable or not, wrapped by `bind(...)`/`with_config(...)` or not),
or an `init_chat_model` string."""


class _Options(TypedDict, total=False):
    method: Method | None
    strict: bool | None
    fallback_memory: FallbackMemory | None


# A strategy object and a bare type must be separate overloads: a union of the two
# would not read `Cat | Dog` as a type.
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: AnyStrategy[T],
    *,
    include_raw: Literal[False] = False,
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, T]: ...
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: AnyStrategy[T],
    *,
    include_raw: Literal[True],
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, RawOutput[T]]: ...
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: TypeForm[T],
    *,
    include_raw: Literal[False] = False,
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, T]: ...
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: TypeForm[T],
    *,
    include_raw: Literal[True],
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, RawOutput[T]]: ...
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: Any,
    *,
    include_raw: Literal[True],
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, RawOutput[Any]]: ...
@overload
def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: Any,
    *,
    include_raw: bool = False,
    **options: Unpack[_Options],
) -> Runnable[LanguageModelInput, Any]: ...


def with_structured_output(
    model: ChatModelInput,
    schema_or_strategy: Any,
    *,
    include_raw: bool = False,
    method: Method | None = None,
    strict: bool | None = None,
    fallback_memory: FallbackMemory | None = None,
) -> Runnable[LanguageModelInput, Any]:
    """A runnable that returns validated structured output from `model`.

    Args:
        model: A chat model, one wrapped by `bind(...)` or `with_config(...)`
            (its call arguments, such as `stop`, go with every call), an
            `init_chat_model` string such as `"openai:gpt-4.1-mini"`, a
            configurable model from `init_chat_model(..., configurable_fields=...)`,
            whose chat model each invocation builds from its own config, or
            models chained by `with_fallbacks(...)`, each then asked in turn.
        schema_or_strategy: A schema (Pydantic model, dataclass, TypedDict, JSON
            schema dict, or a union of them) or one of our strategies.
        include_raw: Return LangChain's `{"raw", "parsed", "parsing_error"}` dict;
            a failed answer is then returned as `parsing_error`, not raised.
        method: LangChain's way of asking, for a schema: `"function_calling"`
            (`ToolStrategy`), `"json_schema"` (`ProviderStrategy`) or
            `"json_mode"` (`PromptedStrategy(json_mode=True)`); None picks with
            `AutoStrategy`.
        strict: Strict schema adherence for `"json_schema"` and auto.
        fallback_memory: Where `AutoStrategy` remembers strategies the model
            rejected; by default the runnable has its own.

    Returns:
        The runnable. Each model call it makes carries `structx_attempt`,
        `structx_strategy` (and, for a single schema, `structx_variant`) in its
        run metadata and `structx:attempt:<n>` / `structx:strategy:<name>` tags.
        A successful run sends its `StructuredReport` as the custom event
        `structured_output_report`.

    Raises:
        UserError: When the schema, the strategy or the options cannot be used.
    """
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    options: _Options = {"method": method, "strict": strict, "fallback_memory": fallback_memory}
    build = functools.partial(with_structured_output, include_raw=include_raw, **options)
    chained = fallback_chain(model, lambda one: build(one, schema_or_strategy))
    if chained is not None:
        return chained
    chat, bound = accept(model)
    plan = build_plan(strategy_for_method(schema_or_strategy, method, strict))
    return StructuredOutputRunnable(
        chat, plan, include_raw=include_raw, fallback_memory=fallback_memory, bound=bound
    )


__all__ = (
    "Method",
    "RawOutput",
    "StructuredOutputRunnable",
    "with_structured_output",
)
