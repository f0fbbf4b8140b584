"""Model misbehaviours that LangChain 1.5 mishandles, and local repair without a round trip."""

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx.errors import (
    MissingOutputError,
    MultipleOutputsError,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    TruncatedOutputError,
)
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
NATIVE = {"structured_output": True, "tool_calling": True}


class Contact(BaseModel):
    name: str
    age: int


class Event(BaseModel):
    title: str


ADA = Contact(name="Ada", age=36)
GOOD = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36}, id="g1")])

searched: list[str] = []


@tool
def search(query: str) -> str:
    """Search the directory."""
    searched.append(query)
    return f"found {query}"


@pytest.fixture(autouse=True)
def _clear_searched():
    searched.clear()


def broken(args: str, id: str = "c1", name: str = "Contact") -> dict:
    return {"type": "invalid_tool_call", "name": name, "args": args, "id": id, "error": "bad"}


# --- prose instead of the structured call ----------------------------------------------

NUDGE = (
    "Error: The answer must be given by calling one of these tools: Contact. "
    "Do not answer in plain text.\n Please fix your mistakes."
)


def test_prose_instead_of_tool_call_is_nudged_and_retried():
    model = ScriptedChatModel(responses=["Ada is 36.", GOOD])

    result = create_agent(model, [search], response_format=ToolStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    nudge = model.calls[1].messages[-1]
    assert nudge.type == "human"
    assert nudge.content == NUDGE
    assert model.calls[1].messages[-2].content == "Ada is 36."
    assert result["structured_response"] == ADA
    assert result["structured_output_report"]["errors"] == [
        "no_output: The answer must be given by calling one of these tools: Contact. "
        "Do not answer in plain text."
    ]


def test_langchain_ends_without_an_answer_on_prose():
    # What the package fixes: stock LangChain treats prose as the final answer.
    model = ScriptedChatModel(responses=["Ada is 36.", GOOD])

    result = langchain_create_agent(
        model, [search], response_format=lc.ToolStrategy(Contact)
    ).invoke(ASK)

    assert result.get("structured_response") is None
    assert len(model.calls) == 1


def test_prose_nudges_are_bounded():
    model = ScriptedChatModel(responses=["prose"] * 10)

    with pytest.raises(StructuredOutputRetryError) as info:
        create_agent(model, [search], response_format=ToolStrategy(Contact, max_retries=2)).invoke(
            ASK, {"recursion_limit": 200}
        )

    assert len(model.calls) == 3
    assert all(isinstance(e, MissingOutputError) for e in info.value.errors)


# --- an invalid structured call next to an ordinary call --------------------------------


def test_ordinary_tool_still_runs_next_to_an_invalid_structured_call():
    mixed = AIMessage(
        "",
        tool_calls=[
            tool_call("search", {"query": "ada"}, id="s1"),
            tool_call("Contact", {"name": "Ada"}, id="c1"),
        ],
    )
    model = ScriptedChatModel(responses=[mixed, GOOD])

    result = create_agent(model, [search], response_format=ToolStrategy(Contact)).invoke(ASK)

    assert searched == ["ada"]
    assert len(model.calls) == 2
    retry = model.calls[1].messages
    assert retry[1].tool_calls == mixed.tool_calls
    replies = {m.tool_call_id: m.content for m in retry[2:]}
    assert replies == {
        "s1": "found ada",
        "c1": "Error: Failed to parse structured output for tool 'Contact': "
        "1 problem with Contact:\n- at $.age: required field is missing.\n"
        " Please fix your mistakes.",
    }
    assert all(m.type == "tool" for m in retry[2:])
    assert result["structured_response"] == ADA
    assert result["structured_output_report"]["attempts"] == 2


def test_ordinary_tool_runs_next_to_an_unparseable_structured_call():
    mixed = AIMessage(
        "",
        tool_calls=[tool_call("search", {"query": "ada"}, id="s1")],
        invalid_tool_calls=[broken('{"name": Ada Lovelace}')],
    )
    model = ScriptedChatModel(responses=[mixed, GOOD])

    result = create_agent(model, [search], response_format=ToolStrategy(Contact)).invoke(ASK)

    assert searched == ["ada"]
    assert result["structured_response"] == ADA
    assert result["structured_output_report"]["errors"][0].startswith("parse: ")


# --- truncation --------------------------------------------------------------------------

CUT = (
    "Error: The output for 'Contact' was cut off before the JSON was complete: "
    "the text ends inside a string\n Please fix your mistakes."
)


def truncated_call(id: str = "c1") -> AIMessage:
    return AIMessage(
        "",
        invalid_tool_calls=[broken('{"name": "Ad', id=id)],
        response_metadata={"finish_reason": "length"},
    )


def test_truncated_call_gets_one_retry_with_feedback():
    model = ScriptedChatModel(responses=[truncated_call(), GOOD])

    result = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    feedback = model.calls[1].messages[-1]
    assert feedback.type == "tool"
    assert feedback.tool_call_id == "c1"
    assert feedback.content == CUT
    assert result["structured_response"] == ADA


@pytest.mark.parametrize("max_retries", [1, 5])
def test_second_truncation_raises_a_typed_error(max_retries):
    model = ScriptedChatModel(responses=[truncated_call("c1"), truncated_call("c2"), GOOD])

    with pytest.raises(TruncatedOutputError) as info:
        create_agent(model, response_format=ToolStrategy(Contact, max_retries=max_retries)).invoke(
            ASK
        )

    assert len(model.calls) == 2
    assert info.value.kind == "truncation"
    assert info.value.attempt == 2
    assert info.value.ai_message.invalid_tool_calls[0]["id"] == "c2"


def test_unclosed_json_without_finish_reason_is_truncation():
    model = ScriptedChatModel(
        responses=[AIMessage("", invalid_tool_calls=[broken('{"name": "Ada", "age": 3')]), GOOD]
    )

    result = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert result["structured_output_report"]["errors"] == [
        "truncation: The output for 'Contact' was cut off before the JSON was complete: "
        "the JSON ends before it is complete"
    ]


def test_running_out_of_tokens_before_the_call_is_truncation():
    model = ScriptedChatModel(
        responses=[AIMessage("Let me think", response_metadata={"finish_reason": "length"}), GOOD]
    )

    result = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert model.calls[1].messages[-1].content == (
        "Error: The model ran out of tokens before calling a structured-output tool.\n"
        " Please fix your mistakes."
    )
    assert result["structured_response"] == ADA


@pytest.mark.parametrize(
    "metadata",
    [{"finish_reason": "length"}, {"stop_reason": "max_tokens"}],
    ids=["openai", "anthropic"],
)
def test_provider_truncation_is_retried_once_then_raises(metadata):
    cut = AIMessage('{"name": "Ad', response_metadata=metadata)
    model = ScriptedChatModel(responses=[cut, cut, '{"name": "Ada", "age": 36}'], profile=NATIVE)

    with pytest.raises(TruncatedOutputError):
        create_agent(model, response_format=ProviderStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    assert model.calls[1].messages[-1].type == "human"


# --- refusals ----------------------------------------------------------------------------

REFUSALS = [
    AIMessage("", additional_kwargs={"refusal": "I can't help with that."}),
    AIMessage([{"type": "refusal", "refusal": "I can't help with that."}]),
    AIMessage("I can't help with that.", response_metadata={"stop_reason": "refusal"}),
]
REFUSAL_IDS = ["openai-field", "content-block", "anthropic-stop-reason"]


@pytest.mark.parametrize("refusal", REFUSALS, ids=REFUSAL_IDS)
@pytest.mark.parametrize("kind", ["tool", "provider"])
def test_refusal_raises_without_retry(refusal, kind):
    if kind == "tool":
        model = ScriptedChatModel(responses=[refusal, GOOD])
        strategy = ToolStrategy(Contact)
    else:
        model = ScriptedChatModel(responses=[refusal, '{"name": "Ada", "age": 36}'], profile=NATIVE)
        strategy = ProviderStrategy(Contact)

    with pytest.raises(StructuredOutputRefusal) as info:
        create_agent(model, response_format=strategy).invoke(ASK)

    assert len(model.calls) == 1
    assert info.value.refusal == "I can't help with that."
    assert str(info.value) == "The model refused to answer: I can't help with that."
    assert info.value.kind == "refusal"


# --- several structured calls -----------------------------------------------------------

MULTIPLE = (
    "Model incorrectly returned multiple structured responses (Contact, Event) "
    "when only one is expected."
)


def test_several_structured_calls_get_langchains_message_and_a_retry():
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    tool_call("Contact", {"name": "Ada", "age": 36}, id="a"),
                    tool_call("Event", {"title": "x"}, id="b"),
                ],
            ),
            GOOD,
        ]
    )

    result = create_agent(model, response_format=ToolStrategy(Contact | Event)).invoke(ASK)

    assert len(model.calls) == 2
    replies = model.calls[1].messages[2:]
    assert [(m.type, m.tool_call_id, m.content) for m in replies] == [
        ("tool", "a", f"Error: {MULTIPLE}\n Please fix your mistakes."),
        ("tool", "b", f"Error: {MULTIPLE}\n Please fix your mistakes."),
    ]
    assert result["structured_response"] == ADA
    assert result["structured_output_report"]["errors"] == [f"multiple_outputs: {MULTIPLE}"]


