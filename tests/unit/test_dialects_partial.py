"""Streamed partial values come back in the original schema's shape.

For every corpus schema and dialect, a valid value is encoded as the provider
sends it, then streamed a few characters per chunk through the tracker that
turns chunks into partial events, and read at every prefix. Each partial value
shown is part of the final value (never a key, item or character it lacks,
nothing of the provider's own shape), each one only adds to the one before, and
the whole text restores to the value itself (but for unions whose members
travel in different shapes, which wait for the final value).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_growth import grows
from test_dialects_roundtrip import CASES, _check

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dialects_corpus"))

from dialect_values import valid_instance  # noqa: E402
from langchain_core.messages import AIMessageChunk  # noqa: E402

from langchain_structx._request.plan import CallSpec, build_plan  # noqa: E402
from langchain_structx.dialects import transform  # noqa: E402
from langchain_structx.strategies import ProviderStrategy  # noqa: E402
from langchain_structx.streaming import PartialTracker, partial_value  # noqa: E402

PLAN = build_plan(ProviderStrategy({"title": "Answer", "type": "object"}))


def streamed(text: str, result: Any) -> list[Any]:
    """The partial values a stream of `text` shows, a few characters per chunk."""
    events: list[Any] = []
    spec = CallSpec(strategy="provider", restore=result)
    tracker = PartialTracker(PLAN, spec, 1, events.append)
    for start in range(0, len(text), 3):
        tracker.feed(AIMessageChunk(content=text[start : start + 3]))
    return [event["value"] for event in events]


def shown(text: str, result: Any) -> list[Any]:
    """What `restore_partial` gives for each prefix of `text` that changes it."""
    out: list[Any] = []
    for cut in range(1, len(text) + 1):
        value = partial_value(text[:cut])
        restored = None if value is None else result.restore_partial(value)
        if restored is not None and (not out or restored != out[-1]):
            out.append(restored)
    return out


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_partials_are_parts_of_the_value_and_only_grow(dialect: str, data: Any) -> None:
    _, _, schema, result = data.draw(st.sampled_from([c for c in CASES if c[1] == dialect]))
    value = valid_instance(data, schema, _check(schema))
    text = json.dumps(result.encode(value))
    # Through the tracker (which reads now and then), and at every prefix.
    for seen in (streamed(text, result), shown(text, result)):
        assert all(grows(p, value) for p in seen), (value, seen)
        assert all(grows(a, b) for a, b in zip(seen, seen[1:], strict=False)), seen
    # Whole, it restores exactly; only a union whose members travel in different
    # shapes waits for the final value, which the engine restores with `restore`.
    whole = result.restore_partial(json.loads(text))
    waits = whole is None or grows(whole, value)
    assert whole == value or (waits and "anyOf" in json.dumps(result.schema))


def test_a_map_shows_its_entries_once_their_values_start() -> None:
    result = transform({"type": "object", "additionalProperties": {"type": "string"}}, "openai")
    text = json.dumps(result.encode({"a": "xy", "b": "z"}))
    assert shown(text, result) == [
        {},
        {"a": ""},
        {"a": "x"},
        {"a": "xy"},
        {"a": "xy", "b": ""},
        {"a": "xy", "b": "z"},
    ]


def test_a_free_form_value_shows_once_whole() -> None:
    schema = {"type": "object", "properties": {"data": {}}, "required": ["data"]}
    result = transform(schema, "openai")
    text = json.dumps(result.encode({"data": {"k": [1, 2]}}))
    assert shown(text, result) == [{}, {"data": {"k": [1, 2]}}]


def test_a_wrapped_root_shows_nothing_before_its_key() -> None:
    result = transform({"type": "array", "items": {"type": "integer"}}, "gemini")
    assert result.restore_partial({}) is None
    assert result.restore_partial({"value": [1]}) == [1]


CAT = {
    "type": "object",
    "properties": {
        "kind": {"const": "cat"},
        "lives": {"type": "integer"},
        "name": {"type": "string"},
    },
    "required": ["kind", "lives", "name"],
}
DOG = {
    "type": "object",
    "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}},
    "required": ["kind", "good"],
    "additionalProperties": False,
}


def test_a_union_whose_members_travel_differently_waits_for_the_final_value() -> None:
    # Anthropic carries the cat's extra key as an entry, the dog has none: part
    # of a value can fit a member the whole does not, so the pet never shows.
    schema = {"type": "object", "properties": {"pet": {"anyOf": [CAT, DOG]}}, "required": ["pet"]}
    result = transform(schema, "anthropic", carry_undeclared=True)
    value = {"pet": {"kind": "cat", "lives": 0, "name": "n" * 60, "k" * 100: None}}
    text = json.dumps(result.encode(value))
    assert streamed(text, result) == [{}]
    assert result.restore(json.loads(text)) == value
