"""Saving benchmark figures: a JSON record and a side-by-side bar chart.

Each benchmark prints its table, then calls `record(...)`, which writes
`benchmarks/results/<name>.json` (figures, date, commit) and, when matplotlib is
installed, `docs/img/bench-<name>.png`: grouped bars of ours beside stock
LangChain (or the reference), stamped with the same date and commit.
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
IMAGES = ROOT / "docs" / "img"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def record(
    name: str,
    *,
    title: str,
    unit: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    extra: Mapping[str, Any] | None = None,
    log_scale: bool = False,
) -> Path:
    """Write the figures of one benchmark and draw them.

    Args:
        name: File stem, such as `"parse"`.
        title: Chart title.
        unit: What the values measure, for the axis label.
        groups: The x-axis categories (sizes, cases, strategies).
        series: One list of values per bar colour, e.g. `{"structx": [...],
            "langchain": [...]}`; None where a series has no figure.
        extra: Anything else worth keeping in the JSON record.
        log_scale: Use a logarithmic value axis (for ratios over decades).

    Returns:
        The path of the JSON record.
    """
    stamp = {"date": _dt.date.today().isoformat(), "commit": _commit()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {
        "name": name,
        "title": title,
        "unit": unit,
        "groups": list(groups),
        "series": {k: list(v) for k, v in series.items()},
        **stamp,
        **({"extra": dict(extra)} if extra else {}),
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _chart(name, title, unit, groups, series, stamp, log_scale)
    return path


def _label(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}"


def _chart(
    name: str,
    title: str,
    unit: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    stamp: Mapping[str, str],
    log_scale: bool,
) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: chart skipped)")
        return
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) + 3), 3.6))
    for index, (label, values) in enumerate(series.items()):
        xs = [g + index * width for g in range(len(groups))]
        ys = [v if v is not None else 0.0 for v in values]
        bars = ax.bar(xs, ys, width=width, label=label)
        ax.bar_label(bars, labels=[_label(v) for v in values], fontsize=7)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels(list(groups), rotation=20 if len(groups) > 4 else 0, ha="right")
    ax.set_ylabel(unit)
    if log_scale:
        ax.set_yscale("log")
    ax.set_title(f"{title}\n{stamp['date']} · commit {stamp['commit']}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    IMAGES.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMAGES / f"bench-{name}.png", dpi=110)
    plt.close(fig)
