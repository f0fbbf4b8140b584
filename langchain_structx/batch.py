"""Large extractions through the providers' own batch APIs, at half the live price.

OpenAI's Batch API and Anthropic's Message Batches take a file of requests and
answer within a day at half the price of live calls. `submit` sends one
request per record, each exactly what `with_structured_output` would send for
it (same strategy, dialect, tools and prompt); the replies are read, repaired
and validated by the same engine as a live call, and the records whose answer
failed are asked again, with a live retry's feedback, in a follow-up batch (at
most `max_retries` times). The job lives in a folder, written as it changes:
a process that dies is taken up by `resume`, with no batch sent twice and no
record lost or written twice.

Examples:
    >>> from langchain_structx.batch import BatchSettings
    >>> BatchSettings().poll_every
    10.0

A job, start to end (with a `ChatOpenAI` or `ChatAnthropic` model)::

    job = submit(model, Contact, ["Ada Lovelace, 36", ...], folder="jobs/contacts")
    summary = job.wait()          # polls with backoff; a bar on a terminal
    for line in job.results():    # {"id": 1, "output": {...}} or {"id": 2, "error": {...}}
        ...
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_structx._cli.records import BatchInputError as BatchInputError
from langchain_structx._cli.records import Progress, Record, ResultFile, done_ids, parse_record
from langchain_structx._faces import lcel as _lcel
from langchain_structx._provider_batch._job import Job, Outcome
from langchain_structx._provider_batch._providers import provider_of
from langchain_structx._provider_batch._rows import Asker
from langchain_structx._provider_batch._state import JobFile, JobFolder
from langchain_structx._provider_batch._summary import BatchSummary, count, default_line
from langchain_structx._provider_batch._wire import (
    BATCH_DISCOUNT,
    BatchLimits,
    Provider,
)
from langchain_structx._provider_batch._wire import ProviderBatchError as ProviderBatchError
from langchain_structx._request.plan import build_plan
from langchain_structx.errors import UserError

__all__ = (
    "BATCH_DISCOUNT",
    "BatchInputError",
    "BatchJob",
    "BatchLimits",
    "BatchSettings",
    "BatchSummary",
    "ProviderBatchError",
    "resume",
    "submit",
)

OUTPUT_NAME = "results.jsonl"
"""The result file of a job, in its folder unless another is given."""

Line = Callable[[Outcome], dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSettings:
    """How a job polls, retries and sizes its batches.

    Attributes:
        poll_every: Seconds before the first poll; the wait doubles while nothing changes.
        poll_max: The longest wait between polls, in seconds.
        error_retries: Times a request the provider lost (a passing error, an
            expired batch) is sent again before its record is reported failed.
        limits: Requests and bytes per batch; None for the provider's own limits.
    """

    poll_every: float = 10.0
    poll_max: float = 300.0
    error_retries: int = 2
    limits: BatchLimits | None = None


class BatchJob:
    """A provider batch job: poll it, wait for it, cancel it, read its results."""

    def __init__(
        self,
        job: Job,
        output: Path,
        summary: BatchSummary,
        sink: ResultFile,
        settings: BatchSettings,
    ) -> None:
        self._job = job
        self._settings = settings
        self.folder = job.folder.path
        """The job's folder."""
        self.output = output
        """Where result lines are written, in input order."""
        self.summary = summary
        """Counts and tokens of what this process wrote."""
        self._sink = sink

    @property
    def finished(self) -> bool:
        """Whether every record is written."""
        return self._job.finished

    @property
    def total(self) -> int:
        """Records in the job."""
        return len(self._job.records)

    def step(self) -> bool:
        """One move: send what is ready, poll the running batches; True when something changed."""
        moved = self._job.advance()
        self.summary.rounds = len(self._job.state.rounds) - (0 if self.finished else 1)
        return moved

    def wait(
        self, *, progress: bool = True, sleep: Callable[[float], None] = time.sleep
    ) -> BatchSummary:
        """Poll until every record is written, waiting longer while nothing changes.

        Args:
            progress: Show a bar on stderr when it is a terminal.
            sleep: How to wait between polls.
        """
        bar = Progress(self.total, self._job.cursor) if progress else None
        wait = self._settings.poll_every
        written = self._job.cursor
        try:
            while not self.finished:
                moved = self.step()
                if bar is not None:
                    for _ in range(self._job.cursor - written):
                        bar.update(self.summary.failed)
                written = self._job.cursor
                if self.finished:
                    break
                wait = self._settings.poll_every if moved else wait
                sleep(wait)
                wait = min(wait * 2, self._settings.poll_max)
        finally:
            if bar is not None:
                bar.close()
        self._sink.close()
        return self.summary

    def cancel(self) -> None:
        """Cancel the running batches; records they leave unanswered are written as failed."""
        self._job.cancel()

    def results(self) -> Iterator[dict[str, Any]]:
        """The result lines written so far, in input order."""
        with open(self.output, encoding="utf-8") as file:
            for line in file:
                if line.endswith("\n"):
                    yield json.loads(line)


def submit(
    model: Any,
    response_format: Any,
    records: Iterable[str | dict[str, Any] | Record],
    *,
    folder: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    system_prompt: str | None = None,
    settings: BatchSettings | None = None,
) -> BatchJob:
    """Start a job: one request per record, sent when the job is first stepped.

    Args:
        model: A `ChatOpenAI` or `ChatAnthropic` model (bound arguments are kept).
        response_format: A schema or one of our strategies, as for `with_structured_output`.
        records: Texts, or `{"id", "text"}` dicts (ids default to the position, from 1).
        folder: A new folder for the job's state.
        output: The result file; `results.jsonl` in the folder by default.
        system_prompt: The system prompt of every record.
        settings: Polling, retries and batch sizes.

    Raises:
        UserError: For a model whose provider has no batch API here, or a folder
            that already holds a job.
        BatchInputError: For records with the same id.
    """
    opened = _Opened.make(model, response_format, system_prompt, settings)
    return _start(opened, as_records(records), Path(folder), output)


