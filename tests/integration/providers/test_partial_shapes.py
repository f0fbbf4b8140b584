"""Streamed partial values keep the schema's shape under every strict dialect.

A strict dialect sends a map as a list of key/value entries. Through each
official client, streaming an agent's custom events, every partial value must
show the map as a dict that only grows, and the final value must be the answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from langchain_structx import ProviderStrategy, create_agent
from langchain_structx._request.plan import build_plan

from .clients import PROVIDERS, client, fake
from .matrix import Answers, Scores, scripted
from .wire import Ask, Reply

pytestmark = pytest.mark.integration

VALUE = {"scores": {f"player {n}": n for n in range(12)}}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_map_streams_as_a_growing_dict(provider: str) -> None:
    strategy = ProviderStrategy(Scores, strict=True)
    answers = Answers(build_plan(strategy), VALUE, provider)
    clean = scripted("clean", answers, provider)

    def model(ask: Ask) -> Reply:
        assert ask.kind == "format"  # the strict dialect's schema was sent
        return clean(ask)

    with fake(provider, model) as server:
        agent = create_agent(client(provider, server, streaming=True), response_format=strategy)
        events = list(agent.stream({"messages": [("user", "Scores?")]}, stream_mode="custom"))
    assert server.violations == []
    partials = [e["value"] for e in events if e["phase"] == "partial"]
    final = [e["value"] for e in events if e["phase"] == "final"]
    assert final == [Scores(**VALUE)]
    shown: list[Any] = [p["scores"] for p in partials if "scores" in p]
    assert len(shown) >= 2
    assert all(isinstance(scores, dict) for scores in shown), shown
    assert all(a.items() <= b.items() for a, b in zip(shown, shown[1:], strict=False))
    assert all(scores.items() <= VALUE["scores"].items() for scores in shown)
