from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from langchain_structx import cli
from langchain_structx.testing import ScriptedChatModel

CONTACT = {
    "title": "Contact",
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    "required": ["name", "email"],
}


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "contact.json"
    path.write_text(json.dumps(CONTACT))
    return path


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    model = ScriptedChatModel(responses=[], profile={"structured_output": True})
    loaded: list[tuple[str, Any]] = []

    def load(name: str, path: str | None) -> ScriptedChatModel:
        loaded.append((name, path))
        return model

    monkeypatch.setattr(cli, "load_model", load)
    return model


def test_extract_prints_the_validated_object(
    schema_file: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "Ada", "email": "ada@example.org"}'])
    code = cli.main(["extract", "--schema", str(schema_file), "Ada, ada@example.org"])
    assert code == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"name": "Ada", "email": "ada@example.org"}
    call = scripted.calls[0]
    assert call.response_format["type"] == "json_schema"
    assert call.messages[0].content == cli.DEFAULT_SYSTEM_PROMPT
    assert call.messages[-1].content == "Ada, ada@example.org"


def test_extract_reads_stdin(
    schema_file: Path,
    scripted: ScriptedChatModel,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scripted.reset(['{"name": "Bo", "email": "bo@example.org"}'])
    monkeypatch.setattr("sys.stdin", _Stdin("Bo <bo@example.org>"))
    assert cli.main(["extract", "--schema", str(schema_file), "-"]) == cli.EXIT_OK
    assert scripted.calls[0].messages[-1].content == "Bo <bo@example.org>"


def test_union_output_names_the_kind_and_report_is_included(
    schema_file: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(
        [
            AIMessage(
                "",
                tool_calls=[{"name": "Note", "args": {"text": "hi"}, "id": "n1"}],
            )
        ]
    )
    note = schema_file.parent / "note.json"
    note.write_text(json.dumps({"title": "Note", "type": "object", "properties": {"text": {}}}))
    args = ["extract", "--schema", str(schema_file), "--schema", str(note)]
    code = cli.main([*args, "--strategy", "tool", "--report", "a note"])
    out = json.loads(capsys.readouterr().out)
    assert code == cli.EXIT_OK
    assert out["kind"] == "Note"
    assert out["value"] == {"text": "hi"}
    assert out["report"]["strategy"] == "tool"


def test_pydantic_schema_from_module_path(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "Ada", "age": 36}'])
    code = cli.main(["extract", "--schema", f"{__name__}:Person", "Ada, 36"])
    assert code == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"name": "Ada", "age": 36}


def test_failure_exits_1_after_bounded_retries(
    schema_file: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(["not json"] * 2)
    code = cli.main(["extract", "--schema", str(schema_file), "--max-retries", "1", "x"])
    assert code == cli.EXIT_FAILED
    assert len(scripted.calls) == 2
    assert "extraction failed" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["extract", "--schema", "missing.json", "x"],
        ["extract", "--schema", "no_such_module:Thing", "x"],
        ["extract", "--schema", "plainword", "x"],
    ],
)
def test_bad_schema_is_a_usage_error(
    argv: list[str], scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    assert capsys.readouterr().err.startswith("structx: ")


def test_empty_text_is_a_usage_error(
    schema_file: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["extract", "--schema", str(schema_file), "   "]) == cli.EXIT_USAGE


def test_stream_shows_partial_objects_on_stderr(
    schema_file: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "Ada Lovelace of Somewhere", "email": "ada@example.org"}'])
    code = cli.main(["extract", "--schema", str(schema_file), "--stream", "Ada"])
    captured = capsys.readouterr()
    partials = [json.loads(line) for line in captured.err.splitlines()]
    assert code == cli.EXIT_OK
    assert partials, "no partial objects were shown"
    assert all(isinstance(p, dict) for p in partials)
    assert json.loads(captured.out)["email"] == "ada@example.org"


def test_batch_writes_one_line_per_input_and_keeps_failures(
    schema_file: Path, scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    def answer(messages: list[Any], call: Any) -> str:
        text = messages[-1].content
        if "bad" in text:
            return "no json here"
        return json.dumps({"name": text, "email": f"{text}@example.org"})

    scripted.reset([answer] * 10)
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": "a", "text": "ann"}\n"bad one"\n\n{"text": "cy"}\n')
    out = tmp_path / "out.jsonl"
    argv = ["extract", "--schema", str(schema_file), "--max-retries", "0"]
    code = cli.main([*argv, "--batch", str(batch), "--output", str(out), "--concurrency", "2"])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == cli.EXIT_PARTIAL
    assert [line["id"] for line in lines] == ["a", 2, 4]
    assert lines[0]["output"] == {"name": "ann", "email": "ann@example.org"}
    assert lines[1]["error"]["type"] == "StructuredOutputRetryError"
    assert lines[2]["output"]["name"] == "cy"


def test_batch_of_good_inputs_exits_0(
    schema_file: Path,
    scripted: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scripted.reset(['{"name": "a", "email": "a@example.org"}'])
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n')
    code = cli.main(["extract", "--schema", str(schema_file), "--batch", str(batch)])
    assert code == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out.splitlines()[0])["id"] == 1


def test_unloadable_model_exits_3(schema_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["extract", "--schema", str(schema_file), "--model", "nosuch:thing", "x"])
    assert code == cli.EXIT_MODEL
    assert "cannot load model" in capsys.readouterr().err


def test_to_jsonable_handles_dataclasses() -> None:
    from dataclasses import dataclass

    @dataclass
    class Point:
        x: int

    assert cli.to_jsonable(Point(3)) == {"x": 3}


class _Stdin:
    def __init__(self, text: str) -> None:
        self._text = text

    def read(self) -> str:
        return self._text
