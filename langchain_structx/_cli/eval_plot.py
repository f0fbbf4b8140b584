"""`structx eval --plot`: the table as a chart (matplotlib, from the `plot` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_structx._cli.eval_table import Row, ranked
from langchain_structx._cli.exits import EXIT_MODEL, CliError


class PlotUnavailableError(CliError):
    """`--plot` was asked for, but matplotlib is not installed."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"--plot needs matplotlib ({reason}); install langchain-structx[plot]", EXIT_MODEL
        )


def pyplot() -> Any:
    """Matplotlib's pyplot on the file-only Agg backend.

    Raises:
        PlotUnavailableError: When matplotlib cannot be imported.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # a file, never a window
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailableError(str(exc)) from None
    return plt


def draw(rows: Sequence[Row], path: str, *, title: str) -> None:
    """Draw the table as three panels: quality, cost in calls, and latency.

    Raises:
        PlotUnavailableError: When matplotlib cannot be imported.
        CliError: When the file cannot be written.
    """
    plt = pyplot()
    ordered = ranked(rows)
    names = [row.strategy for row in ordered]
    places = list(range(len(names)))
    figure, (quality, calls, latency) = plt.subplots(1, 3, figsize=(12, 4))
    _pair(
        quality,
        places,
        [row.valid_pct for row in ordered],
        [row.exact_pct or 0.0 for row in ordered],
        ("valid %", "exact fields %"),
    )
    quality.set_ylim(0, 105)
    quality.set_title("quality (higher is better)")
    calls.bar(places, [row.calls_per_answer for row in ordered], color="tab:gray")
    calls.set_title("model calls per answer (lower is better)")
    _pair(
        latency,
        places,
        [row.latency(0.5) for row in ordered],
        [row.latency(0.95) for row in ordered],
        ("p50 s", "p95 s"),
    )
    latency.set_title("seconds per answer (lower is better)")
    for axes in (quality, calls, latency):
        axes.set_xticks(places, names)
    figure.suptitle(title)
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=100)
    except OSError as exc:
        raise CliError(f"cannot write --plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)


def _pair(
    axes: Any, places: list[int], first: list[float], second: list[float], labels: tuple[str, str]
) -> None:
    width = 0.4
    axes.bar([p - width / 2 for p in places], first, width, label=labels[0])
    axes.bar([p + width / 2 for p in places], second, width, label=labels[1])
    axes.legend(fontsize="small")
