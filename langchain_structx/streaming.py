"""Partial structured objects while the model streams.

While a structured-output call streams, each growth of the answer becomes an
event on LangGraph's custom stream (`stream_mode="custom"`) and, in
`astream_events`, an `on_custom_event` named `structured_output`. Every event is
a plain dict (`StructuredOutputEvent`):

```python
{"type": "structured_output", "phase": "partial", "kind": "Contact",
 "value": {"name": "Ada Lov"}, "strategy": "tool", "attempt": 1}
```

- `phase` is `"partial"` while streaming and `"final"` once, for the validated
  object; the final `value` is the same object as `structured_response`.
- `kind` is the variant's name once it is known (a tool name, or the envelope's
  `kind` for unions), else None.
- Within one attempt, partial values only grow: keys and list items are added,
  strings get longer, nothing is taken away. A retry starts a new `attempt`.

The cost stays linear in the size of the answer: the text is re-read with
pydantic-core's partial JSON reader only when it has grown by half since the
last read (and at least `MIN_STEP` characters), so the total work is a small
multiple of one full parse however many chunks arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, Literal, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler

try:  # the handler `astream_events` attaches; private, so any streaming one otherwise
    from langchain_core.tracers.event_stream import (
        _AstreamEventsCallbackHandler as _EVENTS_HANDLER,
    )
except ImportError:  # pragma: no cover - another langchain-core
    _EVENTS_HANDLER = _StreamingCallbackHandler  # type: ignore[assignment,misc]
from langgraph.config import get_stream_writer
from typing_extensions import TypedDict

from langchain_structx._dialects.codecs import PENDING
from langchain_structx._parsing.partial_json import MIN_STEP, Buffer, partial_value
from langchain_structx._request.plan import ENVELOPE_DATA, ENVELOPE_KIND, CallSpec, Plan
from langchain_structx.errors import OutputValidationError
from langchain_structx.report import StructuredReport
from langchain_structx.strategies import behaviour

EVENT_NAME: Final = "structured_output"
"""Name of the custom event in `astream_events`, and `type` of every event."""


class StructuredOutputEvent(TypedDict):
    """One partial or final structured-output event."""

    type: Literal["structured_output"]
    phase: Literal["partial", "final"]
    kind: str | None
    value: Any
    strategy: str
    attempt: int


Emit = Callable[[StructuredOutputEvent], None]


class PartialTracker:
    """Turns the chunks of one model call into partial-object events.

    Args:
        plan: The response format's plan.
        spec: What this call asks for: its strategy, and how a value sent in
            another shape (a strict dialect, a wrapped root) comes back.
        attempt: The attempt number of this call.
        emit: Where events go.
    """

    def __init__(self, plan: Plan, spec: CallSpec, attempt: int, emit: Emit) -> None:
        self._plan = plan
        self._strategy = spec.strategy
        self._in_tool_calls = behaviour(spec.strategy).answers_in_tool_call
        self._restore = spec.restore
        self._tool_restore = spec.tool_restore
        self._attempt = attempt
        self._emit = emit
        self._buffers: dict[int, Buffer] = {}
        self._names: dict[int, str] = {}
        self._ids: dict[int, str] = {}
        self._mixed: set[int] = set()
        self._tool_names = plan.tool_names

    def feed(self, chunk: AIMessageChunk) -> None:
        """Take one streamed chunk."""
        if self._in_tool_calls:
            self._feed_tool_chunks(chunk)
        elif isinstance(chunk.content, str) and chunk.content:
            self._grow(-1, chunk.content, None)
        elif chunk.content:
            self._grow(-1, chunk.text, None)

    def _feed_tool_chunks(self, chunk: AIMessageChunk) -> None:
        for part in chunk.tool_call_chunks:
            index = part.get("index") or 0
            if self._another_call(index, part.get("name"), part.get("id")):
                # langchain-core merges chunks by index alone, so a second call on
                # the same index, or a new name, makes one garbled call: stop showing it.
                self._mixed.add(index)
            name = self._names.get(index)
            if index in self._mixed or name not in self._tool_names or not part.get("args"):
                continue
            # Only the first structured call is shown: a second one in the same
            # reply fails the attempt, and its values are no growth of the first.
            if self._buffers and index not in self._buffers:
                continue
            self._grow(index, str(part["args"]), name)

    def _another_call(self, index: int, name: Any, call_id: Any) -> bool:
        """Record a call's header; True when it names another call than `index` had."""
        changed = False
        for seen, new in ((self._names, name), (self._ids, call_id)):
            if not new:
                continue
            changed = changed or (index in seen and seen[index] != str(new))
            seen.setdefault(index, str(new))
        return changed

    def _grow(self, key: int, text: str, kind: str | None) -> None:
        buffer = self._buffers.get(key)
        if buffer is None:
            buffer = self._buffers[key] = Buffer(self._plan.limits)
        if not text or not buffer.add(text):
            return
        value = buffer.read()
        if value is None or value == buffer.last:
            return
        buffer.last = value
        restorer = self._restore if kind is None else self._tool_restore.get(kind)
        if restorer is not None:
            try:
                value = restorer.restore_partial(value)
            except OutputValidationError:
                return  # too deep to show; the answer's validation will say so
            if value is None or value is PENDING or value == buffer.shown:
                return
            buffer.shown = value
        if kind is None and self._plan.schemas.is_union:
            kind, value = self._unwrap(value)
            if value is None:
                return  # no data yet: nothing of the answer to show
        elif kind is None:
            kind = self._plan.schemas.variants[0].name
        self._emit(_event("partial", kind, value, self._strategy, self._attempt))

    def _unwrap(self, value: Any) -> tuple[str | None, Any]:
        if not isinstance(value, dict):
            return None, value
        kind = value.get(ENVELOPE_KIND)
        # The last key's string may still be growing ("Cat" of "CatLarge"): the kind
        # is known once another key follows it.
        closed = bool(value) and list(value)[-1] != ENVELOPE_KIND
        known = kind if closed and kind in self._plan.schemas.names else None
        return known, value.get(ENVELOPE_DATA)


