"""The provider matrix through the official clients: every case gives the typed outcome,
and the fake servers saw no request that breaks a documented rule."""

from __future__ import annotations

import pytest

from langchain_structx import (
    StructuredOutputRefusal,
    TruncatedOutputError,
    create_agent,
)
from langchain_structx._plan import build_plan
from langchain_structx.errors import DialectError

from .matrix import FAMILIES, Case, cases, expected_value, refused, run, strategy_for

pytestmark = pytest.mark.integration

CASES = list(cases())


def test_matrix_covers_every_value_of_every_axis() -> None:
    assert {c.provider for c in CASES} == {"openai", "anthropic", "gemini"}
    assert len({c.strategy for c in CASES}) == 5
    assert {c.family for c in CASES} == set(FAMILIES)
    assert len({c.behaviour for c in CASES}) == 10
    assert len({(c.provider, c.strategy, c.behaviour) for c in CASES}) == 150


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(case: Case) -> None:
    schema, value = FAMILIES[case.family]
    outcome = run(case, create_agent)
    assert outcome.violations == []
    plan = build_plan(strategy_for(case.strategy, schema))
    strict = case.strategy == "provider_strict" or (
        case.strategy == "provider" and case.provider != "openai"
    )
    if refused(plan, "provider_strict" if strict else case.strategy, case.provider):
        assert isinstance(outcome.error, DialectError)
        assert outcome.requests == 0
        return
    if case.behaviour == "refusal":
        assert isinstance(outcome.error, StructuredOutputRefusal), outcome.error
        assert outcome.requests == 1
        return
    if case.behaviour == "truncation":
        assert isinstance(outcome.error, TruncatedOutputError), outcome.error
        return
    if case.behaviour == "rejection" and case.strategy != "auto":
        assert outcome.error is not None
        assert (outcome.requests, outcome.rejected) == (1, 1)
        return
    assert outcome.error is None, repr(outcome.error)
    expected = expected_value(schema, value)
    assert outcome.answers and all(a == expected for a in outcome.answers)
    if case.behaviour in ("rejection", "invalid_then_fixed", "user_tool_first"):
        assert outcome.requests >= 2
