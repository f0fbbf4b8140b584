"""`structx extract --batch ... --via provider-batch` against the fake batch servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_structx import cli
from langchain_structx._cli import provider_batch as _cli
from langchain_structx._provider_batch import _job
from langchain_structx.batch import BatchSettings

from .batch_jobs import expected, fake, texts

pytestmark = pytest.mark.integration

SCHEMA = '{"title": "Person", "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false}'  # noqa: E501


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cli, "SETTINGS", BatchSettings(poll_every=0.0, poll_max=0.0))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _inputs(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"r{n}", "text": t}) for n, t in enumerate(texts(count))]
    lines.append(json.dumps({"id": "empty", "text": ""}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _argv(provider: str, url: str, batch: Path, output: Path, *more: str) -> list[str]:
    model = "openai:gpt-4o" if provider == "openai" else "anthropic:claude-sonnet-4-6"
    base = f"{url}/v1" if provider == "openai" else url
    return ["extract", "--schema", SCHEMA, "--batch", str(batch), "--model", model,
            "--base-url", base, "--via", "provider-batch", "--output", str(output),
            "--max-retries", "2", *more]  # fmt: skip


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_lines_exit_code_and_summary(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, output = _inputs(tmp_path, 30), tmp_path / "out.jsonl"
    with fake(provider) as server:
        code = cli.main(_argv(provider, server.url, batch, output))
        assert server.violations == []
    assert code == cli.EXIT_PARTIAL  # record 7 and the empty one fail
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["id"] for line in lines] == [f"r{n}" for n in range(30)] + ["empty"]
    for n, line in enumerate(lines[:30]):
        assert line.get("output") == expected(n) or line["error"]["type"] == (
            "StructuredOutputRetryError"
        )
    assert lines[-1]["error"] == {
        "type": "MissingTextError",
        "message": "line 31: the record's text is empty",
    }
    err = capsys.readouterr().err
    assert "batch: 29 done, 2 failed, 0 skipped" in err
    assert "billed at 50% of the live price" in err


def test_interrupted_then_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch, output = _inputs(tmp_path, 20), tmp_path / "out.jsonl"
    calls = {"n": 0}
    real = _job.Job._collect_if_ended

    def interrupted(self: _job.Job, *args: object) -> bool:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, *args)

    with fake("openai") as server:
        monkeypatch.setattr(_job.Job, "_collect_if_ended", interrupted)
        assert cli.main(_argv("openai", server.url, batch, output)) == cli.EXIT_INTERRUPTED
        assert "the remote batch goes on" in capsys.readouterr().err
        monkeypatch.setattr(_job.Job, "_collect_if_ended", real)
        again = cli.main(_argv("openai", server.url, batch, output))
        assert again == cli.EXIT_USAGE  # neither --resume nor --overwrite
        assert "--resume takes it up" in capsys.readouterr().err
        assert cli.main(_argv("openai", server.url, batch, output, "--resume")) == cli.EXIT_PARTIAL
        created = len(server.created)
    ids = [json.loads(line)["id"] for line in output.read_text().splitlines()]
    assert ids == [f"r{n}" for n in range(20)] + ["empty"]
    rounds = json.loads((tmp_path / "out.jsonl.job" / "job.json").read_text())["rounds"]
    # The first round's batch was polled again, never sent twice.
    assert created == sum(len(parts) for parts in rounds) == 3


def test_overwrite_starts_again_and_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, output = _inputs(tmp_path, 5), tmp_path / "out.jsonl"
    with fake("openai") as server:
        partial = cli.EXIT_PARTIAL  # the empty record fails
        assert cli.main(_argv("openai", server.url, batch, output)) == partial
        assert cli.main(_argv("openai", server.url, batch, output, "--overwrite")) == partial
    assert len(output.read_text().splitlines()) == 6
    assert cli.main(["extract", "--schema", SCHEMA, "--batch", str(batch), "--via",
                     "provider-batch"]) == cli.EXIT_USAGE  # fmt: skip
    assert "needs --output" in capsys.readouterr().err
    local = ["extract", "--schema", SCHEMA, "--batch", str(batch), "--via", "provider-batch",
             "--output", str(tmp_path / "o2.jsonl")]  # fmt: skip
    assert cli.main(local) == cli.EXIT_USAGE
    assert "openai: or anthropic:" in capsys.readouterr().err


class _Terminal:
    def isatty(self) -> bool:
        return True


def test_ctrl_c_at_a_terminal_can_cancel_the_remote_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch, output = _inputs(tmp_path, 6), tmp_path / "out.jsonl"
    real = _job.Job._collect_if_ended

    def interrupted(self: _job.Job, *args: object) -> bool:
        raise KeyboardInterrupt

    with fake("anthropic") as server:
        monkeypatch.setattr(_job.Job, "_collect_if_ended", interrupted)
        monkeypatch.setattr("sys.stdin", _Terminal())
        monkeypatch.setattr("builtins.input", lambda prompt: "y")
        code = cli.main(_argv("anthropic", server.url, batch, output))
        assert code == cli.EXIT_INTERRUPTED
        assert "cancelling" in capsys.readouterr().err
        monkeypatch.setattr(_job.Job, "_collect_if_ended", real)
        assert cli.main(_argv("anthropic", server.url, batch, output, "--resume")) == 4
        assert server.batches[server.created[0]].status == "ended"
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(lines) == 7
    assert all("cancelled" in line["error"]["message"] for line in lines[:6])
