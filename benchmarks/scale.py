"""Benchmark a batch spread over LangGraph Server's workers beside the same batch in-process.

Run with `python benchmarks/scale.py` (about half a minute). A batch of 60 records goes
through `structx extract --batch`, on the echo stand-in model
(`langchain_structx.testing.echo_model`, no weights) so that the figures measure
the package and the server, not a model:

- local: the batch in this process, `--concurrency 8`;
- server, N jobs: `--server` against `langgraph dev` on loopback, started by this
  script with `--n-jobs-per-worker N` (how `langgraph dev` sets langgraph-api's
  `N_JOBS_PER_WORKER`) for N = 1, 2 and 4, graph `extract_offline`, 8 runs in
  flight. Each server is warmed up with a few records first, and stopped after.

It prints records per second (wall time of the whole batch, median of 3 runs) and
records them with `_record.record`. Nothing is asserted: on the echo model a run
costs little, so the server's figures mostly show its per-run overhead (HTTP,
queue, checkpoints of a stateless run); with a real model each job waits on the
model and more jobs per worker pay off until the model or the CPU is saturated.

In the same run it measures what a PostgreSQL checkpoint costs per attempt beside
LangGraph's in-memory saver (`checkpoint_cost.checkpoint_figures`, on the embedded
PostgreSQL the test suite uses); `checkpoint_cost.py` alone gives the fuller table.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from _record import record  # noqa: E402 - benchmarks run as scripts
from checkpoint_cost import ATTEMPTS, LABELS, checkpoint_figures  # noqa: E402
from langgraph_dev import langgraph_dev  # noqa: E402

from langchain_structx import cli  # noqa: E402
from langchain_structx.testing import echo_model  # noqa: E402

RECORDS = 60
REPEATS = 3
IN_FLIGHT = 8
JOBS = (1, 2, 4)
WARM_UP = 4
CHECKPOINT_ANSWERS = 100
CONTACT = {
    "title": "Contact",
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "required": ["name", "email"],
}


def _inputs(folder: Path, count: int, name: str) -> list[str]:
    schema = folder / "contact.json"
    schema.write_text(json.dumps(CONTACT))
    batch = folder / f"{name}.jsonl"
    lines = (
        json.dumps(json.dumps({"name": f"P{i}", "email": f"p{i}@example.org"}))
        for i in range(count)
    )
    batch.write_text("\n".join(lines) + "\n")
    output = folder / f"{name}.out.jsonl"
    # Each repeat writes the same output file again.
    return [
        *("extract", "--schema", str(schema), "--batch", str(batch)),
        *("--output", str(output), "--overwrite"),
    ]


def _timed_batch(argv: list[str]) -> float:
    """Seconds for one batch; the progress bar is swallowed, a failed record is an error."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        start = time.perf_counter()
        code = cli.main(argv)
        seconds = time.perf_counter() - start
    if code != cli.EXIT_OK:
        raise RuntimeError(f"the batch failed with exit code {code}: {err.getvalue()[-500:]}")
    return seconds


def _rate(run: Callable[[], float]) -> float:
    return RECORDS / statistics.median(run() for _ in range(REPEATS))


def local_rate(folder: Path) -> float:
    """Records per second of the batch in this process, on the echo model."""
    original = cli.load_model
    cli.load_model = lambda spec: echo_model(calls=RECORDS * 4)  # type: ignore[assignment]
    try:
        argv = [*_inputs(folder, RECORDS, "local"), "--concurrency", str(IN_FLIGHT)]
        return _rate(lambda: _timed_batch(argv))
    finally:
        cli.load_model = original  # type: ignore[assignment]


def server_rate(folder: Path, jobs: int) -> float:
    """Records per second through `langgraph dev` with `jobs` jobs per worker."""
    workdir = folder / f"server-{jobs}"
    workdir.mkdir()
    with langgraph_dev(workdir, n_jobs_per_worker=jobs) as server:
        remote = ["--server", server.url, "--graph", "extract_offline"]
        flight = ["--concurrency", str(IN_FLIGHT)]
        _timed_batch([*_inputs(folder, WARM_UP, f"warm-{jobs}"), *remote, *flight])
        argv = [*_inputs(folder, RECORDS, f"server-{jobs}"), *remote, *flight]
        return _rate(lambda: _timed_batch(argv))


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        rates = {"local, in-process": local_rate(folder)}
        for jobs in JOBS:
            rates[f"server, {jobs} job{'s' * (jobs > 1)}/worker"] = server_rate(folder, jobs)
        checkpoints = checkpoint_figures(CHECKPOINT_ANSWERS, warmup=10)
    per_attempt = {
        f"{label}, {a} attempt{'s' * (a > 1)}": checkpoints[label, a][0] / a * 1e3
        for a in ATTEMPTS
        for label in LABELS
    }
    print(f"{RECORDS} records, echo model, {IN_FLIGHT} in flight, median of {REPEATS} runs")
    print(f"{'batch':<28} {'records/s':>10}")
    for name, rate in rates.items():
        print(f"{name:<28} {rate:>10.1f}")
    print(f"\nwall ms per attempt, {CHECKPOINT_ANSWERS} answers per saver (same run)")
    for name, ms in per_attempt.items():
        print(f"{name:<32} {ms:>8.2f}")
    record(
        "scale",
        title=f"structx extract --batch: {RECORDS} records on the echo model",
        unit="records per second",
        groups=list(rates),
        series={"structx": list(rates.values())},
        extra={
            "records": RECORDS,
            "in_flight": IN_FLIGHT,
            "repeats": REPEATS,
            "checkpoint_ms_per_attempt": per_attempt,
        },
    )
    return rates


if __name__ == "__main__":
    main()
