"""Replies that once escaped the typed-error promise or a bound, and the last attempt's errors.

- numbers a bound refuses are never coerced into strings that pass it;
- a lone surrogate in streamed text costs the partial values, not the run;
- an error that `handle_errors` does not retry is raised as it is on the last
  attempt too, not wrapped in `StructuredOutputRetryError`;
- a model call that raises `StopIteration` raises it, as the model itself does
  (in sync code).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from langchain_structx import (
    PromptedStrategy,
    ToolStrategy,
    create_agent,
    with_structured_output,
)
from langchain_structx.errors import (
    InvalidOutputError,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
)
from langchain_structx.limits import Limits
from langchain_structx.streaming import partial_value
from langchain_structx.testing import ScriptedChatModel, tool_call


class City(BaseModel):
    name: str
    country: str


def city_args(args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("City", args, id="c1")])


REFUSAL = AIMessage("", additional_kwargs={"refusal": "I can't help with that."})
INVALID = city_args({"name": "Oslo"})


@pytest.mark.parametrize(
    "args",
    [
        {"name": 10**5000, "country": "NO"},  # past Python's own int-to-text limit
        {"name": 10**1500, "country": "NO"},  # past max_integer_digits, printable
        json.loads('{"name": NaN, "country": Infinity}'),  # what json.loads lets through
    ],
    ids=["unprintable-int", "long-int", "non-finite"],
)
def test_numbers_past_a_bound_are_refused_not_coerced_into_strings(args: dict[str, Any]) -> None:
    model = ScriptedChatModel(responses=[city_args(args)])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=0))
    with pytest.raises(StructuredOutputRetryError) as caught:
        runnable.invoke("Where?")
    (error,) = caught.value.errors
    assert isinstance(error, InvalidOutputError)


def test_a_number_for_a_string_field_is_still_coerced() -> None:
    model = ScriptedChatModel(responses=[city_args({"name": 42, "country": "NO"})])
    assert with_structured_output(model, City).invoke("Where?") == City(name="42", country="NO")


def test_a_lone_surrogate_in_streamed_text_is_refused_and_retried() -> None:
    # No checkpoint or UTF-8 file can keep a lone surrogate (msgpack stores "?"),
    # so the answer is refused with its path and the model asked again.
    reply = '{"name": "\\ud800", "country": "NO"}'
    assert partial_value(reply[:12]) == {"name": ""}  # an escape cut short shows nothing yet
    model = ScriptedChatModel(responses=[reply, '{"name": "Oslo", "country": "NO"}'])
    chunks = list(with_structured_output(model, PromptedStrategy(City)).stream("Where?"))
    assert chunks[-1] == City(name="Oslo", country="NO")
    assert "lone surrogate" in model.calls[1].messages[-1].text


async def test_a_lone_surrogate_in_streamed_text_is_refused_and_retried_async() -> None:
    model = ScriptedChatModel(
        responses=['{"name": "\\ud800", "country": "NO"}', '{"name": "Oslo", "country": "NO"}']
    )
    runnable = with_structured_output(model, PromptedStrategy(City))
    chunks = [chunk async for chunk in runnable.astream("Where?")]
    assert chunks[-1] == City(name="Oslo", country="NO")
    assert len(model.calls) == 2


@pytest.mark.parametrize(
    ("replies", "options", "raised"),
    [
        ([REFUSAL], {"max_retries": 0}, StructuredOutputRefusal),
        ([INVALID, REFUSAL], {"max_retries": 1}, StructuredOutputRefusal),
        ([INVALID], {"max_retries": 0, "handle_errors": False}, InvalidOutputError),
        ([INVALID], {"max_retries": 0, "handle_errors": ValueError}, InvalidOutputError),
    ],
    ids=["refusal-only-attempt", "refusal-last-attempt", "false", "other-type"],
)
def test_an_error_not_retried_is_raised_as_it_is_on_the_last_attempt(
    replies: list[AIMessage], options: dict[str, Any], raised: type[Exception]
) -> None:
    agent = create_agent(
        ScriptedChatModel(responses=replies), response_format=ToolStrategy(City, **options)
    )
    with pytest.raises(raised) as caught:
        agent.invoke({"messages": [("user", "Where?")]})
    assert not isinstance(caught.value, StructuredOutputRetryError)
    assert caught.value.attempt == len(replies)


def test_a_refusal_on_the_only_attempt_is_the_parsing_error() -> None:
    model = ScriptedChatModel(responses=[REFUSAL])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=0), include_raw=True)
    assert isinstance(runnable.invoke("Where?")["parsing_error"], StructuredOutputRefusal)


def test_a_model_raising_stop_iteration_raises_it() -> None:
    # As the model's own invoke does (in async code, Python itself turns it into
    # a RuntimeError before it reaches us).
    runnable = with_structured_output(ScriptedChatModel(responses=[StopIteration()]), City)
    with pytest.raises(StopIteration):
        runnable.invoke("Where?")


def test_a_union_answer_without_its_envelope_shares_one_validation_time() -> None:
    # Each variant's pattern runs out of time on this value; checked one by
    # one, every variant would get the whole time again.
    slow = {"type": "string", "pattern": r"^(?=(a|aa)+c)"}
    variants = [{"title": f"V{i}", "type": "object", "properties": {"s": slow}} for i in range(8)]
    limits = Limits(validation_seconds=0.05)
    model = ScriptedChatModel(responses=[json.dumps({"s": "a" * 60 + "b"})])
    runnable = with_structured_output(
        model, PromptedStrategy(variants, max_retries=0, limits=limits)
    )
    with pytest.raises(StructuredOutputRetryError) as caught:
        runnable.invoke("Go")
    assert "could not be checked against every variant within 0.05 s" in str(caught.value.errors[0])
