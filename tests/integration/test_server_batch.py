"""`structx extract --batch FILE --server URL` against `langgraph dev` on loopback.

The server serves `extract_offline`, the extraction graph on the echo stand-in:
a record whose text is a valid object's JSON extracts to it, any other text fails
every attempt. The same batch then runs locally on the same stand-in, and the two
outputs must be identical, line for line.
"""

from __future__ import annotations

import datetime
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_dev import Server, free_port, langgraph_dev
from pydantic import BaseModel, ConfigDict

from langchain_structx import cli
from langchain_structx.testing import echo_model

pytestmark = pytest.mark.integration

CONTACT = {
    "title": "Contact",
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "required": ["name", "email"],
}


class Person(BaseModel):
    name: str
    age: int = 0  # a default the server's JSON never holds: the client fills it in


class Company(BaseModel):
    company: str


class Visit(BaseModel):
    model_config = ConfigDict(strict=True)  # a date only JSON mode reads from text
    name: str
    day: datetime.date


class City(typing.TypedDict):  # from `typing`: Pydantic takes it as is only from 3.12
    name: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("langgraph_api", reason='needs "langgraph-cli[inmem]"')
    pytest.importorskip("langgraph_sdk", reason='needs "langchain-structx[server]"')
    with langgraph_dev(tmp_path_factory.mktemp("langgraph-batch")) as running:
        yield running


def _contact(i: int) -> str:
    return json.dumps({"name": f"Person {i}", "email": f"p{i}@example.org"})


def _write_batch(path: Path, texts: list[Any]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any], str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def _local_model_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(spec: Any) -> Any:
        raise AssertionError("a --server batch must not load a local model")

    monkeypatch.setattr(cli, "load_model", refuse)


def _local_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "load_model", lambda spec: echo_model(calls=200))


BATCH = [
    {"id": "first", "text": _contact(0)},
    "not an object at all",
    *({"text": _contact(i)} for i in range(1, 10)),
    {"id": "last", "text": _contact(10)},
]


@pytest.mark.parametrize(
    "options",
    [
        ["--schema", "contact.json"],
        ["--schema", "contact.json", "--report", "--max-retries", "1"],
        ["--schema", "test_server_batch:Person", "--schema", "test_server_batch:Company"],
    ],
    ids=["json-schema", "report", "pydantic-union"],
)
def test_a_server_batch_prints_what_a_local_batch_prints(
    server: Server,
    options: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "contact.json").write_text(json.dumps(CONTACT))
    batch = _write_batch(tmp_path / "in.jsonl", BATCH)
    # One record at a time: the hopeless record makes AutoStrategy give up the tool
    # route for the echo model (its quality fallback), and every later record then
    # starts on the prompted route, so both sides must see the records in one order.
    argv = ["extract", *options, "--batch", str(batch), "--concurrency", "1"]

    _local_model_refused(monkeypatch)
    code, remote, remote_err = _run(
        [*argv, "--server", server.url, "--graph", "extract_offline"], capsys
    )
    _local_echo(monkeypatch)
    local_code, local, local_err = _run(argv, capsys)

    assert remote == local
    assert code == local_code == cli.EXIT_PARTIAL
    assert [r["id"] for r in remote] == ["first", 2, *range(3, 12), "last"]
    assert ["error" in r for r in remote] == [False, True, *[False] * 10]
    assert remote[1]["error"]["type"] == "StructuredOutputRetryError"
    # The summaries differ only in the time taken.
    remote_summary, local_summary = remote_err.splitlines()[-1], local_err.splitlines()[-1]
    assert remote_summary.rsplit(", ", 2)[0] == local_summary.rsplit(", ", 2)[0]
    assert remote_summary.startswith("structx: batch: 11 done, 1 failed, 0 skipped")


def test_union_values_are_validated_by_the_python_classes(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _write_batch(tmp_path / "in.jsonl", [json.dumps({"name": "Ada"})])
    argv = ["extract", "--schema", "test_server_batch:Person", "--batch", str(batch)]

    code, lines, _ = _run([*argv, "--server", server.url, "--graph", "extract_offline"], capsys)

    assert code == cli.EXIT_OK
    assert lines == [{"id": 1, "output": {"name": "Ada", "age": 0}}]


@pytest.mark.parametrize(
    ("schema", "value"),
    [("Visit", {"name": "Ada", "day": "2026-12-03"}), ("City", {"name": "Oslo"})],
)
def test_python_classes_pydantic_takes_only_in_some_forms_are_retyped(
    server: Server,
    schema: str,
    value: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = _write_batch(tmp_path / "in.jsonl", [json.dumps(value)])
    argv = ["extract", "--schema", f"test_server_batch:{schema}", "--batch", str(batch)]

    code, lines, _ = _run([*argv, "--server", server.url, "--graph", "extract_offline"], capsys)

    assert code == cli.EXIT_OK
    assert lines == [{"id": 1, "output": value}]


def test_a_graph_the_server_does_not_serve_is_exit_code_3(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _write_batch(tmp_path / "in.jsonl", [_contact(1)])
    (tmp_path / "contact.json").write_text(json.dumps(CONTACT))
    argv = ["extract", "--schema", str(tmp_path / "contact.json"), "--batch", str(batch)]

    code, lines, err = _run([*argv, "--server", server.url, "--graph", "nope"], capsys)

    assert code == cli.EXIT_MODEL
    assert lines == []
    assert "serves no graph 'nope'" in err


def test_an_unreachable_server_is_exit_code_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langgraph_sdk", reason='needs "langchain-structx[server]"')
    batch = _write_batch(tmp_path / "in.jsonl", [_contact(1)])
    (tmp_path / "contact.json").write_text(json.dumps(CONTACT))
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    argv = ["extract", "--schema", str(tmp_path / "contact.json"), "--batch", str(batch)]

    code, lines, err = _run([*argv, "--server", url], capsys)

    assert code == cli.EXIT_MODEL
    assert lines == []
    assert f"cannot reach {url}" in err
