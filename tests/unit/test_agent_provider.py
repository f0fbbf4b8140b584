"""ProviderStrategy in agents: response_format binding, envelopes, local repair, retries."""

from typing import Literal

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import ProviderStrategy
from langchain_structx.testing import ScriptedChatModel

NATIVE = {"structured_output": True, "tool_calling": True}
ASK = {"messages": [HumanMessage("Who is Ada?")]}


class Contact(BaseModel):
    """A person to reach."""

    name: str
    age: int


class Event(BaseModel):
    title: str


ORDER = {
    "title": "Order",
    "type": "object",
    "properties": {
        "qty": {"type": "integer"},
        "paid": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "status": {"enum": ["open", "closed"]},
    },
    "required": ["qty", "paid", "tags", "status"],
}
GOOD_ORDER = {"qty": 5, "paid": True, "tags": ["x"], "status": "open"}


def model_for(*responses):
    return ScriptedChatModel(responses=list(responses), profile=NATIVE)


def build(factory, model, response_format, **kwargs):
    if factory == "ours":
        return create_agent(model, response_format=response_format, **kwargs)
    return langchain_create_agent(
        model, middleware=[StructuredOutputMiddleware(response_format)], **kwargs
    )


FACTORIES = pytest.mark.parametrize("factory", ["ours", "middleware"])


@FACTORIES
def test_response_format_is_bound_as_json_schema(factory):
    model = model_for('{"name": "Ada", "age": 36}')

    result = build(factory, model, ProviderStrategy(Contact)).invoke(ASK)

    sent = model.calls[0]
    assert sent.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "Contact", "schema": Contact.model_json_schema()},
    }
    assert sent.tools == []
    assert sent.tool_choice is None
    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert result["structured_response_kind"] == "Contact"
    assert result["structured_output_report"]["strategy"] == "provider"
    assert result["structured_output_report"]["attempts"] == 1
    assert [m.type for m in result["messages"]] == ["human", "ai"]


@pytest.mark.parametrize(("strict", "present"), [(True, True), (None, False), (False, False)])
def test_strict_flag_is_sent_only_when_asked(strict, present):
    model = model_for('{"name": "Ada", "age": 36}')

    create_agent(model, response_format=ProviderStrategy(Contact, strict=strict)).invoke(ASK)

    json_schema = model.calls[0].response_format["json_schema"]
    assert ("strict" in json_schema) is present
    if present:
        assert json_schema["strict"] is True


def test_dict_schema_is_sent_unchanged_and_answer_is_a_dict():
    model = model_for('{"qty": 5, "paid": true, "tags": ["x"], "status": "open"}')

    result = create_agent(model, response_format=ProviderStrategy(ORDER)).invoke(ASK)

    assert model.calls[0].response_format["json_schema"] == {"name": "Order", "schema": ORDER}
    assert result["structured_response"] == GOOD_ORDER


def test_union_travels_in_an_envelope_the_user_never_sees():
    model = model_for('{"kind": "Event", "data": {"title": "Launch"}}')

    result = create_agent(model, response_format=ProviderStrategy(Contact | Event)).invoke(ASK)

    json_schema = model.calls[0].response_format["json_schema"]
    assert json_schema["name"] == "Contact_or_Event"
    branches = json_schema["schema"]["anyOf"]
    assert [b["properties"]["kind"] for b in branches] == [
        {"const": "Contact"},
        {"const": "Event"},
    ]
    assert all(b["required"] == ["kind", "data"] for b in branches)
    assert all(b["additionalProperties"] is False for b in branches)
    assert branches[1]["properties"]["data"]["properties"] == {
        "title": {"title": "Title", "type": "string"}
    }
    assert result["structured_response"] == Event(title="Launch")
    assert result["structured_response_kind"] == "Event"
    assert result["structured_output_report"]["variant"] == "Event"


def test_union_answer_without_envelope_is_taken_when_one_variant_fits():
    model = model_for('{"title": "Launch"}')

    result = create_agent(model, response_format=ProviderStrategy(Contact | Event)).invoke(ASK)

    assert result["structured_response"] == Event(title="Launch")
    assert len(model.calls) == 1
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(
        ["infer_kind: took the answer as Event (no envelope)"]
    )


def test_union_with_unknown_kind_is_retried_with_feedback():
    model = model_for(
        '{"kind": "Meeting", "data": {"title": "Launch"}}',
        '{"kind": "Event", "data": {"title": "Launch"}}',
    )

    result = create_agent(model, response_format=ProviderStrategy(Contact | Event)).invoke(ASK)

    assert len(model.calls) == 2
    feedback = model.calls[1].messages[-1]
    assert feedback.type == "human"
    assert feedback.content == (
        "Error: The answer does not match Contact_or_Event: "
        "1 problem with Contact_or_Event:\n"
        "- at $.kind: must be one of 'Contact', 'Event', got 'Meeting'.\n"
        " Please fix your mistakes."
    )
    assert result["structured_response"] == Event(title="Launch")


