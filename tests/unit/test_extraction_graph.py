"""The served extraction graph, and the CLI's `--server` options that need no server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from langchain_structx import cli
from langchain_structx.errors import UserError
from langchain_structx.graphs import (
    MAX_RETRIES_LIMIT,
    build_extraction_graph,
    request_strategy,
)
from langchain_structx.testing import echo_model

CITY = {
    "title": "City",
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
PLACE = {"title": "Place", "type": "object", "properties": {"place": {"type": "string"}}}


async def test_a_valid_answer_is_the_output_and_no_error() -> None:
    app = build_extraction_graph(echo_model)

    out = await app.ainvoke({"text": '{"city": "Oslo"}', "schema": [CITY, PLACE]})

    assert out["structured_response"] == {"city": "Oslo"}
    assert out["structured_response_kind"] == "City"
    assert out["structured_output_report"]["attempts"] == 1
    assert out["structured_output_error"] is None
    assert set(out) == {
        "structured_response",
        "structured_response_kind",
        "structured_output_report",
        "structured_output_error",
    }


def test_a_hopeless_text_ends_with_the_error_after_every_retry() -> None:
    model = echo_model()
    app = build_extraction_graph(lambda: model)

    out = app.invoke({"text": '{"town": "Oslo"}', "schema": CITY, "max_retries": 2})

    assert out["structured_response"] is None
    assert out["structured_output_error"]["type"] == "StructuredOutputRetryError"
    assert "3 attempt(s)" in out["structured_output_error"]["message"]
    assert len(model.calls) == 3


def test_a_text_nested_too_deeply_to_read_is_an_error_output_not_a_crash() -> None:
    # The offline graph's stand-in model reads the text as a tool call's arguments
    # when it can; text nested past what JSON can be read to is just text.
    app = build_extraction_graph(echo_model)
    deep = "[" * 5000 + "]" * 5000

    out = app.invoke({"text": deep, "schema": CITY, "strategy": "tool", "max_retries": 0})

    assert out["structured_response"] is None
    assert out["structured_output_error"]["type"] == "StructuredOutputRetryError"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"text": "x", "schema": []}, "schema must be"),
        ({"text": "x", "schema": [CITY, "no"]}, "schema must be"),
        ({"text": "x", "schema": CITY, "strategy": "magic"}, "strategy must be"),
        ({"text": "x", "schema": CITY, "max_retries": MAX_RETRIES_LIMIT + 1}, "max_retries"),
        ({"text": "x", "schema": CITY, "max_retries": True}, "max_retries"),
    ],
)
def test_requests_are_checked_as_untrusted_input(request_: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        request_strategy(request_)


@pytest.mark.parametrize(
    ("field", "value"), [("max_retries", 10**6), ("text", 7), ("system", 7.5), ("system", None)]
)
def test_a_bad_request_is_an_error_output_not_a_crash(field: str, value: Any) -> None:
    app = build_extraction_graph(echo_model)

    out = app.invoke({"text": "x", "schema": CITY, field: value})

    assert out["structured_output_error"]["type"] == "UserError"
    assert out["structured_output_error"]["message"].startswith(field)


def _batch(tmp_path: Path) -> list[str]:
    schema = tmp_path / "city.json"
    schema.write_text(json.dumps(CITY))
    batch = tmp_path / "in.jsonl"
    batch.write_text('"Oslo"\n')
    return ["extract", "--schema", str(schema), "--batch", str(batch)]


def test_server_without_its_extra_is_exit_code_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph_sdk", None)  # as if it were not installed

    code = cli.main([*_batch(tmp_path), "--server", "http://127.0.0.1:9"])

    assert code == cli.EXIT_MODEL
    assert "langchain-structx[server]" in capsys.readouterr().err


def test_server_needs_a_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = _batch(tmp_path)[2]

    code = cli.main(["extract", "--schema", schema, "--server", "http://127.0.0.1:9", "Oslo"])

    assert code == cli.EXIT_USAGE
    assert "--server works with --batch" in capsys.readouterr().err
