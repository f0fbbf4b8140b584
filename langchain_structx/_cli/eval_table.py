"""What `structx eval` measures: one row per strategy, and the one to recommend.

A row sums the answers of one strategy over every input: how many came back
valid, how many expected fields they got exactly right, how many model calls
and tokens each cost, and how long each took (median and 95th percentile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

EVAL_STRATEGIES = ("provider", "tool", "prompted", "json")
"""What `structx eval` compares: the three strategies, and prompted with JSON mode."""

DESCRIPTIONS = {
    "provider": "the provider's native structured output",
    "tool": "a forced tool call",
    "prompted": "JSON asked for in the prompt",
    "json": "JSON asked for in the prompt, with the provider's JSON mode",
}
"""What each strategy of the table is, for the recommendation line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """One input run through one strategy."""

    valid: bool
    """Whether a validated object came back."""
    calls: int
    """Model calls spent on it."""
    tokens: int
    """Tokens those calls used, as the model reported them."""
    seconds: float
    """Wall time, retries included."""
    matched: int = 0
    """Expected top-level fields the answer got exactly right."""
    expected: int = 0
    """Expected top-level fields (0 when the input gives no expected output)."""
    error: str = ""
    """Why no object came back."""


def compare_fields(value: Any, expected: Any) -> tuple[int, int]:
    """Exactly right fields of `value`, and how many `expected` names.

    An expected output that is not an object counts as one field, the whole value.

    Examples:
        >>> compare_fields({"a": 1, "b": 2}, {"a": 1, "b": 3})
        (1, 2)
        >>> compare_fields(None, {"a": 1})
        (0, 1)
    """
    if not isinstance(expected, Mapping):
        return int(value == expected), 1
    if not isinstance(value, Mapping):
        return 0, len(expected)
    matched = sum(1 for name, want in expected.items() if name in value and value[name] == want)
    return matched, len(expected)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of `values` (0 for none).

    Examples:
        >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([1.0, 2.0, 3.0, 4.0], 0.95)
        (2.0, 4.0)
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


@dataclass(slots=True)
class Row:
    """The measurements of one strategy over every input."""

    strategy: str
    answers: list[Answer] = field(default_factory=list)

    @property
    def valid_pct(self) -> float:
        """Answers that validated, in percent."""
        return _pct(sum(a.valid for a in self.answers), len(self.answers))

    @property
    def exact_pct(self) -> float | None:
        """Expected fields got exactly right, in percent; None when no input gives any."""
        total = sum(a.expected for a in self.answers)
        return None if total == 0 else _pct(sum(a.matched for a in self.answers), total)

    @property
    def calls_per_answer(self) -> float:
        """Model calls per input, retries included."""
        return _mean([a.calls for a in self.answers])

    @property
    def tokens_per_answer(self) -> float:
        """Tokens per input, retries included."""
        return _mean([a.tokens for a in self.answers])

    def latency(self, fraction: float) -> float:
        """A percentile of the seconds per input."""
        return percentile([a.seconds for a in self.answers], fraction)

    @property
    def first_error(self) -> str:
        """The first failure's message, if any input failed."""
        return next((a.error for a in self.answers if not a.valid and a.error), "")

    def as_json(self) -> dict[str, Any]:
        """The row as plain data, for a profile file."""
        return {
            "strategy": self.strategy,
            "answers": len(self.answers),
            "valid_pct": round(self.valid_pct, 1),
            "exact_fields_pct": None if self.exact_pct is None else round(self.exact_pct, 1),
            "calls_per_answer": round(self.calls_per_answer, 2),
            "tokens_per_answer": round(self.tokens_per_answer, 1),
            "p50_seconds": round(self.latency(0.5), 3),
            "p95_seconds": round(self.latency(0.95), 3),
        }


def _pct(part: int, whole: int) -> float:
    return 0.0 if whole == 0 else 100.0 * part / whole


def _mean(values: Sequence[int]) -> float:
    return 0.0 if not values else sum(values) / len(values)


def ranked(rows: Sequence[Row]) -> list[Row]:
    """The rows best first: most valid, then most exact, fewest calls, fastest.

    Examples:
        >>> fast = Row("tool", [Answer(valid=True, calls=1, tokens=9, seconds=1.0)])
        >>> slow = Row("json", [Answer(valid=True, calls=2, tokens=9, seconds=1.0)])
        >>> [row.strategy for row in ranked([slow, fast])]
        ['tool', 'json']
    """

    def key(row: Row) -> tuple[float, float, float, float, float]:
        exact = row.exact_pct if row.exact_pct is not None else 0.0
        return (
            -row.valid_pct,
            -exact,
            row.calls_per_answer,
            row.latency(0.5),
            row.tokens_per_answer,
        )

    return sorted(rows, key=key)


def recommendation(rows: Sequence[Row]) -> str:
    """One line: the strategy to use, and why."""
    best = ranked(rows)[0]
    if best.valid_pct == 0:
        return "recommended: none; no strategy produced a valid answer (see the errors above)"
    exact = "" if best.exact_pct is None else f", {best.exact_pct:.0f}% exact fields"
    return (
        f"recommended: {best.strategy} ({DESCRIPTIONS.get(best.strategy, best.strategy)}): "
        f"{best.valid_pct:.0f}% valid{exact}, {best.calls_per_answer:.2f} model calls "
        f"per answer, p50 {best.latency(0.5):.2f} s"
    )


def profile_order(rows: Sequence[Row]) -> tuple[tuple[str, ...], bool]:
    """`AutoStrategy`'s order and JSON mode from the ranked rows.

    `json` is the prompted strategy with JSON mode: whichever of the two ranks
    first gives the prompted place and decides JSON mode.

    Examples:
        >>> rows = [Row(name, [Answer(valid=ok, calls=1, tokens=1, seconds=1.0)])
        ...         for name, ok in (("provider", False), ("json", True), ("tool", True))]
        >>> profile_order(rows)
        (('prompted', 'tool', 'provider'), True)
    """
    order: list[str] = []
    json_mode = False
    for row in ranked(rows):
        name = "prompted" if row.strategy == "json" else row.strategy
        if name in order:
            continue
        json_mode = json_mode or row.strategy == "json"
        order.append(name)
    return tuple(order), json_mode


HEADERS = (
    "strategy",
    "valid %",
    "exact fields %",
    "calls/answer",
    "tokens/answer",
    "p50 s",
    "p95 s",
)


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, best first.

    Examples:
        >>> row = Row("tool", [Answer(valid=True, calls=1, tokens=90, seconds=0.5)])
        >>> print(table([row]).splitlines()[2])
        | tool | 100 | - | 1.00 | 90 | 0.50 | 0.50 |
    """
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in ranked(rows):
        exact = "-" if row.exact_pct is None else f"{row.exact_pct:.0f}"
        cells = (
            row.strategy,
            f"{row.valid_pct:.0f}",
            exact,
            f"{row.calls_per_answer:.2f}",
            f"{row.tokens_per_answer:.0f}",
            f"{row.latency(0.5):.2f}",
            f"{row.latency(0.95):.2f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
