"""Benchmark: how large the strict schema is that an agent sends, per provider.

For ordinary Pydantic models, dataclasses and TypedDicts (flat, nested,
optional-heavy, unions, recursive), an agent made with `AutoStrategy` on
`ChatOpenAI` is run against a fake OpenAI server on loopback, and the schema
in the request's `response_format` is measured (compact JSON, characters).
Beside it, the OpenAI SDK's own strict conversion of the same type
(`openai.lib._pydantic.to_strict_json_schema`, what `client.chat.completions.parse`
sends), and the size of our Anthropic and Gemini dialects of the type.

Goals: worst ratio to the SDK at most 1.15x, median at most 1.0x.

Run: `python benchmarks/request_size.py` (a few seconds).
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "dialects_corpus"))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from dialect_rules import check_openai  # noqa: E402

from langchain_structx import AutoStrategy, create_agent  # noqa: E402
from langchain_structx._request.plan import build_plan  # noqa: E402
from langchain_structx.errors import DialectError, StructxError  # noqa: E402
from tests.integration.providers.clients import client, fake  # noqa: E402
from tests.integration.providers.wire import Ask, Reply  # noqa: E402

WORST_GOAL = 1.15
MEDIAN_GOAL = 1.0

# -- the types ------------------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int
    email: str


class Address(BaseModel):
    street: str
    city: str
    postcode: str
    country: str = "FR"


class Customer(BaseModel):
    name: str
    address: Address
    billing: Address | None = None


class Line(BaseModel):
    product: str
    quantity: int = Field(ge=1)
    price: float


class PurchaseOrder(BaseModel):
    number: str
    lines: list[Line]
    notes: str | None = None
    placed: dt.date


_OPTIONAL_FIELDS = {f"field_{i}": (str | None, None) for i in range(45)}


def _optional_heavy() -> type[BaseModel]:
    from pydantic import create_model

    return create_model("Survey", **_OPTIONAL_FIELDS)  # type: ignore[call-overload, no-any-return]


Survey = _optional_heavy()


class Settings(BaseModel):
    theme: str | None = None
    font_size: int | None = None
    dark: bool | None = None
    language: Literal["en", "fr", "de"] | None = None
    tags: list[str] | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Value(BaseModel):
    value: int | str | float
    unit: str | None = None


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Comment(BaseModel):
    author: str
    text: str
    replies: list[Comment] = []


class Color(StrEnum):
    red = "red"
    green = "green"
    blue = "blue"


class Paint(BaseModel):
    color: Color
    litres: float
    finish: Literal["matte", "gloss"] = "matte"


class Counts(BaseModel):
    counts: dict[str, int]
    label: str


class Event(BaseModel):
    title: str
    start: dt.datetime
    end: dt.datetime | None = None
    attendees: list[Person] = []


class Review(BaseModel):
    product: str = Field(max_length=60)
    rating: int = Field(ge=1, le=5, description="stars, 1 to 5")
    sentiment: Literal["positive", "negative", "neutral"]
    key_points: list[str] = Field(max_length=5)


class Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


@dataclass
class LineItem:
    product: str
    quantity: int


@dataclass
class Order:
    customer: str
    items: list[LineItem]
    comment: str | None = None


@dataclass
class Sensor:
    id: str
    reading: float | None = None
    unit: str | None = None
    tags: list[str] = field(default_factory=list)


class ActionItem(TypedDict):
    owner: str
    task: str
    due: str
    priority: Literal["low", "medium", "high"]


class Meeting(TypedDict):
    title: str
    items: list[ActionItem]
    location: NotRequired[str]


class Contact(TypedDict, total=False):
    name: str
    phone: str
    email: str


TYPES: list[tuple[str, Any]] = [
    ("Person (flat)", Person),
    ("Customer (nested, optional model)", Customer),
    ("PurchaseOrder (list of models, date)", PurchaseOrder),
    ("Survey (45 optional fields)", Survey),
    ("Settings (optional-heavy)", Settings),
    ("Pet (discriminated union)", Pet),
    ("Value (scalar union)", Value),
    ("Node (recursive)", Node),
    ("Comment (recursive)", Comment),
    ("Paint (enum, literal default)", Paint),
    ("Counts (dict)", Counts),
    ("Event (datetimes, list)", Event),
    ("Review (constraints)", Review),
    ("Extra (extra=allow)", Extra),
    ("Order (dataclass)", Order),
    ("Sensor (dataclass, optional)", Sensor),
    ("LineItem (dataclass)", LineItem),
    ("ActionItem (TypedDict)", ActionItem),
    ("Meeting (TypedDict, NotRequired)", Meeting),
    ("Contact (TypedDict, total=False)", Contact),
    ("Address (default)", Address),
]


# -- measuring --------------------------------------------------------------------


def size(schema: Any) -> int:
    """Characters of compact JSON."""
    return len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False))


def sdk_schema(kind: Any) -> dict[str, Any]:
    """The OpenAI SDK's strict schema of `kind`."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return to_strict_json_schema(kind)
    return to_strict_json_schema(TypeAdapter(kind))


