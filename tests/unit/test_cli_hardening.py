"""`structx extract` at its edges: special output files, write errors, closed pipes,
odd characters, empty inputs and options, and Ctrl-C while streaming."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_cli_entry import ECHO, STRUCTX, _env, _wait_for, one_error_line, structx

from langchain_structx import cli
from langchain_structx._cli.records import done_ids, read_records
from langchain_structx.testing import ScriptedChatModel


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    model = ScriptedChatModel(responses=[], profile={"structured_output": True})
    monkeypatch.setattr(cli, "load_model", lambda spec: model)
    return model


@pytest.fixture
def schema(tmp_path: Path) -> str:
    path = tmp_path / "person.json"
    person = {"title": "Person", "type": "object", "properties": {"name": {"type": "string"}}}
    path.write_text(json.dumps({**person, "required": ["name"]}))
    return str(path)


def _batch(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("structx: "), lines
    return lines[0]


def test_an_output_that_is_a_fifo_is_written_in_place_not_replaced(
    schema: str, scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    scripted.reset(['{"name": "Ada"}'])
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening it to write returns
    try:
        code = cli.main(["extract", "--schema", schema, "--output", str(fifo), "Ada"])
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert code == cli.EXIT_OK
    assert stat.S_ISFIFO(fifo.stat().st_mode), "the FIFO was replaced by a regular file"
    assert json.loads(received) == {"name": "Ada"}


def test_a_batch_output_that_fills_up_is_one_line_and_exit_2(schema: str, tmp_path: Path) -> None:
    batch = _batch(tmp_path, '"{\\"name\\": \\"A\\"}"', '"{\\"name\\": \\"B\\"}"')
    result = structx(
        "extract", "--schema", schema, *ECHO, "--batch", batch, "--output", "/dev/full"
    )
    assert result.returncode == cli.EXIT_USAGE
    assert one_error_line(result) == (
        "structx: cannot write output file /dev/full: No space left on device"
    )


def test_a_batch_output_that_cannot_be_synced_is_written(schema: str, tmp_path: Path) -> None:
    batch = _batch(tmp_path, '"{\\"name\\": \\"A\\"}"')
    result = structx(
        "extract", "--schema", schema, *ECHO, "--batch", batch, "--output", "/dev/null"
    )
    assert result.returncode == cli.EXIT_OK, result.stderr
    assert result.stderr.startswith("structx: batch: 1 done")


def test_a_single_text_output_that_fills_up_is_one_line_and_exit_2(schema: str) -> None:
    result = structx("extract", "--schema", schema, *ECHO, "--output", "/dev/full", '{"name": "A"}')
    assert result.returncode == cli.EXIT_USAGE
    assert "cannot write output file /dev/full" in one_error_line(result)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.parametrize("mode", ["text", "stream", "batch"], ids=["one-text", "stream", "batch"])
def test_a_closed_stdout_ends_quietly_with_141(mode: str, schema: str, tmp_path: Path) -> None:
    text = '{"name": "A"}'
    args = ["--batch", _batch(tmp_path, json.dumps(text))] if mode == "batch" else [text]
    args += ["--stream"] if mode == "stream" else []
    reading, writing = os.pipe()
    os.close(reading)  # as `| head -1` does once it has its line
    try:
        done = subprocess.run(
            [STRUCTX or "structx", "extract", "--schema", schema, *ECHO, *args],
            stdout=writing,
            stderr=subprocess.PIPE,
            env=_env(),
            timeout=120,
        )
    finally:
        os.close(writing)
    assert done.returncode == cli.EXIT_PIPE
    lines = done.stderr.decode().splitlines()
    assert [line for line in lines if not line.startswith("{")] == []  # stream partials only


def test_help_lists_exit_code_141() -> None:
    assert "\n  141 " in structx("extract", "--help").stdout


def test_a_lone_surrogate_in_a_batch_id_is_written_as_an_escape(
    schema: str, scripted: ScriptedChatModel, tmp_path: Path
) -> None:
    scripted.reset(['{"name": "A"}', '{"name": "B"}'])
    batch = _batch(tmp_path, '{"id": "a\\udcff", "text": "A"}', '{"id": "b", "text": "B"}')
    output = tmp_path / "out.jsonl"
    code = cli.main(["extract", "--schema", schema, "--batch", batch, "--output", str(output)])
    lines = output.read_bytes().decode("utf-8").splitlines()
    assert code == cli.EXIT_OK
    assert [json.loads(line)["id"] for line in lines] == ["a\udcff", "b"]


def test_a_lone_surrogate_in_the_value_is_refused_not_written(
    schema: str, scripted: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "B\\ud800"}', '{"name": "B\\ud800"}'])
    output = tmp_path / "out.json"
    argv = ["extract", "--schema", schema, "--output", str(output), "--max-retries", "1", "B"]
    assert cli.main(argv) == cli.EXIT_FAILED
    assert "lone surrogate" in _error(capsys)
    assert not output.exists()


def test_overwrite_keeps_the_old_output_when_the_model_cannot_be_loaded(
    schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _batch(tmp_path, '"A"')
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": 1, "output": {"name": "old"}}\n')
    argv = ["--batch", batch, "--output", str(output), "--overwrite"]
    code = cli.main(["extract", "--schema", schema, "--model", "python:no_such_module:x", *argv])
    assert code == cli.EXIT_MODEL
    assert "cannot load model" in _error(capsys)
    assert output.read_text() == '{"id": 1, "output": {"name": "old"}}\n'


def test_a_byte_order_mark_before_the_first_record_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "Ada"}\n"Bo"\n')
    records = read_records(str(path))
    assert [(r.id, r.text) for r in records] == [("a", "Ada"), (2, "Bo")]


@pytest.mark.parametrize("content", ["", "\n  \n\n"], ids=["empty", "blank-lines"])
def test_an_empty_batch_is_a_usage_error(
    content: str, schema: str, scripted: ScriptedChatModel, tmp_path: Path, capsys: Any
) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text(content)
    code = cli.main(["extract", "--schema", schema, "--batch", str(batch)])
    assert code == cli.EXIT_USAGE
    assert _error(capsys) == f"structx: batch file {batch} holds no records"


def test_a_text_argument_that_is_not_utf8_is_a_usage_error(
    schema: str, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "A"}'])
    # Python hands argv bytes that are not UTF-8 over as surrogate escapes.
    code = cli.main(["extract", "--schema", schema, "Ada \udcff"])
    assert code == cli.EXIT_USAGE
    assert _error(capsys) == "structx: TEXT is not UTF-8 text"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--n-ctx", "0"], "--n-ctx must be >= 512"),
        (["--n-ctx", "64"], "--n-ctx must be >= 512"),
        (["--n-ctx", "511"], "--n-ctx must be >= 512"),
        (["--threads", "0"], "--threads must be >= 1"),
    ],
)
def test_too_small_local_model_numbers_are_usage_errors(
    option: list[str],
    message: str,
    schema: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def never(spec: Any) -> Any:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(cli, "load_model", never)
    assert cli.main(["extract", "--schema", schema, *option, "Ada"]) == cli.EXIT_USAGE
    assert message in _error(capsys)


@pytest.mark.parametrize("option", ["--model", "--schema", "--batch", "--output"])
def test_an_empty_option_value_is_a_usage_error(
    option: str, schema: str, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"name": "A"}'])
    argv = ["--schema", schema, option, ""]
    code = cli.main(["extract", *argv] if option == "--batch" else ["extract", *argv, "Ada"])
    assert code == cli.EXIT_USAGE
    assert _error(capsys) == f"structx: {option} is empty"


@pytest.mark.parametrize("tail", ["\n", "\n\n  \n"], ids=["trailing-blank", "several-blanks"])
def test_resume_skips_blank_lines_of_the_output(tail: str, tmp_path: Path) -> None:
    records = read_records(_batch(tmp_path, '"a"', '"b"'))
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": 1, "output": {}}\n' + tail)
    assert done_ids(str(output), records) == {"1"}
    output.write_text("\n\n")
    assert done_ids(str(output), records) == set()


def test_many_stream_shows_the_partial_lists_bare(
    scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.reset(['{"items": [{"name": "Ada Lovelace"}, {"name": "Bo Berg"}]}'])
    code = cli.main(["extract", "--schema", "name", "--many", "--stream", "Ada met Bo"])
    captured = capsys.readouterr()
    partials = [json.loads(line) for line in captured.err.splitlines()]
    assert code == cli.EXIT_OK
    assert partials and all(isinstance(p, list) for p in partials), partials
    assert json.loads(captured.out) == [{"name": "Ada Lovelace"}, {"name": "Bo Berg"}]


def test_sigint_while_streaming_a_hanging_call_is_exit_130(schema: str, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    text = '{"name": "A"}'
    env = {"CLI_TEST_BLOCK_ON": text, "CLI_TEST_BLOCKED_FILE": str(blocked)}
    process = subprocess.Popen(
        [STRUCTX or "structx", "extract", "--schema", schema, *ECHO, "--stream", text],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(blocked, process)  # the signal must land while the model hangs
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()  # never left running
            process.communicate()
    assert process.returncode == cli.EXIT_INTERRUPTED
    assert err.strip().splitlines()[-1] == "structx: interrupted"
    assert "Traceback" not in err
