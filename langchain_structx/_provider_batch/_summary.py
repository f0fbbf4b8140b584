"""What a provider batch job reports: its result lines and its counts and tokens.

A line is what `structx extract --batch` writes for a record: `{"id", "output"}`
or `{"id", "error": {"type", "message"}}`; the summary counts what this
process wrote and the tokens of every round, which the provider bills at half
the live price.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python

from langchain_structx._provider_batch._job import Outcome
from langchain_structx._provider_batch._wire import BATCH_DISCOUNT


@dataclass(slots=True)
class BatchSummary:
    """What a job did in this process.

    Attributes:
        done: Records written with an answer.
        failed: Records written with an error.
        skipped: Records an earlier process had already written.
        input_tokens: Prompt tokens of the written records, every round.
        output_tokens: Completion tokens of the written records, every round.
        rounds: Rounds of batches the job ran (the first ask and its re-asks).
        started: When this process took the job up (monotonic clock).
    """

    done: int = 0
    failed: int = 0
    skipped: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rounds: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def tokens(self) -> int:
        """Every token of the written records."""
        return self.input_tokens + self.output_tokens

    def report(self) -> str:
        """One line on the batch price: its tokens and the discount.

        Examples:
            >>> print(BatchSummary(input_tokens=900, output_tokens=100, rounds=2).report())
            provider batch: 2 rounds, 900 input + 100 output tokens, billed at 50% of the live price
        """
        return (
            f"provider batch: {self.rounds} rounds, {self.input_tokens} input + "
            f"{self.output_tokens} output tokens, billed at "
            f"{BATCH_DISCOUNT:.0%} of the live price"
        )


def default_line(outcome: Outcome, *, union: bool) -> dict[str, Any]:
    """A result line as `structx extract --batch` writes one (without `--report`)."""
    record, settled = outcome.record, outcome.settled
    if settled is None:
        return {
            "id": record["id"],
            "error": {"type": "MissingTextError", "message": record.get("problem", "")},
        }
    if settled.error is not None:
        error = settled.error
        return {"id": record["id"], "error": {"type": type(error).__name__, "message": str(error)}}
    assert settled.result is not None
    value = to_jsonable_python(settled.result.value, fallback=str)
    if union:
        value = {"kind": settled.result.variant, "value": value}
    return {"id": record["id"], "output": value}


def count(summary: BatchSummary, outcome: Outcome) -> None:
    settled = outcome.settled
    ok = settled is not None and settled.result is not None
    summary.done += ok
    summary.failed += not ok
    usage: Any = None
    if settled is not None and settled.result is not None and settled.result.report:
        usage = settled.result.report.get("usage")
    elif settled is not None:
        usage = getattr(settled.error, "usage", None)
    if isinstance(usage, dict):
        summary.input_tokens += int(usage.get("input_tokens") or 0)
        summary.output_tokens += int(usage.get("output_tokens") or 0)