def _event(
    phase: Literal["partial", "final"], kind: str | None, value: Any, strategy: str, attempt: int
) -> StructuredOutputEvent:
    return {
        "type": EVENT_NAME,
        "phase": phase,
        "kind": kind,
        "value": value,
        "strategy": strategy,
        "attempt": attempt,
    }


def final_event(kind: str, value: Any, strategy: str, attempt: int) -> StructuredOutputEvent:
    """The event that carries the validated object."""
    return _event("final", kind, value, strategy, attempt)


class _Observer(BaseCallbackHandler):
    """Receives streamed tokens of the model call it is attached to."""

    run_inline = True

    def __init__(self, tracker: PartialTracker) -> None:
        self._tracker = tracker

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Feed the chunk of a chat model to the tracker."""
        if isinstance(chunk, ChatGenerationChunk) and isinstance(chunk.message, AIMessageChunk):
            self._tracker.feed(chunk.message)


class _StreamingObserver(_Observer):
    """An observer that also makes the model stream (LangChain checks for these hooks)."""

    def tap_output_iter(self, run_id: UUID, output: Iterator[Any]) -> Iterator[Any]:
        return output

    def tap_output_aiter(self, run_id: UUID, output: Any) -> Any:
        return output


@contextlib.contextmanager
def observe(tracker: PartialTracker, *, force_streaming: bool) -> Iterator[None]:
    """Attach a token observer to model calls made inside this block.

    The observer is added to the callbacks of the current runnable context, which
    is where a model call made without an explicit config takes its callbacks.
    """
    observer = _StreamingObserver(tracker) if force_streaming else _Observer(tracker)
    config = dict(var_child_runnable_config.get() or {})
    callbacks = config.get("callbacks")
    if callbacks is None or isinstance(callbacks, list):
        config["callbacks"] = [*(callbacks or []), observer]
    else:
        manager = cast(BaseCallbackManager, callbacks).copy()
        manager.add_handler(observer, inherit=True)
        config["callbacks"] = manager
    token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def custom_stream_writer() -> Callable[[Any], None] | None:
    """LangGraph's stream writer when the caller streams with mode "custom", else None."""
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):
        return None
    # LangGraph hands out a do-nothing writer when "custom" is not being streamed;
    # its body is empty, and forcing the model to stream for it would be waste.
    code = getattr(writer, "__code__", None)
    if code is None or not code.co_names:
        return None
    return writer