def test_multiple_outputs_error_is_langchains_type():
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    tool_call("Contact", {"name": "Ada", "age": 36}),
                    tool_call("Event", {"title": "x"}),
                ],
            )
        ]
    )

    with pytest.raises(lc.MultipleStructuredOutputsError) as info:
        create_agent(
            model, response_format=ToolStrategy(Contact | Event, handle_errors=False)
        ).invoke(ASK)

    assert isinstance(info.value, MultipleOutputsError)
    assert info.value.tool_names == ["Contact", "Event"]
    assert str(info.value) == MULTIPLE


# --- local repair -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "repairs"),
    [
        (
            "{'name': 'Ada', 'age': 36,}",
            [
                "single_quotes: replaced single quotes around 3 strings with double quotes",
                "trailing_comma: removed a trailing comma",
            ],
        ),
        (
            '{name: "Ada", age: 36}',
            ["unquoted_key: quoted 2 unquoted object keys"],
        ),
        (
            '```json\n{"name": "Ada", "age": 36}\n```',
            ["fence: removed a markdown code fence around the JSON"],
        ),
        (
            '{"name": "Ada", /* who */ "age": 36}',
            ["comment: removed a comment"],
        ),
    ],
    ids=["quotes-comma", "unquoted-keys", "fence", "comment"],
)
def test_broken_tool_arguments_are_repaired_without_a_model_call(args, repairs):
    model = ScriptedChatModel(responses=[AIMessage("", invalid_tool_calls=[broken(args)])])

    result = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == ADA
    # Repairs are compared as a set: their order is the parser's business.
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(repairs)
    assert result["messages"][-1].tool_call_id == "c1"


