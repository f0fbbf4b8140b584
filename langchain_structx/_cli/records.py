"""The records of `structx extract --batch`, and where their results go.

Each input line is one record with a stable id (its `id`, or its line number),
so a batch that was stopped can be resumed. A JSONL batch (the default) holds
JSON lines only: a line that does not parse is an error record, never sent to
the model as text. Plain text, one record per line, is its own input form
(`--input-format text`, the default for a `.txt` file). `ResultFile` appends
one complete line per result, written in one call and synced to disk, and `done_ids` reads
back which ids an earlier run finished, dropping a line that a kill cut short.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Any, BinaryIO

from langchain_structx._cli.summary import Progress, Tally, usage_tokens
from langchain_structx.errors import StructxError

__all__ = (
    "INPUT_FORMATS",
    "INVALID_LINE",
    "MAX_LINE_BYTES",
    "BatchInputError",
    "OutputWriteError",
    "Progress",
    "Record",
    "ResultFile",
    "Tally",
    "done_ids",
    "id_key",
    "input_format",
    "line_key",
    "parse_record",
    "read_records",
    "stdin_bytes",
    "usage_tokens",
)

MAX_LINE_BYTES = 64 << 20
"""The longest batch line read (64 MiB): a bound for a file with no newline."""
_BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark that some editors put at the start of a file."""


class BatchInputError(StructxError):
    """The batch file (or stdin) cannot be read as records, or cannot be resumed."""


class OutputWriteError(StructxError):
    """A result line could not be written: a full disk, a closed FIFO or pipe."""

    def __init__(self, message: str, *, closed_pipe: bool = False) -> None:
        super().__init__(message)
        self.closed_pipe = closed_pipe
        """Whether stdout is a pipe whose reader has gone (as with `| head -1`)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One batch input."""

    id: Any
    """The record's own `id`, or its line number."""
    line: int
    """Its line number, from 1."""
    text: str | None
    """The text to extract from; None when the record has none."""
    problem: str = ""
    """Why `text` is None."""
    invalid: bool = False
    """Whether the line itself is no record (not JSON, or not an object or string)."""

    @property
    def key(self) -> str:
        """The id as canonical JSON, so that `1` and `"1"` stay apart.

        A line that is not JSON has no id (None): its key names its line instead,
        in a form no JSON id takes.
        """
        return line_key(self.line) if self.id is None else id_key(self.id)


INVALID_LINE = "InvalidLineError"
"""The error type of a JSONL line that does not parse."""
INPUT_FORMATS = ("auto", "jsonl", "text")
"""`--input-format`: `auto` reads a `.txt` file as text and anything else as JSONL."""


def line_key(number: int) -> str:
    """The key of the record on line `number` that has no id (it is not JSON).

    Examples:
        >>> line_key(3)
        'line 3'
    """
    return f"line {number}"


def input_format(path: str, chosen: str) -> str:
    """`jsonl` or `text`: what `--input-format` means for the batch file `path`.

    Examples:
        >>> input_format("notes.txt", "auto"), input_format("-", "auto")
        ('text', 'jsonl')
    """
    if chosen in ("jsonl", "text"):
        return chosen
    return "text" if path.lower().endswith(".txt") else "jsonl"


def id_key(value: Any) -> str:
    """Canonical JSON text of an id.

    Examples:
        >>> id_key(1), id_key("1")
        ('1', '"1"')
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def read_records(path: str, form: str = "jsonl") -> list[Record]:
    """The records of a batch file, or of stdin for `-`.

    A leading byte order mark is dropped. Blank lines are skipped (they keep
    their number). In `text` form each line is a text, its id its line number.
    In `jsonl` form a line that is a JSON string is that text; a JSON object
    gives `id` and `text`; a line that does not parse, or another JSON value, is
    a record without text. A record without a usable text is kept, with its
    problem, so that it gets an error line of its own.

    Raises:
        BatchInputError: When the input is not UTF-8 text, looks binary, or
            repeats an id.
    """
    records: list[Record] = []
    seen: dict[str, int] = {}
    for number, raw in _lines(path):
        if not raw.strip():
            continue
        record = parse_record(raw, number) if form == "jsonl" else Record(number, number, raw)
        if record.key in seen:
            raise BatchInputError(
                f"batch id {record.id!r} is on lines {seen[record.key]} and {number}; "
                "each record needs its own id"
            )
        seen[record.key] = number
        records.append(record)
    return records


def _lines(path: str) -> Iterator[tuple[int, str]]:
    name = "stdin" if path == "-" else f"batch file {path}"
    with _open_input(path) as source:
        number = 0
        while line := source.readline(MAX_LINE_BYTES + 1):
            number += 1
            if number == 1:
                line = line.removeprefix(_BOM)
            if len(line) > MAX_LINE_BYTES:
                raise BatchInputError(f"{name} line {number} is over {MAX_LINE_BYTES} bytes")
            if b"\0" in line:
                raise BatchInputError(f"{name} is not text (line {number} holds NUL bytes)")
            try:
                yield number, line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise BatchInputError(f"{name} is not UTF-8 text (line {number})") from None


def _open_input(path: str) -> AbstractContextManager[BinaryIO]:
    if path == "-":
        return contextlib.nullcontext(stdin_bytes())
    try:
        return open(path, "rb")
    except OSError as exc:
        raise BatchInputError(f"cannot read batch file {path}: {exc.strerror or exc}") from None


def stdin_bytes() -> BinaryIO:
    """Standard input as bytes.

    Raises:
        BatchInputError: When stdin is closed.
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None or buffer.closed:
        raise BatchInputError("stdin is closed; give the text as an argument or a file")
    return buffer  # type: ignore[no-any-return]


