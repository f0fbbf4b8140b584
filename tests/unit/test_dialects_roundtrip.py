"""Round-trip property: for x valid under S, `encode(x)` is valid under the provider
schema and `restore(encode(x)) == x`, for every corpus schema and dialect.

The values drawn here are any JSON Schema admits, undeclared keys included, so
the schemas are transformed with `carry_undeclared=True`; by default an object
that omits `additionalProperties` is closed (test_dialects_typed_roundtrip.py
covers values of typed schemas as agents send them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dialects_corpus"))

from dialect_corpus import build_corpus  # noqa: E402
from dialect_values import valid_instance, validator  # noqa: E402

from langchain_structx.dialects import Transformed, transform  # noqa: E402
from langchain_structx.errors import DialectError  # noqa: E402

DIALECTS = ("openai", "anthropic", "gemini")
HUGE = {"limit_5001_properties", "limit_120k_names"}


def _cases() -> list[tuple[str, str, Any, Transformed]]:
    out = []
    for name, schema in build_corpus():
        if name in HUGE:
            continue
        for dialect in DIALECTS:
            try:
                result = transform(schema, dialect, carry_undeclared=True)
                out.append((name, dialect, schema, result))
            except DialectError:
                continue
    return out


CASES = _cases()
CHECKS: dict[int, Any] = {}


def _check(schema: Any) -> Any:
    key = id(schema)
    if key not in CHECKS:
        CHECKS[key] = validator(schema)
    return CHECKS[key]


def assert_round_trip(data: Any, schema: Any, result: Transformed) -> None:
    value = valid_instance(data, schema, _check(schema))
    encoded = result.encode(value)
    errors = [e.message for e in _check(result.schema).iter_errors(encoded)]
    assert errors == [], (value, encoded)
    assert result.restore(encoded) == value, (value, encoded)


QUICK = settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(
    ("name", "dialect", "schema", "result"), CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES]
)
@QUICK
@given(data=st.data())
def test_round_trip_every_schema(
    name: str, dialect: str, schema: Any, result: Transformed, data: Any
) -> None:
    assert_round_trip(data, schema, result)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_round_trip_sampled(dialect: str, data: Any) -> None:
    _, _, schema, result = data.draw(st.sampled_from([c for c in CASES if c[1] == dialect]))
    assert_round_trip(data, schema, result)


@pytest.mark.parametrize("dialect", ["anthropic", "gemini"])
def test_round_trip_huge_schemas(dialect: Any) -> None:
    corpus = dict(build_corpus())
    for name in sorted(HUGE):
        schema = corpus[name]
        value = {
            key: 1 if sub.get("type") == "integer" else True
            for key, sub in schema["properties"].items()
        }
        result = transform(schema, dialect, carry_undeclared=True)
        encoded = result.encode(value)
        assert _check(result.schema).is_valid(encoded)
        assert result.restore(encoded) == value
