"""Extraction tasks for the embedded local model: one definition for tests and benchmark.

Each task is a short, explicit text, the schema to extract with, and the exact
object expected. The texts are chosen so that a 0.5B model can get every field
exactly right; the comparison normalises nothing beyond surrounding whitespace.

Used by `tests/integration/test_local_quality.py` and `benchmarks/local_model.py`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

SYSTEM_PROMPT = (
    "You extract information from the user's text. Use only facts stated in the text; "
    "copy names, numbers and addresses exactly as written."
)
"""The CLI's default system prompt, repeated so that a change there is a choice here."""


class Contact(BaseModel):
    """A person's contact details."""

    name: str = Field(max_length=60)
    email: str = Field(max_length=80)
    phone: str = Field(max_length=30)


class Signature(BaseModel):
    """The sender's details from an email signature."""

    name: str = Field(max_length=60)
    job_title: str = Field(max_length=60)
    company: str = Field(max_length=60)
    email: str = Field(max_length=80)


class Review(BaseModel):
    """A product review."""

    product: str = Field(max_length=60)
    rating: int = Field(ge=1, le=5, description="stars, 1 to 5")
    sentiment: Literal["positive", "negative", "neutral"]
    key_points: list[str] = Field(max_length=5)


class ActionItem(TypedDict):
    """One action item from meeting notes."""

    owner: str
    task: str
    due: str
    priority: Literal["low", "medium", "high"]


class Complaint(BaseModel):
    """A customer complaint about an order."""

    order_id: str = Field(max_length=20)
    problem: str = Field(max_length=80)
    wants: Literal["refund", "replacement", "repair"]


@dataclass
class LineItem:
    """One line of an order."""

    product: str
    quantity: int


@dataclass
class Order:
    """A customer's order."""

    customer: str
    items: list[LineItem]


class OptionalPhone(BaseModel):
    """A person's contact details; the phone number may be missing."""

    name: str = Field(max_length=60)
    email: str = Field(max_length=80)
    phone: str | None = Field(default=None, max_length=30, description="null if not given")


class Ticket(BaseModel):
    """Un ticket d'assistance."""

    sujet: str = Field(max_length=60, description="the problem, in a few words")
    priorite: Literal["basse", "moyenne", "haute"]
    service: str = Field(max_length=40)


class Aufgabe(TypedDict):
    """Eine Aufgabe aus einem Protokoll."""

    verantwortlich: str
    aufgabe: str
    frist: str
    prioritaet: Literal["niedrig", "mittel", "hoch"]


class ProductRating(BaseModel):
    """商品评价 (a product rating)."""

    product: str = Field(max_length=40)
    stars: int = Field(ge=1, le=5)
    verdict: Literal["好评", "中评", "差评"] = Field(description="好评 good, 中评 mixed, 差评 bad")


class Invoice(BaseModel):
    """An invoice."""

    number: str = Field(max_length=20)
    vendor: str = Field(max_length=60)
    total: float
    currency: Literal["EUR", "USD", "GBP", "CNY"]
    date: dt.date


class Address(BaseModel):
    """A postal address."""

    street: str = Field(max_length=60)
    city: str = Field(max_length=40)
    postcode: str = Field(max_length=10)


class Shipment(BaseModel):
    """Who a parcel goes to, and where."""

    recipient: str = Field(max_length=60)
    address: Address


class Member(BaseModel):
    """A team member and their skills."""

    name: str = Field(max_length=40)
    skills: list[str] = Field(max_length=5)


class Team(BaseModel):
    """A team and its members."""

    team: str = Field(max_length=40)
    members: list[Member] = Field(max_length=6)


class Ingredient(BaseModel):
    """One ingredient and how much of it."""

    name: str = Field(max_length=40)
    amount: str = Field(max_length=20, description="number and unit, e.g. 200 g")


class Recipe(BaseModel):
    """A recipe."""

    dish: str = Field(max_length=40)
    ingredients: list[Ingredient] = Field(max_length=8)
    steps: list[str] = Field(max_length=6)


class Booking(BaseModel):
    """A request to book a hotel room."""

    guest: str = Field(max_length=60)
    nights: int = Field(ge=1, le=60)
    check_in: dt.date


class Cancellation(BaseModel):
    """A request to cancel an existing booking."""

    booking_id: str = Field(max_length=20)
    reason: Literal["illness", "travel", "price", "other"]


class Question(BaseModel):
    """A guest's question about the hotel's services."""

    topic: Literal["parking", "breakfast", "wifi", "pets"]


