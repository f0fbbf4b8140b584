"""`structx extract --batch`: every record run once, its line written as it ends.

Local and `--server` batches share this loop, so their lines, order, resume
and summary are the same. Lines are written in input order, each as soon as it
and those before it are done, to a `ResultFile` that keeps every finished line
through a kill; `--resume` skips the ids an earlier run wrote.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, NoReturn, Protocol

from langchain_structx._cli import exits
from langchain_structx._cli.exits import CliError, to_json
from langchain_structx._cli.records import (
    INVALID_LINE,
    OutputWriteError,
    Progress,
    Record,
    ResultFile,
    Tally,
    done_ids,
    input_format,
    read_records,
    usage_tokens,
)
from langchain_structx._cli.remote import RemoteExtractor, RemoteRunError, ServerUnavailableError
from langchain_structx.report import REPORT_KEY

CONTEXT_ERROR = "ContextWindowError"
"""The error type reported for a text longer than the model's context window."""
MISSING_TEXT = "MissingTextError"
"""The error type of a record that has no text to extract from."""
_CONTEXT = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")
"""llama-cpp-python's untyped error, as another llama.cpp chat model (`--model python:`)
raises it, or as a server running an older langchain-structx reports it."""


class Runner(Protocol):
    """What the batch loop needs from the command's extractor."""

    remote: RemoteExtractor | None

    async def arun(self, text: str) -> dict[str, Any]:
        """The final state for one text."""
        ...

    def result(self, state: dict[str, Any]) -> Any:
        """What to print for a final state."""
        ...


def describe(exc: BaseException) -> tuple[str, str]:
    """The error type and message to report for `exc`.

    The embedded model's `ContextWindowError` (and the same failure from any model
    built on llama-cpp-python) is reported with a hint to raise `--n-ctx`.

    Examples:
        >>> from langchain_structx.local import ContextWindowError
        >>> print(*describe(ContextWindowError(9000, 4096)))  # doctest: +NORMALIZE_WHITESPACE
        ContextWindowError the text needs 9000 tokens but the model's context window
        holds 4096; raise --n-ctx or shorten the text
        >>> describe(ValueError("Requested tokens (9000) exceed context window of 4096"))[0]
        'ContextWindowError'
    """
    from langchain_structx.local import ContextWindowError  # only now: it is rarely needed

    message = str(exc)
    if isinstance(exc, ContextWindowError):
        needed = "more" if exc.needed is None else str(exc.needed)
        return CONTEXT_ERROR, _context_hint(needed, exc.window)
    found = _CONTEXT.search(message)
    if found:
        return CONTEXT_ERROR, _context_hint(*found.groups())
    # A run that failed on a server reports the exception the server raised.
    name = exc.error_type if isinstance(exc, RemoteRunError) else type(exc).__name__
    return name, message


def _context_hint(needed: str | int, window: str | int) -> str:
    return (
        f"the text needs {needed} tokens but the model's context window holds {window}; "
        "raise --n-ctx or shorten the text"
    )


def run_batch(args: argparse.Namespace, make: Callable[[argparse.Namespace], Runner]) -> int:
    """Run `args.batch` with the extractor `make` builds; returns the exit code.

    The input is read and the output checked before the model is loaded, so a
    bad batch or output file fails at once. `--overwrite` empties the output only
    when the first result is ready, so a model that cannot be loaded leaves it whole.
    """
    records = read_records(args.batch, input_format(args.batch, args.input_format))
    if not records:
        name = "stdin" if args.batch == "-" else f"batch file {args.batch}"
        raise CliError(f"{name} holds no records")
    sink, finished = _open_results(args, records)
    todo = [r for r in records if r.key not in finished]
    tally = Tally(skipped=len(records) - len(todo))
    _BATCH.start(tally, len(records), resumable=bool(args.output))
    try:
        extractor = make(args)
        concurrency = _concurrency(args, extractor)
        _until_done(_run(extractor, todo, concurrency, sink, tally))
    finally:
        sink.close()
    print(f"structx: {tally.summary()}", file=sys.stderr)
    return exits.EXIT_PARTIAL if tally.failed else exits.EXIT_OK


