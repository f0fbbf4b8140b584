"""A tool strategy for a schema whose root is not an object reaches every provider as one.

Tool APIs take an object schema as a tool's parameters. A root model over a list
travels as `{"value": [...]}`; a model that refers to itself (Pydantic writes its
root as a `$ref` beside `$defs`) starts from its definition. Through each
official client, in an agent and in the runnable, the fake server must see no
request that breaks that rule, and the answer must come back in the schema's shape.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, RootModel

from langchain_structx import ToolStrategy, create_agent, with_structured_output

from .clients import PROVIDERS, client, fake
from .wire import Ask, Reply

pytestmark = pytest.mark.integration


class Names(RootModel[list[str]]):
    """The names in the text."""


class Topic(BaseModel):
    """A topic and its subtopics."""

    title: str
    subtopics: list[Topic] = []


NAMES = Names(["Ada", "Alan"])
TOPIC = Topic(title="Math", subtopics=[Topic(title="Algebra")])


def _calls(arguments: dict[str, Any]) -> Any:
    def model(ask: Ask) -> Reply:
        return Reply(calls=((ask.forced or next(iter(ask.tools)), arguments),))

    return model


def _run(face: str, model: Any, schema: Any) -> Any:
    if face == "runnable":
        return with_structured_output(model, ToolStrategy(schema)).invoke("Who is named?")
    agent = create_agent(model, response_format=ToolStrategy(schema))
    return agent.invoke({"messages": [("user", "Who is named?")]})["structured_response"]


@pytest.mark.parametrize("face", ["agent", "runnable"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_list_root_travels_wrapped(provider: str, face: str) -> None:
    with fake(provider, _calls({"value": ["Ada", "Alan"]})) as server:
        assert _run(face, client(provider, server), Names) == NAMES
    assert server.violations == []


# Anthropic and Gemini tools take no recursive schema: their dialects refuse one
# before sending (tests/integration/providers/test_defects.py).
@pytest.mark.parametrize("face", ["agent", "runnable"])
@pytest.mark.parametrize("provider", ["openai", "openai_responses"])
def test_a_model_that_refers_to_itself_is_sent_as_an_object(provider: str, face: str) -> None:
    with fake(provider, _calls(TOPIC.model_dump())) as server:
        assert _run(face, client(provider, server), Topic) == TOPIC
    assert server.violations == []


@pytest.mark.parametrize("face", ["agent", "runnable"])
@pytest.mark.parametrize("provider", ["openai", "openai_responses"])
def test_a_recursive_schema_reaches_the_provider_whole(provider: str, face: str) -> None:
    leaf = Topic(title="Groups", subtopics=[Topic(title="Lie groups")])
    deep = Topic(title="Math", subtopics=[Topic(title="Algebra", subtopics=[leaf])])
    sent: list[dict[str, Any]] = []

    def model(ask: Ask) -> Reply:
        sent.append(ask.tools["Topic"])
        return Reply(calls=(("Topic", deep.model_dump()),))

    with fake(provider, model) as server:
        assert _run(face, client(provider, server), Topic) == deep
    assert server.violations == []
    (parameters,) = sent
    # The loop travels as a reference: LangChain's tool conversion would cut it
    # after two levels, and show the model `{}` for a third level's topics.
    assert parameters["properties"]["subtopics"]["items"] == {"$ref": "#/$defs/Topic"}
    assert parameters["$defs"]["Topic"]["properties"]["subtopics"]["items"] == {
        "$ref": "#/$defs/Topic"
    }
