"""Extraction tasks for the embedded local model: one definition for tests and benchmark.

Each task is a short, explicit text, the schema to extract with, and the exact
object expected. The texts are chosen so that a 0.5B model can get every field
exactly right; the comparison normalises nothing beyond surrounding whitespace.

Used by `tests/integration/test_local_quality.py` and `benchmarks/local_model.py`.
"""

from __future__ import annotations

import dataclasses
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
