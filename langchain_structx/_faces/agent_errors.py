"""The agent face's errors between model steps: kept for the run, or put off.

A run that spans model steps keeps its error objects here (the checkpoint has
only their wording), so `handle_errors` and the final error see them in full in
the same process. A run that fails at its first step while the thread still
holds an earlier answer clears that answer first and raises at the next step:
`put_off` and `raise_deferred` are the two halves.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any, TypeGuard

from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langgraph.types import Command

from langchain_structx import errors as errors_module
from langchain_structx._engine import shell as _shell
from langchain_structx._engine.feedback import earlier_errors
from langchain_structx._engine.progress import Progress, as_tokens, as_usage, new_progress
from langchain_structx._engine.run import RunResult
from langchain_structx._faces.agent import ANSWER_KEYS, JUMP_KEY, PROGRESS_KEY
from langchain_structx.errors import (
    AttemptError,
    EarlierAttemptError,
    StructuredOutputFailure,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    StructxError,
)

KEPT_RUNS = 1024
"""Runs whose error objects one middleware keeps between model steps."""


class ErrorCache:
    """The error objects of unfinished runs, by run id, most recent last.

    The checkpoint keeps each error's text; the objects themselves (with their
    AI message and issues) are kept here, so that `handle_errors` and the final
    `StructuredOutputRetryError` see them in full when the run goes on in the
    same process. Each entry is kept with the last message its run added, so a
    fork of the thread (two resumptions of one checkpoint) never borrows the
    other branch's errors. Bounded: the oldest runs are forgotten first.
    """

    def __init__(self, size: int = KEPT_RUNS) -> None:
        self._size = size
        self._runs: OrderedDict[str, tuple[str | None, tuple[AttemptError, ...]]] = OrderedDict()
        self._deferred: OrderedDict[str, StructxError] = OrderedDict()
        self._raised: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, progress: Progress | None) -> tuple[AttemptError, ...]:
        """The errors kept for the run `progress` belongs to, as of that progress."""
        run_id = progress.get("run_id") if progress else None
        if not run_id:
            return ()
        with self._lock:
            kept = self._runs.get(run_id)
        if kept is None or kept[0] != progress.get("last_id"):  # type: ignore[union-attr]
            return ()
        return kept[1]

    def keep(self, result: RunResult) -> None:
        """Keep the errors of an unfinished run; forget a finished one."""
        progress = result.progress
        run_id = progress.get("run_id") if progress else None
        if not run_id:
            return
        with self._lock:
            if result.report is not None or not result.errors:
                self._runs.pop(run_id, None)
                return
            for error in result.errors:
                without_frames(error)
            self._runs[run_id] = (progress.get("last_id"), result.errors)  # type: ignore[union-attr]
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)

    def forget(self, progress: Progress | None) -> None:
        """Drop what is kept for the run `progress` belongs to (it has failed)."""
        run_id = progress.get("run_id") if progress else None
        if run_id:
            with self._lock:
                self._runs.pop(run_id, None)

    def defer(self, error: StructxError) -> str:
        """Keep a failure to raise at the run's next step; returns its key."""
        key = uuid.uuid4().hex
        without_frames(error)
        with self._lock:
            self._deferred[key] = error
            while len(self._deferred) > self._size:
                self._deferred.popitem(last=False)
        return key

    def take_deferred(self, key: str) -> StructxError | None:
        """The failure kept under `key`, if this process kept it; it is kept no longer.

        Taken once, so that failures (and the replies they hold) never pile up;
        only its key is remembered (bounded), so that a step run again after
        the raise (a resume, a retry middleware) starts a new run.
        """
        with self._lock:
            error = self._deferred.pop(key, None)
            if error is not None:
                self._raised[key] = None
                while len(self._raised) > self._size:
                    self._raised.popitem(last=False)
            return error

    def raised(self, key: str) -> bool:
        """Whether this process has raised the failure put off under `key`."""
        with self._lock:
            return key in self._raised


def without_frames(error: BaseException) -> None:
    """Drop the tracebacks of `error` and of the errors it holds, before it is kept.

    A traceback keeps its frames, and the attempt loop's frame holds the whole
    state: a run that never reaches its next step (cancelled, interrupted, out of
    steps) would otherwise keep its conversation alive in the cache. An error
    raised again later gets the traceback of that raise.
    """
    pending: list[Any] = [error]
    seen: set[int] = set()
    while pending:
        found = pending.pop()
        if not isinstance(found, BaseException) or id(found) in seen:
            continue
        seen.add(id(found))
        found.__traceback__ = None
        held = getattr(found, "errors", ())
        pending.extend(held if isinstance(held, tuple) else ())
        pending.extend((found.__cause__, found.__context__, getattr(found, "source", None)))