class _BatchStatus:
    """How far the running batch is, for the line an interruption prints."""

    def __init__(self) -> None:
        self.tally: Tally | None = None
        self.total = 0
        self.resumable = False

    def start(self, tally: Tally | None, total: int = 0, *, resumable: bool = False) -> None:
        """Follow this batch (or none, with None)."""
        self.tally, self.total, self.resumable = tally, total, resumable

    def interrupted(self) -> str:
        """`interrupted`, with how many records are kept and how to go on."""
        tally = self.tally
        if tally is None:
            return "interrupted"
        kept = tally.done + tally.failed + tally.skipped
        line = f"interrupted after {kept} of {self.total} records"
        if self.resumable:
            return f"{line}; rerun with --resume"
        return f"{line}; the lines printed are complete (use --output FILE to --resume)"


_BATCH = _BatchStatus()

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Ctrl-C, and what `timeout`, `kill` and `docker stop` send: both end a run alike."""


def _until_done(work: Coroutine[Any, Any, None]) -> None:
    # Not asyncio.run: on Ctrl-C it would wait for model calls still running in
    # worker threads, possibly for ever; the finished lines are already on disk.
    loop = asyncio.new_event_loop()
    # The kernel may hand Ctrl-C to the thread of a model call rather than to
    # this one, which waits on the loop: Python would then raise it here only
    # once something else woke the loop. A handler of the loop's own is woken
    # at once. (Left alone when a signal is ignored, as in a script's background job.)
    handled = []
    for number in STOP_SIGNALS:
        if not _default_action(number):
            continue
        try:
            loop.add_signal_handler(number, _interrupted, number)
        except (NotImplementedError, RuntimeError):  # Windows, or not the main thread
            continue
        handled.append(number)
    try:
        loop.run_until_complete(work)
        loop.run_until_complete(loop.shutdown_asyncgens())
    except KeyboardInterrupt:
        _interrupted()
    except OutputWriteError as exc:
        # Ended as Ctrl-C is, for the same reason; the lines written stay.
        _write_failed(exc)
    finally:
        for number in handled:
            loop.remove_signal_handler(number)
        loop.close()


def _default_action(number: int) -> bool:
    """Whether the signal still does what it does by default (it was not ignored or taken)."""
    handler = signal.getsignal(number)
    return handler in (signal.default_int_handler, signal.SIG_DFL, _raise_interrupt)


@contextlib.contextmanager
def interrupt_at_once() -> Iterator[None]:
    """Ctrl-C or SIGTERM ends the command at once, even while a model call hangs.

    `--stream` runs the model call on a worker thread; on a plain KeyboardInterrupt
    the main thread would wait for that call to return before it could exit.
    (Left alone when a signal is ignored or already handled.)
    """
    previous = {}
    for number in STOP_SIGNALS if threading.current_thread() is threading.main_thread() else ():
        if _default_action(number):
            previous[number] = signal.signal(number, lambda signum, _: _interrupted(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, while the block runs.

    So loading a model or a single extraction stopped by `timeout` or `kill`
    ends with the same one line as Ctrl-C, not a silent exit 143.
    """
    main = threading.current_thread() is threading.main_thread()  # only it may set handlers
    if not main or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> NoReturn:
    raise KeyboardInterrupt


def interrupted_message() -> str:
    """The line for an interruption: with a batch, how many records are kept."""
    return _BATCH.interrupted()


def forget_batch() -> None:
    """Start a command with no batch followed (`main` may run many in one process)."""
    _BATCH.start(None)


