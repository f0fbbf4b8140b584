"""The attempt loop: the only place that asks a model for structured output.

The loop is a generator written once. It yields *steps* (`CallModel`, `Invoke`)
and receives their results; a sync driver and an async driver perform the steps.
So the retry, fallback and error-handling logic exists in one copy, and the
middleware and the graph node differ only in how they call the model.

One run may span several graph steps: when a message carries ordinary tool calls
next to the structured attempt, the tools must run before the model is asked
again; and an agent asks again after a failed attempt in its next model step, so
that every attempt passes LangChain's middleware. `Progress` (a plain dict kept
in the state) carries the count, budget, usage and fallbacks across.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from langchain_structx._engine import constraints
from langchain_structx._engine import feedback as _feedback
from langchain_structx._engine import replies as _replies
from langchain_structx._engine.choice import StrategyChoice
from langchain_structx._engine.interpret import interpret
from langchain_structx._engine.match import Found
from langchain_structx._engine.progress import Progress, new_progress
from langchain_structx._engine.run import CallModel, Run, RunResult, Step
from langchain_structx._models import capabilities as caps
from langchain_structx._request import model_route as _decide
from langchain_structx._request.plan import Plan
from langchain_structx.errors import AttemptError, DialectError

_SHOWN: frozenset[str] = frozenset()


def attempt_loop(
    plan: Plan,
    *,
    model: Any,
    state: Mapping[str, Any],
    progress: Progress | None = None,
    memory: caps.FallbackMemory | None = None,
    tools: Sequence[Any] = (),
    one_call: bool = False,
    earlier: Sequence[AttemptError] = (),
    runs_tools: bool = True,
) -> Generator[Step, Any, RunResult]:
    """Ask for structured output until it validates, retries run out, or tools must run.

    Args:
        plan: The response format's plan.
        model: The chat model, for capabilities and identity only (never called
            here); a configurable one is built for them as the call will build it.
        state: Agent or graph state, shown to error handlers.
        progress: Bookkeeping carried over from an earlier step of the same run.
        memory: Where the agent or node remembers rejected strategies; None
            remembers nothing beyond this run.
        tools: The caller's own tools (some models cannot combine them with
            native structured output).
        one_call: Make at most one attempt: after a failure, return the feedback
            with `retry` set, so the shell asks again in its next graph step
            (where every other middleware sees the call).
        earlier: The error objects of this run's earlier steps, if the shell kept them.
        runs_tools: Whether the shell runs the model's calls to `tools` (an
            agent does). Calls that name none of them, and any call in a shell
            that runs none (a node, the runnable), are failed attempts, each
            call answered, so the run always ends with an answer or an error.

    Yields:
        Steps for the driver to perform.

    Returns:
        What to add to the state.

    Raises:
        UserError: When a user tool is named like a variant.
    """
    route = _decide.route(plan, model, tools)
    model, user_tools, declared = route.model, route.user_tools, route.declared
    memory = memory if memory is not None else caps.FallbackMemory()
    # The state's dict is never changed in place: the run works on its own copy.
    progress = copy.deepcopy(progress) if progress else new_progress()
    progress["retry"] = False
    engine = yield from constraints.engine_for(model, memory)
    choice = StrategyChoice(plan, route, memory, tools, progress, engine)
    run = Run(plan, state, progress, _feedback.earlier_errors(progress, earlier))
    while True:
        strategy = choice.strategy
        try:
            spec = choice.spec()
        except DialectError as exc:
            # The schema does not fit the provider's strict mode: ask another way.
            choice.cannot_send(exc)
            continue
        step = CallModel(
            spec,
            tuple(run.history),
            run.progress["attempts"] + 1,
            plan.limits.offload_chars,
            frozenset(hidden) if (hidden := progress.get("hidden")) else _SHOWN,
        )
        try:
            message = yield step
        except Exception as exc:
            choice.rejected(spec, exc)
            continue
        usage = run.add_usage(message)
        attempt = run.progress["attempts"] + 1
        runs = user_tools if runs_tools else None
        seen = interpret(plan, spec, message, attempt=attempt, usage=usage, runs=runs)
        if seen.outcome is None:
            # Turns spent calling ordinary tools cost tokens but are not attempts.
            return run.pending([_replies.portable(message, declared)], shown=True)
        run.progress["attempts"] = attempt
        if isinstance(seen.outcome, Found):
            choice.answered()
            message = _replies.portable(message, declared) if seen.ordinary_calls else message
            return run.finish(
                strategy, seen.outcome, _replies.answered(plan, message, seen.outcome)
            )
        text = yield from _feedback.feedback(run.fail(strategy, seen.outcome.error))
        sent = _replies.resendable(message, plan.limits, declared)
        replies = _replies.replies(seen.outcome, text, declared)
        if seen.ordinary_calls:
            return run.pending([sent, *replies], shown=True)
        # A broken route (not a wrong answer) is left for the next strategy, which
        # starts afresh, without this route's attempts and feedback in view.
        broken = choice.failed(seen.outcome.error)
        if one_call:
            return run.pending([sent, *replies], retry=True, hide=broken)
        run.history = [] if broken else [*run.history, sent, *replies]