def raise_deferred(progress: Progress | None, errors: ErrorCache) -> Progress | None:
    """Raise the failure an earlier step of this run put off, if there is one.

    Returns:
        The progress to go on with. None when this process has raised the
        failure already and the step runs again (the thread is resumed after
        the error): that starts a new run, as LangChain's model step, resumed
        after an error, calls the model again.

    Raises:
        StructxError: The failure, as it was raised. When another process kept
            it, a `StructuredOutputRetryError` rebuilt from the checkpointed
            attempts, or else a `StructuredOutputFailure` with its wording.
    """
    key = progress.get("deferred") if progress else None
    if not key or progress is None:
        return progress
    error = errors.take_deferred(key)
    if error is None and errors.raised(key):
        return None
    if error is None and progress["kinds"]:
        usage = as_usage(progress["usage"])
        error = StructuredOutputRetryError(
            earlier_errors(progress, ()), ai_message=None, usage=usage
        )
    if error is None and "deferred_error" in progress:
        error = _rebuilt(progress["deferred_error"], progress)
    if error is None:
        text = "; ".join(progress["errors"][-1:])
        error = StructuredOutputFailure(f"The structured-output run failed: {text}")
    raise error


def _saved(error: StructuredOutputFailure) -> dict[str, Any]:
    """What another process needs to raise `error` again as what it is.

    Its class (one of ours), wording and plain fields; an exception it holds
    (`source`, `error`) is kept as its text and kind.
    """
    fields: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for name, value in vars(error).items():
        if name in _CONTEXT_FIELDS:
            continue
        if isinstance(value, BaseException):
            nested[name] = {"text": str(value), "kind": getattr(value, "kind", None)}
        elif isinstance(value, (str, int, bool)) or value is None:
            fields[name] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            fields[name] = list(value)
    return {
        "class": type(error).__name__,
        "message": str(error),
        "fields": fields,
        "nested": nested,
    }


_CONTEXT_FIELDS = frozenset({"ai_message", "raw_message", "attempt", "usage"})


def _rebuilt(saved: dict[str, Any], progress: Progress) -> StructuredOutputFailure:
    """The failure `_saved` describes, of its own class, with no AI message.

    Only this package's failure classes are rebuilt; the constructor is left
    out, as the checkpoint holds the finished wording rather than its parts.
    """
    found = getattr(errors_module, str(saved.get("class")), None)
    cls = found if isinstance(found, type) and issubclass(found, StructuredOutputFailure) else None
    attempt = progress["attempts"]
    usage = as_usage(progress["usage"])
    if cls is None:
        return StructuredOutputFailure(saved["message"], attempt=attempt, usage=usage)
    error = cls.__new__(cls)
    StructuredOutputFailure.__init__(error, saved["message"], attempt=attempt, usage=usage)
    for name, value in saved["fields"].items():
        setattr(error, name, value)
    for name, inner in saved["nested"].items():
        kind = inner.get("kind")
        setattr(
            error,
            name,
            EarlierAttemptError(inner["text"], kind=kind, attempt=attempt)
            if kind
            else ValueError(inner["text"]),
        )
    if isinstance(error, StructuredOutputRefusal):
        error.raw_message = None
    return error


def may_defer(
    error: Exception, request: ModelRequest[Any], progress: Progress | None
) -> TypeGuard[StructxError]:
    """Whether a failed first step should clear an earlier turn's answer before raising.

    A node that raises writes nothing, so a turn that fails at its first model
    step would leave the previous turn's answer in the thread. Only our own
    failures are put off (a model's own exception stays with the retry middleware
    around us), and only when there is an answer to clear.
    """
    if progress is not None or not isinstance(error, StructxError):
        return False
    return any(request.state.get(key) is not None for key in ANSWER_KEYS)


def put_off(
    error: Exception,
    request: ModelRequest[Any],
    progress: Progress | None,
    errors: ErrorCache,
    one_call: bool,
) -> ExtendedModelResponse[Any]:
    """Raise `error`, or put it off for a step that first clears an earlier answer.

    Only a run with one attempt per model step (`one_call`) can put it off: the
    next model step, which raises it, comes through the graph.
    """
    if isinstance(error, StructxError):
        errors.forget(progress)  # the run is over; a model's own exception may be retried
    if not (one_call and may_defer(error, request, progress)):
        raise error
    return deferral(error, request, errors)


def deferral(
    error: StructxError, request: ModelRequest[Any], errors: ErrorCache
) -> ExtendedModelResponse[Any]:
    """The model step that clears the answer keys and sends the run back to raise `error`."""
    progress = new_progress()
    progress["retry"] = True
    progress["deferred"] = errors.defer(error)
    progress["errors"] = [f"{type(error).__name__}: {error}"]
    if isinstance(error, StructuredOutputRetryError):
        # What another process needs to raise it again as what it is.
        progress["errors"] = [f"{e.kind}: {e}" for e in error.errors]
        progress["kinds"] = [e.kind for e in error.errors]
        progress["attempts"] = error.n_attempts
    elif isinstance(error, StructuredOutputFailure):
        progress["deferred_error"] = _saved(error)
        progress["attempts"] = error.attempt
    usage = getattr(error, "usage", None)
    if usage is not None:
        progress["usage"] = as_tokens(usage)
    if request.messages:
        progress["last_id"] = request.messages[-1].id
    update = {PROGRESS_KEY: progress, JUMP_KEY: "model", **_shell.reset_structured_output(None)}
    return ExtendedModelResponse(
        model_response=ModelResponse(result=[], structured_response=None),
        command=Command(update=update),
    )