EVENT_SCHEMA: dict[str, Any] = {
    "title": "Event",
    "description": "A scheduled event.",
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 60},
        "city": {"type": "string", "maxLength": 40},
        "date": {"type": "string", "format": "date"},
    },
    "required": ["title", "city", "date"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Task:
    """One extraction task.

    Attributes:
        id: Short name, used as the test id.
        schema: What to pass as the strategy's schema (a class, a dict or a list for a union).
        text: The user's text.
        kind: The variant name the answer must match.
        expected: The exact answer, as plain JSON data.
    """

    id: str
    schema: Any
    text: str
    kind: str
    expected: dict[str, Any]


TASKS: tuple[Task, ...] = (
    Task(
        id="contact",
        schema=Contact,
        text="Reach Maria Lopez at maria.lopez@example.org or call 555-0142.",
        kind="Contact",
        expected={"name": "Maria Lopez", "email": "maria.lopez@example.org", "phone": "555-0142"},
    ),
    Task(
        id="signature",
        schema=Signature,
        text="Best regards,\nTom Baker\nHead of Sales\nNimbus Labs\ntom.baker@nimbus.io",
        kind="Signature",
        expected={
            "name": "Tom Baker",
            "job_title": "Head of Sales",
            "company": "Nimbus Labs",
            "email": "tom.baker@nimbus.io",
        },
    ),
    Task(
        id="review_positive",
        schema=Review,
        text="Zephyr headphones: 5 out of 5 stars. Pros: great sound, long battery life.",
        kind="Review",
        expected={
            "product": "Zephyr headphones",
            "rating": 5,
            "sentiment": "positive",
            "key_points": ["great sound", "long battery life"],
        },
    ),
    Task(
        id="review_negative",
        schema=Review,
        text="Aurora kettle: 2 out of 5 stars. I am disappointed. Cons: leaks, loud.",
        kind="Review",
        expected={
            "product": "Aurora kettle",
            "rating": 2,
            "sentiment": "negative",
            "key_points": ["leaks", "loud"],
        },
    ),
    Task(
        id="action_item",
        schema=ActionItem,
        text="Action item: send budget report. Owner: Priya. Due: Friday. Priority: high.",
        kind="ActionItem",
        expected={
            "owner": "Priya",
            "task": "send budget report",
            "due": "Friday",
            "priority": "high",
        },
    ),
    Task(
        id="union_complaint",
        schema=[Review, Complaint],
        text="Complaint: order 4521 arrived with a cracked screen. I want a refund.",
        kind="Complaint",
        expected={"order_id": "4521", "problem": "cracked screen", "wants": "refund"},
    ),
    Task(
        id="union_review",
        schema=[Review, Complaint],
        text="Nova lamp: 4 out of 5 stars. Pros: bright, cheap.",
        kind="Review",
        expected={
            "product": "Nova lamp",
            "rating": 4,
            "sentiment": "positive",
            "key_points": ["bright", "cheap"],
        },
    ),
    Task(
        id="nested_order",
        schema=Order,
        text="Order from Sam Lee:\n- keyboard, quantity 1\n- mouse, quantity 3",
        kind="Order",
        expected={
            "customer": "Sam Lee",
            "items": [{"product": "keyboard", "quantity": 1}, {"product": "mouse", "quantity": 3}],
        },
    ),
    Task(
        id="event_dict_schema",
        schema=EVENT_SCHEMA,
        text='The "Team offsite" takes place in Berlin on 2025-06-12.',
        kind="Event",
        expected={"title": "Team offsite", "city": "Berlin", "date": "2025-06-12"},
    ),
)


BROAD_TASKS: tuple[Task, ...] = (
    Task(
        id="contact_zh",
        schema=Contact,
        text="请联系王伟，邮箱 wang.wei@example.cn，电话 138-0013-8000。",
        kind="Contact",
        expected={"name": "王伟", "email": "wang.wei@example.cn", "phone": "138-0013-8000"},
    ),
    Task(
        id="contact_no_phone",
        schema=OptionalPhone,
        text="Contact: Lena Fischer, lena@fischer.de (she has no phone).",
        kind="OptionalPhone",
        expected={"name": "Lena Fischer", "email": "lena@fischer.de", "phone": None},
    ),
    Task(
        id="ticket_fr_enum",
        schema=Ticket,
        text="Ticket. Sujet : imprimante en panne. Priorité : haute. Service : informatique.",
        kind="Ticket",
        expected={"sujet": "imprimante en panne", "priorite": "haute", "service": "informatique"},
    ),
    Task(
        id="aufgabe_de_enum",
        schema=Aufgabe,
        text=(
            "Aufgabe: Angebot an Firma Keller schicken. Verantwortlich: Jonas. "
            "Frist: Montag. Priorität: mittel."
        ),
        kind="Aufgabe",
        expected={
            "verantwortlich": "Jonas",
            "aufgabe": "Angebot an Firma Keller schicken",
            "frist": "Montag",
            "prioritaet": "mittel",
        },
    ),
    Task(
        id="rating_zh_enum",
        schema=ProductRating,
        text="商品：竹制砧板。评分：2星。用了一周就开裂了，很失望。",
        kind="ProductRating",
        expected={"product": "竹制砧板", "stars": 2, "verdict": "差评"},
    ),
    Task(
        id="invoice_es_date",
        schema=Invoice,
        text="Factura F-2291 de Papelería Sol. Total: 84.50 EUR. Fecha: 15/03/2025.",
        kind="Invoice",
        expected={
            "number": "F-2291",
            "vendor": "Papelería Sol",
            "total": 84.5,
            "currency": "EUR",
            "date": "2025-03-15",
        },
    ),
    Task(
        id="event_zh_date",
        schema=EVENT_SCHEMA,
        text="会议：年度总结会。地点：上海。日期：2025年12月20日。",
        kind="Event",
        expected={"title": "年度总结会", "city": "上海", "date": "2025-12-20"},
    ),
    Task(
        id="event_de_date",
        schema=EVENT_SCHEMA,
        text="Der Workshop „Datenbanken“ findet am 3. März 2026 in München statt.",
        kind="Event",
        expected={"title": "Datenbanken", "city": "München", "date": "2026-03-03"},
    ),
    Task(
        id="shipment_fr_nested",
        schema=Shipment,
        text="Livraison pour Claire Martin, 12 rue des Lilas, 69003 Lyon.",
        kind="Shipment",
        expected={
            "recipient": "Claire Martin",
            "address": {"street": "12 rue des Lilas", "city": "Lyon", "postcode": "69003"},
        },
    ),
    Task(
        id="order_zh_list",
        schema=Order,
        text="订单：客户李娜。\n- 苹果，数量 3\n- 香蕉，数量 6",
        kind="Order",
        expected={
            "customer": "李娜",
            "items": [{"product": "苹果", "quantity": 3}, {"product": "香蕉", "quantity": 6}],
        },
    ),
    Task(
        id="team_nested_lists",
        schema=Team,
        text="Team Falcon: Ana knows Python and SQL; Ben knows Go.",
        kind="Team",
        expected={
            "team": "Falcon",
            "members": [
                {"name": "Ana", "skills": ["Python", "SQL"]},
                {"name": "Ben", "skills": ["Go"]},
            ],
        },
    ),
    Task(
        id="recipe_nested_lists",
        schema=Recipe,
        text=(
            "Pancakes. Ingredients: flour 200 g, milk 300 ml, eggs 2. "
            "Steps: mix everything; fry in a pan."
        ),
        kind="Recipe",
        expected={
            "dish": "Pancakes",
            "ingredients": [
                {"name": "flour", "amount": "200 g"},
                {"name": "milk", "amount": "300 ml"},
                {"name": "eggs", "amount": "2"},
            ],
            "steps": ["mix everything", "fry in a pan"],
        },
    ),
    Task(
        id="union3_booking",
        schema=[Booking, Cancellation, Question],
        text="Please book a room for Anna Berg, 3 nights from 2025-07-01.",
        kind="Booking",
        expected={"guest": "Anna Berg", "nights": 3, "check_in": "2025-07-01"},
    ),
    Task(
        id="union3_cancellation",
        schema=[Booking, Cancellation, Question],
        text="Please cancel booking B-7731: my flight was cancelled, so I cannot travel.",
        kind="Cancellation",
        expected={"booking_id": "B-7731", "reason": "travel"},
    ),
    Task(
        id="union3_question_de",
        schema=[Booking, Cancellation, Question],
        text="Gibt es bei Ihnen einen Parkplatz? Ich komme mit dem Auto.",
        kind="Question",
        expected={"topic": "parking"},
    ),
)
"""Broader tasks: Chinese, French, German and Spanish texts, enums with non-English
values, dates to normalise, nested lists and a union of three."""

ALL_TASKS: tuple[Task, ...] = TASKS + BROAD_TASKS
"""Every task: the original set first, then the broader one."""


def as_data(value: Any) -> Any:
    """A structured response as plain JSON data (models, dataclasses, dicts, lists)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def normalise(data: Any) -> Any:
    """Strip surrounding whitespace from every string; nothing else changes."""
    if isinstance(data, str):
        return data.strip()
    if isinstance(data, list):
        return [normalise(item) for item in data]
    if isinstance(data, dict):
        return {key: normalise(item) for key, item in data.items()}
    return data


def wrong_fields(task: Task, kind: str | None, value: Any) -> list[str]:
    """The top-level fields of `value` that differ from the task's expected answer.

    A wrong variant makes every field wrong.
    """
    if kind != task.kind:
        return sorted(task.expected)
    got = normalise(as_data(value))
    if not isinstance(got, dict):
        return sorted(task.expected)
    return sorted(k for k, v in task.expected.items() if got.get(k) != v)
