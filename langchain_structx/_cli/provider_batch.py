"""`structx extract --batch in.jsonl --via provider-batch --output out.jsonl`.

The batch goes to the model's provider as a provider batch job, kept in the
folder `out.jsonl.job` beside the output. Lines, exit codes and the summary are
those of a local batch; the summary adds the batch's tokens and discount.
Running the command again with `--resume` takes a stopped job up (polling its
batches, never sending one twice); Ctrl-C asks before cancelling the remote batch.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_structx import batch
from langchain_structx._cli import exits
from langchain_structx._cli.batch_run import MISSING_TEXT, describe
from langchain_structx._cli.exits import CliError, to_json
from langchain_structx._cli.records import Record, Tally, done_ids, read_records
from langchain_structx._provider_batch._job import Outcome
from langchain_structx._provider_batch._state import JobFolder
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY

JOB_SUFFIX = ".job"
"""The job folder is the output's path with this added."""
SETTINGS = batch.BatchSettings(poll_every=5.0, poll_max=120.0)
"""How the command polls: often at first, as a batch of a few records may end in minutes."""


def run(args: argparse.Namespace, extractor_for: Callable[[], Any]) -> int:
    """Run `args.batch` as a provider batch job; returns the exit code.

    Args:
        args: The command's options.
        extractor_for: Builds the command's extractor without its agent (it
            shapes each result line as a live batch does, and loads the model).
    """
    _check(args)
    records = read_records(args.batch)
    if not records:
        raise CliError(f"batch file {args.batch} holds no records")
    folder = Path(args.output + JOB_SUFFIX)
    output = Path(args.output)
    fresh = _prepare(args, folder, output)
    extractor = extractor_for()
    opened = batch._Opened.make(extractor.model, extractor.strategy, args.system, SETTINGS)
    opened.line = lambda outcome: _line(extractor, outcome)
    job = _open(opened, folder, output, records, fresh)
    return _wait(job, len(records))


def _check(args: argparse.Namespace) -> None:
    if not args.batch:
        raise CliError("--via provider-batch works with --batch")
    if not args.output:
        raise CliError("--via provider-batch needs --output FILE; the job is kept beside it")
    if args.server:
        raise CliError("--via provider-batch sends the batch to the model's provider, not --server")
    if not args.model.startswith(("openai:", "anthropic:")):
        raise CliError("--via provider-batch needs an openai: or anthropic: --model")


def _prepare(args: argparse.Namespace, folder: Path, output: Path) -> bool:
    """Whether a new job starts; an old job or output is kept, taken up or cleared as asked."""
    holds = output.exists() and output.stat().st_size > 0
    if (folder / "job.json").exists():
        if args.overwrite:
            shutil.rmtree(folder)
            output.write_bytes(b"")
            return True
        if not args.resume:
            raise CliError(
                f"--output {args.output} has a provider batch job under way ({folder}); "
                "--resume takes it up, --overwrite starts again"
            )
        return False
    if holds and not (args.resume or args.overwrite):
        raise CliError(
            f"--output {args.output} already holds results; "
            "--resume continues that batch, --overwrite starts it again"
        )
    if args.overwrite:
        output.write_bytes(b"")
    return True


def _open(
    opened: Any, folder: Path, output: Path, records: list[Record], fresh: bool
) -> batch.BatchJob:
    if not fresh:
        kept = JobFolder(folder).records()
        if [r["id"] for r in kept] != [r.id for r in records] or any(
            k["text"] != r.text for k, r in zip(kept, records, strict=True)
        ):
            raise CliError(f"the job in {folder} was started on other records")
        return batch._take_up(opened, folder, output)
    finished = done_ids(str(output), records)
    todo = [r for r in records if r.key not in finished]
    made = batch._start(opened, todo, folder, output)
    made.summary.skipped = len(records) - len(todo)
    return made


def _wait(job: batch.BatchJob, total: int) -> int:
    started = time.monotonic()
    try:
        summary = job.wait(progress=True)
    except KeyboardInterrupt:
        _interrupted(job)
        return exits.EXIT_INTERRUPTED
    tally = Tally(
        summary.done, summary.failed, total - summary.done - summary.failed, summary.tokens
    )
    tally.started = started
    print(f"structx: {tally.summary()}", file=sys.stderr)
    print(f"structx: {summary.report()}", file=sys.stderr)
    return exits.EXIT_PARTIAL if summary.failed else exits.EXIT_OK


def _interrupted(job: batch.BatchJob) -> None:
    print("\nstructx: interrupted", file=sys.stderr, flush=True)
    if sys.stdin is not None and sys.stdin.isatty():
        answer = input("structx: cancel the remote batch as well? [y/N] ").strip().lower()
        if answer in ("y", "yes"):
            job.cancel()
            print("structx: cancelling; run again with --resume to write what ran", file=sys.stderr)
            return
    print(
        "structx: the remote batch goes on; run again with --resume to take it up", file=sys.stderr
    )


def _line(extractor: Any, outcome: Outcome) -> dict[str, Any]:
    record, settled = outcome.record, outcome.settled
    if settled is None:
        message = f"line {record.get('line')}: {record.get('problem')}"
        return {"id": record["id"], "error": {"type": MISSING_TEXT, "message": message}}
    if settled.error is not None:
        kind, message = describe(settled.error)
        return {"id": record["id"], "error": {"type": kind, "message": message}}
    assert settled.result is not None
    result = settled.result
    state = {RESPONSE_KEY: result.value, KIND_KEY: result.variant, REPORT_KEY: result.report}
    output = extractor.result(state)
    try:
        to_json(output)
    except Exception as exc:  # noqa: BLE001 - an unprintable value is this record's failure
        kind, message = describe(exc)
        return {"id": record["id"], "error": {"type": kind, "message": message}}
    return {"id": record["id"], "output": output}
