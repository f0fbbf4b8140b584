"""PromptedStrategy in agents: schema in the system prompt, lenient parsing, JSON mode."""

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import PromptedStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

PLAIN = {"structured_output": False, "tool_calling": False}
ASK = {"messages": [HumanMessage("Who is Ada?")]}

CONTACT_PROMPT = (
    "Answer with only a JSON object, no other text, matching:\n"
    "\n"
    "// A person to reach.\n"
    "Contact {\n"
    '  "name": string,\n'
    '  "age": integer\n'
    "}"
)


class Contact(BaseModel):
    """A person to reach."""

    name: str
    age: int


class Event(BaseModel):
    title: str


def model_for(*responses):
    return ScriptedChatModel(responses=list(responses), profile=PLAIN)


def build(factory, model, response_format, tools=None, **kwargs):
    if factory == "ours":
        return create_agent(model, tools, response_format=response_format, **kwargs)
    return langchain_create_agent(
        model, tools, middleware=[StructuredOutputMiddleware(response_format)], **kwargs
    )


FACTORIES = pytest.mark.parametrize("factory", ["ours", "middleware"])


@FACTORIES
def test_schema_goes_in_the_system_prompt_in_compact_form(factory):
    model = model_for('{"name": "Ada", "age": 36}')

    result = build(factory, model, PromptedStrategy(Contact)).invoke(ASK)

    sent = model.calls[0]
    assert [m.type for m in sent.messages] == ["system", "human"]
    assert sent.messages[0].content == CONTACT_PROMPT
    assert sent.tools == []
    assert sent.tool_choice is None
    assert sent.response_format is None
    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert result["structured_response_kind"] == "Contact"
    assert result["structured_output_report"]["strategy"] == "prompted"
    assert [m.type for m in result["messages"]] == ["human", "ai"]


@FACTORIES
def test_instructions_are_appended_to_the_users_system_prompt(factory):
    model = model_for('{"name": "Ada", "age": 36}')

    build(factory, model, PromptedStrategy(Contact), system_prompt="You are terse.").invoke(ASK)

    assert model.calls[0].messages[0].content == "You are terse.\n\n" + CONTACT_PROMPT


def test_json_mode_also_binds_json_object_response_format():
    model = model_for('{"name": "Ada", "age": 36}')

    create_agent(model, response_format=PromptedStrategy(Contact, json_mode=True)).invoke(ASK)

    assert model.calls[0].response_format == {"type": "json_object"}
    assert model.calls[0].messages[0].content == CONTACT_PROMPT


@pytest.mark.parametrize(
    ("text", "repairs"),
    [
        (
            'Sure! Here it is:\n```json\n{"name": "Ada", "age": 36}\n```',
            [
                "fence: removed a markdown code fence around the JSON",
                "prose: removed text before or after the JSON",
            ],
        ),
        (
            "{'name': 'Ada', 'age': 36,}",
            [
                "single_quotes: replaced single quotes around 3 strings with double quotes",
                "trailing_comma: removed a trailing comma",
            ],
        ),
        (
            '{"name": \u201cAda\u201d, "age": 36}',
            ["smart_quotes: replaced typographic quotes around a string with plain double quotes"],
        ),
    ],
    ids=["fenced-prose", "single-quotes-trailing-comma", "smart-quotes"],
)
def test_lenient_parsing_needs_one_call(text, repairs):
    model = model_for(text)

    result = create_agent(model, response_format=PromptedStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == Contact(name="Ada", age=36)
    # Repairs are compared as a set: their order is the parser's business.
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(repairs)


def test_union_asks_for_the_envelope_and_unwraps_it():
    model = model_for('{"kind": "Event", "data": {"title": "Launch"}}')

    result = create_agent(model, response_format=PromptedStrategy(Contact | Event)).invoke(ASK)

    system = model.calls[0].messages[0].content
    assert system.startswith(
        "Answer with only a JSON object, no other text, of the form "
        '{"kind": "Contact" | "Event", "data": <the object>} where data matches the shape '
        "named by kind:\n\n"
    )
    assert result["structured_response"] == Event(title="Launch")
    assert result["structured_response_kind"] == "Event"


def test_union_answer_matching_several_variants_without_envelope_is_retried():
    class A(BaseModel):
        x: int

    class B(BaseModel):
        x: int

    model = model_for('{"x": 1}', '{"kind": "B", "data": {"x": 1}}')

    result = create_agent(model, response_format=PromptedStrategy(A | B)).invoke(ASK)

    assert len(model.calls) == 2
    assert model.calls[1].messages[-1].content == (
        "Error: The answer does not match A_or_B: 1 problem with A_or_B:\n"
        """- at $: expected {"kind": 'A', 'B', "data": ...}; the object matches several.\n"""
        " Please fix your mistakes."
    )
    assert result["structured_response"] == B(x=1)


def test_prose_without_json_is_retried_with_feedback():
    model = model_for("Ada is 36 years old.", '{"name": "Ada", "age": 36}')

    result = create_agent(model, response_format=PromptedStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    retry = model.calls[1]
    assert [m.type for m in retry.messages] == ["system", "human", "ai", "human"]
    assert retry.messages[-1].content == (
        "Error: The answer is not valid JSON: "
        "no JSON object or array found in the text.\n Please fix your mistakes."
    )
    assert retry.messages[0].content == CONTACT_PROMPT
    assert result["structured_output_report"]["attempts"] == 2


def test_empty_answer_is_a_missing_output():
    model = model_for("", '{"name": "Ada", "age": 36}')

    result = create_agent(model, response_format=PromptedStrategy(Contact)).invoke(ASK)

    assert model.calls[1].messages[-1].content == (
        "Error: The answer was empty; reply with the JSON object.\n Please fix your mistakes."
    )
    assert result["structured_output_report"]["errors"] == [
        "no_output: The answer was empty; reply with the JSON object."
    ]


def test_retries_are_bounded():
    model = model_for(*["no json here"] * 10)

    with pytest.raises(StructuredOutputRetryError):
        create_agent(model, response_format=PromptedStrategy(Contact, max_retries=2)).invoke(ASK)

    assert len(model.calls) == 3


looked_up: list[str] = []


@tool
def lookup(name: str) -> str:
    """Look a person up."""
    looked_up.append(name)
    return "36"


def test_ordinary_tools_stay_usable_and_unforced():
    looked_up.clear()
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[tool_call("lookup", {"name": "Ada"}, id="l1")]),
            '{"name": "Ada", "age": 36}',
        ],
        profile={"structured_output": False, "tool_calling": True},
    )

    result = create_agent(model, [lookup], response_format=PromptedStrategy(Contact)).invoke(ASK)

    assert looked_up == ["Ada"]
    assert [t["function"]["name"] for t in model.calls[0].tools] == ["lookup"]
    assert model.calls[0].tool_choice is None
    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert result["structured_output_report"]["attempts"] == 1
