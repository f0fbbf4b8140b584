"""Static checks that every face is generic over the response type (`mypy tests/typing`).

Also run by pytest, so each statement's runtime value is checked too.
"""

from __future__ import annotations

from typing import Any, Union, assert_type

from langchain.agents.middleware.types import AgentState, InputAgentState, OutputAgentState
from langchain.agents.structured_output import ToolStrategy as LangChainToolStrategy
from langchain_core.language_models import LanguageModelInput
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    StructuredOutputMiddleware,
    StructuredOutputNode,
    ToolStrategy,
    create_agent,
    structured_output_node,
    with_structured_output,
)
from langchain_structx.testing import ScriptedChatModel


class Cat(BaseModel):
    meow: str


class Dog(BaseModel):
    woof: str


def model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=['{"meow": "purr"}'])


def test_a_union_types_every_strategy_as_the_union() -> None:
    assert_type(ToolStrategy(Cat | Dog), ToolStrategy[Cat | Dog])
    assert_type(ProviderStrategy(Cat | Dog), ProviderStrategy[Cat | Dog])
    assert_type(PromptedStrategy(Union[Cat, Dog]), PromptedStrategy[Cat | Dog])  # noqa: UP007
    assert_type(AutoStrategy(Cat | Dog, strict=True), AutoStrategy[Cat | Dog])
    assert ToolStrategy(Cat | Dog).schema == Cat | Dog


def test_a_list_of_schemas_gives_any() -> None:
    schemas: list[Any] = [Cat, Dog]
    assert_type(ToolStrategy(schemas), ToolStrategy[Any])


def test_create_agent_returns_a_graph_typed_by_the_response() -> None:
    agent = create_agent(model(), response_format=PromptedStrategy(Cat))
    assert_type(
        agent, CompiledStateGraph[AgentState[Cat], Any, InputAgentState, OutputAgentState[Cat]]
    )
    union = create_agent(model(), response_format=Cat | Dog)
    assert_type(
        union,
        CompiledStateGraph[
            AgentState[Cat | Dog], Any, InputAgentState, OutputAgentState[Cat | Dog]
        ],
    )
    lc = create_agent(model(), response_format=LangChainToolStrategy(Cat))
    assert_type(
        lc, CompiledStateGraph[AgentState[Cat], Any, InputAgentState, OutputAgentState[Cat]]
    )
    untyped = create_agent(model(), response_format={"title": "T", "type": "object"})
    assert_type(
        untyped, CompiledStateGraph[AgentState[Any], Any, InputAgentState, OutputAgentState[Any]]
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "cat"}]})
    assert result["structured_response"] == Cat(meow="purr")


def test_the_middleware_and_the_node_are_typed_by_the_response() -> None:
    assert_type(StructuredOutputMiddleware(ToolStrategy(Cat)), StructuredOutputMiddleware[Cat])
    assert_type(StructuredOutputMiddleware(Cat | Dog), StructuredOutputMiddleware[Cat | Dog])
    assert_type(structured_output_node(model(), Cat), StructuredOutputNode[Cat])
    node = structured_output_node(model(), PromptedStrategy(Cat | Dog))
    assert_type(node, StructuredOutputNode[Cat | Dog])
    assert node.variant_names == ("Cat", "Dog")


def test_with_structured_output_infers_a_union() -> None:
    runnable = with_structured_output(model(), Cat | Dog, method="json_mode")
    assert_type(runnable, Runnable[LanguageModelInput, Cat | Dog])
    assert runnable.invoke("a cat") == Cat(meow="purr")
