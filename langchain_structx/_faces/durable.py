"""Model calls of a graph node, kept in its checkpoint as they end.

A node runs every attempt of a run in one graph step, so a step cut short
(the process killed in a retry, a provider error) used to leave no trace of the
attempts before: the resumed node started a fresh run, with a fresh retry budget,
and its report forgot them. Run as a LangGraph task, each call's reply is
written to the checkpoint when it arrives; the resumed node replays those
replies in order (no model call), so the run goes on from the attempt that was
cut short, as the agent's run does. Outside a graph with a checkpointer there is
nothing to resume, and the call is made directly.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.load import dumps, loads
from langchain_core.messages import AIMessage
from langgraph.func import task

_CALL_KEY = "__pregel_call"
"""Where LangGraph puts a running step's task launcher (`CONFIG_KEY_CALL`)."""
_CHECKPOINTER_KEY = "__pregel_checkpointer"
"""Where LangGraph puts the graph's checkpointer (`CONFIG_KEY_CHECKPOINTER`)."""


def _call_model(model: Any, prompt: list[Any]) -> AIMessage:
    return model.invoke(prompt)  # type: ignore[no-any-return]


async def _acall_model(model: Any, prompt: list[Any]) -> AIMessage:
    return await model.ainvoke(prompt)  # type: ignore[no-any-return]


# The checkpoint keeps a reply as JSON text: a reply may hold what its serializer
# cannot store (an integer wider than int64), which validation must still see.
def _kept(model: Any, prompt: list[Any]) -> str:
    return dumps(_call_model(model, prompt))


async def _akept(model: Any, prompt: list[Any]) -> str:
    return dumps(await _acall_model(model, prompt))


def _reply(text: str) -> AIMessage:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `loads` is marked beta
        reply: AIMessage = loads(text, allowed_objects="messages")
    return reply


@functools.cache
def _model_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=32, thread_name_prefix="structx-model-call")


async def _kept_in_thread(model: Any, prompt: list[Any]) -> str:
    """`_kept` on a thread of our own, for a sync node in a graph run asynchronously.

    LangGraph runs a sync node on its event loop's thread pool, and a sync task
    there too: a node waiting on its task holds a thread the task needs, and as
    many such nodes at once as the pool has threads would wait for ever. This
    task runs on the loop and makes the sync call on threads no node waits on.
    """
    context = contextvars.copy_context()  # the run's config and callbacks
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_model_threads(), context.run, _kept, model, prompt)


_NAME = "structx_model_call"
"""The tasks' name, as traces and the checkpoint's writes show it."""
# langgraph's overloads type the decorator form for one kind of function only.
_MODEL_CALL: Any = task(name=_NAME)(_kept)  # type: ignore[arg-type]
_AMODEL_CALL: Any = task(name=_NAME)(_akept)  # type: ignore[arg-type]
_THREADED_CALL: Any = task(name=_NAME)(_kept_in_thread)  # type: ignore[arg-type]


def checkpointed() -> bool:
    """Whether this runs in a graph step whose graph keeps checkpoints."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable: called by hand
        return False
    return configurable.get(_CALL_KEY) is not None and bool(configurable.get(_CHECKPOINTER_KEY))


def invoke(model: Any, prompt: list[Any]) -> AIMessage:
    """`model.invoke(prompt)`, its reply kept in the checkpoint when there is one."""
    if not checkpointed():
        return _call_model(model, prompt)
    try:  # a graph run asynchronously, whose runner takes an async task from here
        kept = _THREADED_CALL(model, prompt)
    except RuntimeError:  # a sync run: LangGraph refuses async tasks there
        kept = _MODEL_CALL(model, prompt)
    return _reply(kept.result())


async def ainvoke(model: Any, prompt: list[Any]) -> AIMessage:
    """Async form of `invoke`."""
    if not checkpointed():
        return await _acall_model(model, prompt)
    return _reply(await _AMODEL_CALL(model, prompt))
