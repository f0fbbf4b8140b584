"""Keywords and counts that a hostile reply or tenant schema used to turn against us.

`unevaluatedItems` / `unevaluatedProperties` looked each item up in a list
(quadratic: a 160 KB reply took 48 s, past the one-second deadline, which is
only checked between keywords); a check that ran out of time was followed by a
coercion pass and a second check with no deadline; `multipleOf` rounded; token
counts a client accepts crashed LangChain's sum, or summed past what a
checkpoint stores.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from langchain_structx._engine import match as _match
from langchain_structx._engine.progress import MAX_TOKENS
from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import (
    OutputValidationError,
    StructuredOutputRetryError,
    ValidationIssue,
)
from langchain_structx.limits import Limits
from langchain_structx.middleware import create_agent
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import PromptedStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call


def _checked(schema: dict[str, Any], value: Any) -> str:
    try:
        normalize(schema).variants[0].validate(value)
    except OutputValidationError as exc:
        return str(exc)
    return "value"


# --- unevaluatedItems / unevaluatedProperties ------------------------------------------


def test_unevaluated_items_on_a_long_array_is_valid() -> None:
    # (It took seconds: benchmarks/hostile_schemas.py measures its growth.)
    schema = {"type": "array", "items": {}, "unevaluatedItems": False}

    assert _checked(schema, [0] * 40_000) == "value"


def test_unevaluated_properties_on_many_keys_is_checked_within_the_deadline() -> None:
    schema = {"type": "object", "properties": {"k0": {}}, "unevaluatedProperties": False}
    value = {f"k{i}": 0 for i in range(40_000)}

    outcome = _checked(schema, value)

    assert "Unevaluated properties are not allowed ('k1', 'k2', 'k3' and 39996 more)" in outcome


UNEVALUATED = [
    {"prefixItems": [{"type": "integer"}], "unevaluatedItems": False},
    {"prefixItems": [{}], "unevaluatedItems": {"type": "string"}},
    {"allOf": [{"prefixItems": [{}, {}]}], "unevaluatedItems": False},
    {"contains": {"type": "string"}, "unevaluatedItems": False},
    {"properties": {"a": {}}, "unevaluatedProperties": False},
    {"properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}},
    {
        "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
        "unevaluatedProperties": False,
    },
    {"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}, "unevaluatedProperties": False},
]

SMALL_VALUES = st.one_of(
    st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"]), st.none()), max_size=4),
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"])),
        max_size=3,
    ),
)


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, len(UNEVALUATED) - 1), value=SMALL_VALUES)
def test_unevaluated_keywords_judge_as_jsonschema_does(index: int, value: Any) -> None:
    schema = UNEVALUATED[index]

    ours = _checked(schema, value) == "value"

    assert ours == jsonschema.Draft202012Validator(schema).is_valid(value)


# --- a check that could not finish is not tried again -----------------------------------


@pytest.mark.parametrize("strategy", [PromptedStrategy, ToolStrategy])
def test_a_check_out_of_time_is_not_followed_by_coercion(
    strategy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    coerced: list[Any] = []
    monkeypatch.setattr(_match, "coerce", lambda *args: coerced.append(args))
    schema = {
        "title": "Nums",
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
    }
    xs = list(range(50_000))
    reply = (
        AIMessage("", tool_calls=[tool_call("Nums", {"xs": xs})])
        if strategy is ToolStrategy
        else AIMessage(json.dumps({"xs": xs}))
    )
    model = ScriptedChatModel(responses=[reply])
    limits = Limits(validation_seconds=1e-6)
    runnable = with_structured_output(model, strategy(schema, max_retries=0, limits=limits))

    with pytest.raises(StructuredOutputRetryError) as caught:
        runnable.invoke("numbers")

    assert "could not be checked within" in str(caught.value.errors[-1])
    assert coerced == []


def test_only_an_unfinished_check_is_marked_so() -> None:
    late = ValidationIssue((), "the value could not be checked within 1.0 s", unfinished=True)
    wrong = ValidationIssue(("xs", 0), "'a' is not of type 'integer'")

    assert OutputValidationError("Nums", [wrong, late]).unfinished
    assert not OutputValidationError("Nums", [wrong]).unfinished
    assert late == ValidationIssue((), late.message)  # the mark changes no comparison


# --- multipleOf reads JSON numbers as the decimals they are -----------------------------


@pytest.mark.parametrize(
    ("divisor", "value", "multiple"),
    [
        (5, 5e-324, False),  # the float quotient underflows to 0
        (3, 1e17, False),  # every float this large is whole
        (0.01, 4.35, True),  # 4.35 / 0.01 is 434.99999999999994 in floats
        (0.1, 0.3, True),
        (0.1, 0.35, False),
        (2.5, 10, True),
        (3, 9.0, True),
    ],
)
def test_multiple_of_is_exact_on_floats(divisor: Any, value: float, multiple: bool) -> None:
    outcome = _checked({"type": "number", "multipleOf": divisor}, value)

    assert (outcome == "value") is multiple
    assert multiple or "is not a multiple of" in outcome


# --- token counts -------------------------------------------------------------------------


class City(BaseModel):
    name: str


def _answer(usage: dict[str, Any], *, valid: bool = True) -> AIMessage:
    args = {"name": "Oslo"} if valid else {}
    return AIMessage("", tool_calls=[tool_call("City", args)], usage_metadata=usage)  # type: ignore[arg-type]


def test_usage_details_langchain_cannot_add_up_keep_the_answer() -> None:
    usage = {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_token_details": {"cache_read": 0, "tier": "standard"},
    }
    model = ScriptedChatModel(responses=[_answer(usage)])

    state = create_agent(model, response_format=ToolStrategy(City)).invoke(
        {"messages": [("user", "Oslo")]}
    )

    assert state["structured_response"] == City(name="Oslo")
    assert state["structured_output_report"]["usage"]["total_tokens"] == 2


def test_summed_usage_stops_at_what_a_checkpoint_stores() -> None:
    huge = {"input_tokens": 2**64 - 1, "output_tokens": 0, "total_tokens": 2**64 - 1}
    model = ScriptedChatModel(responses=[_answer(huge, valid=False), _answer(huge)])
    agent = create_agent(model, response_format=ToolStrategy(City), checkpointer=InMemorySaver())

    state = agent.invoke({"messages": [("user", "Oslo")]}, {"configurable": {"thread_id": "t"}})

    assert state["structured_response"] == City(name="Oslo")
    assert state["structured_output_report"]["usage"] == {
        "input_tokens": MAX_TOKENS,
        "output_tokens": 0,
        "total_tokens": MAX_TOKENS,
    }
