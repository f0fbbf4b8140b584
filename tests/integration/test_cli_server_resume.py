"""`--resume` and the summary of a `--batch FILE --server URL` batch, against `langgraph dev`.

A local batch on the echo stand-in is cut as a kill leaves it (whole lines, then
half a line); resuming it on the server's `extract_offline` graph must give the
local file, line for line, each record once, and the same summary counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_dev import Server, langgraph_dev

from langchain_structx import cli
from langchain_structx.testing import echo_model

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("langgraph_api", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_sdk", reason='needs "langchain-structx[server]"')
    with langgraph_dev(tmp_path_factory.mktemp("langgraph-resume")) as running:
        yield running


def _records() -> list[Any]:
    records: list[Any] = [
        {"id": f"r{i}", "text": json.dumps({"name": f"P{i}", "email": f"p{i}@example.org"})}
        for i in range(8)
    ]
    records[3] = {"id": "r3", "text": "no object here"}
    records.insert(5, {"id": "empty", "text": None})
    return records


def test_a_cut_server_batch_resumes_to_what_a_local_batch_writes(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = tmp_path / "contact.json"
    properties = {"name": {"type": "string"}, "email": {"type": "string"}}
    contact = {"title": "Contact", "type": "object", "properties": properties}
    schema.write_text(json.dumps({**contact, "required": ["name", "email"]}))
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    local, remote = tmp_path / "local.jsonl", tmp_path / "remote.jsonl"
    argv = ["extract", "--schema", str(schema), "--batch", str(batch), "--max-retries", "0"]

    monkeypatch.setattr(cli, "load_model", lambda spec: echo_model(calls=100))
    assert cli.main([*argv, "--output", str(local)]) == cli.EXIT_PARTIAL
    local_summary = capsys.readouterr().err.splitlines()[-1]
    whole = local.read_text().splitlines(keepends=True)
    remote.write_text("".join(whole[:4]) + whole[4][:12])  # a kill in the fifth write

    served = [*argv, "--server", server.url, "--graph", "extract_offline", "--concurrency", "3"]
    code = cli.main([*served, "--output", str(remote), "--resume"])
    summary = capsys.readouterr().err.splitlines()[-1]

    assert code == cli.EXIT_PARTIAL
    assert remote.read_text() == local.read_text()
    assert [json.loads(line)["id"] for line in whole] == [r["id"] for r in _records()]
    assert summary.startswith("structx: batch: 4 done, 1 failed, 4 skipped")
    assert local_summary.startswith("structx: batch: 7 done, 2 failed, 0 skipped")
