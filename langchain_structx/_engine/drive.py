"""The sync and async drivers of the attempt loop.

`_engine.attempt_loop` is a generator that yields steps; these drivers perform
them: call the model, call the user's error handler (awaiting it if needed),
and send the results back. The async driver reads a large reply on a worker
thread, so the event loop keeps serving other requests meanwhile.

`drive_stream` and `adrive_stream` do the same for a model call that streams:
they pass on whatever the call yields (partial values) and end with `Done`.
`drive` and `adrive` are the same loops with a model call that streams nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage

from langchain_structx._engine.feedback import Invoke
from langchain_structx._engine.run import CallModel, RunResult, Step
from langchain_structx._models.capabilities import finished_reply

ModelCaller: TypeAlias = Callable[[CallModel], AIMessage]
AsyncModelCaller: TypeAlias = Callable[[CallModel], Awaitable[AIMessage]]


@dataclass(frozen=True, slots=True)
class Done:
    """The last item of a stream: the reply of a streamed call, or the run's result."""

    value: Any


ModelStreamer: TypeAlias = Callable[[CallModel], Iterator[Any]]
"""Streams one model call: any items to pass on, then `Done(reply)`."""
AsyncModelStreamer: TypeAlias = Callable[[CallModel], AsyncIterator[Any]]


def drive(loop: Generator[Step, Any, RunResult], call_model: ModelCaller) -> RunResult:
    """Run the loop synchronously.

    `drive_stream` with nothing to stream, without its generator: this runs
    around every model call of an agent.
    """
    send: Any = None
    error: BaseException | None = None
    while True:
        done, step = _advance(loop, send, error)
        if done:
            return step  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = call_model(step) if isinstance(step, CallModel) else _invoke_sync(step)
        except Exception as exc:
            send, error = _failed(step, exc)


async def adrive(loop: Generator[Step, Any, RunResult], call_model: AsyncModelCaller) -> RunResult:
    """Run the loop asynchronously.

    A large reply is read (parsed, repaired, validated) on a worker thread, so
    one big answer does not stall every other request on the event loop.
    """

    async def once(step: CallModel) -> AsyncIterator[Any]:
        yield Done(await call_model(step))

    items = [item async for item in adrive_stream(loop, once)]
    return items[-1].value  # type: ignore[no-any-return]


def _failed(step: Step, error: Exception) -> tuple[Any, Exception | None]:
    """What to send into the loop for a failed step: a reply, or the error.

    A client exception that carries the provider's finished reply (cut off,
    filtered) is that reply: the loop judges it like any other answer.
    """
    if isinstance(step, CallModel):
        reply = finished_reply(error)
        if reply is not None:
            return reply, None
    return None, _thrown(step, error)


def drive_stream(
    loop: Generator[Step, Any, RunResult], stream_model: ModelStreamer
) -> Iterator[Any]:
    """Run the loop synchronously, passing on what each model call streams.

    Yields:
        The items `stream_model` yields, then `Done(result)`.
    """
    send: Any = None
    error: BaseException | None = None
    while True:
        done, step = _advance(loop, send, error)
        if done:
            yield Done(step)
            return
        send, error = None, None
        try:
            if isinstance(step, CallModel):
                for item in stream_model(step):
                    if isinstance(item, Done):
                        send = item.value
                    else:
                        yield item
            else:
                send = _invoke_sync(step)
        except Exception as exc:
            send, error = _failed(step, exc)


async def adrive_stream(
    loop: Generator[Step, Any, RunResult], stream_model: AsyncModelStreamer
) -> AsyncIterator[Any]:
    """Async form of `drive_stream`; a large reply is read on a worker thread."""
    send: Any = None
    error: BaseException | None = None
    offload = False
    while True:
        if offload:
            done, step = await asyncio.to_thread(_advance, loop, send, error)
        else:
            done, step = _advance(loop, send, error)
        if done:
            yield Done(step)
            return
        send, error, offload = None, None, False
        try:
            if isinstance(step, CallModel):
                async for item in stream_model(step):
                    if isinstance(item, Done):
                        send = item.value
                    else:
                        yield item
                offload = _size(send, step.offload_chars) > (step.offload_chars or 0)
            else:
                send = step.fn(*step.args)
                if inspect.isawaitable(send):
                    send = await send
        except Exception as exc:
            send, error = _failed(step, exc)


def _thrown(step: Step, error: Exception) -> Exception:
    """The exception to throw into the loop for a failed step.

    A StopIteration from the model itself is raised as it is: thrown into the
    loop it would turn into a RuntimeError. One from a `handle_errors` callable
    goes in, where it becomes a typed `ErrorHandlerError`.
    """
    if isinstance(error, StopIteration) and isinstance(step, CallModel):
        raise error
    return error


def _advance(
    loop: Generator[Step, Any, RunResult], send: Any, error: BaseException | None
) -> tuple[bool, Any]:
    """One move of the loop: `(True, result)` when it finished, else `(False, step)`.

    Finishing is returned, not raised: a StopIteration cannot cross a thread.
    """
    try:
        step = loop.throw(error) if error is not None else loop.send(send)
    except StopIteration as stop:
        return True, stop.value
    return False, step


def _size(message: Any, cap: int | None) -> int:
    """Characters of a reply's text and tool-call arguments, counted up to `cap`."""
    if cap is None or not isinstance(message, AIMessage):
        return 0
    content = message.content
    size = len(content) if isinstance(content, str) else _weight(content, cap)
    for call in message.invalid_tool_calls:
        size += len(call.get("args") or "")
    for tool_call in message.tool_calls:
        if size > cap:
            break
        size += _weight(tool_call["args"], cap - size)
    return size


def _weight(value: Any, cap: int) -> int:
    """Rough size of a parsed value, walked without recursion and only up to `cap`."""
    size, pending = 0, [value]
    while pending and size <= cap:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, Mapping):
            size += len(item)
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, Iterable) and not isinstance(item, bytes):
            before = len(pending)
            pending.extend(item)
            size += len(pending) - before
        else:
            size += 1
    return size


def _invoke_sync(step: Invoke) -> Any:
    result = step.fn(*step.args)
    if not inspect.isawaitable(result):
        return result
    # An async handler in a sync run: finish it on a private loop in its own
    # thread, which works whether or not this thread already runs a loop.
    # It runs in a copy of the caller's context, so it sees the run's config (stream
    # writer, interrupts) and the caller's context variables, as a sync handler does.
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def runner() -> None:
        try:
            box["value"] = context.run(asyncio.run, _await(result))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner, name="structx-handle-errors")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
