"""A provider batch job: rounds of remote batches until every record settles.

Round 0 asks every record once. When all of a round's batches have ended,
their replies are kept on disk, then sent into the records' attempt loops: a
loop that validated, or gave up, settles its record; one that asks again (the
feedback a live retry gives) or whose request the provider lost waits for the
next round. Settled records are written in input order as soon as those before
them are written, as a local batch writes them.

Everything a round needs is rebuilt from the job folder: the records and the
kept replies of earlier rounds are replayed through fresh loops, which ask the
same requests again, since the engine reads nothing but its replies. So a
killed job is taken up at the phase it reached: a batch whose id was saved is
polled, never sent twice; one being created when the process died is looked
up at the provider first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_structx._provider_batch._rows import Asker, Row, Settled
from langchain_structx._provider_batch._state import JobFile, JobFolder, Part
from langchain_structx._provider_batch._wire import (
    LOST,
    Provider,
    ProviderBatchError,
    error_reply,
    jsonl,
    retried,
    split,
)

Hook = Callable[[str], None]
"""Called at each phase with its name (tests stop the process there)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A settled record.

    Attributes:
        index: Its place in the input, from 0.
        record: Its `id` and `text` (and `problem` when it has no text).
        settled: The run's result or error; None for a record without text.
    """

    index: int
    record: dict[str, Any]
    settled: Settled | None


Writer = Callable[[list[Outcome]], None]
"""Writes settled records, in input order, and makes them durable."""

WRITE_CHUNK = 256
"""Result lines written (and synced) at once."""


def custom_id(index: int, round_: int) -> str:
    """The id of a record's request in one round (Anthropic's charset, unique per batch).

    Examples:
        >>> custom_id(7, 2), row_of("row-7-r2")
        ('row-7-r2', 7)
    """
    return f"row-{index}-r{round_}"


def row_of(key: str) -> int:
    """The record index a custom id names."""
    return int(key.split("-")[1])


class Job:
    """One job: its folder, its records' loops, and the provider it talks to."""

    def __init__(
        self,
        folder: JobFolder,
        asker: Asker,
        provider: Provider,
        *,
        write: Writer,
        written: int = 0,
        error_retries: int = 2,
        hook: Hook | None = None,
    ) -> None:
        self.folder = folder
        self.state: JobFile = folder.load()
        self.asker = asker
        self.provider = provider
        self.write = write
        self.error_retries = error_retries
        self.hook = hook or (lambda phase: None)
        self.records = folder.records()
        self.cursor = written
        """Records written so far: every record before this index."""
        self.rows: dict[int, Row] = {
            i: asker.row(i, r["text"])
            for i, r in enumerate(self.records)
            if i >= written and r.get("text") is not None
        }
        self._built: dict[str, dict[str, Any]] = {}
        self._replay()

    # -- reading back ------------------------------------------------------------

    def _replay(self) -> None:
        rounds = self.state.rounds
        for number, parts in enumerate(rounds):
            if all(p.phase == "collected" for p in parts) and number < len(rounds) - 1:
                self._feed(number)
        if not rounds:
            self._next_round()

    # -- one move ----------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Whether every record is settled and written."""
        return self.state.finished

    def advance(self) -> bool:
        """Take the job one step on: send what is built, poll, collect; True when it moved."""
        if self.state.finished:
            return False
        number = len(self.state.rounds) - 1
        parts = self.state.rounds[number]
        for part in parts:
            if part.phase == "new":
                self._upload(number, part)
            if part.phase in ("uploaded", "submitting"):
                self._submit(number, part)
        moved = False
        for k, part in enumerate(parts):
            if part.phase == "submitted":
                moved |= self._collect_if_ended(number, k, part)
        if all(p.phase == "collected" for p in parts):
            self._feed(number)
            self._flush()
            self._next_round()
            return True
        return moved

    def cancel(self) -> None:
        """Cancel the current round's remote batches; their unanswered records then fail."""
        self.state.cancelled = True
        self.folder.save(self.state)
        for part in self.state.rounds[-1] if self.state.rounds else []:
            if part.batch_id and part.phase == "submitted":
                self.provider.cancel(part.batch_id)

    # -- phases ------------------------------------------------------------------

    def _lines(self, number: int, part: Part) -> list[dict[str, Any]]:
        """The requests of `part`, built once per process (a resumed one builds them again)."""
        lines = []
        for index in part.rows:
            key = custom_id(index, number)
            line = self._built.get(key)
            if line is None:
                prompt, kwargs = self.asker.request(self.rows[index])
                body = self.provider.body(self.asker.model, prompt, kwargs)
                line = self._built[key] = self.provider.line(key, body)
            lines.append(line)
        return lines

    def _upload(self, number: int, part: Part) -> None:
        self.hook("before-upload")
        part.file_id = self.provider.upload(jsonl(self._lines(number, part)))
        part.phase = "uploaded"
        self.folder.save(self.state)
        self.hook("after-upload")

    def _submit(self, number: int, part: Part) -> None:
        if part.phase == "submitting":
            known = {p.batch_id for parts in self.state.rounds for p in parts if p.batch_id}
            part.batch_id = self.provider.adopt(part.file_id, part.since, len(part.rows), known)
        if part.batch_id is None:
            part.phase, part.since = "submitting", time.time()
            self.folder.save(self.state)
            self.hook("submitting")
            part.batch_id = self.provider.create(part.file_id, self._lines(number, part))
            self.hook("created")
        part.phase = "submitted"
        self.folder.save(self.state)
        self.hook("after-submit")

    def _collect_if_ended(self, number: int, k: int, part: Part) -> bool:
        assert part.batch_id is not None
        self.hook("polling")
        if self.provider.status(part.batch_id).state != "ended":
            return False
        replies = [
            {"custom_id": key, **reply} for key, reply in self.provider.replies(part.batch_id)
        ]
        self.folder.save_replies(number, k, replies)
        self.hook("collected")
        part.phase = "collected"
        self.folder.save(self.state)
        return True

    def _feed(self, number: int) -> None:
        last = number == len(self.state.rounds) - 1
        cancelled = self.state.cancelled and last
        for k, part in enumerate(self.state.rounds[number]):
            got = {str(r.pop("custom_id")): r for r in self.folder.replies(number, k)}
            for index in part.rows:
                reply = got.get(custom_id(index, number))
                if reply is None:
                    reply = error_reply(0, LOST, "the batch ended without running the request")
                row = self.rows.get(index)
                if row is not None and row.settled is None:
                    self._apply(row, reply, cancelled)

    def _apply(self, row: Row, reply: dict[str, Any], cancelled: bool) -> None:
        if "body" in reply:
            row.answer(self.provider.message(self.asker.model, reply["body"]))
            return
        error = reply["error"]
        if cancelled and error.get("type") == LOST:
            row.fail(ProviderBatchError("the batch was cancelled before the request ran"))
        elif not retried(reply):
            row.reject(self.provider.rejection(error))
        else:
            row.failures += 1
            if row.failures > self.error_retries:
                said = f"{error.get('type')}: {error.get('message')}"
                row.fail(
                    ProviderBatchError(
                        f"the provider failed the request {row.failures} times ({said})"
                    )
                )

    def _flush(self) -> None:
        """Write the settled records that follow the written ones, a chunk per write.

        A chunk is written and synced in one go: a kill inside one leaves whole
        lines and at most one cut line, which a resume cuts off and writes again
        (the replies it came from are kept).
        """
        chunk: list[Outcome] = []
        while self.cursor + len(chunk) < len(self.records):
            index = self.cursor + len(chunk)
            row = self.rows.get(index)
            if row is not None and row.settled is None:
                break
            chunk.append(Outcome(index, self.records[index], row.settled if row else None))
            if len(chunk) == WRITE_CHUNK:
                self._write(chunk)
                chunk = []
        if chunk:
            self._write(chunk)

    def _write(self, chunk: list[Outcome]) -> None:
        self.write(chunk)
        self.cursor += len(chunk)
        self.hook("writing")

    def _next_round(self) -> None:
        self._flush()
        self._built.clear()
        number = len(self.state.rounds)
        asked = sorted(i for i, row in self.rows.items() if row.step is not None)
        if not asked or self.state.cancelled:
            for index in asked:
                self.rows[index].fail(ProviderBatchError("the batch job was cancelled"))
            self._flush()
            self.state.finished = True
            self.folder.save(self.state)
            return
        # Split by the real request sizes, so each batch keeps within the limits.
        parts = split(self._lines(number, Part(rows=asked)), self.provider.limits)
        self.state.rounds.append([Part(rows=[row_of(x["custom_id"]) for x in p]) for p in parts])
        self.folder.save(self.state)
