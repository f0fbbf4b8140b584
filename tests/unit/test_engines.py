"""The serving-engine table, the probe's readings, and trust in an engine's constraint."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from langchain_structx._engine import constraints as _constraints
from langchain_structx._models import engines as _engines
from langchain_structx._models.capabilities import FallbackMemory, model_identity
from langchain_structx._models.engines import ENGINES, NO_ENGINE, Endpoint
from langchain_structx._request.plan import build_plan
from langchain_structx.strategies import AutoStrategy, ProviderStrategy


class Contact(BaseModel):
    name: str


def _openai(**options: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="local", api_key="secret", **options)


def test_an_openai_client_on_another_server_is_probed_with_its_key() -> None:
    where = _engines.endpoint(_openai(base_url="http://127.0.0.1:8000/v1/"))
    assert where == Endpoint("http://127.0.0.1:8000/v1", "local", "secret")
    assert isinstance(where, Endpoint) and where.root == "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    "base_url",
    [None, "https://api.openai.com/v1", "https://gateway.example/accounts/a/ai/v1"],
)
def test_openai_itself_and_hosted_routes_are_not_probed(base_url: str | None) -> None:
    assert _engines.endpoint(_openai(base_url=base_url)) is None


def test_a_client_on_the_responses_api_is_not_probed() -> None:
    model = _openai(base_url="http://127.0.0.1:1/v1", use_responses_api=True)
    assert _engines.endpoint(model) is None


def test_azure_and_other_clients_are_not_probed() -> None:
    from langchain_openai import AzureChatOpenAI

    azure = AzureChatOpenAI(
        azure_endpoint="http://127.0.0.1:9/", api_key="k", api_version="2024-10-21", model="m"
    )
    assert _engines.endpoint(azure) is None


def test_chat_ollama_is_ollamas_native_route() -> None:
    from langchain_ollama import ChatOllama

    assert _engines.endpoint(ChatOllama(model="m")) is ENGINES["ollama-native"]


@pytest.mark.parametrize(
    ("listing", "expected"),
    [
        ({"data": [{"id": "a", "owned_by": "llamacpp"}]}, "llama.cpp"),
        ({"data": [{"id": "a", "owned_by": "me"}]}, "llama-cpp-python"),
        ({"data": [{"id": "a", "owned_by": "sglang"}]}, "sglang"),
        ({"data": [{"id": "x", "owned_by": "vllm"}]}, "vllm"),  # not listed: any entry
        (
            {"data": [{"id": "x", "owned_by": "vllm"}, {"id": "a", "owned_by": "acme"}]},
            None,  # the model's own entry decides
        ),
        ({"data": "no"}, None),
        ([], None),
        ({"data": [1, {"id": "a", "owned_by": 3}]}, None),
    ],
)
def test_models_listing_names_the_engine(listing: Any, expected: str | None) -> None:
    found = _engines.from_models(listing, "a")
    assert (found.name if found else None) == expected


def test_version_and_lm_studio_listing_shapes() -> None:
    assert _engines.is_ollama_version({"version": "0.12.3"})
    assert not _engines.is_ollama_version({"version": 5})
    assert _engines.is_lm_studio_listing({"data": [{"id": "m", "arch": "qwen2", "state": "x"}]})
    assert not _engines.is_lm_studio_listing({"data": []})
    assert not _engines.is_lm_studio_listing({"data": [{"id": "m"}]})


def test_settings_keep_the_clients_extra_body() -> None:
    model = _openai(base_url="http://127.0.0.1:1/v1", extra_body={"max_tokens": 9})
    sent = _engines.settings(ENGINES["llama-cpp-python"], "C", {"type": "object"}, model)
    assert sent == {
        "extra_body": {
            "max_tokens": 9,
            "response_format": {"type": "json_object", "schema": {"type": "object"}},
        }
    }
    assert model.extra_body == {"max_tokens": 9}  # the client's own is not changed
    sent = _engines.settings(ENGINES["vllm"], "C", {"type": "object"}, model)
    assert sent["response_format"]["json_schema"] == {
        "name": "C",
        "schema": {"type": "object", "title": "C"},
    }


def test_the_spec_merges_the_clients_extra_body_per_setup() -> None:
    plan = build_plan(AutoStrategy(Contact))
    engine = ENGINES["llama-cpp-python"]
    bare = _constraints.spec(plan, "provider", engine, _openai(base_url="http://127.0.0.1:1/v1"))
    model = _openai(base_url="http://127.0.0.1:1/v1", extra_body={"max_tokens": 9})
    merged = _constraints.spec(plan, "provider", engine, model)

    assert bare is _constraints.spec(plan, "provider", engine, object())  # built once per plan
    assert "max_tokens" not in bare.model_settings["extra_body"]
    assert merged.model_settings["extra_body"]["max_tokens"] == 9
    assert merged is _constraints.spec(plan, "provider", engine, model)


def test_preferring_puts_the_provider_route_in_its_place() -> None:
    plan = build_plan(AutoStrategy(Contact))
    model, memory = _openai(base_url="http://127.0.0.1:1/v1"), FallbackMemory()
    engine = ENGINES["vllm"]
    order: tuple[Any, ...] = ("tool", "prompted")

    assert _constraints.preferring(order, plan, model, engine, memory, "s") == (
        "provider",
        "tool",
        "prompted",
    )
    assert _constraints.preferring(order, plan, model, None, memory, "s") == order
    memory.remember(model_identity(model), "provider")
    assert _constraints.preferring(order, plan, model, engine, memory, "s") == order
    said = _openai(base_url="http://127.0.0.1:1/v1", profile={"structured_output": False})
    assert _constraints.preferring(order, plan, said, engine, FallbackMemory(), "s") == order
    only_tool = build_plan(AutoStrategy(Contact, order=("tool",)))
    assert _constraints.preferring(("tool",), only_tool, model, engine, memory, "s") == ("tool",)


def test_judge_trusts_a_valid_answer_and_gives_up_an_ignored_constraint() -> None:
    plan = build_plan(AutoStrategy(Contact))
    model, memory, engine = object(), FallbackMemory(), ENGINES["sglang"]
    key = model_identity(model)

    ignored = _constraints.judge(plan, engine, "provider", "parse", memory, model, 1)
    assert isinstance(ignored, _constraints.ConstraintIgnored)
    assert "SGLang ignored the schema" in str(ignored)
    assert memory.rejected(key) == frozenset({"provider"})

    memory = FallbackMemory()
    assert _constraints.judge(plan, engine, "provider", None, memory, model, 1) is None
    assert memory.fact(key, "honoured") == "sglang"
    # Trusted now: a reply without JSON is an ordinary failed attempt.
    assert _constraints.judge(plan, engine, "provider", "parse", memory, model, 1) is None
    assert memory.rejected(key) == frozenset()


@pytest.mark.parametrize(
    ("strategy", "kind", "alternatives", "auto"),
    [
        ("tool", "no_output", 1, True),  # another route
        ("provider", "validation", 1, True),  # JSON of the wrong content: feedback's job
        ("provider", "truncation", 1, True),  # cut short, constrained or not
        ("provider", "parse", 0, True),  # nowhere to go
        ("provider", "parse", 1, False),  # the user asked for this route
    ],
)
def test_judge_leaves_other_failures_alone(
    strategy: Any, kind: str, alternatives: int, auto: bool
) -> None:
    plan = build_plan(AutoStrategy(Contact) if auto else ProviderStrategy(Contact))
    memory = FallbackMemory()
    found = _constraints.judge(
        plan, ENGINES["vllm"], strategy, kind, memory, object(), alternatives
    )
    assert found is None and memory.rejected(model_identity(object())) == frozenset()


def test_engine_for_probes_once_and_remembers() -> None:
    model, memory = _openai(base_url="http://127.0.0.1:1/v1"), FallbackMemory()
    loop = _constraints.engine_for(model, memory)
    step = next(loop)
    assert step.fn is _engines.probe and step.args[0].base == "http://127.0.0.1:1/v1"
    with pytest.raises(StopIteration) as done:
        loop.send("vllm")
    assert done.value.value is ENGINES["vllm"]
    assert memory.fact(model_identity(model), "engine") == "vllm"

    again = _constraints.engine_for(model, memory)
    with pytest.raises(StopIteration) as done:
        next(again)  # no probe: the memory knows
    assert done.value.value is ENGINES["vllm"]


def test_engine_for_an_unreachable_or_unknown_server() -> None:
    model, memory = _openai(base_url="http://127.0.0.1:1/v1"), FallbackMemory()
    loop = _constraints.engine_for(model, memory)
    next(loop)
    with pytest.raises(StopIteration) as done:
        loop.send(None)  # unreachable: nothing is remembered
    assert done.value.value is None and memory.fact(model_identity(model), "engine") is None

    loop = _constraints.engine_for(model, memory)
    next(loop)
    with pytest.raises(StopIteration) as done:
        loop.send(NO_ENGINE)
    assert done.value.value is None
    assert memory.fact(model_identity(model), "engine") == NO_ENGINE


def test_a_fact_expires_and_the_latest_value_wins() -> None:
    now = [0.0]
    memory = FallbackMemory(ttl_seconds=10, clock=lambda: now[0])
    memory.remember_fact("m", "engine", "vllm")
    memory.remember_fact("m", "engine", "sglang")
    assert memory.fact("m", "engine") == "sglang"
    now[0] = 11.0
    assert memory.fact("m", "engine") is None
