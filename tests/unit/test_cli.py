from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import AfterValidator, BaseModel

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


class Gauge(BaseModel):
    value: float


class Reading(BaseModel):
    """A model whose own validator can overflow a float to infinity."""

    value: Annotated[float, AfterValidator(lambda v: v * 1e300)]


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "contact.json"
    path.write_text(json.dumps(CONTACT))
    return path


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    model = ScriptedChatModel(responses=[], profile={"structured_output": True})
    loaded: list[tuple[str, Any]] = []

    def load(spec: Any) -> ScriptedChatModel:
        loaded.append((spec.name, spec.path))
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
        ["extract", "--schema", "not a schema!", "x"],
        ["extract", "--schema", ":X", "x"],
        ["extract", "--schema", "name, age complex", "x"],
        ["extract", "--schema", "{not json", "x"],
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


def _strict_json(text: str) -> Any:
    """Parse `text` as strict JSON: NaN and Infinity are errors, as in RFC 8259."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def _batch_args(schema_file: Path, batch: Path, output: str) -> list[str]:
    return ["extract", "--schema", str(schema_file), "--batch", str(batch), "--output", output]


def _same_file_spellings(batch: Path) -> dict[str, str]:
    """Other names for `batch`: the path itself, a detour, a symlink and a hard link."""
    (batch.parent / "sub").mkdir()
    symlink = batch.parent / "link.jsonl"
    symlink.symlink_to(batch)
    hardlink = batch.parent / "hard.jsonl"
    os.link(batch, hardlink)
    return {
        "same": str(batch),
        "detour": str(batch.parent / "sub" / ".." / "." / batch.name),
        "symlink": str(symlink),
        "hardlink": str(hardlink),
    }


@pytest.mark.parametrize("spelling", ["same", "detour", "symlink", "hardlink"])
def test_output_that_is_the_batch_file_is_refused_and_the_batch_kept(
    spelling: str,
    schema_file: Path,
    scripted: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"ann"\n"bo"\n')
    output = _same_file_spellings(batch)[spelling]
    code = cli.main(_batch_args(schema_file, batch, output))
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert batch.read_text() == '"ann"\n"bo"\n'
    assert err.startswith("structx: ") and "--batch" in err
    assert len(err.strip().splitlines()) == 1
    assert scripted.calls == []


def test_an_output_that_holds_results_is_refused_without_resume_or_overwrite(
    schema_file: Path,
    scripted: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n"b"\n"c"\n')
    output = tmp_path / "out.jsonl"
    output.write_text("old results\n")
    code = cli.main(_batch_args(schema_file, batch, str(output)))
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert "--resume" in err and "--overwrite" in err and len(err.splitlines()) == 1
    assert output.read_text() == "old results\n"
    assert scripted.calls == []


def test_overwrite_starts_the_output_again(
    schema_file: Path, scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    scripted.reset(['{"name": "a", "email": "a@example.org"}'] * 3)
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n"b"\n"c"\n')
    output = tmp_path / "out.jsonl"
    output.write_text("old results\n")
    code = cli.main([*_batch_args(schema_file, batch, str(output)), "--overwrite"])
    assert code == cli.EXIT_OK
    lines = [_strict_json(line) for line in output.read_text().splitlines()]
    assert [line["id"] for line in lines] == [1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["contact.json", "in.jsonl", "out.jsonl"]


def test_batch_output_through_a_symlink_is_written_where_it_leads(
    schema_file: Path, scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    scripted.reset(['{"name": "a", "email": "a@example.org"}'])
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n')
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert cli.main([*_batch_args(schema_file, batch, str(link)), "--overwrite"]) == cli.EXIT_OK
    assert link.is_symlink()
    assert _strict_json(real.read_text())["id"] == 1


def test_unwritable_output_folder_is_a_usage_error_before_any_model_call(
    schema_file: Path,
    scripted: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n')
    output = tmp_path / "missing-folder" / "out.jsonl"
    assert cli.main(_batch_args(schema_file, batch, str(output))) == cli.EXIT_USAGE
    assert "cannot write output file" in capsys.readouterr().err
    assert scripted.calls == []
    assert not output.parent.exists()


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize(
    "problem", ["it is a folder", "its name is too long", "File name too long"]
)
def test_an_output_that_cannot_be_written_is_a_usage_error_before_any_model_call(
    problem: str,
    batch: bool,
    schema_file: Path,
    scripted: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "kept.txt").write_text("kept")
    # One result is written through a temporary file whose name is longer still,
    # so 250 bytes are too many for it, though the file system allows 255.
    long_name = tmp_path / ("o" * (295 if batch else 245) + ".json")
    in_long_folder = tmp_path / ("o" * 300) / "out.json"  # the system's own words
    output = {"it is a folder": folder, "its name is too long": long_name}.get(
        problem, in_long_folder
    )
    code = cli.main(_output_args(schema_file, tmp_path, str(output), batch=batch))

    assert code == cli.EXIT_USAGE
    assert capsys.readouterr().err.strip().endswith(problem)
    assert scripted.calls == []
    assert [p.name for p in folder.iterdir()] == ["kept.txt"]


def _output_args(schema_file: Path, tmp_path: Path, output: str, *, batch: bool) -> list[str]:
    if not batch:
        return ["extract", "--schema", str(schema_file), "--output", output, "Ada"]
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('"Ada"\n')
    return _batch_args(schema_file, inputs, output)


def test_infinite_value_is_a_failure_not_printed_as_infinity(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"value": 1e10}'])
    code = cli.main(["extract", "--schema", f"{__name__}:Reading", "a reading"])
    captured = capsys.readouterr()
    assert code == cli.EXIT_FAILED
    assert captured.out == ""
    assert "NaN or Infinity" in captured.err


@pytest.mark.parametrize("reply", ['{"value": 1e400}', '{"value": NaN}', '{"value": -Infinity}'])
def test_non_finite_reply_never_reaches_stdout(
    reply: str, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset([reply])
    code = cli.main(["extract", "--schema", f"{__name__}:Gauge", "--max-retries", "0", "x"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_FAILED
    assert out == ""


def test_non_finite_value_in_a_batch_is_an_error_line(
    scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    scripted.reset(['{"value": 1e10}', '{"value": 2.5e-300}'])
    batch = tmp_path / "in.jsonl"
    batch.write_text('"big"\n"small"\n')
    output = tmp_path / "out.jsonl"
    argv = ["extract", "--schema", f"{__name__}:Reading", "--batch", str(batch)]
    code = cli.main([*argv, "--output", str(output)])
    lines = [_strict_json(line) for line in output.read_text().splitlines()]
    assert code == cli.EXIT_PARTIAL
    assert lines[0]["error"]["type"] == "NonFiniteValueError"
    assert lines[1]["output"] == {"value": pytest.approx(2.5)}


class _Stdin:
    """A stand-in for `sys.stdin`: the command reads its bytes."""

    def __init__(self, text: str) -> None:
        self.buffer = io.BytesIO(text.encode("utf-8"))