@pytest.mark.parametrize(
    ("text", "repairs"),
    [
        (
            '```json\n{"name": "Ada", "age": 36}\n```',
            ["fence: removed a markdown code fence around the JSON"],
        ),
        (
            'Here you go: {"name": "Ada", "age": 36} Hope that helps!',
            ["prose: removed text before or after the JSON"],
        ),
        ('{"name": "Ada", "age": 36,}', ["trailing_comma: removed a trailing comma"]),
        (
            "{'name': 'Ada', 'age': 36}",
            ["single_quotes: replaced single quotes around 3 strings with double quotes"],
        ),
        ('{name: "Ada", age: 36}', ["unquoted_key: quoted 2 unquoted object keys"]),
        ('{"name": "Ada", // who\n "age": 36}', ["comment: removed a comment"]),
    ],
    ids=["fence", "prose", "trailing-comma", "single-quotes", "unquoted-keys", "comment"],
)
def test_sloppy_json_is_repaired_locally_without_a_model_call(text, repairs):
    model = model_for(text)

    result = create_agent(model, response_format=ProviderStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == Contact(name="Ada", age=36)
    # Repairs are compared as a set: their order is the parser's business.
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(repairs)
    assert result["structured_output_report"]["errors"] == []


def test_coercible_values_are_coerced_locally_and_reported():
    model = model_for('{"qty": "5", "paid": "true", "tags": "x", "status": "OPEN"}')

    result = create_agent(model, response_format=ProviderStrategy(ORDER)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == GOOD_ORDER
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(
        [
            'coerce_int: converted "5" to the integer 5',
            'coerce_bool: converted "true" to true',
            "wrap_array: wrapped a single value in an array",
            'enum_case: matched "OPEN" to the enum member "open"',
        ]
    )


def test_coerce_false_turns_near_misses_into_a_retry():
    model = model_for(
        '{"qty": "5", "paid": true, "tags": ["x"], "status": "open"}',
        '{"qty": 5, "paid": true, "tags": ["x"], "status": "open"}',
    )

    result = create_agent(model, response_format=ProviderStrategy(ORDER, coerce=False)).invoke(ASK)

    assert len(model.calls) == 2
    assert result["structured_response"] == GOOD_ORDER
    assert result["structured_output_report"]["errors"] == [
        "validation: The answer does not match Order: "
        "1 problem with Order:\n- at $.qty: '5' is not of type 'integer'."
    ]


class Strict(BaseModel):
    level: Literal["low", "high"]


def test_validation_failure_is_retried_with_exact_feedback():
    model = model_for('{"name": "Ada"}', '{"name": "Ada", "age": 36}')

    result = create_agent(model, response_format=ProviderStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    retry = model.calls[1]
    assert [m.type for m in retry.messages] == ["human", "ai", "human"]
    assert retry.messages[1].content == '{"name": "Ada"}'
    assert retry.messages[2].content == (
        "Error: The answer does not match Contact: "
        "1 problem with Contact:\n- at $.age: required field is missing.\n"
        " Please fix your mistakes."
    )
    assert retry.response_format == model.calls[0].response_format
    assert result["structured_response"] == Contact(name="Ada", age=36)
    report = result["structured_output_report"]
    assert report["attempts"] == 2
    assert report["errors"] == [
        "validation: The answer does not match Contact: "
        "1 problem with Contact:\n- at $.age: required field is missing."
    ]


def test_unparseable_text_is_retried_with_a_parse_error():
    model = model_for("I cannot find that person.", '{"name": "Ada", "age": 36}')

    result = create_agent(model, response_format=ProviderStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    assert model.calls[1].messages[-1].content == (
        "Error: The answer is not valid JSON: "
        "no JSON object or array found in the text.\n Please fix your mistakes."
    )
    assert result["structured_output_report"]["errors"][0].startswith("parse: ")


def test_handle_errors_string_is_the_feedback():
    model = model_for('{"level": "medium"}', '{"level": "high"}')

    result = create_agent(
        model, response_format=ProviderStrategy(Strict, handle_errors="Use low or high.")
    ).invoke(ASK)

    assert model.calls[1].messages[-1].content == "Use low or high."
    assert result["structured_response"] == Strict(level="high")


def test_retries_are_bounded():
    model = model_for(*['{"name": "Ada"}'] * 10)

    with pytest.raises(StructuredOutputRetryError) as info:
        create_agent(model, response_format=ProviderStrategy(Contact, max_retries=1)).invoke(ASK)

    assert len(model.calls) == 2
    assert len(info.value.errors) == 2


def test_langchain_provider_strategy_object_is_accepted():
    model = model_for('{"name": "Ada", "age": 36}')

    result = create_agent(model, response_format=lc.ProviderStrategy(Contact, strict=True)).invoke(
        ASK
    )

    assert model.calls[0].response_format["json_schema"]["strict"] is True
    assert result["structured_response"] == Contact(name="Ada", age=36)


def test_middleware_matches_langchain_on_a_clean_answer():
    ours = model_for('{"name": "Ada", "age": 36}')
    theirs = model_for('{"name": "Ada", "age": 36}')

    mine = langchain_create_agent(
        ours, middleware=[StructuredOutputMiddleware(ProviderStrategy(Contact))]
    ).invoke(ASK)
    stock = langchain_create_agent(theirs, response_format=lc.ProviderStrategy(Contact)).invoke(ASK)

    assert mine["structured_response"] == stock["structured_response"]
    assert [m.type for m in mine["messages"]] == [m.type for m in stock["messages"]]


def test_ai_message_with_content_blocks_is_read():
    model = model_for(AIMessage(content=[{"type": "text", "text": '{"name": "Ada", "age": 36}'}]))

    result = create_agent(model, response_format=ProviderStrategy(Contact)).invoke(ASK)

    assert result["structured_response"] == Contact(name="Ada", age=36)


class Profile(BaseModel):
    name: str
    nickname: str | None = None


def test_strict_schema_is_rewritten_into_a_closed_dialect():
    model = model_for('{"name": "Ada", "nickname": null}')

    result = create_agent(model, response_format=ProviderStrategy(Profile, strict=True)).invoke(ASK)

    sent = model.calls[0].response_format["json_schema"]
    assert sent["strict"] is True
    # Every strict dialect (OpenAI, Anthropic, Gemini) needs closed objects.
    assert sent["schema"]["additionalProperties"] is False
    assert result["structured_response"] == Profile(name="Ada")
