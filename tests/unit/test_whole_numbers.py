"""A JSON-schema `integer` answered as `3.0` comes back as the `int` 3.

JSON Schema counts a whole float as an integer, so such an answer is valid; it
used to reach the caller as a float, where a TypedDict or Pydantic `int` field
gives an `int`. Only whole floats at places the schema types as integer change.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from langchain_structx._parsing.coerce import whole_numbers
from langchain_structx._schemas.normalise import normalize
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ORDER = {
    "title": "Order",
    "type": "object",
    "properties": {
        "qty": {"type": "integer"},
        "price": {"type": "number"},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "either": {"anyOf": [{"type": "number"}, {"type": "integer"}]},
        "ref": {"$ref": "#/$defs/Count"},
        "huge": {"type": "integer"},
    },
    "required": ["qty"],
    "$defs": {"Count": {"type": ["integer", "null"]}},
}


def test_whole_floats_at_integer_places_become_ints_and_nothing_else_changes():
    answer = {
        "qty": 3.0,
        "price": 2.0,
        "sizes": [38.0, 39],
        "code": 7.0,
        "either": 5.0,
        "ref": 6.0,
        "huge": 1e300,
    }

    value = normalize(ORDER).variants[0].validate(answer)

    assert value == answer  # the same numbers
    assert [type(value[k]) for k in ("qty", "code", "ref")] == [int, int, int]
    assert [type(x) for x in value["sizes"]] == [int, int]
    # A number place keeps its float, as does a union that takes a float as it
    # is, and one too large to stand for one integer exactly.
    assert [type(value[k]) for k in ("price", "either", "huge")] == [float, float, float]
    assert answer["qty"] == 3.0 and type(answer["qty"]) is float  # the input is not changed


def test_a_value_without_whole_floats_is_returned_as_it_is():
    answer = {"qty": 3, "price": 2.5, "sizes": [1, 2]}

    assert normalize(ORDER).variants[0].validate(answer) is answer


@pytest.mark.parametrize("strategy", [ToolStrategy, ProviderStrategy, PromptedStrategy])
def test_every_strategy_returns_ints_for_an_integer_schema(strategy):
    schema = {
        "title": "Person",
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
    args = {"name": "Ada", "age": 36.0}
    if strategy is ToolStrategy:
        reply = AIMessage("", tool_calls=[tool_call("Person", args, id="c1")])
    else:
        reply = AIMessage(json.dumps(args))
    model = ScriptedChatModel(responses=[reply])

    result = with_structured_output(model, strategy(schema), include_raw=True).invoke("Ada, 36")

    assert result["parsed"] == {"name": "Ada", "age": 36}
    assert type(result["parsed"]["age"]) is int
    assert result["parsing_error"] is None
    assert len(model.calls) == 1


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=12,
)
_schemas = st.recursive(
    st.sampled_from([{}, {"type": "integer"}, {"type": "number"}, {"type": ["integer", "string"]}]),
    lambda inner: (
        st.builds(lambda s: {"type": "array", "items": s}, inner)
        | st.builds(lambda s: {"additionalProperties": s}, inner)
        | st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner)
    ),
    max_leaves=6,
)


@given(_json, _schemas)
def test_whole_numbers_keeps_every_value_equal_and_valid(value, schema):
    from jsonschema import Draft202012Validator

    result = whole_numbers(value, schema)

    assert result == value
    valid = Draft202012Validator(schema).is_valid
    assert valid(result) == valid(value)
    changed = json.dumps(result) != json.dumps(value)
    assert not changed or "integer" in json.dumps(schema)
