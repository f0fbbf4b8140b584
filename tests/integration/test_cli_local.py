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


def test_eval_on_the_embedded_model_saves_a_profile_extract_uses(
    default_weights: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    profile = tmp_path / "profile.json"
    inputs = ROOT / "examples" / "contact" / "eval.jsonl"
    schema = str(ROOT / "examples" / "contact" / "contact.json")
    command = [STRUCTX or "structx", "eval", "--schema", schema, "--inputs", str(inputs)]
    command += ["--limit", "2", "--strategies", "tool,json", "--save-profile", str(profile)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == cli.EXIT_OK, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("| tool", "| json"))]
    assert len(rows) == 2 and "recommended: " in result.stdout
    saved = profile.read_text()
    assert '"format": "structx-strategy-profile/1"' in saved
    extracted = _structx(
        "--schema",
        schema,
        "--profile",
        str(profile),
        "--report",
        text="Reach Maria Lopez at maria.lopez@example.org.",
    )
    assert extracted.returncode == cli.EXIT_OK, extracted.stderr
    assert "maria.lopez@example.org" in extracted.stdout
