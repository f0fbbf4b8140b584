"""The compat harness itself: the upstream tests really exercise our create_agent."""

from __future__ import annotations

import gzip
import hashlib
import importlib
import inspect
import json
from typing import Any

import langchain.agents
import langchain.agents.factory
import pytest
import yaml
from langchain.agents.structured_output import ToolStrategy
from pydantic import BaseModel

from langchain_structx import middleware
from tests.compat import plugin

UPSTREAM_MODULES = (
    "tests.unit_tests.agents.test_response_format",
    "tests.unit_tests.agents.test_response_format_integration",
    "tests.unit_tests.agents.test_invalid_tool_calls",
    "tests.unit_tests.agents.middleware.core.test_wrap_model_call_state_update",
    "tests.unit_tests.agents.middleware.implementations.test_structured_output_retry",
    "tests.unit_tests.agents.middleware.implementations.test_model_refusal",
)


def test_langchain_create_agent_is_ours() -> None:
    assert langchain.agents.create_agent is middleware.create_agent
    assert langchain.agents.factory.create_agent is middleware.create_agent


@pytest.mark.parametrize("name", UPSTREAM_MODULES)
def test_upstream_module_sees_ours(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert module.__file__.startswith(str(plugin.UPSTREAM))
    assert module.create_agent is middleware.create_agent


def test_ours_wraps_langchains_original() -> None:
    original = middleware._langchain_create_agent
    assert original is not middleware.create_agent
    assert original.__module__ == "langchain.agents.factory"


def test_signature_is_langchains() -> None:
    ours = inspect.signature(middleware.create_agent).parameters
    theirs = inspect.signature(middleware._langchain_create_agent).parameters
    assert list(ours) == list(theirs)
    assert [p.kind for p in ours.values()] == [p.kind for p in theirs.values()]


def test_agent_built_through_langchain_runs_our_middleware() -> None:
    from tests.unit_tests.agents.model import FakeToolCallingModel

    class Answer(BaseModel):
        text: str

    model = FakeToolCallingModel(
        tool_calls=[[{"name": "Answer", "id": "1", "args": {"text": "hi"}}]]
    )
    agent: Any = langchain.agents.create_agent(model, response_format=ToolStrategy(Answer))
    state = agent.invoke({"messages": [("user", "hi")]})
    assert state["structured_response"] == Answer(text="hi")
    # Only our middleware writes the report; it wraps the model step, adding no node.
    assert state["structured_output_report"]["strategy"] == "tool"
    assert set(agent.get_graph().nodes) == {"__start__", "model", "tools", "__end__"}


def test_upstream_files_are_verbatim() -> None:
    sums = (plugin.UPSTREAM / "SHA256SUMS").read_text().splitlines()
    assert sums
    for line in sums:
        digest, name = line.split(maxsplit=1)
        data = (plugin.UPSTREAM / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name


def test_every_deliberate_entry_names_a_test(pytestconfig: pytest.Config) -> None:
    stale = plugin.stale_entries(pytestconfig)
    if stale is None:
        pytest.skip("only checked when whole upstream files are collected")
    assert stale == []


@pytest.mark.parametrize("key", sorted({**plugin.DELIBERATE, **plugin.FORCED}))
def test_documented(key: str) -> None:
    docs = plugin.UPSTREAM.parents[2] / "docs" / "compatibility.md"
    assert key in docs.read_text(encoding="utf-8")


def test_cassettes_replay_only(vcr_config: dict[str, Any]) -> None:
    assert vcr_config["record_mode"] == "none"
    assert sorted(p.name for p in plugin.CASSETTES.iterdir()) == sorted(
        name.rsplit("/", 1)[1]
        for name in (plugin.UPSTREAM / "SHA256SUMS").read_text().split()
        if name.startswith("tests/cassettes/")
    )
    with pytest.raises(RuntimeError, match="never records"):
        plugin.ReadOnlyCassettes.save_cassette("x.yaml.gz", {}, plugin.GzipYamlSerializer)


@pytest.mark.vcr
@pytest.mark.default_cassette("test_strict_mode[False]")
def test_unrecorded_request_fails_without_network() -> None:
    from langchain_openai import ChatOpenAI
    from vcr.errors import CannotOverwriteExistingCassetteException

    model = ChatOpenAI(model="gpt-5", api_key="placeholder", max_retries=0)
    with pytest.raises(CannotOverwriteExistingCassetteException):
        model.invoke("a request nobody recorded")


@pytest.mark.vcr
@pytest.mark.default_cassette("test_strict_mode[False]")
def test_recorded_request_replays() -> None:
    from langchain_openai import ChatOpenAI

    raw = (plugin.CASSETTES / "test_strict_mode[False].yaml.gz").read_bytes()
    body = json.loads(yaml.safe_load(gzip.decompress(raw))["requests"][0]["body"])
    model = ChatOpenAI(model="gpt-5", api_key="placeholder", max_retries=0)
    bound = model.bind(response_format=body["response_format"], tools=body["tools"])
    reply = bound.invoke([(m["role"], m["content"]) for m in body["messages"]])
    assert reply.tool_calls == [
        {
            "name": "get_weather",
            "args": {"city": "Boston"},
            "id": reply.tool_calls[0]["id"],
            "type": "tool_call",
        }
    ]
