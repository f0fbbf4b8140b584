"""A top-level `oneOf` split into variants reads as a tagged union.

The variant the model names (its tool, or the envelope's `kind`) decides, as an
OpenAPI discriminator does; a bare object with no name is taken only when
exactly one branch accepts it, which is what the `oneOf` as written accepts.
"""

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError, StructuredOutputRetryError
from langchain_structx.middleware import create_agent
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

BRANCHES = [
    {
        "title": "ByEmail",
        "type": "object",
        "properties": {"email": {"type": "string"}, "name": {"type": "string"}},
        "required": ["email"],
    },
    {
        "title": "ByPhone",
        "type": "object",
        "properties": {"phone": {"type": "string"}, "name": {"type": "string"}},
        "required": ["phone"],
    },
    {
        "title": "ByName",
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 3}},
        "required": ["name"],
    },
]
ONE_OF = {"oneOf": BRANCHES}
BOTH = {"email": "ada@example.com", "phone": "555-0100"}
ASK = {"messages": [HumanMessage("How do I reach Ada?")]}
PLAIN = {"structured_output": False, "tool_calling": False}


def test_each_branch_checks_the_value_on_its_own():
    schemas = normalize(ONE_OF)

    assert schemas.names == ("ByEmail", "ByPhone", "ByName")
    assert schemas.get("ByEmail").validate(BOTH) == BOTH
    assert schemas.get("ByPhone").validate(BOTH) == BOTH
    with pytest.raises(OutputValidationError) as info:
        schemas.get("ByName").validate(BOTH)
    assert [i.message for i in info.value.issues] == ["'name' is required but missing"]


@pytest.mark.parametrize("named", ["ByEmail", "ByPhone"])
def test_the_tool_the_model_calls_names_the_branch(named):
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call(named, BOTH)])])

    result = create_agent(model, response_format=ToolStrategy(ONE_OF)).invoke(ASK)

    assert len(model.calls) == 1
    assert result["structured_response"] == BOTH
    assert result["structured_response_kind"] == named


@pytest.mark.parametrize(
    ("strategy", "profile"),
    [(ProviderStrategy, {"structured_output": True}), (PromptedStrategy, PLAIN)],
    ids=["provider", "prompted"],
)
def test_the_envelope_kind_names_the_branch(strategy, profile):
    reply = '{"kind": "ByPhone", "data": {"email": "a@b.c", "phone": "1"}}'
    model = ScriptedChatModel(responses=[reply], profile=profile)

    result = create_agent(model, response_format=strategy(ONE_OF)).invoke(ASK)

    assert result["structured_response"] == {"email": "a@b.c", "phone": "1"}
    assert result["structured_response_kind"] == "ByPhone"


_TEXT = st.sampled_from(["", "Al", "Ada", "a@b.c"])
_VALUES = st.dictionaries(
    st.sampled_from(["email", "phone", "name", "other"]),
    st.one_of(_TEXT, st.integers(-2, 2), st.none()),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_a_bare_object_is_taken_exactly_when_the_schema_as_written_accepts_it(value):
    model = ScriptedChatModel(responses=[json.dumps(value)], profile=PLAIN)
    strategy = PromptedStrategy(ONE_OF, max_retries=0, coerce=False)

    try:
        answer = with_structured_output(model, strategy).invoke("How do I reach Ada?")
    except StructuredOutputRetryError:
        answer = None

    valid = jsonschema.Draft202012Validator(ONE_OF).is_valid(value)
    assert (answer == value) == valid
    assert answer is None or valid


def test_a_bare_object_goes_to_the_branch_that_takes_it_uncoerced():
    # ByPhone would take this only with 0 coerced to "0"; ByEmail takes it as it is.
    value = {"email": "", "phone": 0}
    model = ScriptedChatModel(responses=[json.dumps(value)], profile=PLAIN)
    runnable = with_structured_output(model, PromptedStrategy(ONE_OF), include_raw=True)

    result = runnable.invoke("How do I reach Ada?")

    assert result["parsed"] == value
    report = result["raw"].response_metadata["structured_output_report"]
    assert report["repairs"] == ["infer_kind: took the answer as ByEmail (no envelope)"]


def test_a_bare_object_two_branches_take_only_coerced_is_still_ambiguous():
    value = {"email": 1, "phone": 2}
    model = ScriptedChatModel(responses=[json.dumps(value)], profile=PLAIN)
    runnable = with_structured_output(model, PromptedStrategy(ONE_OF, max_retries=0))

    with pytest.raises(StructuredOutputRetryError, match="the object matches several"):
        runnable.invoke("How do I reach Ada?")