COUNTS = {
    "title": "Counts",
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "ok": {"type": "boolean"},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "level": {"enum": ["low", "high"]},
    },
    "required": ["n", "ok", "ids", "level"],
}


def test_coercible_tool_arguments_are_coerced_without_a_model_call():
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    tool_call("Counts", {"n": "5", "ok": "false", "ids": 7, "level": "High"})
                ],
            )
        ]
    )

    result = create_agent(model, response_format=ToolStrategy(COUNTS)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == {"n": 5, "ok": False, "ids": [7], "level": "high"}
    assert sorted(result["structured_output_report"]["repairs"]) == sorted(
        [
            'coerce_int: converted "5" to the integer 5',
            'coerce_bool: converted "false" to false',
            "wrap_array: wrapped a single value in an array",
            'enum_case: matched "High" to the enum member "high"',
        ]
    )


def test_a_structured_call_written_as_text_is_read_without_a_retry():
    # What llama.cpp's server returns when a chat template writes the call as text.
    text = '{"name": "Contact", "arguments": {"name": "Ada", "age": 36}}'
    model = ScriptedChatModel(responses=[text])

    state = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert state["structured_response"] == Contact(name="Ada", age=36)
    assert len(model.calls) == 1
    repairs = state["structured_output_report"]["repairs"]
    assert repairs == ["tool_call_in_text: read the Contact call the model wrote as text"]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Unknown", "arguments": {"name": "Ada", "age": 36}}',
        '{"name": "Contact", "arguments": "not json at all {"}',
        '{"name": "Contact"}',
        # A name that is no string (it cannot even be looked up in a set).
        '{"name": ["Contact"], "arguments": {"name": "Ada", "age": 36}}',
        '{"name": {"a": 1}, "arguments": {}}',
        "just prose",
    ],
)
def test_text_that_is_not_one_of_our_calls_still_gets_the_nudge(text):
    model = ScriptedChatModel(responses=[text, GOOD])

    state = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 2
    assert state["structured_output_report"]["errors"][0].startswith("no_output: ")
