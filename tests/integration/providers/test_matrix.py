"""The provider matrix through the official clients: every case gives the typed outcome,
and the fake servers saw no request that breaks a documented rule."""

from __future__ import annotations

import pytest

from langchain_structx import create_agent
from langchain_structx.errors import DialectError

from .clients import PROVIDERS
from .matrix import FAMILIES, Case, asks_unforced, cases, run, verdict

pytestmark = pytest.mark.integration

CASES = list(cases())


def test_matrix_covers_every_value_of_every_axis() -> None:
    assert {c.provider for c in CASES} == set(PROVIDERS)
    assert len(PROVIDERS) == 4
    assert len({c.strategy for c in CASES}) == 5
    assert {c.family for c in CASES} == set(FAMILIES)
    assert len({c.behaviour for c in CASES}) == 10
    assert len({(c.provider, c.strategy, c.behaviour) for c in CASES}) == 200


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(case: Case) -> None:
    outcome = run(case, create_agent)
    assert outcome.violations == []
    assert verdict(case, outcome) is None
    if isinstance(outcome.error, DialectError):
        assert outcome.requests == 0  # refused before anything was sent
        return
    if case.behaviour == "refusal" and outcome.requests:
        assert outcome.requests == 1  # a refusal is never retried
    if case.behaviour == "rejection" and case.strategy != "auto":
        assert (outcome.requests, outcome.rejected) == ((2, 1) if asks_unforced(case) else (1, 1))
    if case.behaviour in ("invalid_then_fixed", "user_tool_first") and outcome.error is None:
        assert outcome.requests >= 2