def open_sink() -> EventSink:
    """The sink for one run of a face: a shared silent one when nobody observes the run.

    This runs around every model call of an agent, so the common case (a graph
    run nobody watches) is decided before any sink is built.
    """
    config: RunnableConfig = var_child_runnable_config.get() or {}
    callbacks = config.get("callbacks")
    writer = custom_stream_writer()
    if writer is None and isinstance(callbacks, BaseCallbackManager) and not callbacks.handlers:
        return _UNOBSERVED
    return EventSink(config, writer)


class EventSink:
    """Sends events to the custom stream and, in async runs, to `astream_events`.

    Args:
        config: The runnable config of the run whose events it sends.
        writer: LangGraph's custom stream writer, if the run streams that mode.
    """

    def __init__(self, config: RunnableConfig, writer: Callable[[Any], None] | None) -> None:
        self.writer = writer
        callbacks = config.get("callbacks")
        handlers = getattr(callbacks, "handlers", None)
        # astream_events attaches its handler; without one nobody listens. (LangGraph's
        # "messages" stream has a streaming handler too, which takes no events.)
        streams_events = handlers and any(isinstance(h, _EVENTS_HANDLER) for h in handlers)
        self._config = config if streams_events else None
        self._pending: list[asyncio.Task[Any]] = []
        # A graph run nobody observes has a callback manager with no handlers,
        # and its children inherit none (a tracer switched on for the run would
        # already be among them).
        self.observed = (
            self.writer is not None
            or bool(streams_events)
            or not (isinstance(callbacks, BaseCallbackManager) and not handlers)
        )
        """Whether anything of the run's model calls is seen: events, traces or
        LangGraph's message stream. When nothing is, labelling the calls or
        watching their streams would only add work to each of them."""
        self.active = self.writer is not None or self._config is not None
        """Whether any event has a consumer at all."""

    @property
    def wants_streaming(self) -> bool:
        """Whether someone consumes partial objects, so the model should stream."""
        return self.writer is not None

    def __call__(self, event: StructuredOutputEvent) -> None:
        """Send one event to every consumer."""
        if self.writer is not None:
            self.writer(event)
        self._dispatch(event)

    def _dispatch(self, event: StructuredOutputEvent) -> None:
        if self._config is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # A sync step of an async run (LangGraph runs a sync node on a worker
            # thread): LangChain hands the event to the run's loop itself.
            from langchain_core.callbacks.manager import dispatch_custom_event

            dispatch_custom_event(EVENT_NAME, event, config=self._config)
            return
        from langchain_core.callbacks.manager import adispatch_custom_event

        # Tasks start in creation order, so events keep their order.
        self._pending.append(
            loop.create_task(adispatch_custom_event(EVENT_NAME, event, config=self._config))
        )

    def finish(self, value: Any, report: StructuredReport) -> None:
        """Send the final event for a validated answer, if anyone listens."""
        if self.active:
            self(final_event(report["variant"], value, report["strategy"], report["attempts"]))

    async def flush(self) -> None:
        """Wait until every dispatched event has been delivered."""
        pending, self._pending = self._pending, []
        for task in pending:
            with contextlib.suppress(Exception):
                await task


def watched(sink: EventSink, plan: Plan, step: Any, call: Callable[[], AIMessage]) -> AIMessage:
    """Make one model call, turning its stream into partial events when anyone listens."""
    if not sink.active:
        return call()
    tracker = PartialTracker(plan, step.spec, step.attempt, sink)
    with observe(tracker, force_streaming=sink.wants_streaming):
        return call()


async def awatched(
    sink: EventSink, plan: Plan, step: Any, call: Callable[[], Awaitable[AIMessage]]
) -> AIMessage:
    """Async form of `watched`."""
    if not sink.active:
        return await call()
    tracker = PartialTracker(plan, step.spec, step.attempt, sink)
    with observe(tracker, force_streaming=sink.wants_streaming):
        message = await call()
    await sink.flush()
    return message


_UNOBSERVED = EventSink({"callbacks": BaseCallbackManager([])}, None)
"""The sink of every run nobody observes: it sends nothing, so one serves them all."""

__all__ = (
    "EVENT_NAME",
    "MIN_STEP",
    "StructuredOutputEvent",
    "partial_value",
)
