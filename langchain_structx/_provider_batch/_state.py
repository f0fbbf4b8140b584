"""A provider batch job kept on disk, so that a killed process can take it up again.

The job is a folder: `job.json` (the rounds, each batch's file and batch ids
and phase), `records.jsonl` (the records, written once) and one
`replies-R-P.jsonl` per collected batch (what the provider answered, as it said
it). Every file is written whole to a temporary name, synced and renamed over
the old one, so a kill leaves either the old file or the new, never a mix.
What a round's batches answered is written before the round is marked
collected, and a batch id is written as soon as the provider gives it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_structx._provider_batch._wire import ProviderBatchError

VERSION = 1
Phase = Literal["new", "uploaded", "submitting", "submitted", "collected"]


@dataclass(slots=True)
class Part:
    """One remote batch of a round.

    Attributes:
        rows: The records it asks for, by index.
        phase: How far it got: built, file uploaded, being created, running, answered.
        file_id: The uploaded request file (OpenAI).
        batch_id: The remote batch.
        since: When its creation started (to find a batch a kill left unsaved).
    """

    rows: list[int]
    phase: Phase = "new"
    file_id: str | None = None
    batch_id: str | None = None
    since: float = 0.0


@dataclass(slots=True)
class JobFile:
    """What `job.json` holds."""

    provider: str
    fingerprint: str
    name: str
    rounds: list[list[Part]] = field(default_factory=list)
    cancelled: bool = False
    finished: bool = False
    version: int = VERSION


class JobFolder:
    """The job's folder: its files read and written whole."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def exists(self) -> bool:
        """Whether a job was started here."""
        return (self.path / "job.json").exists()

    def create(self, job: JobFile, records: Iterable[dict[str, Any]]) -> None:
        """Start a job: its records, then its state (which marks the folder a job)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write(self.path / "records.jsonl", _lines(records))
        self.save(job)

    def save(self, job: JobFile) -> None:
        """Write `job.json`."""
        _write(self.path / "job.json", json.dumps(asdict(job)).encode())

    def load(self) -> JobFile:
        """Read `job.json`.

        Raises:
            ProviderBatchError: When it is missing, unreadable or of another version.
        """
        try:
            data = json.loads((self.path / "job.json").read_bytes())
            rounds = [[Part(**part) for part in parts] for parts in data.pop("rounds")]
            job = JobFile(**data, rounds=rounds)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ProviderBatchError(f"cannot read the batch job in {self.path}: {exc}") from None
        if job.version != VERSION:
            raise ProviderBatchError(f"the batch job in {self.path} is of version {job.version}")
        return job

    def records(self) -> list[dict[str, Any]]:
        """The job's records, in order."""
        return list(_read_lines(self.path / "records.jsonl"))

    def save_replies(self, round_: int, part: int, replies: Iterable[dict[str, Any]]) -> None:
        """Keep what one batch answered."""
        _write(self._replies(round_, part), _lines(replies))

    def replies(self, round_: int, part: int) -> Iterator[dict[str, Any]]:
        """What one batch answered, as kept."""
        return _read_lines(self._replies(round_, part))

    def _replies(self, round_: int, part: int) -> Path:
        return self.path / f"replies-{round_:03d}-{part:03d}.jsonl"


def _lines(items: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items).encode()


def _read_lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProviderBatchError(f"cannot read {path}: {exc.strerror or exc}") from None
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def _write(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a temporary file synced, renamed, the folder synced."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
