"""One run of the LCEL face: its input, its labelled model calls and its result.

`runnables.StructuredOutputRunnable` is a thin shell over `LcelRun`: the shell
picks a driver (`_drive.drive`, `adrive`, `drive_stream` or `adrive_stream`)
and hands it one of the model callers below; the attempt loop itself is the
engine's. Every model call carries the attempt number and the strategy in its
run metadata and tags, so a trace tells a retry from a second request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from langchain.agents import structured_output as lc
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langchain_core.runnables.config import merge_configs

from langchain_structx._engine import loop as _engine
from langchain_structx._engine.chunks import Reply, joined
from langchain_structx._engine.drive import Done
from langchain_structx._engine.run import CallModel, RunResult, Step
from langchain_structx._engine.shell import labels, with_history, with_system
from langchain_structx._models.capabilities import FallbackMemory
from langchain_structx._request.plan import CallSpec, Plan
from langchain_structx.errors import (
    AttemptError,
    StructuredOutputRetryError,
    UserError,
)
from langchain_structx.report import REPORT_KEY, StructuredReport
from langchain_structx.strategies import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
)
from langchain_structx.streaming import PartialTracker, StructuredOutputEvent

Method: TypeAlias = Literal["function_calling", "json_schema", "json_mode"]
"""LangChain's names for how to ask: tool calling, native JSON schema, JSON mode."""

_STRATEGIES = (ToolStrategy, ProviderStrategy, PromptedStrategy, AutoStrategy)
_LANGCHAIN_STRATEGIES = (lc.ToolStrategy, lc.ProviderStrategy, lc.AutoStrategy)

REPORT_EVENT = "structured_output_report"
"""Name of the custom event that carries the report of a successful run."""


RETURNED_ERRORS = (AttemptError, StructuredOutputRetryError)
"""Failures that `include_raw=True` returns as `parsing_error` instead of raising.

They are the failures of the answer itself, the ones LangChain's parser would
raise; a rejected request or a broken `handle_errors` still raises.
"""


def strategy_for_method(schema_or_strategy: Any, method: Method | None, strict: bool | None) -> Any:
    """The strategy LangChain's `method` and `strict` mean for a schema.

    Raises:
        UserError: For an unknown method, `strict` where the method has none, or
            `method`/`strict` next to a strategy object (which says it already).

    Examples:
        >>> schema = {"title": "Tag", "type": "object"}
        >>> type(strategy_for_method(schema, "json_mode", None)).__name__
        'PromptedStrategy'
        >>> strategy_for_method(schema, "json_schema", True).strict
        True
    """
    if isinstance(schema_or_strategy, (*_STRATEGIES, *_LANGCHAIN_STRATEGIES)):
        if method is not None or strict is not None:
            raise UserError("Pass method and strict with a schema, not with a strategy object.")
        return schema_or_strategy
    if method is None:
        return AutoStrategy(schema_or_strategy, strict=strict)
    if method == "json_schema":
        return ProviderStrategy(schema_or_strategy, strict=strict)
    if method not in ("function_calling", "json_mode"):
        raise UserError(
            f"Unknown method {method!r}; use 'function_calling', 'json_schema' or 'json_mode'."
        )
    if strict:
        raise UserError(
            f"strict=True is not supported with method={method!r}; "
            "use method='json_schema' for strict schema adherence."
        )
    if method == "function_calling":
        return ToolStrategy(schema_or_strategy)
    return PromptedStrategy(schema_or_strategy, json_mode=True)


def to_messages(value: LanguageModelInput) -> list[BaseMessage]:
    """What a chat model accepts (text, messages, a prompt value) as messages.

    Raises:
        UserError: For any other input.

    Examples:
        >>> to_messages("hi")[0].type
        'human'
    """
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, Sequence):
        return convert_to_messages(value)
    raise UserError(
        f"Expected a str, a list of messages or a PromptValue, got {type(value).__name__}."
    )


_METHODS = {"tool": "function_calling", "provider": "json_schema", "prompted": "json_mode"}
"""LangChain's method name for each strategy, as tracing reports it."""


@dataclass(frozen=True, slots=True)
class Bound:
    """What `model.bind(...)` or `model.with_config(...)` added to the chat model under it.

    Attributes:
        kwargs: Call arguments (such as `stop`), sent with every model call.
        config: Run config, merged under each call's own.
    """

    kwargs: dict[str, Any] = field(default_factory=dict)
    config: RunnableConfig = field(default_factory=dict)  # type: ignore[assignment]


