"""One registry of strategies, and one place that reads a response format."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from langchain.agents import structured_output as lc
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
    route_by_kind,
)
from langchain_structx._request.plan import LANGCHAIN_RETRY_BOUND, as_strategy, build_plan
from langchain_structx.cli import build_strategy
from langchain_structx.errors import SchemaError, UserError
from langchain_structx.strategies import ANSWERING, STRATEGIES


class Cat(BaseModel):
    meow: str


class Dog(BaseModel):
    woof: str


def test_each_strategy_knows_its_name_and_the_registry_holds_every_one() -> None:
    assert {name: cls.__name__ for name, cls in STRATEGIES.items()} == {
        "auto": "AutoStrategy",
        "provider": "ProviderStrategy",
        "tool": "ToolStrategy",
        "prompted": "PromptedStrategy",
    }
    assert all(cls.name == name for name, cls in STRATEGIES.items())
    assert set(ANSWERING) == set(STRATEGIES) - {"auto"}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_cli_builds_each_registered_strategy(name: str) -> None:
    strategy = build_strategy([Cat], name, max_retries=2)
    assert type(strategy) is STRATEGIES[name]
    assert strategy.max_retries == 2


@pytest.mark.parametrize(
    ("given", "expected", "candidates"),
    [
        (Cat, AutoStrategy, ("provider", "tool", "prompted")),
        (lc.ToolStrategy(Cat), ToolStrategy, ("tool",)),
        (lc.ProviderStrategy(Cat), ProviderStrategy, ("provider",)),
        (lc.AutoStrategy(Cat), AutoStrategy, ("provider", "tool", "prompted")),
        (PromptedStrategy(Cat), PromptedStrategy, ("prompted",)),
    ],
)
def test_a_plan_keeps_the_strategy_it_was_built_from(
    given: Any, expected: type[Any], candidates: tuple[str, ...]
) -> None:
    plan = build_plan(given)
    assert type(plan.strategy) is expected
    assert plan.candidates == candidates
    assert plan.schemas.names == ("Cat",)
    if isinstance(given, PromptedStrategy):
        assert plan.strategy is given


def test_langchain_strategies_get_a_retry_bound() -> None:
    assert as_strategy(lc.ToolStrategy(Cat)).max_retries == LANGCHAIN_RETRY_BOUND


def test_none_is_refused() -> None:
    with pytest.raises(UserError, match="response_format is required"):
        as_strategy(None)


@pytest.mark.parametrize(
    "schema",
    [Cat | Dog, ToolStrategy(Cat | Dog), lc.ToolStrategy(Cat | Dog), lc.AutoStrategy(Cat | Dog)],
    ids=["union", "ours", "langchain-tool", "langchain-auto"],
)
def test_route_by_kind_reads_any_response_format(schema: Any) -> None:
    router = route_by_kind({"Cat": "cats", "Dog": "dogs"}, schema=schema)
    assert router({"structured_response_kind": "Dog"}) == "dogs"


@pytest.mark.parametrize("cls", [STRATEGIES[name] for name in sorted(STRATEGIES)])
@pytest.mark.parametrize("schema", [int, "Cat", [], Cat(meow="x")], ids=repr)
def test_a_strategy_checks_its_schema_when_it_is_built(cls: Any, schema: Any) -> None:
    # As LangChain's own strategies do: the mistake shows where it was written.
    with pytest.raises(SchemaError):
        cls(schema)


@pytest.mark.parametrize("cls", [STRATEGIES[name] for name in sorted(STRATEGIES)])
def test_a_strategy_survives_pickle_and_copy_with_its_schema_read_again(cls: Any) -> None:
    strategy = cls(Cat | Dog, max_retries=2, coerce=False)
    for clone in (
        pickle.loads(pickle.dumps(strategy)),
        copy.copy(strategy),
        copy.deepcopy(strategy),
    ):
        assert clone == strategy
        assert type(clone) is cls
        assert clone.schemas.names == ("Cat", "Dog")
        assert clone.schemas.get("Dog").validate({"woof": "w"}) == Dog(woof="w")
        assert build_plan(clone).max_retries == 2


def test_a_plan_reads_the_schema_the_strategy_already_read() -> None:
    strategy = ToolStrategy(Cat | Dog)
    assert build_plan(strategy).schemas is strategy.schemas
