"""`structx extract` options: inline schemas, --many, one-file unions, model options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from langchain_structx import cli
from langchain_structx._cli import model as _cli_model
from langchain_structx._cli.model import ModelSpec
from langchain_structx._cli.schema_input import SchemaSpecError, load_schema
from langchain_structx.testing import ScriptedChatModel


class City(BaseModel):
    name: str
    population: int


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    model = ScriptedChatModel(responses=[], profile={"structured_output": True})
    monkeypatch.setattr(cli, "load_model", lambda spec: model)
    return model


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = cli.main(["extract", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def test_a_field_list_schema_is_sent_and_validated(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "Ada", "age": 36, "tags": ["math"]}'])
    spec = "name, age int: years, tags list[str], email?"
    code, out, _ = _run(["--schema", spec, "Ada, 36, math"], capsys)
    sent = scripted.calls[0].response_format["json_schema"]["schema"]
    assert code == cli.EXIT_OK
    assert out == {"name": "Ada", "age": 36, "tags": ["math"]}
    assert sent["properties"]["age"]["description"] == "years"
    assert "email" in sent["properties"] and "email" not in sent.get("required", [])


def test_a_field_list_may_name_its_fields_in_any_script(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"姓名": "李雷", "年龄": 12, "爱好": ["足球"]}
    scripted.reset([json.dumps(answer, ensure_ascii=False)])

    code, out, err = _run(
        ["--schema", "姓名, 年龄 int: 岁数, 爱好 list[str]", "李雷，12岁"], capsys
    )

    assert (code, out, err) == (cli.EXIT_OK, answer, "")
    sent = scripted.calls[0].response_format["json_schema"]["schema"]
    assert sent["required"] == ["姓名", "年龄", "爱好"]
    assert sent["properties"]["年龄"] == {"type": "integer", "description": "岁数"}


def test_a_field_list_longer_than_a_file_name_is_read_as_fields(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    # Field descriptions soon make a list longer than a file name may be (255 bytes).
    described = {
        "name": "the full name of the person as it is written in the text",
        "email": "the main email address at which the person can be reached",
        "company": "the company the person works for as the text names it",
        "city": "the city where the person lives or works without the country",
    }
    spec = ", ".join(f"{field}: {text}" for field, text in described.items())
    answer = {"name": "Ada", "email": "ada@example.org", "company": "Acme", "city": "Oslo"}
    scripted.reset([json.dumps(answer)])

    code, out, err = _run(["--schema", spec, "Ada of Acme, Oslo, ada@example.org"], capsys)

    assert len(spec.encode()) > 255
    assert (code, out, err) == (cli.EXIT_OK, answer, "")
    sent = scripted.calls[0].response_format["json_schema"]["schema"]
    assert {k: v["description"] for k, v in sent["properties"].items()} == described


def test_a_field_list_value_of_the_wrong_type_fails(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "Ada", "age": "old"}'])
    code, out, err = _run(["--schema", "name, age int", "--max-retries", "0", "x"], capsys)
    assert code == cli.EXIT_FAILED and out is None
    assert "extraction failed" in err


def test_an_inline_json_schema(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"n": 2}'])
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
    code, out, _ = _run(["--schema", schema, "two"], capsys)
    assert (code, out) == (cli.EXIT_OK, {"n": 2})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("name, name", "twice"),
        ("age number", "unknown"),
        ("{1: 2}", "not valid JSON"),
        ("[1]", "not a .json file"),
        ('{"a": [1] ', "not valid JSON"),
    ],
)
def test_bad_inline_schemas_are_typed_errors(spec: str, message: str) -> None:
    with pytest.raises(SchemaSpecError, match=message):
        load_schema(spec)


def test_many_with_a_field_list_prints_the_list(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"items": [{"name": "Ada"}, {"name": "Bo"}]}'])
    code, out, _ = _run(["--schema", "name", "--many", "Ada met Bo"], capsys)
    sent = scripted.calls[0].response_format["json_schema"]["schema"]
    assert (code, out) == (cli.EXIT_OK, [{"name": "Ada"}, {"name": "Bo"}])
    assert sent["properties"]["items"]["type"] == "array"


def test_many_with_a_python_class_keeps_its_validation(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"items": [{"name": "Oslo", "population": "709000"}]}'])
    code, out, _ = _run(["--schema", f"{__name__}:City", "--many", "--report", "Oslo"], capsys)
    assert code == cli.EXIT_OK
    assert out["value"] == [{"name": "Oslo", "population": 709000}]
    assert out["kind"] == "CityList"


def test_many_in_a_batch_gives_a_list_per_record(
    scripted: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"items": [{"name": "A"}]}', '{"items": []}'])
    batch = tmp_path / "in.jsonl"
    batch.write_text('"A"\n"nobody"\n')
    cli.main(["extract", "--schema", "name", "--many", "--batch", str(batch)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["output"] for line in lines] == [[{"name": "A"}], []]


def test_a_one_file_oneof_union_prints_its_kind_like_several_files(
    scripted: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    review = {"title": "Review", "type": "object", "properties": {"stars": {"type": "integer"}}}
    complaint = {
        "title": "Complaint",
        "type": "object",
        "properties": {"issue": {"type": "string"}},
    }
    union = tmp_path / "union.json"
    union.write_text(json.dumps({"oneOf": [review, complaint]}))
    files = []
    for schema in (review, complaint):
        files += ["--schema", str(tmp_path / f"{schema['title']}.json")]
        (tmp_path / f"{schema['title']}.json").write_text(json.dumps(schema))
    reply = AIMessage("", tool_calls=[{"name": "Complaint", "args": {"issue": "late"}, "id": "1"}])
    scripted.reset([reply, reply])

    one_file = _run(["--schema", str(union), "--strategy", "tool", "late!"], capsys)
    several = _run([*files, "--strategy", "tool", "late!"], capsys)

    assert one_file[1] == several[1] == {"kind": "Complaint", "value": {"issue": "late"}}


def test_concurrency_on_the_embedded_model_is_explained_and_runs_one_by_one(
    scripted: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "a"}'] * 2)
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n"b"\n')
    code = cli.main(["extract", "--schema", "name", "--batch", str(batch), "--concurrency", "4"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_OK
    assert "--concurrency 4 would only queue records" in err
    assert err.count("\n") == 2  # the note and the summary, nothing else


def test_the_batch_summary_counts_done_failed_and_tokens(
    scripted: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    scripted.reset([AIMessage('{"name": "a"}', usage_metadata=usage), "prose"])
    batch = tmp_path / "in.jsonl"
    batch.write_text('"a"\n"b"\n{"id": "x"}\n')
    argv = ["extract", "--schema", "name", "--max-retries", "0", "--batch", str(batch)]
    code = cli.main(argv)
    summary = capsys.readouterr().err.splitlines()[-1]
    assert code == cli.EXIT_PARTIAL
    assert summary.startswith("structx: batch: 1 done, 2 failed, 0 skipped")
    assert summary.endswith(", 10 tokens")


class _Recorder:
    """Stands in for LocalChatModel: records what it is built with."""

    built: list[dict[str, Any]] = []

    def __init__(self, **options: Any) -> None:
        self.built.append(options)

    def load(self) -> None:
        pass


def test_threads_and_n_ctx_reach_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_structx.local as local

    monkeypatch.setattr(local, "LocalChatModel", _Recorder)
    _Recorder.built.clear()
    _cli_model.load_model(ModelSpec(name="local", n_ctx=8192, threads=2))
    _cli_model.load_model(ModelSpec(name="local", path="w.gguf"))
    assert _Recorder.built == [
        {"model_path": None, "n_ctx": 8192, "n_threads": 2},
        {"model_path": "w.gguf"},
    ]


def test_base_url_reaches_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = ModelSpec(name="openai:served-model", base_url="http://127.0.0.1:8080/v1")
    model = _cli_model.load_model(spec)
    assert model.openai_api_base == "http://127.0.0.1:8080/v1"
    assert model.model_name == "served-model"


def test_a_python_model_that_is_not_a_chat_model_is_exit_3() -> None:
    with pytest.raises(cli.CliError) as caught:
        _cli_model.load_model(ModelSpec(name="python:json:dumps"))
    assert caught.value.code == cli.EXIT_MODEL
