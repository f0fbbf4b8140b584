"""What a batch reports as it runs: a progress bar, and the final summary line."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Tally:
    """Counts for the final summary line."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        """One line: done, failed, skipped, elapsed time and tokens.

        Examples:
            >>> Tally(done=3, failed=1, skipped=2, tokens=420).summary().split(", ")[:3]
            ['batch: 3 done', '1 failed', '2 skipped (already in the output)']
        """
        elapsed = time.monotonic() - self.started
        return (
            f"batch: {self.done} done, {self.failed} failed, "
            f"{self.skipped} skipped (already in the output), "
            f"{elapsed:.1f} s, {self.tokens} tokens"
        )


def usage_tokens(report: Any) -> int:
    """Total tokens in a report or a usage mapping; 0 when it holds none.

    Examples:
        >>> usage_tokens({"usage": {"total_tokens": 12}}), usage_tokens(None)
        (12, 0)
    """
    if isinstance(report, dict) and isinstance(report.get("usage"), dict):
        report = report["usage"]
    if isinstance(report, dict) and isinstance(report.get("total_tokens"), int):
        return int(report["total_tokens"])
    return 0


class Progress:
    """A tqdm bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, initial: int, unit: str = "record") -> None:
        self._bar: Any = None
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=initial, unit=unit, file=sys.stderr)

    def update(self, failed: int) -> None:
        """One more record finished; `failed` so far."""
        if self._bar is not None:
            self._bar.set_postfix(failed=failed, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.close()
