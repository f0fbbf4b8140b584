"""Round trip for values of the user's type, as an agent sends the type.

For a Pydantic model, a dataclass or a TypedDict, every valid value (keys left
out included) is put in the provider's shape, checked against the schema sent,
restored, and validated again: the validated value must equal the one validated
from the original (equality of validated values, not of JSON text). The schema
is the one the plan sends for each dialect, strict answers and Gemini function
declarations alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

from langchain_structx._request.plan import build_plan
from langchain_structx.dialects import Transformed, transform_for_tools
from langchain_structx.strategies import ProviderStrategy

WORDS = st.text(alphabet="abc xyz", max_size=6)
INTS = st.integers(-5, 5)


class Address(BaseModel):
    street: str
    city: str | None = None


class Parcel(BaseModel):
    label: str
    weight: int | None = None
    size: int | None = 3  # absent is 3, null is null: both observable
    sender: Address | None = None
    tags: list[str] = []
    code: int | str = 0
    kind: Literal["box", "bag"] = "box"


@dataclass
class Reading:
    sensor: str
    value: float | None = None
    unit: str | None = "C"
    notes: list[str] = field(default_factory=list)


class Card(TypedDict, total=False):
    name: str
    phone: str | None  # absent and null differ: a TypedDict keeps the key


class Meeting(TypedDict):
    title: str
    room: NotRequired[int | None]
    cards: list[Card]


def _optional(**strategies: Any) -> Any:
    return st.fixed_dictionaries({}, optional=strategies)


ADDRESS = st.fixed_dictionaries({"street": WORDS}, optional={"city": st.none() | WORDS})
CARD = _optional(name=WORDS, phone=st.none() | WORDS)
DATA: dict[Any, Any] = {
    Parcel: st.fixed_dictionaries(
        {"label": WORDS},
        optional={
            "weight": st.none() | INTS,
            "size": st.none() | INTS,
            "sender": st.none() | ADDRESS,
            "tags": st.lists(WORDS, max_size=2),
            "code": INTS | WORDS,
            "kind": st.sampled_from(["box", "bag"]),
        },
    ),
    Reading: st.fixed_dictionaries(
        {"sensor": WORDS},
        optional={
            "value": st.none() | st.floats(-1, 1, allow_nan=False),
            "unit": st.none() | WORDS,
            "notes": st.lists(WORDS, max_size=2),
        },
    ),
    Card: CARD,
    Meeting: st.fixed_dictionaries(
        {"title": WORDS, "cards": st.lists(CARD, max_size=2)},
        optional={"room": st.none() | INTS},
    ),
}
SENT = ("openai", "anthropic", "gemini", "gemini tool")


def _sent(kind: Any, how: str) -> Transformed:
    plan = build_plan(ProviderStrategy(kind, strict=True))
    if how == "gemini tool":
        variant = plan.schemas.variants[0]
        fills = variant.origin in ("pydantic", "dataclass")
        return transform_for_tools(variant.json_schema, "gemini", defaults_apply=fills)
    return plan.transformed(how)  # type: ignore[arg-type]


def _json_schema(result: Transformed, how: str) -> dict[str, Any]:
    """The sent schema as JSON Schema (Gemini's `Schema` read the same way)."""
    if how != "gemini tool":
        return result.schema

    def read(node: Any) -> Any:
        if isinstance(node, list):
            return [read(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: read(v) for k, v in node.items() if k != "nullable"}
        if isinstance(node.get("type"), str):
            out["type"] = node["type"].lower()
            if node.get("nullable"):
                out["type"] = [out["type"], "null"]
        if "enum" in node and node.get("nullable"):
            out["enum"] = [*node["enum"], None]
        return out

    return dict(read(result.schema))


@pytest.mark.parametrize("how", SENT)
@pytest.mark.parametrize("kind", list(DATA), ids=lambda k: k.__name__)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_valid_values_come_back_equal(kind: Any, how: str, data: Any) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    value = data.draw(DATA[kind])
    expected = adapter.validate_python(value)
    result = _sent(kind, how)
    encoded = result.encode(value)
    errors = [
        e.message for e in Draft202012Validator(_json_schema(result, how)).iter_errors(encoded)
    ]
    assert errors == [], (value, encoded)
    assert adapter.validate_python(result.restore(encoded)) == expected, (value, encoded)


def test_a_default_of_none_needs_no_marker() -> None:
    sent = _sent(Parcel, "openai").schema
    text = str(sent)
    assert "explicit_null" not in text
    # `size` defaults to 3 and accepts null: absent is sent as 3, null as null.
    assert sent["properties"]["size"]["type"] == ["integer", "null"]
    assert _sent(Parcel, "openai").encode({"label": "a"})["size"] == 3
    # `kind` has a default and no null: it is sent as it is, and required.
    assert sent["properties"]["kind"] == {
        "type": "string",
        "enum": ["box", "bag"],
        "description": '(default: "box")',
    }


def test_a_typeddict_keeps_the_marker_where_absent_and_null_differ() -> None:
    sent = _sent(Card, "openai")
    assert "explicit_null" in str(sent.schema["properties"]["phone"])
    assert sent.restore(sent.encode({"phone": None})) == {"phone": None}
    assert sent.restore(sent.encode({})) == {}


def test_pydantic_titles_that_repeat_the_key_are_left_out() -> None:
    class Titled(BaseModel):
        font_size: int
        note: str = Field(title="A note")

    sent = _sent(Titled, "openai").schema["properties"]
    assert "title" not in sent["font_size"]
    assert sent["note"]["title"] == "A note"