def parse_record(line: str, number: int) -> Record:
    """One batch line as a record.

    Examples:
        >>> parse_record('{"id": "a", "text": "Ada"}', 1)
        Record(id='a', line=1, text='Ada', problem='', invalid=False)
        >>> parse_record('{"text": null}', 2).problem
        "the record's text is null"
        >>> parse_record('{"id": "r3", "text": "Ada"', 3).problem
        "line 3 is not valid JSON (Expecting ',' delimiter at column 27); fix it, \
or read the file as plain text with --input-format text"
    """
    try:
        value = json.loads(line)
    except ValueError as exc:  # never sent as text: a typo must not lose its id
        return Record(None, number, None, _not_json(number, exc), invalid=True)
    except RecursionError:
        return Record(None, number, None, f"line {number} is nested too deeply to read", True)
    if isinstance(value, dict):
        ident = value.get("id")
        text = value.get("text")
        ident = number if ident is None else ident
    elif isinstance(value, str) or value is None:
        ident, text = number, value
    else:  # a number, list or boolean on its own: not a record
        kind = "an array" if isinstance(value, list) else "a boolean"
        kind = "a number" if isinstance(value, int | float) and value is not True else kind
        kind = "a boolean" if isinstance(value, bool) else kind
        message = f"line {number} is {kind}, not a JSON object or string"
        return Record(number, number, None, message, invalid=True)
    problem = _text_problem(text, has_key=not isinstance(value, dict) or "text" in value)
    return Record(ident, number, None if problem else text, problem)


def _not_json(number: int, exc: ValueError) -> str:
    where = str(exc)
    if isinstance(exc, json.JSONDecodeError):  # "line 1" of one line says nothing: the column
        where = f"{exc.msg} at column {exc.colno}"
    return (
        f"line {number} is not valid JSON ({where}); fix it, "
        "or read the file as plain text with --input-format text"
    )


def _text_problem(text: Any, *, has_key: bool) -> str:
    if not has_key:
        return "the record has no 'text'"
    if text is None:
        return "the record's text is null"
    if not isinstance(text, str):
        return f"the record's text is a {type(text).__name__}, not a string"
    if not text.strip():
        return "the record's text is empty"
    return ""


def done_ids(path: str, records: list[Record]) -> set[str]:
    """The ids that an earlier run already wrote to `path` (for `--resume`).

    A last line without its newline (the run was killed while writing it) is
    cut off the file, so its record runs again. Blank lines are skipped.

    Raises:
        BatchInputError: When a line is not a result of this batch.
    """
    try:
        with open(path, "r+b") as file:
            data = file.read()
            whole = data[: data.rfind(b"\n") + 1]
            if len(whole) < len(data):
                file.truncate(len(whole))
                os.fsync(file.fileno())
    except FileNotFoundError:
        return set()
    except OSError as exc:
        raise BatchInputError(f"cannot resume from {path}: {exc.strerror or exc}") from None
    known = {r.key for r in records}
    keys: set[str] = set()
    for number, line in enumerate(whole.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        key = _result_key(line)
        if key in known:
            keys.add(key)
        elif key is None or not key.startswith("line "):
            raise BatchInputError(_blocked(path, number, key))
        # else: the error line of a line that did not parse, and parses now: it runs again
    return keys


def _blocked(path: str, number: int, key: str | None) -> str:
    what = (
        "is not a result line (a JSON object with an 'id')"
        if key is None
        else f"holds the result for id {key}, which no record of this batch has"
    )
    return (
        f"cannot resume: line {number} of {path} {what}; delete that line (or correct "
        "its id) and run again with --resume, or start again with --overwrite"
    )


def _result_key(line: str) -> str | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "id" not in value:
        return None
    if value["id"] is None and isinstance(value.get("line"), int):
        return line_key(value["line"])
    return id_key(value["id"])


class ResultFile:
    """Where result lines go: appended whole, one write and one sync each.

    A kill between two records leaves only complete lines; a kill inside a
    write leaves at most one cut line at the end, which `done_ids` removes.
    With `empty_first`, the file is emptied just before its first line, so an
    old output survives a run that fails before any result (`--overwrite`).
    """

    def __init__(
        self, stream: IO[str] | None = None, *, path: str | None = None, empty_first: bool = False
    ) -> None:
        self._stream = stream
        self._path = path
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        # 0o666 less the umask, as any tool makes a data file (0644 under umask 022).
        self._fd = -1 if path is None else os.open(path, flags, 0o666)
        # Only a regular file can be synced or emptied; /dev/null refuses a sync.
        self._regular = self._fd >= 0 and stat.S_ISREG(os.fstat(self._fd).st_mode)
        self._empty_first = empty_first and self._regular

    def write(self, line: str) -> None:
        """Append one line (without its newline) and make it durable.

        Raises:
            OutputWriteError: When the line cannot be written.
        """
        try:
            self._write(line)
        except BrokenPipeError as exc:
            if self._fd < 0:
                raise OutputWriteError("stdout is closed", closed_pipe=True) from None
            raise self._error(exc) from None
        except OSError as exc:
            raise self._error(exc) from None

    def _write(self, line: str) -> None:
        if self._fd < 0:
            assert self._stream is not None
            print(line, file=self._stream, flush=True)
            return
        if self._empty_first:
            os.ftruncate(self._fd, 0)
            self._empty_first = False
        data = (line + "\n").encode("utf-8")
        while data:
            data = data[os.write(self._fd, data) :]
        if self._regular:
            os.fsync(self._fd)

    def _error(self, exc: OSError) -> OutputWriteError:
        where = "stdout" if self._path is None else f"output file {self._path}"
        return OutputWriteError(f"cannot write {where}: {exc.strerror or exc}")

    def close(self) -> None:
        """Close the file, if one was opened."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
