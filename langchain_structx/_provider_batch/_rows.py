"""One record's attempt loop, moved by the replies a provider batch sends back.

A live call runs `_engine.attempt_loop` with a driver that calls the model at
each `CallModel` step. Here the same loop waits at its step while the request
travels in a batch: `Asker.body` renders the step exactly as the LCEL face
would send it (same spec, binding and prompt), through the chat model's own
payload builder; the reply that comes back is read by the chat model's own
result parser and sent into the loop, which interprets, repairs, validates and
words the feedback as it does live. A loop that asks again waits at its next
step, whose request goes into the next round's batch.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langchain_structx._engine import drive as _drive
from langchain_structx._engine import loop as _engine
from langchain_structx._engine.run import CallModel, RunResult, Step
from langchain_structx._faces import lcel as _lcel
from langchain_structx._request.plan import Plan

Loop = Generator[Step, Any, RunResult]

_TRACE_ONLY = "ls_structured_output_format"
"""A binding argument LangChain reads for tracing and never sends."""


@dataclass(slots=True)
class Settled:
    """How a record ended: the run's result, or the error the loop raised."""

    result: RunResult | None = None
    error: Exception | None = None


class Row:
    """One record: its conversation, its attempt loop, and the step it waits on."""

    __slots__ = ("answers", "failures", "index", "loop", "messages", "replies", "settled", "step")

    def __init__(
        self,
        index: int,
        messages: list[BaseMessage],
        loop: Loop,
        answers: dict[tuple[Any, ...], Any],
    ) -> None:
        self.index = index
        self.answers = answers
        """Answers of reusable steps, shared by the rows of one job (one probe, not one a row)."""
        self.messages = messages
        self.loop = loop
        self.step: CallModel | None = None
        self.settled: Settled | None = None
        self.replies = 0
        """Model replies sent into the loop (each one an attempt or a rejection)."""
        self.failures = 0
        """Requests the provider lost: errored for a passing reason, expired, cancelled."""
        self._move(None, None)

    def answer(self, message: AIMessage) -> None:
        """Send the model's reply to the waiting step."""
        self.replies += 1
        self._move(message, None)

    def reject(self, error: Exception) -> None:
        """The provider refused the waiting step's request: the loop decides (fall back, raise)."""
        self.replies += 1
        self._move(None, error)

    def fail(self, error: Exception) -> None:
        """End the record with `error`, without a reply."""
        self.step, self.settled = None, Settled(error=error)
        self.loop.close()

    def _move(self, send: Any, error: Exception | None) -> None:
        while True:
            try:
                done, step = _drive._advance(self.loop, send, error)
            except Exception as exc:  # noqa: BLE001 - a failed record is a result, not a crash
                self.step, self.settled = None, Settled(error=exc)
                return
            if done:
                self.step, self.settled = None, Settled(result=step)
                return
            if isinstance(step, CallModel):
                self.step = step
                return
            send, error = None, None
            key = (step.fn, *step.args) if step.reusable else None
            if key is not None and key in self.answers:
                send = self.answers[key]
                continue
            try:  # the caller's handle_errors, as the live driver calls it
                send = _drive._invoke_sync(step)
            except Exception as exc:  # noqa: BLE001 - thrown into the loop, as live
                send, error = _drive._failed(step, exc)
            else:
                if key is not None and send is not None:  # None: unreachable, ask again
                    self.answers[key] = send


@dataclass(frozen=True, slots=True)
class Asker:
    """Builds each record's loop and renders the request its step waits on.

    Attributes:
        model: The chat model (its class builds the request body and reads the reply).
        plan: The response format's plan.
        system: The system prompt of every record, or None.
        bound: What a binding around the caller's model adds to each call.
    """

    model: Any
    plan: Plan
    system: str | None = None
    bound: _lcel.Bound = field(default_factory=_lcel.Bound)
    answers: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    """What the rows' reusable steps answered (the serving-engine probe), asked once a job."""

    def row(self, index: int, text: str) -> Row:
        """A record's loop, started up to its first model call."""
        messages: list[BaseMessage] = [SystemMessage(self.system)] if self.system else []
        messages.append(HumanMessage(text))
        # The LCEL face's loop: no tools of the caller's, a fresh fallback memory,
        # so a record's requests depend on nothing but its own replies.
        loop = _engine.attempt_loop(self.plan, model=self.model, state={}, runs_tools=False)
        return Row(index, messages, loop, self.answers)

    def request(self, row: Row) -> tuple[list[BaseMessage], dict[str, Any]]:
        """The prompt and call arguments of the step `row` waits on, as the LCEL face binds them."""
        step = row.step
        assert step is not None  # only rows that wait on a step are asked
        binding = _lcel._bound(self.model, self.plan, step.spec, self.bound, None)
        bound: dict[str, Any] = getattr(binding, "kwargs", {})
        kwargs = {k: v for k, v in bound.items() if k != _TRACE_ONLY}
        return _lcel._prompt(row.messages, step), kwargs