def sent_through_chat_openai(kind: Any) -> dict[str, Any]:
    """The schema an agent with `AutoStrategy` sends through `ChatOpenAI`, as received."""

    def model(ask: Ask) -> Reply:
        return Reply(text="{}")

    with fake("openai", model) as server:
        agent = create_agent(client("openai", server), response_format=AutoStrategy(kind))
        try:
            agent.invoke({"messages": [("user", "hi")]})
        except StructxError:
            pass  # the scripted answer is not valid; only the request matters
        body = server.requests[0]
    schema: dict[str, Any] = body["response_format"]["json_schema"]["schema"]
    return schema


def dialect_size(kind: Any, dialect: Any) -> int | None:
    try:
        return size(build_plan(AutoStrategy(kind)).transformed(dialect).schema)
    except DialectError:
        return None


def open_objects(node: Any) -> int:
    """Object nodes whose `additionalProperties` is not false (strict mode refuses them)."""
    if isinstance(node, list):
        return sum(open_objects(item) for item in node)
    if not isinstance(node, dict):
        return 0
    here = node.get("type") == "object" and node.get("additionalProperties") is not False
    return int(here) + sum(open_objects(value) for value in node.values())


def measure(label: str, kind: Any) -> dict[str, Any]:
    sent = sent_through_chat_openai(kind)
    sdk = sdk_schema(kind)
    return {
        "type": label,
        "sdk": size(sdk),
        "ours": size(sent),
        "ratio": size(sent) / size(sdk),
        # OpenAI refuses a strict schema with an open object: such a type is
        # shown, and left out of the ratios.
        "sdk_valid": not open_objects(sdk),
        "ours_valid": not check_openai(sent),
        "anthropic": dialect_size(kind, "anthropic"),
        "gemini": dialect_size(kind, "gemini"),
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    head = f"{'type':40} {'SDK strict':>10} {'ours':>6} {'ratio':>6}"
    print(f"{head} {'anthropic':>9} {'gemini':>7}")
    for r in rows:
        mark = "" if r["sdk_valid"] else "  (SDK: open object, refused)"
        print(
            f"{r['type']:40} {r['sdk']:>10} {r['ours']:>6} {r['ratio']:>6.2f} "
            f"{r['anthropic'] or 'refused':>9} {r['gemini'] or 'refused':>7}{mark}"
        )


def main() -> int:
    rows = [measure(label, kind) for label, kind in TYPES]
    print_rows(rows)
    compared = [r for r in rows if r["sdk_valid"]]
    ratios = [r["ratio"] for r in compared]
    worst, median = max(ratios), statistics.median(ratios)
    invalid = sum(not r["ours_valid"] for r in rows)
    print(
        f"\n{len(rows)} types, {len(compared)} the SDK can send strictly; ratio to the SDK's "
        f"strict schema: median {median:.2f}x (goal <= {MEDIAN_GOAL}x), worst {worst:.2f}x "
        f"(goal <= {WORST_GOAL}x); our schemas breaking OpenAI's rules: {invalid}"
    )
    save_figures(
        "request_size",
        title="Strict schema sent through ChatOpenAI, characters",
        unit="characters of compact JSON",
        groups=[r["type"] for r in rows],
        series={
            "openai SDK to_strict_json_schema": [float(r["sdk"]) for r in rows],
            "ours through ChatOpenAI": [float(r["ours"]) for r in rows],
        },
        extra={
            "median ratio": median,
            "worst ratio": worst,
            "SDK schema has an open object": [r["type"] for r in rows if not r["sdk_valid"]],
            "anthropic": {r["type"]: r["anthropic"] for r in rows},
            "gemini": {r["type"]: r["gemini"] for r in rows},
        },
    )
    ok = worst <= WORST_GOAL and median <= MEDIAN_GOAL and not invalid
    print("goals met" if ok else "goals NOT met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
