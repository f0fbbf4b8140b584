from __future__ import annotations

import json
import time
from typing import Any

import pytest

from langchain_structx._parse import PartialJSONParser, parse_partial
from langchain_structx.limits import DEFAULT_LIMITS


def stream(text: str, size: int = 4) -> list[Any]:
    parser = PartialJSONParser()
    return [
        json.loads(json.dumps(parser.feed(text[i : i + size]))) for i in range(0, len(text), size)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("{", {}),
        ('{"ke', {}),
        ('{"key"', {}),
        ('{"key": ', {}),
        ('{"key": "va', {"key": "va"}),
        ('{"key": "value"', {"key": "value"}),
        ('{"a": 12', {}),
        ('{"a": 12,', {"a": 12}),
        ('{"a": 12 ', {"a": 12}),
        ("[1, 2", [1]),
        ("[1, 2]", [1, 2]),
        ("[tru", []),
        ("[true", [True]),
        ("[null, fals", [None]),
        ("[1, [2, {", [1, [2, {}]]),
        ('["a\\', ["a"]),
        ('["a\\n', ["a\n"]),
        ('["\\u00', [""]),
        ('["\\u00e9', ["\u00e9"]),
        ('["\\ud83d', [""]),
        ('["\\ud83d\\ude00', ["\U0001f600"]),
        ('["\\ud83dx', ["\ud83dx"]),
        ("42", 42),
        ("-", None),
        ('"hal', "hal"),
        ("tr", None),
        ("true", True),
    ],
)
def test_best_effort_values(text: str, expected: Any) -> None:
    assert parse_partial(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Sure! Here it is:\n```json\n{"a": [1, 2', {"a": [1]}),
        ('The answer is {"a": 1} and {"b": 2}', {"a": 1}),
        ('{"a": 1}\n```\nHope that helps {"b": 2}', {"a": 1}),
        ("```json\n42\n```", 42),
        ('"Sure," he said. {"a": "b', {"a": "b"}),
        ("the value is [1, 2,", [1, 2]),
        ("{'a': 'b', 'c': True,}", {"a": "b", "c": True}),
        ('{"a": [1, 2,], "b": 3}', {"a": [1, 2], "b": 3}),
        ('{"a": 1 "b": 2}', {"a": 1}),
        ('{"a": [1}', {"a": [1]}),
    ],
)
def test_prose_fences_and_errors(text: str, expected: Any) -> None:
    assert parse_partial(text) == expected


def test_successive_values_only_grow() -> None:
    text = json.dumps({"name": "Ada Lovelace", "tags": ["x", "yy"], "n": 123, "ok": False, "d": {}})
    snapshots = stream(text)
    assert snapshots[-1] == json.loads(text)
    assert snapshots[3] == {"name": "Ada Lo"}  # after 16 characters
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        assert grows(before, after)


def grows(before: Any, after: Any) -> bool:
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and grows(value, after[key]) for key, value in before.items()
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(before) <= len(after)
            and all(grows(a, b) for a, b in zip(before, after, strict=False))
        )
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return before is None or before == after


def test_feed_returns_live_value_and_text_accumulates() -> None:
    parser = PartialJSONParser()
    assert parser.feed('{"a": [') == {"a": []}
    assert parser.feed("1, ") is parser.value
    assert parser.text == '{"a": [1, '
    parser.feed("2]}")
    assert parser.value == {"a": [1, 2]}
    assert parser.feed(" trailing {}") == {"a": [1, 2]}
    assert parser.text.endswith("trailing {}")


def test_feed_never_raises_on_odd_input() -> None:
    parser = PartialJSONParser()
    assert parser.feed(None) is None  # type: ignore[arg-type]
    for chunk in ["\x00", "\ud800", "{", "\u2028", "]", "NaN", "}"]:
        parser.feed(chunk)
    assert parser.value == {}


def test_deep_nesting_is_capped() -> None:
    value = parse_partial("[" * 5000)
    depth = 0
    while isinstance(value, list) and value:
        value = value[0]
        depth += 1
    assert depth == DEFAULT_LIMITS.max_depth - 1


def test_depth_cap_follows_the_given_limit() -> None:
    parser = PartialJSONParser(max_depth=3)
    value = parser.feed("[[[[[1]]]]]")
    assert value == [[[]]]


def test_streaming_cost_is_linear() -> None:
    def cost(copies: int) -> float:
        text = json.dumps([{"id": i, "name": "item " * 3, "ok": True} for i in range(copies)])
        parser = PartialJSONParser()
        started = time.perf_counter()
        for i in range(0, len(text), 4):
            parser.feed(text[i : i + 4])
        assert parser.value == json.loads(text)
        return time.perf_counter() - started

    small, large = min(cost(100) for _ in range(3)), min(cost(1000) for _ in range(3))
    assert large < small * 10 * 2.5  # quadratic behaviour would be ~100x


def test_long_string_streams_quickly() -> None:
    text = json.dumps({"a": "x" * 200_000})
    parser = PartialJSONParser()
    started = time.perf_counter()
    for i in range(0, len(text), 400):
        parser.feed(text[i : i + 400])
    assert parser.value == {"a": "x" * 200_000}
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, ', {"a": 1}),
        ('{"a": 1, x', {"a": 1}),
        ('"abc"  ', "abc"),
        ("[" + "1" * 5000 + ", 2]", []),
        ('["\\uzz12"]', ["uzz12"]),
        ('["\\ud83d\\u0041"]', ["\ud83dA"]),
        ('["\\ud83d\\', [""]),
        ('["\\q"]', ["q"]),
    ],
)
def test_odd_but_readable_streams(text: str, expected: Any) -> None:
    assert parse_partial(text) == expected


def test_internal_errors_freeze_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_structx import _partial

    def broken(text: str, start: int) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_partial, "_decode_escape", broken)
    parser = PartialJSONParser()
    assert parser.feed('{"a": 1, "b": "x\\n') == {"a": 1, "b": "x"}
    assert parser.feed('", "c": 2}') == {"a": 1, "b": "x"}
