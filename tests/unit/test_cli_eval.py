"""`structx eval`: each strategy measured on a model and inputs, a recommendation, a
chart, and a profile that `AutoStrategy` and `structx extract --profile` read."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_structx import cli
from langchain_structx._models.profile import (
    PROFILE_FORMAT,
    StrategyProfileError,
    read_profile,
)
from langchain_structx.strategies import AutoStrategy
from langchain_structx.testing import RecordedCall, ScriptedChatModel, tool_call

USAGE = {"input_tokens": 8, "output_tokens": 4, "total_tokens": 12}


def _answer(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    """The user's text is the answer: as a tool call when tools are bound, else as text.

    With JSON mode asked for, the answer comes right; the other routes get the
    city wrong (a measurable difference in exact fields).
    """
    text = next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))
    wanted = json.loads(text) if text.startswith("{") else {}
    json_mode = call.response_format == {"type": "json_object"}
    value = wanted if json_mode else {**wanted, "city": "Nowhere"}
    if call.tools:
        name = call.tools[0]["function"]["name"]
        return AIMessage("", tool_calls=[tool_call(name, value)], usage_metadata=USAGE)  # type: ignore[arg-type]
    return AIMessage(json.dumps(value), usage_metadata=USAGE)  # type: ignore[arg-type]


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    scripted = ScriptedChatModel(
        responses=[_answer] * 200,
        profile={"structured_output": True, "tool_calling": True, "tool_choice": True},
    )
    monkeypatch.setattr("langchain_structx._cli.eval.load_model", lambda spec: scripted)
    monkeypatch.setattr(cli, "load_model", lambda spec: scripted)
    return scripted


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [
        {"id": i, "text": json.dumps(person), "expected": person}
        for i, person in enumerate(
            [{"name": "Ada", "city": "London"}, {"name": "Bo", "city": "Oslo"}]
        )
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


SCHEMA = "name, city"


def test_eval_measures_each_strategy_and_recommends_one(
    model: ScriptedChatModel, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["eval", "--schema", SCHEMA, "--inputs", str(inputs)])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK
    rows = [line for line in out.splitlines() if line.startswith("| ") and "strategy" not in line]
    cells = {row.split("|")[1].strip(): [c.strip() for c in row.split("|")[2:-1]] for row in rows}
    assert set(cells) == {"provider", "tool", "prompted", "json"}
    # JSON mode gets every field right; the others get the city wrong.
    assert cells["json"][:4] == ["100", "100", "1.00", "12"]
    assert cells["tool"][:2] == ["100", "50"]
    assert rows[0].startswith("| json ")  # best first
    assert "recommended: json" in out
    assert len(model.calls) == 8  # two inputs, four strategies, no retries


def test_save_profile_is_read_by_auto_strategy_and_extract(
    model: ScriptedChatModel, inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "profile.json"
    argv = ["eval", "--schema", SCHEMA, "--inputs", str(inputs), "--save-profile", str(profile)]
    assert cli.main(argv) == cli.EXIT_OK
    saved = json.loads(profile.read_text())
    assert saved["format"] == PROFILE_FORMAT and saved["order"][0] == "prompted"
    assert saved["json_mode"] is True and len(saved["measured"]) == 4
    strategy = AutoStrategy.from_profile({"title": "T", "type": "object"}, str(profile))
    assert strategy.order[0] == "prompted" and strategy.json_mode
    capsys.readouterr()
    model.reset([_answer])
    text = '{"name": "Ada", "city": "Paris"}'
    code = cli.main(["extract", "--schema", SCHEMA, "--profile", str(profile), "--report", text])
    printed = json.loads(capsys.readouterr().out)
    report = printed["report"]
    assert printed["value"] == {"name": "Ada", "city": "Paris"}
    assert code == cli.EXIT_OK and report["strategy"] == "prompted"
    assert model.calls[0].response_format == {"type": "json_object"}  # JSON mode, as measured


def test_plot_draws_a_png(model: ScriptedChatModel, inputs: Path, tmp_path: Path) -> None:
    chart = tmp_path / "eval.png"
    argv = ["eval", "--schema", SCHEMA, "--inputs", str(inputs), "--plot", str(chart)]
    argv += ["--strategies", "tool,json"]
    assert cli.main(argv) == cli.EXIT_OK
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(model.calls) == 4


def test_plot_without_matplotlib_is_a_typed_error_before_any_model_call(
    model: ScriptedChatModel,
    inputs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from langchain_structx._cli.eval_plot import PlotUnavailableError, pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailableError, match=r"install langchain-structx\[plot\]"):
        pyplot()
    argv = ["eval", "--schema", SCHEMA, "--inputs", str(inputs), "--plot", str(tmp_path / "x.png")]
    assert cli.main(argv) == cli.EXIT_MODEL
    assert "--plot needs matplotlib" in capsys.readouterr().err
    assert model.calls == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"text": "a"', "line 2 of"),
        ("[1]", "not a JSON object or string"),
        ('{"text": ""}', "has no text"),
    ],
)
def test_a_bad_inputs_line_is_named(
    line: str, problem: str, model: ScriptedChatModel, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('"fine"\n' + line + "\n")
    assert cli.main(["eval", "--schema", SCHEMA, "--inputs", str(path)]) == cli.EXIT_USAGE
    assert problem in capsys.readouterr().err
    assert model.calls == []


@pytest.mark.parametrize("value", ["json,bogus", "tool,tool", ""])
def test_unknown_strategies_are_refused(value: str, inputs: Path, capsys: Any) -> None:
    argv = ["eval", "--schema", SCHEMA, "--inputs", str(inputs), "--strategies", value]
    assert cli.main(argv) == cli.EXIT_USAGE
    assert "--strategies must list" in capsys.readouterr().err


def test_a_strategy_that_never_answers_is_measured_not_fatal(
    monkeypatch: pytest.MonkeyPatch, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted = ScriptedChatModel(responses=["not json"] * 10)
    monkeypatch.setattr("langchain_structx._cli.eval.load_model", lambda spec: scripted)
    argv = ["eval", "--schema", SCHEMA, "--inputs", str(inputs), "--strategies", "prompted"]
    assert cli.main([*argv, "--max-retries", "1"]) == cli.EXIT_FAILED
    out = capsys.readouterr().out
    assert "| prompted | 0 | 0 | 2.00 | 0 |" in out
    assert "prompted: first failure: StructuredOutputRetryError" in out
    assert "recommended: none" in out


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        ({"order": ["tool"]}, "is not a strategy profile"),
        ({"format": PROFILE_FORMAT, "order": ["tool", "tool"]}, "each once"),
        ({"format": PROFILE_FORMAT, "order": []}, "order must list"),
        ({"format": PROFILE_FORMAT, "order": ["tool"], "json_mode": "yes"}, "true or false"),
    ],
)
def test_a_bad_profile_is_a_user_error(profile: dict[str, Any], problem: str) -> None:
    with pytest.raises(StrategyProfileError, match=problem):
        read_profile(profile)


def test_a_profile_file_that_is_not_json_is_refused_by_extract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.json"
    path.write_text("{nope")
    with pytest.raises(StrategyProfileError, match="not valid JSON"):
        read_profile(str(path))
    missing = str(tmp_path / "none.json")
    code = cli.main(["extract", "--schema", SCHEMA, "--profile", missing, "x"])
    assert code == cli.EXIT_USAGE and "cannot read profile" in capsys.readouterr().err


def test_profile_and_an_explicit_strategy_do_not_mix(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["extract", "--schema", SCHEMA, "--profile", "p.json", "--strategy", "tool", "x"]
    assert cli.main(argv) == cli.EXIT_USAGE
    assert "--profile" in capsys.readouterr().err