def _interrupted(signum: int = signal.SIGINT) -> NoReturn:
    print(f"structx: {_BATCH.interrupted()}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):  # stdout may be a closed pipe
        sys.stdout.flush()
    os._exit(exits.EXIT_INTERRUPTED)


def _write_failed(exc: OutputWriteError) -> NoReturn:
    if exc.closed_pipe:  # as `| head -1`: a quiet end, as other shell tools do
        stdout_to_devnull()
        os._exit(exits.EXIT_PIPE)
    print(f"structx: {exc}", file=sys.stderr, flush=True)
    os._exit(exits.EXIT_USAGE)


def stdout_to_devnull() -> None:
    """Point stdout at the null device, so no flush (Python's own at exit) fails again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):  # stdout may have no descriptor
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _open_results(args: argparse.Namespace, records: list[Record]) -> tuple[ResultFile, set[str]]:
    if not args.output:
        return ResultFile(sys.stdout), set()
    path = Path(args.output)
    finished: set[str] = set()
    holds_results = path.exists() and path.stat().st_size > 0
    if holds_results and args.resume:
        finished = done_ids(args.output, records)
    elif holds_results and not args.overwrite:
        raise CliError(
            f"--output {args.output} already holds results; "
            "--resume continues that batch, --overwrite starts it again"
        )
    try:
        return ResultFile(path=args.output, empty_first=args.overwrite), finished
    except OSError as exc:
        raise CliError(f"cannot write output file {args.output}: {exc.strerror or exc}") from None


def _no_text(record: Record) -> dict[str, Any]:
    if not record.invalid:
        error = {"type": MISSING_TEXT, "message": f"line {record.line}: {record.problem}"}
        return {"id": record.id, "error": error}
    line: dict[str, Any] = {"id": record.id}
    if record.id is None:  # no id to read: the line number says which record it was
        line["line"] = record.line
    line["error"] = {"type": INVALID_LINE, "message": record.problem}
    return line


def _concurrency(args: argparse.Namespace, extractor: Runner) -> int:
    if extractor.remote is None and args.model == "local" and args.concurrency > 1:
        print(
            f"structx: note: the embedded model answers one text at a time, so "
            f"--concurrency {args.concurrency} would only queue records; running them one by one",
            file=sys.stderr,
        )
        return 1
    return int(args.concurrency)


async def _run(
    extractor: Runner, records: list[Record], concurrency: int, sink: ResultFile, tally: Tally
) -> None:
    if extractor.remote is None:
        await _write_lines(extractor, records, concurrency, sink, tally)
        return
    try:
        await extractor.remote.check()
        await _write_lines(extractor, records, concurrency, sink, tally)
    except ServerUnavailableError as exc:
        raise CliError(str(exc), exits.EXIT_MODEL) from None
    finally:
        await extractor.remote.aclose()


async def _write_lines(
    extractor: Runner, records: list[Record], concurrency: int, sink: ResultFile, tally: Tally
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(record: Record) -> tuple[dict[str, Any], int]:
        if record.text is None:  # never an empty prompt: the record fails on its own
            return _no_text(record), 0
        async with gate:
            try:
                state = await extractor.arun(record.text)
                output = extractor.result(state)
                to_json(output)  # an unprintable value is this record's failure
                return {"id": record.id, "output": output}, usage_tokens(state.get(REPORT_KEY))
            except Exception as exc:  # noqa: BLE001 - every failure becomes a line, never a crash
                kind, message = describe(exc)
                tokens = usage_tokens(getattr(exc, "usage", None))
                return {"id": record.id, "error": {"type": kind, "message": message}}, tokens

    progress = Progress(total=tally.skipped + len(records), initial=tally.skipped)
    tasks = [asyncio.ensure_future(one(r)) for r in records]
    try:
        for task in tasks:
            line, tokens = await task
            sink.write(to_json(line))
            tally.done += "output" in line
            tally.failed += "error" in line
            tally.tokens += tokens
            progress.update(tally.failed)
    finally:
        for task in tasks:
            task.cancel()
        progress.close()
