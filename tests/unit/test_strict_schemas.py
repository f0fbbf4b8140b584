"""Strict Pydantic schemas are checked in JSON mode, since a reply is JSON.

In Python mode a strict type wants the Python object itself: a `date`, an `Enum`
member, a tuple, an instance of the dataclass. No reply can hold one, so every
answer to such a schema used to fail, however right. JSON mode takes what JSON
says for each (an ISO date as text, an enum's value, an array) and stays strict
otherwise.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, Field, Strict, TypeAdapter
from typing_extensions import TypedDict

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError
from langchain_structx.limits import Limits
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

STRICT = ConfigDict(strict=True)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Place(BaseModel):
    model_config = STRICT
    city: str


class Meeting(BaseModel):
    """Every strict type a JSON reply spells differently from Python."""

    model_config = STRICT
    day: datetime.date
    at: datetime.datetime
    color: Color
    ref: uuid.UUID
    price: decimal.Decimal
    span: tuple[int, int]
    tags: set[str]
    place: Place


MEETING_JSON: dict[str, Any] = {
    "day": "2026-12-03",
    "at": "2026-12-03T09:30:00Z",
    "color": "blue",
    "ref": "12345678-1234-5678-1234-567812345678",
    "price": "12.50",
    "span": [1, 2],
    "tags": ["a", "b"],
    "place": {"city": "Oslo"},
}


class FieldStrict(BaseModel):
    day: Annotated[datetime.date, Strict()]
    count: int = Field(strict=True)


@dataclasses.dataclass
class Slot:
    __pydantic_config__ = STRICT
    day: datetime.date


class Row(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    ref: uuid.UUID


class Inside(BaseModel):  # not strict itself: only the nested dataclass is
    slot: Slot
    day: datetime.date


CASES = [
    pytest.param(Meeting, MEETING_JSON, id="strict-model"),
    pytest.param(FieldStrict, {"day": "2026-12-03", "count": 3}, id="strict-fields"),
    pytest.param(Slot, {"day": "2026-12-03"}, id="strict-dataclass"),
    pytest.param(Row, {"ref": "12345678-1234-5678-1234-567812345678"}, id="strict-typeddict"),
    pytest.param(Inside, {"slot": {"day": "2026-12-03"}, "day": "2026-12-03"}, id="strict-nested"),
]


def _expected(schema: Any, data: dict[str, Any]) -> Any:
    return TypeAdapter(schema).validate_json(json.dumps(data))


@pytest.mark.parametrize(("schema", "data"), CASES)
def test_a_strict_schema_takes_a_json_value(schema: Any, data: dict[str, Any]) -> None:
    value = normalize(schema).variants[0].validate(data)

    assert value == _expected(schema, data)


def test_the_value_has_its_python_types() -> None:
    value = normalize(Meeting).variants[0].validate(MEETING_JSON)

    assert value.day == datetime.date(2026, 12, 3)
    assert value.at == datetime.datetime(2026, 12, 3, 9, 30, tzinfo=datetime.UTC)
    assert value.color is Color.BLUE
    assert value.ref == uuid.UUID(MEETING_JSON["ref"])
    assert value.price == decimal.Decimal("12.50")
    assert (value.span, value.tags, value.place) == ((1, 2), {"a", "b"}, Place(city="Oslo"))


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"span": ["1", 2]}, ("span", 0), "valid integer"),
        ({"color": "green"}, ("color",), "'red' or 'blue'"),
        ({"place": {"city": 7}}, ("place", "city"), "valid string"),
        ({"day": 20261203}, ("day",), "valid date"),
    ],
)
def test_a_strict_schema_stays_strict(
    change: dict[str, Any], path: tuple[Any, ...], words: str
) -> None:
    with pytest.raises(OutputValidationError) as caught:
        normalize(Meeting).variants[0].validate({**MEETING_JSON, **change})

    [issue] = caught.value.issues
    assert issue.path == path
    assert words in issue.message


def test_a_value_json_cannot_hold_is_judged_in_python_mode() -> None:
    # Tool arguments built in Python may hold Python objects: JSON mode cannot read
    # them, and Python mode takes them as Pydantic does.
    variant = normalize(FieldStrict).variants[0]

    value = variant.validate({"day": datetime.date(2026, 12, 3), "count": 3})

    assert value == FieldStrict(day=datetime.date(2026, 12, 3), count=3)
    with pytest.raises(OutputValidationError):
        variant.validate({"day": datetime.date(2026, 12, 3), "count": "3"})


def test_what_json_mode_cannot_read_back_is_a_validation_error() -> None:
    variant = normalize(Meeting).variants[0]
    deep: Any = "x"
    for _ in range(240):  # past the nesting Pydantic's JSON reader takes
        deep = [deep]

    with pytest.raises(OutputValidationError) as caught:
        variant.validate({**MEETING_JSON, "tags": deep}, Limits(max_depth=256))
    with pytest.raises(OutputValidationError) as surrogate:
        variant.validate({**MEETING_JSON, "place": {"city": "\ud800"}})

    assert "could not be checked in JSON mode" in caught.value.issues[0].message
    # A lone surrogate is no character: refused with its path before any reader sees it.
    assert "lone surrogate" in surrogate.value.issues[0].message
    assert surrogate.value.issues[0].path == ("place", "city")


def _agent(strategy: Any, reply: AIMessage) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(
        responses=[reply],
        profile={"structured_output": True, "tool_calling": True, "tool_choice": True},
    )
    return create_agent(model, response_format=strategy), model


@pytest.mark.parametrize(
    ("strategy", "reply"),
    [
        (ToolStrategy(Meeting), AIMessage("", tool_calls=[tool_call("Meeting", MEETING_JSON)])),
        (ProviderStrategy(Meeting), AIMessage(json.dumps(MEETING_JSON))),
        (PromptedStrategy(Meeting), AIMessage(json.dumps(MEETING_JSON))),
    ],
    ids=["tool", "provider", "prompted"],
)
def test_an_agent_answers_a_strict_schema_at_the_first_attempt(
    strategy: Any, reply: AIMessage
) -> None:
    agent, model = _agent(strategy, reply)

    result = agent.invoke({"messages": [HumanMessage("book it")]})

    assert result["structured_response"] == _expected(Meeting, MEETING_JSON)
    assert result["structured_output_report"]["attempts"] == 1
    assert len(model.calls) == 1