def resume(
    folder: str | os.PathLike[str],
    model: Any,
    response_format: Any,
    *,
    output: str | os.PathLike[str] | None = None,
    system_prompt: str | None = None,
    settings: BatchSettings | None = None,
) -> BatchJob:
    """Take up a job an earlier process started, with the same model, format and prompt.

    Raises:
        ProviderBatchError: When the folder holds no job, or one started with
            another model, response format or prompt.
    """
    opened = _Opened.make(model, response_format, system_prompt, settings)
    return _take_up(opened, Path(folder), output)


def _start(
    opened: _Opened,
    records: list[Record],
    folder: Path,
    output: str | os.PathLike[str] | None,
) -> BatchJob:
    """A new job in `folder` for `records`."""
    job_folder = JobFolder(folder)
    if job_folder.exists:
        raise UserError(f"{folder} already holds a batch job; resume it or choose another folder")
    name = uuid.uuid4().hex
    state = JobFile(provider=opened.provider_name, fingerprint=opened.fingerprint, name=name)
    kept = ({"id": r.id, "text": r.text, "problem": r.problem, "line": r.line} for r in records)
    job_folder.create(state, kept)
    return opened.start(job_folder, output, written=0)


def _take_up(opened: _Opened, folder: Path, output: str | os.PathLike[str] | None) -> BatchJob:
    """The job in `folder`, from the first record its output lacks."""
    job_folder = JobFolder(folder)
    if not job_folder.exists:
        raise ProviderBatchError(f"{folder} holds no batch job")
    state = job_folder.load()
    if (state.provider, state.fingerprint) != (opened.provider_name, opened.fingerprint):
        raise ProviderBatchError(
            f"the batch job in {folder} was started with another model, response format "
            "or system prompt; resume it with the same ones"
        )
    path = Path(output) if output is not None else folder / OUTPUT_NAME
    kept = job_folder.records()
    records = [
        Record(r["id"], r.get("line", n), r["text"], r.get("problem", ""))
        for n, r in enumerate(kept, 1)
    ]
    finished = done_ids(str(path), records)
    written = next((n for n, r in enumerate(records) if r.key not in finished), len(records))
    return opened.start(job_folder, output, written=written)


def as_records(items: Iterable[str | dict[str, Any] | Record]) -> list[Record]:
    """Texts or `{"id", "text"}` dicts as batch records, ids checked unique.

    Raises:
        BatchInputError: When two records share an id.

    Examples:
        >>> [r.id for r in as_records(["Ada", {"id": "b", "text": "Bob"}])]
        [1, 'b']
    """
    records: list[Record] = []
    seen: set[str] = set()
    for number, item in enumerate(items, 1):
        if isinstance(item, Record):
            record = item
        else:
            record = parse_record(json.dumps(item, ensure_ascii=False), number)
        if record.key in seen:
            raise BatchInputError(
                f"batch id {record.id!r} is given twice; each record needs its own id"
            )
        seen.add(record.key)
        records.append(record)
    return records


@dataclass(slots=True)
class _Opened:
    """The model, plan and provider of a job, and the fingerprint that ties them to it."""

    asker: Asker
    provider_for: Callable[[str], Provider]
    provider_name: str
    fingerprint: str
    settings: BatchSettings
    line: Line | None = None

    @classmethod
    def make(
        cls, model: Any, response_format: Any, system: str | None, settings: BatchSettings | None
    ) -> _Opened:
        chat, bound = _lcel.unbind(model)
        plan = build_plan(response_format)
        name, make = provider_of(chat)
        settings = settings or BatchSettings()
        limits = settings.limits

        def provider_for(job: str) -> Provider:
            return make(chat, job, limits) if limits else make(chat, job)

        seen = {
            "model": getattr(chat, "model_name", None) or getattr(chat, "model", None),
            "schema": plan.output_schema(),
            "strategy": type(plan.strategy).__name__,
            "retries": plan.max_retries,
            "system": system,
            "bound": bound.kwargs,
        }
        text = json.dumps(seen, sort_keys=True, default=str)
        fingerprint = hashlib.sha256(text.encode()).hexdigest()[:32]
        asker = Asker(chat, plan, system, bound)
        return cls(asker, provider_for, name, fingerprint, settings)

    def start(
        self, folder: JobFolder, output: str | os.PathLike[str] | None, *, written: int
    ) -> BatchJob:
        path = Path(output) if output is not None else folder.path / OUTPUT_NAME
        sink = ResultFile(path=str(path))
        summary = BatchSummary(skipped=written)
        line = self.line or self._default_line

        def write(outcomes: list[Outcome]) -> None:
            # One write and one sync for many lines (ResultFile ends the last).
            sink.write("\n".join(json.dumps(line(o), ensure_ascii=False) for o in outcomes))
            for outcome in outcomes:
                count(summary, outcome)

        state = folder.load()
        job = Job(
            folder,
            self.asker,
            self.provider_for(state.name),
            write=write,
            written=written,
            error_retries=self.settings.error_retries,
        )
        return BatchJob(job, path, summary, sink, self.settings)

    def _default_line(self, outcome: Outcome) -> dict[str, Any]:
        return default_line(outcome, union=self.asker.plan.schemas.is_union)
