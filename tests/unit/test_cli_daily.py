"""The `structx` command as a daily tool: no guessed records, honest files and signals,
every option's default in `--help`, and wording that says what is wrong and where."""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from test_cli_entry import ECHO, STRUCTX, _env, _wait_for, structx

from langchain_structx import cli
from langchain_structx._cli.records import BatchInputError, done_ids, read_records
from langchain_structx.testing import ScriptedChatModel


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    """A model that answers each text with itself, in process."""
    model = ScriptedChatModel(
        responses=[lambda messages, call: messages[-1].text] * 20,
        profile={"structured_output": True},
    )
    monkeypatch.setattr(cli, "load_model", lambda spec: model)
    return model


# 1. A broken JSONL line is an error record, never a text.


def test_a_jsonl_line_that_does_not_parse_is_an_error_record_never_sent(
    tmp_path: Path, echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text(
        '{"id": "r1", "text": "{\\"name\\": \\"Ada\\"}"}\n'
        '{"id": "r2", "text": "Grace Hopper, rear admiral"\n'  # its closing brace is missing
    )
    code = cli.main(["extract", "--schema", "name", "--batch", str(batch)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == cli.EXIT_PARTIAL
    assert lines[0] == {"id": "r1", "output": {"name": "Ada"}}
    assert lines[1]["id"] is None and lines[1]["line"] == 2
    assert lines[1]["error"]["type"] == "InvalidLineError"
    assert lines[1]["error"]["message"].startswith("line 2 is not valid JSON (")
    assert [call.messages[-1].content for call in echo.calls] == ['{"name": "Ada"}']


@pytest.mark.parametrize("line", ["42", "[1, 2]", "true"])
def test_a_json_value_that_is_no_record_is_an_error_record(line: str) -> None:
    from langchain_structx._cli.records import parse_record

    record = parse_record(line, 4)
    assert record.text is None and record.invalid
    assert record.problem.startswith("line 4 is ")


@pytest.mark.parametrize(("name", "form"), [("in.txt", "auto"), ("in.jsonl", "text")])
def test_plain_text_lines_are_an_explicit_input_form(
    name: str,
    form: str,
    tmp_path: Path,
    echo: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = tmp_path / name
    batch.write_text('{"name": "Ada"\n\n{"name": "Bo"}\n')
    argv = ["extract", "--schema", "name", "--batch", str(batch), "--input-format", form]
    argv += ["--max-retries", "0"]
    code = cli.main(argv)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # Every line is a text, sent as it is; ids are line numbers.
    assert [call.messages[-1].content for call in echo.calls] == [
        '{"name": "Ada"',
        '{"name": "Bo"}',
    ]
    assert [line["id"] for line in lines] == [1, 3]
    assert lines[1] == {"id": 3, "output": {"name": "Bo"}}
    assert code == cli.EXIT_PARTIAL  # the first text is not an object


def test_a_fixed_line_runs_on_resume_and_its_old_error_line_does_not_block(
    tmp_path: Path, echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    good = '{"id": "r1", "text": "{\\"name\\": \\"Ada\\"}"}\n'
    batch.write_text(good + '{"id": "r2", "text": "{\\"name\\": \\"Bo\\"}"\n')
    argv = ["extract", "--schema", "name", "--batch", str(batch), "--output", str(out)]
    assert cli.main(argv) == cli.EXIT_PARTIAL
    batch.write_text(good + '{"id": "r2", "text": "{\\"name\\": \\"Bo\\"}"}\n')  # fixed
    assert cli.main([*argv, "--resume"]) == cli.EXIT_OK
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[-1] == {"id": "r2", "output": {"name": "Bo"}}
    assert len(echo.calls) == 2  # r1 was not run again
    assert "1 done, 0 failed, 1 skipped" in capsys.readouterr().err


def test_a_still_broken_line_is_not_run_again_on_resume(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": "r1", "text": "a"\n')
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": null, "line": 1, "error": {"type": "InvalidLineError"}}\n')
    records = read_records(str(batch))
    assert done_ids(str(out), records) == {records[0].key}


def test_resume_names_the_blocking_line_its_id_and_how_to_go_on(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": "a", "text": "x"}\n')
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "output": {}}\n{"id": "zz", "output": {}}\n')
    with pytest.raises(BatchInputError) as caught:
        done_ids(str(out), read_records(str(batch)))
    message = str(caught.value)
    assert f'line 2 of {out} holds the result for id "zz"' in message
    assert "delete that line" in message and "--resume" in message and "--overwrite" in message


# 2. Files are 0666 less the umask; SIGTERM ends a batch as Ctrl-C does, with a count.


@pytest.mark.parametrize("batch", [True, False])
def test_output_files_are_created_0644_under_umask_022(
    batch: bool, tmp_path: Path, echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    if batch:
        source = tmp_path / "in.jsonl"
        source.write_text('"{\\"name\\": \\"Ada\\"}"\n')
        argv = ["extract", "--schema", "name", "--batch", str(source), "--output", str(out)]
    else:
        argv = ["extract", "--schema", "name", "--output", str(out), '{"name": "Ada"}']
    previous = os.umask(0o022)
    try:
        assert cli.main(argv) == cli.EXIT_OK
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_the_result_file_honours_a_stricter_umask(tmp_path: Path) -> None:
    from langchain_structx._cli.records import ResultFile

    previous = os.umask(0o077)
    try:
        ResultFile(path=str(tmp_path / "out.jsonl")).close()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600


def _batch_to_interrupt(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path]:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"{\\"name\\": \\"A\\"}"\n"{\\"name\\": \\"B\\"}"\n"{\\"name\\": \\"C\\"}"\n')
    blocked = tmp_path / "blocked"
    env = {"CLI_TEST_BLOCK_ON": '{"name": "B"}', "CLI_TEST_BLOCKED_FILE": str(blocked), **env}
    out = tmp_path / "out.jsonl"
    command = [STRUCTX or "structx", "extract", "--schema", "name", *ECHO, "--batch", str(batch)]
    process = subprocess.Popen(
        [*command, "--output", str(out)],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, blocked


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_batch_says_how_many_records_it_kept_and_how_to_go_on(
    number: int, tmp_path: Path
) -> None:
    process, blocked = _batch_to_interrupt(tmp_path)
    try:
        _wait_for(blocked, process)
        process.send_signal(number)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()  # never left running
            process.communicate()
    assert process.returncode == cli.EXIT_INTERRUPTED
    last = err.strip().splitlines()[-1]
    assert last == "structx: interrupted after 1 of 3 records; rerun with --resume"
    assert "Traceback" not in err
    out = tmp_path / "out.jsonl"
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [1]


def test_sigterm_while_one_text_streams_is_one_line(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    text = '{"name": "A"}'
    env = {"CLI_TEST_BLOCK_ON": text, "CLI_TEST_BLOCKED_FILE": str(blocked)}
    command = [STRUCTX or "structx", "extract", "--schema", "name", *ECHO, "--stream", text]
    process = subprocess.Popen(
        command, env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for(blocked, process)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == cli.EXIT_INTERRUPTED
    assert err.strip().splitlines()[-1] == "structx: interrupted"


# 3. Every option says what it does and its default.


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")]


@pytest.mark.parametrize("command", ["extract", "eval"])
def test_every_option_is_described_with_its_default(command: str) -> None:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = _options(sub.choices[command])
    assert len(actions) > 8
    for action in actions:
        assert action.help, action.dest
        assert "default" in action.help, action.dest
        if action.default not in (None, False) and not isinstance(action.default, list):
            shown = str(action.default)
            if action.dest != "system":  # the prompt is long: it is described
                assert f"default: {shown}" in action.help, action.dest


def test_help_prints_the_defaults() -> None:
    text = structx("extract", "--help").stdout
    for default in ("(default: auto)", "(default: 3)", "(default: local)", "every core"):
        assert default in " ".join(text.split()), default


# 4. Wording that says what is wrong, and where.


def test_a_field_list_with_a_missing_comma_names_the_bad_part() -> None:
    result = structx("extract", "--schema", "name, age int email", *ECHO, "x")
    assert result.returncode == cli.EXIT_USAGE
    assert "'age int email'" in result.stderr and "comma" in result.stderr


def test_an_invalid_json_schema_lists_every_problem_with_its_path(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integr"}, "tags": {"type": "array", "minItems": -1}},
        "required": "age",
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(schema))
    result = structx("extract", "--schema", str(path), *ECHO, "x")
    assert result.returncode == cli.EXIT_USAGE
    err = result.stderr
    for where in ("$.properties.age.type", "$.properties.tags.minItems", "$.required"):
        assert where in err, err


def test_a_provider_answer_that_is_not_json_says_so_and_where(
    echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["extract", "--schema", "title", "--strategy", "provider", "--max-retries", "0"]
    code = cli.main([*argv, '{"title": }'])
    err = capsys.readouterr().err
    assert code == cli.EXIT_FAILED
    assert "is not valid JSON" in err and "line 1, column 11" in err, err


def test_a_schema_failure_names_every_failing_path(
    echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["extract", "--schema", "name, age int, city", "--max-retries", "0"]
    code = cli.main([*argv, '{"name": {"first": "Ada"}, "age": "x"}'])
    err = capsys.readouterr().err
    assert code == cli.EXIT_FAILED
    for where in ("$.name", "$.age", "city"):
        assert where in err, err


def test_input_format_needs_a_batch(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["extract", "--schema", "name", "--input-format", "text", "x"]) == 2
    assert "--input-format works with --batch" in capsys.readouterr().err


def test_main_called_from_another_thread_sets_no_signal_handler(
    echo: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    codes: list[int] = []
    argv = ["extract", "--schema", "name", "--stream", '{"name": "Ada"}']
    worker = threading.Thread(target=lambda: codes.append(cli.main(argv)))
    worker.start()
    worker.join(60)
    assert codes == [cli.EXIT_OK]
    assert json.loads(capsys.readouterr().out) == {"name": "Ada"}
