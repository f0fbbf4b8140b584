"""The retry router: the companion of our middleware that runs around other hooks.

It goes first in the agent's middleware list, so its `before_model` hook is the
first to run and its `after_model` hook the last. Kept apart from `_agent` (the
model step's plumbing) because it is a middleware of its own.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import hook_config
from langchain.agents.middleware.types import AgentMiddleware
from langgraph.runtime import Runtime

from langchain_structx._engine import shell as _shell
from langchain_structx._faces.agent import (
    ANSWER_KEYS,
    JUMP_KEY,
    PROGRESS_KEY,
    progress_in,
    turn_ended,
)


class StructuredOutputRetryRouter(AgentMiddleware[Any, Any]):
    """Sends the agent back to its model step while a structured run wants a retry.

    Made by `StructuredOutputMiddleware.retry_router()`; goes first in the
    middleware list, so its `before_model` hook is the first to run and its
    `after_model` hook the last. Before each model step it ends a turn that is
    already answered (the model called ordinary tools beside its answer, and
    they have run) and clears an earlier turn's answer (or writes the empty
    keys) when a new run starts, so that no other middleware acts on a finished
    turn or a stale answer.
    """

    def __init__(self, state_schema: type[Any]) -> None:
        super().__init__()
        self.state_schema = state_schema
        self.tools = []

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End an answered turn, or clear an earlier turn's answer as a run starts."""
        progress, answered = progress_in(state.get(PROGRESS_KEY), state["messages"])
        if answered:
            return {JUMP_KEY: "end", **turn_ended(state)}
        # A key never written is written too: another middleware may answer in our
        # place, and the turn's state must still say there is no answer.
        if progress is None and any(state.get(key, True) is not None for key in ANSWER_KEYS):
            return _shell.reset_structured_output(None)
        return None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async form of `before_model`."""
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Jump back to the model when the last attempt failed and may be retried."""
        # Only while the run goes on: when our step raised its final error, another
        # middleware may have answered in its place, and the flag is the last step's.
        progress, _ = progress_in(state.get(PROGRESS_KEY), state["messages"])
        if progress and progress.get("retry"):
            return {JUMP_KEY: "model"}
        return None

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async form of `after_model`."""
        return self.after_model(state, runtime)


_MODEL_HOOKS = ("before_model", "abefore_model", "after_model", "aafter_model")


def has_model_hooks(middleware: AgentMiddleware[Any, Any]) -> bool:
    """Whether LangChain gives `middleware` a step before or after the model step."""
    return _overrides(middleware, _MODEL_HOOKS)


def wraps_model_calls(middleware: AgentMiddleware[Any, Any]) -> bool:
    """Whether `middleware` wraps the model call, and so may answer in our place."""
    return _overrides(middleware, ("wrap_model_call", "awrap_model_call"))


def _overrides(middleware: AgentMiddleware[Any, Any], hooks: tuple[str, ...]) -> bool:
    cls = type(middleware)
    return any(getattr(cls, hook) is not getattr(AgentMiddleware, hook) for hook in hooks)
