# ruff: noqa: E501  (snapshots hold prompt lines exactly as sent)
"""The exact request each strategy sends, pinned: the payload is the product.

Each case runs one agent turn against `ScriptedChatModel` and compares the first
recorded call (messages, bound tools, `tool_choice`, `response_format` and any
other keyword) with an inline snapshot. A change to what reaches a provider then
shows as a diff to review, not as a silent drift. Replies are scripted so that
every turn also ends in a validated answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from inline_snapshot import snapshot
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, RootModel

from langchain_structx import create_agent, with_structured_output
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

NATIVE: ModelProfile = {"structured_output": True, "tool_calling": True}


class Contact(BaseModel):
    """A person to reach."""

    name: str
    age: int


class Event(BaseModel):
    """Something that happens."""

    title: str


ADA = Contact(name="Ada", age=36)


def first_request(strategy: Any, reply: AIMessage | str, expected: BaseModel) -> dict[str, Any]:
    """Run one turn; check the answer; return the first call as plain data."""
    model = ScriptedChatModel(responses=[reply], profile=NATIVE)
    agent = create_agent(model, response_format=strategy)
    state = agent.invoke({"messages": [HumanMessage("Who is Ada?")]})
    assert state["structured_response"] == expected
    call = model.calls[0]
    return {
        "messages": [(message.type, message.content) for message in call.messages],
        "tools": call.tools,
        "tool_choice": call.tool_choice,
        "response_format": call.response_format,
        "kwargs": call.kwargs,
    }


def test_tool_strategy() -> None:
    reply = AIMessage("", tool_calls=[tool_call("Contact", ADA.model_dump())])
    assert first_request(ToolStrategy(Contact), reply, ADA) == snapshot(
        {
            "messages": [("human", "Who is Ada?")],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "Contact",
                        "description": "A person to reach.",
                        "parameters": {
                            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            "required": ["name", "age"],
                            "type": "object",
                        },
                    },
                }
            ],
            "tool_choice": "Contact",
            "response_format": None,
            "kwargs": {},
        }
    )


def test_tool_strategy_union() -> None:
    reply = AIMessage("", tool_calls=[tool_call("Event", {"title": "Launch"})])
    request = first_request(ToolStrategy(Contact | Event), reply, Event(title="Launch"))
    assert request == snapshot(
        {
            "messages": [("human", "Who is Ada?")],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "Contact",
                        "description": "A person to reach.",
                        "parameters": {
                            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            "required": ["name", "age"],
                            "type": "object",
                        },
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": "Event",
                        "description": "Something that happens.",
                        "parameters": {
                            "properties": {"title": {"type": "string"}},
                            "required": ["title"],
                            "type": "object",
                        },
                    },
                },
            ],
            "tool_choice": "any",
            "response_format": None,
            "kwargs": {},
        }
    )


class Names(RootModel[list[str]]):
    """The names in the text."""


class Topic(BaseModel):
    """A topic and its subtopics."""

    title: str
    subtopics: list[Topic] = []


def test_tool_strategy_for_a_schema_that_is_not_an_object() -> None:
    # Tool parameters must be an object schema: the list travels as {"value": [...]}.
    reply = AIMessage("", tool_calls=[tool_call("Names", {"value": ["Ada", "Alan"]})])
    request = first_request(ToolStrategy(Names), reply, Names(["Ada", "Alan"]))
    assert request["tools"] == snapshot(
        [
            {
                "type": "function",
                "function": {
                    "name": "Names",
                    "description": "The names in the text.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "value": {
                                "description": "The names in the text.",
                                "items": {"type": "string"},
                                "type": "array",
                            }
                        },
                        "required": ["value"],
                    },
                },
            }
        ]
    )


def test_tool_strategy_for_a_model_that_refers_to_itself() -> None:
    # Pydantic writes the root as a reference beside `$defs`. The runnable binds
    # our tool as it is (an agent's goes through LangChain's conversion, which
    # inlines references): the parameters start from the definition, an object.
    answer = Topic(title="Math", subtopics=[Topic(title="Algebra")])
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("Topic", answer.model_dump())])]
    )
    assert with_structured_output(model, ToolStrategy(Topic)).invoke("Math?") == answer
    tool = model.calls[0].tools[0]["function"]
    assert (tool["name"], tool["description"]) == ("Topic", "A topic and its subtopics.")
    parameters = dict(tool["parameters"])
    assert parameters.pop("$defs") == Topic.model_json_schema()["$defs"]
    assert parameters == snapshot(
        {
            "properties": {
                "title": {"title": "Title", "type": "string"},
                "subtopics": {
                    "default": [],
                    "items": {"$ref": "#/$defs/Topic"},
                    "title": "Subtopics",
                    "type": "array",
                },
            },
            "required": ["title"],
            "type": "object",
        }
    )


@pytest.mark.parametrize("strict", [True, False])
def test_provider_strategy(strict: bool) -> None:
    request = first_request(
        ProviderStrategy(Contact, strict=strict), '{"name": "Ada", "age": 36}', ADA
    )
    assert (
        request
        == {
            True: snapshot(
                {
                    "messages": [("human", "Who is Ada?")],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": "Contact",
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "age": {"type": "integer"},
                                },
                                "required": ["name", "age"],
                                "additionalProperties": False,
                                "title": "Contact",
                                "description": "A person to reach.",
                            },
                            "strict": True,
                        },
                    },
                    "kwargs": {},
                }
            ),
            False: snapshot(
                {
                    "messages": [("human", "Who is Ada?")],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": "Contact",
                            "schema": {
                                "description": "A person to reach.",
                                "properties": {
                                    "name": {"title": "Name", "type": "string"},
                                    "age": {"title": "Age", "type": "integer"},
                                },
                                "required": ["name", "age"],
                                "title": "Contact",
                                "type": "object",
                            },
                        },
                    },
                    "kwargs": {},
                }
            ),
        }[strict]
    )


@pytest.mark.parametrize("strict", [True, False])
def test_provider_strategy_union(strict: bool) -> None:
    envelope = '{"kind": "Event", "data": {"title": "Launch"}}'
    # A strict schema must be an object at its root, so the union sits under "value".
    reply = f'{{"value": {envelope}}}' if strict else envelope
    strategy = ProviderStrategy(Contact | Event, strict=strict)
    request = first_request(strategy, reply, Event(title="Launch"))
    assert (
        request
        == {
            True: snapshot(
                {
                    "messages": [("human", "Who is Ada?")],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": "Contact_or_Event",
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "value": {
                                        "anyOf": [
                                            {
                                                "type": "object",
                                                "properties": {
                                                    "kind": {"type": "string", "const": "Contact"},
                                                    "data": {
                                                        "type": "object",
                                                        "properties": {
                                                            "name": {"type": "string"},
                                                            "age": {"type": "integer"},
                                                        },
                                                        "required": ["name", "age"],
                                                        "additionalProperties": False,
                                                        "title": "Contact",
                                                        "description": "A person to reach.",
                                                    },
                                                },
                                                "required": ["kind", "data"],
                                                "additionalProperties": False,
                                            },
                                            {
                                                "type": "object",
                                                "properties": {
                                                    "kind": {"type": "string", "const": "Event"},
                                                    "data": {
                                                        "type": "object",
                                                        "properties": {"title": {"type": "string"}},
                                                        "required": ["title"],
                                                        "additionalProperties": False,
                                                        "title": "Event",
                                                        "description": "Something that happens.",
                                                    },
                                                },
                                                "required": ["kind", "data"],
                                                "additionalProperties": False,
                                            },
                                        ]
                                    }
                                },
                                "required": ["value"],
                                "additionalProperties": False,
                                "title": "Contact_or_Event",
                            },
                            "strict": True,
                        },
                    },
                    "kwargs": {},
                }
            ),
            False: snapshot(
                {
                    "messages": [("human", "Who is Ada?")],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": "Contact_or_Event",
                            "schema": {
                                "anyOf": [
                                    {
                                        "type": "object",
                                        "properties": {
                                            "kind": {"const": "Contact"},
                                            "data": {
                                                "description": "A person to reach.",
                                                "properties": {
                                                    "name": {"title": "Name", "type": "string"},
                                                    "age": {"title": "Age", "type": "integer"},
                                                },
                                                "required": ["name", "age"],
                                                "title": "Contact",
                                                "type": "object",
                                            },
                                        },
                                        "required": ["kind", "data"],
                                        "additionalProperties": False,
                                    },
                                    {
                                        "type": "object",
                                        "properties": {
                                            "kind": {"const": "Event"},
                                            "data": {
                                                "description": "Something that happens.",
                                                "properties": {
                                                    "title": {"title": "Title", "type": "string"}
                                                },
                                                "required": ["title"],
                                                "title": "Event",
                                                "type": "object",
                                            },
                                        },
                                        "required": ["kind", "data"],
                                        "additionalProperties": False,
                                    },
                                ],
                                "title": "Contact_or_Event",
                            },
                        },
                    },
                    "kwargs": {},
                }
            ),
        }[strict]
    )


@pytest.mark.parametrize("json_mode", [False, True])
def test_prompted_strategy(json_mode: bool) -> None:
    strategy = PromptedStrategy(Contact, json_mode=json_mode)
    request = first_request(strategy, '{"name": "Ada", "age": 36}', ADA)
    assert (
        request
        == {
            False: snapshot(
                {
                    "messages": [
                        (
                            "system",
                            """\