_OURS_TO_BIND = frozenset({"tools", "tool_choice", "functions", "function_call", "response_format"})
"""Call arguments the runnable sets itself, so a bound model may not carry them."""


def unbind(model: Any) -> tuple[BaseChatModel, Bound]:
    """The chat model under `model`, and what bindings around it add to each call.

    Raises:
        UserError: When `model` is no chat model (bound or not), or its bindings
            set what the runnable must set itself (tools, a response format).

    Examples:
        >>> from langchain_structx.testing import ScriptedChatModel
        >>> chat, bound = unbind(ScriptedChatModel(responses=[]).bind(stop=["END"]))
        >>> type(chat).__name__, bound.kwargs
        ('ScriptedChatModel', {'stop': ['END']})
    """
    inner, bound = peel(model)
    if not isinstance(inner, BaseChatModel):
        raise UserError(
            "model must be a chat model, one wrapped by bind() or with_config(), or a "
            f"configurable model from init_chat_model(); got {type(inner).__name__}"
        )
    return inner, bound


def peel(model: Any) -> tuple[Any, Bound]:
    """What `model` wraps under its bindings (unchecked), and what they add to each call.

    Raises:
        UserError: When the bindings set what the runnable must set itself.
    """
    kwargs: dict[str, Any] = {}
    config: RunnableConfig = {}
    while isinstance(model, RunnableBinding):
        kwargs = {**model.kwargs, **kwargs}
        config = merge_configs(model.config, config)
        model = model.bound
    refuse_ours(kwargs)
    return model, Bound(kwargs, config)


def refuse_ours(kwargs: dict[str, Any]) -> None:
    """Refuse call arguments the runnable sets itself (tools, a response format).

    Raises:
        UserError: Naming them.
    """
    taken = sorted(_OURS_TO_BIND & set(kwargs))
    if taken:
        raise UserError(
            f"The model is bound with {', '.join(taken)}, which with_structured_output "
            "sets itself; pass the model without them."
        )


def _bound(
    model: BaseChatModel,
    plan: Plan,
    spec: CallSpec,
    extra: Bound,
    per_run: dict[int, Runnable[Any, Any]] | None,
) -> Runnable[Any, Any]:
    # A model fixed for the runnable's life is bound once per spec, on the spec; a
    # model built for each run (a configurable one) once per spec and run.
    found = spec.derived.get("lcel") if per_run is None else per_run.get(id(spec))
    if found is None:
        # LangChain turns this into run metadata, where LangSmith shows the schema.
        traced = {"kwargs": {"method": _METHODS[spec.strategy]}, "schema": plan.output_schema()}
        settings = {**extra.kwargs, **spec.model_settings, "ls_structured_output_format": traced}
        if spec.tools:
            found = model.bind_tools(list(spec.tools), tool_choice=spec.tool_choice, **settings)
        else:
            found = model.bind(**settings)
        if per_run is None:
            spec.derived["lcel"] = found
        else:
            per_run[id(spec)] = found
    return found


def _prompt(messages: Sequence[BaseMessage], step: CallModel) -> list[BaseMessage]:
    return with_system(with_history(messages, step), step.spec.system_suffix or "")


