"""The `structx` console script itself, run as a user runs it: exit codes, one-line errors,
batches with bad records, and a batch killed with SIGKILL then resumed.

The model is `cli_models.echo` (`--model python:cli_models:echo`), which answers with
the user's text, so a text that is an object's JSON extracts to that object.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_structx import cli

ROOT = Path(__file__).resolve().parents[2]
ECHO = ["--model", "python:cli_models:echo"]
STRUCTX = shutil.which("structx", path=os.path.dirname(sys.executable))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(Path(__file__).parent)])
    env["LANGSMITH_TRACING"] = "false"
    return env | extra


def structx(
    *args: str, stdin: bytes | int | None = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    assert STRUCTX is not None, "the structx console script is not installed"
    options: dict[str, Any] = {"stdin": stdin} if isinstance(stdin, int) else {"input": stdin}
    done = subprocess.run(
        [STRUCTX, *args], capture_output=True, env=_env(**env), cwd=cwd, timeout=120, **options
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single `structx: ...` line a failure prints, with no traceback."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("structx: ") and "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def schema(tmp_path: Path) -> str:
    path = tmp_path / "person.json"
    person = {"title": "Person", "type": "object", "properties": {"name": {"type": "string"}}}
    path.write_text(json.dumps({**person, "required": ["name"]}))
    return str(path)


def test_version_and_help_list_the_exit_codes() -> None:
    version = structx("--version")
    help_text = structx("extract", "--help").stdout
    assert version.returncode == 0 and version.stdout.strip().startswith("structx 0.")
    for code in ("0", "1", "2", "3", "4", "130", "141"):
        assert f"\n  {code} " in help_text


def test_exit_0_prints_the_object(schema: str) -> None:
    result = structx("extract", "--schema", schema, *ECHO, '{"name": "Ada"}')
    assert result.returncode == cli.EXIT_OK
    assert json.loads(result.stdout) == {"name": "Ada"}


def test_exit_1_when_no_valid_object_comes(schema: str) -> None:
    result = structx("extract", "--schema", schema, *ECHO, "--max-retries", "0", "prose")
    assert result.returncode == cli.EXIT_FAILED
    assert "extraction failed" in one_error_line(result)
    assert result.stdout == ""


def _usage_cases(tmp: Path, schema: str) -> dict[str, tuple[list[str], Any, str]]:
    """Bad input classes: arguments, stdin, and a fragment of the error line."""
    binary = tmp / "binary.jsonl"
    binary.write_bytes(b"\x7fELF\x02\x01\x00\x00\xff\xfe")
    latin = tmp / "latin.jsonl"
    latin.write_bytes('"caf\xe9"\n'.encode("latin-1"))
    dupes = tmp / "dupes.jsonl"
    dupes.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    good = tmp / "good.jsonl"
    good.write_text('"x"\n')
    held = tmp / "held.jsonl"
    held.write_text('{"id": 1, "output": {}}\n')
    text = ["extract", "--schema", schema, *ECHO]
    batch = [*text, "--batch", str(dupes)]
    return {
        "binary stdin": (text + ["-"], b"\x00\x01\x02binary", "not text"),
        "non-utf8 stdin": (text + ["-"], b"caf\xe9 au lait", "not UTF-8"),
        "closed stdin": (text + ["-"], subprocess.DEVNULL, "no text given"),
        "empty text": (text + ["   "], b"", "no text given"),
        "binary batch": ([*text, "--batch", str(binary)], b"", "not text"),
        "non-utf8 batch": ([*text, "--batch", str(latin)], b"", "not UTF-8"),
        "duplicate ids": (batch, b"", "each record needs its own id"),
        "schema :X": (["extract", "--schema", ":X", "t"], b"", "is not a .json file"),
        "schema /dev/zero": (["extract", "--schema", "/dev/zero", "t"], b"", "over 1048576"),
        "schema bad type": (["extract", "--schema", "age integer", "t"], b"", "unknown"),
        "missing folder": ([*text, "--output", str(tmp / "no" / "o.json"), "t"], b"", "folder"),
        "stream in batch": ([*batch, "--stream"], b"", "--stream"),
        "resume to stdout": ([*batch, "--resume"], b"", "need --output"),
        "text and batch": ([*batch, "t"], b"", "not both"),
        "output holds results": (
            [*text, "--batch", str(good), "--output", str(held)],
            b"",
            "--overwrite",
        ),
        "base-url on local": ([*text[:3], "--base-url", "http://127.0.0.1:1", "t"], b"", "--model"),
        "n-ctx on a provider": ([*text, "--n-ctx", "512", "t"], b"", "embedded model"),
        "many with a union": ([*text, "--schema", "title", "--many", "t"], b"", "single shape"),
        "bad concurrency": ([*batch, "--concurrency", "0"], b"", ">= 1"),
    }


@pytest.mark.parametrize("case", list(_usage_cases(Path("/tmp"), "s.json")))
def test_exit_2_for_each_bad_input_class(case: str, schema: str, tmp_path: Path) -> None:
    argv, stdin, fragment = _usage_cases(tmp_path, schema)[case]
    result = structx(*argv, stdin=stdin)
    assert result.returncode == cli.EXIT_USAGE, result.stderr
    assert fragment in one_error_line(result)
    assert result.stdout == ""


def test_closed_stdin_is_one_line(schema: str) -> None:
    script = f"exec 0<&-; exec {STRUCTX} extract --schema {schema} -"
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=_env())
    assert result.returncode == cli.EXIT_USAGE
    assert "stdin is closed" in one_error_line(result)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--model", "openai:gpt-4.1-mini"], "OPENAI_API_KEY"),
        (["--model-path", "/no/such/weights.gguf"], "not found"),
        (["--model", "python:no_such_module:factory"], "no_such_module"),
        (["--model", "nosuch:thing"], "cannot load model"),
    ],
    ids=["openai-without-key", "missing-gguf", "bad-python-model", "unknown-provider"],
)
def test_exit_3_when_the_model_cannot_be_loaded(
    argv: list[str], fragment: str, schema: str
) -> None:
    result = structx("extract", "--schema", schema, *argv, "some text")
    assert result.returncode == cli.EXIT_MODEL
    assert fragment in one_error_line(result)


def test_exit_3_when_the_server_is_unreachable(schema: str, tmp_path: Path) -> None:
    pytest.importorskip("langgraph_sdk")
    batch = tmp_path / "in.jsonl"
    batch.write_text('"x"\n')
    result = structx("extract", "--schema", schema, "--batch", str(batch), "--server", _nowhere())
    assert result.returncode == cli.EXIT_MODEL
    assert "cannot reach" in one_error_line(result)


def _nowhere() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_exit_4_and_an_error_record_for_each_record_without_text(
    schema: str, tmp_path: Path
) -> None:
    lines = [
        '{"id": "a", "text": "{\\"name\\": \\"Ada\\"}"}',
        "",  # a blank line is skipped
        '{"id": "no-text"}',
        '{"id": "null", "text": null}',
        '{"id": "number", "text": 5}',
        '""',
        '"{\\"name\\": \\"Bo\\"}"',
    ]
    batch = "\n".join(lines) + "\n"
    result = structx("extract", "--schema", schema, *ECHO, "--batch", "-", stdin=batch.encode())
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == cli.EXIT_PARTIAL
    assert [r["id"] for r in records] == ["a", "no-text", "null", "number", 6, 7]
    assert [r.get("output") for r in records] == [
        {"name": "Ada"},
        None,
        None,
        None,
        None,
        {"name": "Bo"},
    ]
    assert {r["error"]["type"] for r in records[1:5]} == {"MissingTextError"}
    assert records[1]["error"]["message"] == "line 3: the record has no 'text'"
    summary = result.stderr.splitlines()[-1]
    assert summary.startswith("structx: batch: 2 done, 4 failed, 0 skipped")
    assert summary.endswith(" 30 tokens")  # two model calls of 15 tokens, none for empty records


def test_sigint_is_exit_130_with_one_line(schema: str, tmp_path: Path) -> None:
    process, blocked = _hanging_batch(schema, tmp_path)
    # The signal must land mid-run: wait until the model hangs on the record.
    _wait_for(blocked, process)
    process.send_signal(signal.SIGINT)
    _assert_interrupted(process)


def test_sigint_taken_by_a_worker_thread_still_ends_the_batch(schema: str, tmp_path: Path) -> None:
    # The kernel hands a process's SIGINT to any of its threads. Taken by the
    # thread of a model call that hangs, it used to leave the main thread waiting
    # on its event loop (with nothing else to wake it) until that call returned.
    process, _ = _hanging_batch(schema, tmp_path, CLI_TEST_INTERRUPT_HERE="1")
    _assert_interrupted(process)


def _hanging_batch(schema: str, tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path]:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"{\\"name\\": \\"A\\"}"\n')
    blocked = tmp_path / "blocked"
    env = {"CLI_TEST_BLOCK_ON": '{"name": "A"}', "CLI_TEST_BLOCKED_FILE": str(blocked), **env}
    process = subprocess.Popen(
        [STRUCTX or "structx", "extract", "--schema", schema, *ECHO, "--batch", str(batch)],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, blocked


def _wait_for(blocked: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not blocked.exists():
        assert process.poll() is None, "the command ended before the model was called"
        assert time.monotonic() < deadline, "the model was never called"
        time.sleep(0.05)


def _assert_interrupted(process: subprocess.Popen[str]) -> None:
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()  # never left running
        process.communicate()
        raise
    assert process.returncode == cli.EXIT_INTERRUPTED
    # Printed to stdout, so nothing to resume: the line says the printed lines are whole.
    assert err.strip().splitlines()[-1] == (
        "structx: interrupted after 0 of 1 records; "
        "the lines printed are complete (use --output FILE to --resume)"
    )
    assert "Traceback" not in err


def _contacts(count: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "text": json.dumps({"name": f"Person {i}"})} for i in range(count)]


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        assert process.poll() is None, "the batch ended before it could be killed"
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {count} lines")


def test_a_batch_killed_mid_way_resumes_with_every_record_exactly_once(
    schema: str, tmp_path: Path
) -> None:
    records = _contacts(10)
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in records))
    output = tmp_path / "out.jsonl"
    argv = ["extract", "--schema", schema, *ECHO, "--batch", str(batch), "--output", str(output)]
    # Record r6 hangs, so r0..r5 are written and r7, r8 (running beside it) are not.
    process = subprocess.Popen(
        [STRUCTX or "structx", *argv, "--concurrency", "3"],
        env=_env(CLI_TEST_BLOCK_ON=records[6]["text"]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_lines(output, 6, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert output.read_text().count("\n") == 6
    with open(output, "ab") as cut:  # what a kill in the middle of a write leaves
        cut.write(b'{"id": "r6", "outp')

    refused = structx(*argv)
    resumed = structx(*argv, "--resume")

    assert refused.returncode == cli.EXIT_USAGE  # no --resume: the results are kept
    assert resumed.returncode == cli.EXIT_OK, resumed.stderr
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["id"] for line in lines] == [r["id"] for r in records]
    assert [line["output"]["name"] for line in lines] == [f"Person {i}" for i in range(10)]
    assert "4 done, 0 failed, 6 skipped" in resumed.stderr.splitlines()[-1]
    again = structx(*argv, "--resume")
    assert again.returncode == cli.EXIT_OK
    assert "0 done, 0 failed, 10 skipped" in again.stderr
    assert len(output.read_text().splitlines()) == 10


def test_resume_refuses_an_output_of_another_batch(schema: str, tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('"{\\"name\\": \\"A\\"}"\n')
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "elsewhere", "output": {}}\n')
    argv = ["--batch", str(batch), "--output", str(output), "--resume"]
    result = structx("extract", "--schema", schema, *ECHO, *argv)
    assert result.returncode == cli.EXIT_USAGE
    assert 'holds the result for id "elsewhere", which no record' in one_error_line(result)
    assert output.read_text() == '{"id": "elsewhere", "output": {}}\n'