Answer with only a JSON object, no other text, matching:

// A person to reach.
Contact {
  "name": string,
  "age": integer
}\
""",
                        ),
                        ("human", "Who is Ada?"),
                    ],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": None,
                    "kwargs": {},
                }
            ),
            True: snapshot(
                {
                    "messages": [
                        (
                            "system",
                            """\
Answer with only a JSON object, no other text, matching:

// A person to reach.
Contact {
  "name": string,
  "age": integer
}\
""",
                        ),
                        ("human", "Who is Ada?"),
                    ],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {"type": "json_object"},
                    "kwargs": {},
                }
            ),
        }[json_mode]
    )


@pytest.mark.parametrize("json_mode", [False, True])
def test_prompted_strategy_union(json_mode: bool) -> None:
    strategy = PromptedStrategy(Contact | Event, json_mode=json_mode)
    reply = '{"kind": "Event", "data": {"title": "Launch"}}'
    request = first_request(strategy, reply, Event(title="Launch"))
    assert (
        request
        == {
            False: snapshot(
                {
                    "messages": [
                        (
                            "system",
                            """\
Answer with only a JSON object, no other text, of the form {"kind": "Contact" | "Event", "data": <the object>} where data matches the shape named by kind:

// A person to reach.
Contact {
  "name": string,
  "age": integer
}

// Something that happens.
Event {
  "title": string
}\
""",
                        ),
                        ("human", "Who is Ada?"),
                    ],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": None,
                    "kwargs": {},
                }
            ),
            True: snapshot(
                {
                    "messages": [
                        (
                            "system",
                            """\
Answer with only a JSON object, no other text, of the form {"kind": "Contact" | "Event", "data": <the object>} where data matches the shape named by kind:

// A person to reach.
Contact {
  "name": string,
  "age": integer
}

// Something that happens.
Event {
  "title": string
}\
""",
                        ),
                        ("human", "Who is Ada?"),
                    ],
                    "tools": [],
                    "tool_choice": None,
                    "response_format": {"type": "json_object"},
                    "kwargs": {},
                }
            ),
        }[json_mode]
    )
