"""Tool definitions given as the schema, as `with_structured_output` takes them.

OpenAI's function format and Anthropic's tool format have none of JSON Schema's
keywords at their top, so read as a JSON schema they accepted any answer: the
name was lost, and the parameters were never checked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError, SchemaError
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import PromptedStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

PARAMETERS = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "country": {"type": "string"}},
    "required": ["name", "country"],
}
FUNCTION = {"name": "City", "description": "A city and its country.", "parameters": PARAMETERS}
FORMATS = {
    "openai-function": FUNCTION,
    "openai-tool": {"type": "function", "function": FUNCTION},
    "anthropic-tool": {
        "name": "City",
        "description": "A city and its country.",
        "input_schema": PARAMETERS,
    },
}


@pytest.mark.parametrize("schema", list(FORMATS.values()), ids=list(FORMATS))
def test_a_tool_definition_is_its_parameters_named_after_the_tool(schema: dict[str, Any]):
    (variant,) = normalize(schema).variants

    assert variant.name == "City"
    assert variant.description == "A city and its country."
    assert variant.json_schema["required"] == ["name", "country"]
    assert variant.validate({"name": "Oslo", "country": "Norway"}) == {
        "name": "Oslo",
        "country": "Norway",
    }
    with pytest.raises(OutputValidationError, match="country"):
        variant.validate({"totally": "wrong"})


@pytest.mark.parametrize("schema", list(FORMATS.values()), ids=list(FORMATS))
def test_the_runnable_sends_the_tool_and_retries_a_wrong_answer(schema: dict[str, Any]):
    wrong = AIMessage("", tool_calls=[tool_call("City", {"totally": "wrong"}, id="c1")])
    right = AIMessage("", tool_calls=[tool_call("City", {"name": "Oslo", "country": "Norway"})])
    model = ScriptedChatModel(responses=[wrong, right])

    value = with_structured_output(model, ToolStrategy(schema)).invoke("Oslo?")

    assert value == {"name": "Oslo", "country": "Norway"}
    assert len(model.calls) == 2
    sent = model.calls[0].tools[0]["function"]
    assert sent["name"] == "City"
    assert sent["parameters"]["required"] == ["name", "country"]


def test_a_union_of_tool_definitions_keeps_each_name():
    other = {"name": "River", "parameters": {"type": "object", "required": ["length"]}}
    model = ScriptedChatModel(responses=[json.dumps({"kind": "River", "data": {"length": 12}})])

    value = with_structured_output(model, PromptedStrategy([FUNCTION, other])).invoke("Long?")

    assert value == {"length": 12}
    assert normalize([FUNCTION, other]).names == ("City", "River")


def test_a_dict_that_is_not_exactly_a_tool_stays_a_json_schema():
    # A key beyond the tool formats' own: it is read as written.
    odd = {**FUNCTION, "extra": 1}
    assert normalize(odd).variants[0].json_schema == odd
    # A function without parameters is no tool definition, and no valid schema.
    with pytest.raises(SchemaError, match="'function' is not a JSON type"):
        normalize({"type": "function", "function": {"name": "City"}})
