"""Batch records, ids and resuming, in process (the subprocess tests run the same through
the console script)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from langchain_structx import cli
from langchain_structx._cli.records import (
    MAX_LINE_BYTES,
    BatchInputError,
    ResultFile,
    done_ids,
    parse_record,
    read_records,
)
from langchain_structx.testing import ScriptedChatModel

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("line", "ident", "text", "problem"),
    [
        ('{"id": "a", "text": "Ada"}', "a", "Ada", ""),
        ('{"text": "Ada"}', 3, "Ada", ""),
        ('{"id": null, "text": "Ada"}', 3, "Ada", ""),
        ('"Ada"', 3, "Ada", ""),
        # Not JSON: no id, no text (never sent as text); `--input-format text` reads it.
        (
            "Ada, plain",
            None,
            None,
            "line 3 is not valid JSON (Expecting value at column 1); "
            "fix it, or read the file as plain text with --input-format text",
        ),
        ("42", 3, None, "line 3 is a number, not a JSON object or string"),
        ("[1]", 3, None, "line 3 is an array, not a JSON object or string"),
        ("false", 3, None, "line 3 is a boolean, not a JSON object or string"),
        ('{"id": 1}', 1, None, "the record has no 'text'"),
        ('{"text": null}', 3, None, "the record's text is null"),
        ('{"text": ["a"]}', 3, None, "the record's text is a list, not a string"),
        ('{"text": "  "}', 3, None, "the record's text is empty"),
        ('""', 3, None, "the record's text is empty"),
        ("null", 3, None, "the record's text is null"),
        # Nested past what the JSON reader can follow: an error record too.
        (DEEP, None, None, "line 3 is nested too deeply to read"),
    ],
)
def test_each_kind_of_line(line: str, ident: object, text: str | None, problem: str) -> None:
    record = parse_record(line, 3)
    assert (record.id, record.text, record.problem) == (ident, text, problem)


def test_ids_1_and_string_1_are_different_records(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": 1, "text": "a"}\n{"id": "1", "text": "b"}\n')
    assert [r.id for r in read_records(str(batch))] == [1, "1"]


def test_an_explicit_id_that_is_another_line_number_is_a_duplicate(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": 2, "text": "a"}\n"b"\n')
    with pytest.raises(BatchInputError, match="lines 1 and 2"):
        read_records(str(batch))


def test_a_line_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("langchain_structx._cli.records.MAX_LINE_BYTES", 8)
    batch = tmp_path / "in.jsonl"
    batch.write_text('"short"\n"a line longer than eight bytes"\n')
    with pytest.raises(BatchInputError, match="line 2 is over 8 bytes"):
        read_records(str(batch))
    assert MAX_LINE_BYTES == 64 << 20


def test_a_missing_batch_file_is_a_typed_error() -> None:
    with pytest.raises(BatchInputError, match="cannot read batch file"):
        read_records("/no/such/batch.jsonl")


def test_resume_cuts_a_partial_last_line_and_returns_the_finished_ids(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n"b"\n"c"\n')
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": 1, "output": {}}\n{"id": 2, "error": {}}\n{"id": 3, "out')
    keys = done_ids(str(out), read_records(str(batch)))
    assert keys == {"1", "2"}
    assert out.read_bytes() == b'{"id": 1, "output": {}}\n{"id": 2, "error": {}}\n'


@pytest.mark.parametrize("line", ["not json", '["id"]', '{"output": {}}', '{"id": 9}', DEEP])
def test_resume_refuses_lines_that_are_not_results_of_the_batch(line: str, tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n')
    out = tmp_path / "out.jsonl"
    out.write_text(line + "\n")
    with pytest.raises(BatchInputError, match="line 1 of"):
        done_ids(str(out), read_records(str(batch)))
    assert out.read_text() == line + "\n"


def test_resume_of_a_missing_output_starts_from_nothing(tmp_path: Path) -> None:
    assert done_ids(str(tmp_path / "none.jsonl"), []) == set()


def test_result_file_appends_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": 0}\n')
    sink = ResultFile(path=str(path))
    sink.write('{"id": 1, "text": "é"}')
    sink.close()
    sink.close()  # closing twice is harmless
    assert path.read_text(encoding="utf-8") == '{"id": 0}\n{"id": 1, "text": "é"}\n'


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_batch_dash_reads_stdin_and_resume_appends_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedChatModel(responses=['{"name": "b"}'], profile={"structured_output": True})
    monkeypatch.setattr(cli, "load_model", lambda spec: model)
    monkeypatch.setattr(
        "sys.stdin", _Stdin(b'{"id": "a", "text": "a"}\n{"id": "b", "text": "b"}\n')
    )
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "output": {"name": "a"}}\n')
    argv = ["extract", "--schema", "name", "--batch", "-", "--output", str(out), "--resume"]
    code = cli.main(argv)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == cli.EXIT_OK
    assert lines == [{"id": "a", "output": {"name": "a"}}, {"id": "b", "output": {"name": "b"}}]
    assert len(model.calls) == 1 and model.calls[0].messages[-1].content == "b"
    assert "1 done, 0 failed, 1 skipped" in capsys.readouterr().err
