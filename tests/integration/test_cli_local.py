"""The `structx` console script on the real embedded model: a text longer than the
context window is one line and exit code 2, and `--n-ctx` / `--threads` reach the model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_structx import cli

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STRUCTX = shutil.which("structx", path=os.path.dirname(sys.executable))


def _structx(*args: str, text: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [STRUCTX or "structx", "extract", *args, "-"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_text_over_the_context_window_is_one_line_with_a_hint(default_weights: Path) -> None:
    text = "Ada Lovelace was a mathematician. " * 400  # about 2,800 tokens
    result = _structx("--schema", "name", "--n-ctx", "512", "--threads", "1", text=text)
    assert result.returncode == cli.EXIT_USAGE
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("structx: ContextWindowError: the text needs ")
    assert "context window holds 512; raise --n-ctx" in result.stderr


def test_the_same_text_fits_a_larger_n_ctx(default_weights: Path) -> None:
    text = "Ada Lovelace was a mathematician. " * 100  # about 700 tokens
    small = _structx("--schema", "name", "--n-ctx", "512", "--max-retries", "0", text=text)
    large = _structx("--schema", "name", "--n-ctx", "2048", "--max-retries", "1", text=text)
    assert small.returncode == cli.EXIT_USAGE
    assert large.returncode == cli.EXIT_OK, large.stderr
    assert "Ada" in large.stdout