def _last_ai(messages: Sequence[BaseMessage]) -> AIMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class LcelRun:
    """One invocation of the runnable.

    Attributes:
        model: The chat model.
        plan: The response format's plan.
        memory: Where `AutoStrategy` remembers rejected strategies.
        messages: The caller's conversation.
        config: The run's child config; model calls are made under it.
        include_raw: Whether results are `{"raw", "parsed", "parsing_error"}` dicts.
        bound: What a binding around the caller's model adds to each call.
        per_run: For a model built for this run alone, its bindings by spec;
            None when the model is the runnable's own, bound once per spec.
    """

    model: BaseChatModel
    plan: Plan
    memory: FallbackMemory
    messages: list[BaseMessage]
    config: RunnableConfig
    include_raw: bool
    bound: Bound = field(default_factory=Bound)
    per_run: dict[int, Runnable[Any, Any]] | None = None

    def loop(self) -> Generator[Step, Any, RunResult]:
        """The attempt loop of this run.

        The runnable has no tools of its own: a call to any other tool is a
        failed attempt, answered with an error, within the same retry budget.
        """
        return _engine.attempt_loop(
            self.plan, model=self.model, state={}, memory=self.memory, runs_tools=False
        )

    def _request(
        self, step: CallModel
    ) -> tuple[Runnable[Any, Any], list[BaseMessage], RunnableConfig]:
        config = merge_configs(self.bound.config, self.config, labels(self.plan, step))
        bound = _bound(self.model, self.plan, step.spec, self.bound, self.per_run)
        return bound, _prompt(self.messages, step), config

    def call(self, step: CallModel) -> AIMessage:
        """One model call, awaited whole."""
        bound, prompt, config = self._request(step)
        return bound.invoke(prompt, config)  # type: ignore[no-any-return]

    async def acall(self, step: CallModel) -> AIMessage:
        """Async form of `call`."""
        bound, prompt, config = self._request(step)
        return await bound.ainvoke(prompt, config)  # type: ignore[no-any-return]

    def _streamed(
        self, step: CallModel
    ) -> tuple[
        Runnable[Any, Any],
        list[BaseMessage],
        RunnableConfig,
        list[StructuredOutputEvent],
        PartialTracker,
        Reply,
    ]:
        """What a streamed call starts from: its request, a partial tracker, a bounded reply."""
        bound, prompt, config = self._request(step)
        events: list[StructuredOutputEvent] = []
        tracker = PartialTracker(self.plan, step.spec, step.attempt, events.append)
        return bound, prompt, config, events, tracker, Reply(self.plan.limits.max_reply_chars)

    def stream(self, step: CallModel) -> Iterator[Any]:
        """One streamed model call: partial outputs as they grow, then `Done(reply)`.

        A call its provider must not get streamed (Workers AI's structured calls,
        see `_quirks`) is made whole: `stream()` would send `stream: true` anyway.
        """
        if step.spec.model_settings.get("stream") is False:
            yield Done(self.call(step))
            return
        bound, prompt, config, events, tracker, reply = self._streamed(step)
        chunks = bound.stream(prompt, config)
        try:
            for chunk in chunks:
                if not isinstance(chunk, AIMessageChunk):
                    continue
                if not reply.add(chunk):
                    # Past the bound the stream is left: its connection closes below.
                    yield Done(reply.cut())
                    return
                yield from self._partials(chunk, reply, tracker, events)
        finally:
            getattr(chunks, "close", lambda: None)()
        yield Done(joined(reply.chunks))

    async def astream(self, step: CallModel) -> AsyncIterator[Any]:
        """Async form of `stream`."""
        if step.spec.model_settings.get("stream") is False:
            yield Done(await self.acall(step))
            return
        bound, prompt, config, events, tracker, reply = self._streamed(step)
        chunks = bound.astream(prompt, config)
        try:
            async for chunk in chunks:
                if not isinstance(chunk, AIMessageChunk):
                    continue
                if not reply.add(chunk):
                    yield Done(reply.cut())
                    return
                for item in self._partials(chunk, reply, tracker, events):
                    yield item
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        yield Done(joined(reply.chunks))

    def _partials(
        self,
        chunk: AIMessageChunk,
        reply: Reply,
        tracker: PartialTracker,
        events: list[StructuredOutputEvent],
    ) -> list[Any]:
        tracker.feed(chunk)
        values = [event["value"] for event in events]
        events.clear()
        if not self.include_raw:
            # LangChain adds up a stream's chunks with `+`: partial lists or strings
            # would be joined end to end (and `True + True` is 2), where dicts give
            # way to the next. So only object roots show partials.
            return [value for value in values if isinstance(value, dict)]
        if not values:
            return values
        # Joining the reply so far costs its whole size (more, with many tool
        # calls), so it is joined only as it grows by half, with the newest value.
        if not reply.due():
            return []
        return [{"raw": joined(reply.chunks), "parsed": values[-1], "parsing_error": None}]

    def output(self, result: RunResult) -> tuple[Any, StructuredReport]:
        """The runnable's output for a finished run, and the run's report."""
        report = result.report
        # A run whose shell runs no tools ends with an answer or raises.
        assert report is not None
        if not self.include_raw:
            return result.value, report
        raw = _last_ai(result.messages) or AIMessage(content="")
        metadata = {**raw.response_metadata, REPORT_KEY: report}
        raw = raw.model_copy(update={"response_metadata": metadata})
        return {"raw": raw, "parsed": result.value, "parsing_error": None}, report

    def failure(self, error: BaseException) -> dict[str, Any]:
        """LangChain's `include_raw` answer for a failed run."""
        raw = getattr(error, "ai_message", None) or AIMessage(content="")
        return {"raw": raw, "parsed": None, "parsing_error": error}
