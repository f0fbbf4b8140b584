"""Every runnable example, on a scripted model, returns exactly what it should.

Each example's `main(model=...)` is called with a `ScriptedChatModel` whose
replies have the shape a real model's would (a tool call, or JSON text), and the
returned structured response is compared as a whole.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from langchain_structx.testing import ScriptedChatModel, tool_call

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROVIDER_PROFILE = {"structured_output": True, "tool_calling": True, "tool_choice": True}
CONTACT = {"name": "Priya Raman", "email": "priya.raman@example.net", "phone": "+44 20 7946 0321"}


def load(relative: str) -> ModuleType:
    path = EXAMPLES / relative
    name = "example_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up
    spec.loader.exec_module(module)
    return module


def calling(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, id=call_id)])


def test_every_example_is_covered() -> None:
    # examples/guide and examples/workers_ai_style are tested here; other folders
    # under examples/ have their own tests.
    found = {
        str(p.relative_to(EXAMPLES))
        for folder in ("guide", "workers_ai_style")
        for p in (EXAMPLES / folder).rglob("*.py")
    }
    assert found == {
        "guide/contact_pydantic.py",
        "guide/contact_dataclass.py",
        "guide/contact_typeddict.py",
        "guide/contact_json_schema.py",
        "guide/product_review_tool.py",
        "guide/review_or_complaint_union.py",
        "guide/custom_tool_message.py",
        "guide/error_handlers.py",
        "workers_ai_style/no_tools_json_mode.py",
    }


def test_contact_pydantic_through_the_tool_strategy(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("guide/contact_pydantic.py")
    model = ScriptedChatModel(responses=[calling("ContactInfo", CONTACT)])

    contact = example.main(model)

    assert contact == example.ContactInfo(**CONTACT)
    assert model.calls[0].tool_choice == "ContactInfo"
    assert "strategy=tool attempts=1" in capsys.readouterr().out


def test_contact_pydantic_through_the_provider_strategy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = load("guide/contact_pydantic.py")
    reply = (
        '{"name": "Priya Raman", "email": "priya.raman@example.net", "phone": "+44 20 7946 0321"}'
    )
    model = ScriptedChatModel(responses=[reply], profile=PROVIDER_PROFILE)

    contact = example.main(model)

    assert contact == example.ContactInfo(**CONTACT)
    assert model.calls[0].response_format["type"] == "json_schema"
    assert "strategy=provider attempts=1" in capsys.readouterr().out


def test_contact_dataclass_returns_the_dataclass() -> None:
    example = load("guide/contact_dataclass.py")
    model = ScriptedChatModel(responses=[calling("ContactInfo", CONTACT)])

    contact = example.main(model)

    assert type(contact) is example.ContactInfo
    assert contact == example.ContactInfo(**CONTACT)


def test_contact_typeddict_returns_a_dict() -> None:
    example = load("guide/contact_typeddict.py")
    model = ScriptedChatModel(responses=[calling("ContactInfo", CONTACT)])

    assert example.main(model) == CONTACT


def test_contact_json_schema_validates_the_dict() -> None:
    example = load("guide/contact_json_schema.py")
    bad = '{"name": "Priya Raman", "email": "not an address", "phone": "+44 20 7946 0321"}'
    good = (
        '{"name": "Priya Raman", "email": "priya.raman@example.net", "phone": "+44 20 7946 0321"}'
    )
    model = ScriptedChatModel(responses=[bad, good], profile=PROVIDER_PROFILE)

    assert example.main(model) == CONTACT
    feedback = model.calls[1].messages[-1]
    assert "$.email" in feedback.text and feedback.text.endswith("Please fix your mistakes.")


def test_product_review_tool() -> None:
    example = load("guide/product_review_tool.py")
    args = {"rating": 4, "sentiment": "positive", "key_points": ["quick setup", "short cable"]}
    model = ScriptedChatModel(responses=[calling("ProductReview", args)])

    review = example.main(model)

    assert review == example.ProductReview(
        rating=4, sentiment="positive", key_points=["quick setup", "short cable"]
    )
    assert [t["function"]["name"] for t in model.calls[0].tools] == ["ProductReview"]


def test_review_or_complaint_union(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("guide/review_or_complaint_union.py")
    review = {"rating": 5, "sentiment": "positive", "key_points": ["fast boiling", "looks"]}
    complaint = {
        "issue_type": "shipping",
        "severity": "medium",
        "description": "Order two weeks late with a crushed box.",
    }
    model = ScriptedChatModel(
        responses=[calling("ProductReview", review), calling("CustomerComplaint", complaint)]
    )

    results = example.main(model)

    assert results == [example.ProductReview(**review), example.CustomerComplaint(**complaint)]
    tools = [t["function"]["name"] for t in model.calls[0].tools]
    assert tools == ["ProductReview", "CustomerComplaint"]
    out = capsys.readouterr().out
    assert "ProductReview: ProductReview(" in out
    assert "CustomerComplaint: CustomerComplaint(" in out


def test_custom_tool_message(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("guide/custom_tool_message.py")
    args = {"task": "send the revised budget to finance", "assignee": "Tomas", "priority": "high"}
    model = ScriptedChatModel(responses=[calling("MeetingAction", args)])

    action = example.main(model)

    assert action == example.MeetingAction(**args)
    out = capsys.readouterr().out
    assert "Action item saved to the notes." in out
    assert "Returning structured response" not in out


def rating(value: int, call_id: str) -> AIMessage:
    return calling("ProductRating", {"rating": value, "comment": "Amazing product"}, call_id)


def test_error_handlers_every_form(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("guide/error_handlers.py")
    twice = AIMessage(
        content="",
        tool_calls=[
            tool_call("ProductRating", {"rating": 5, "comment": "Amazing product"}, id="t1"),
            tool_call("ProductRating", {"rating": 5, "comment": "Amazing product"}, id="t2"),
        ],
    )
    script: list[AIMessage] = []
    for n in range(7):
        script += [twice if n == 3 else rating(10, f"bad{n}"), rating(5, f"good{n}")]
    script.append(rating(10, "bad-last"))
    model = ScriptedChatModel(responses=script)

    outcomes = example.main(model)

    good = example.ProductRating(rating=5, comment="Amazing product")
    assert outcomes == {
        "True": good,
        "str": good,
        "exception type": good,
        "tuple of exception types": good,
        "Callable[[Exception], str]": good,
        "Callable[[Exception, ErrorContext], str]": good,
        "async Callable[[Exception, ErrorContext], str]": good,
        "False": "InvalidOutputError",
    }
    assert model.remaining == 0
    feedback = [
        m.content for call in model.calls for m in call.messages[-1:] if isinstance(m, ToolMessage)
    ]
    assert feedback[0].startswith("Error: Failed to parse structured output for tool")
    assert feedback[0].endswith("\n Please fix your mistakes.")
    assert feedback[1] == "Give a whole-number rating from 1 to 5 and the comment."
    assert feedback[3].startswith("Error: Model incorrectly returned multiple structured")
    assert feedback[5] == (
        "Attempt 1 of at most 3 failed (validation). Call ProductRating with a rating from 1 to 5."
    )
    assert feedback[6] == "Attempt 1 was rejected: validation. Please try once more."
    assert "scripted" in capsys.readouterr().out


def test_no_tools_json_mode_repairs_the_fenced_reply(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("workers_ai_style/no_tools_json_mode.py")
    reply = 'Sure:\n```json\n{"sentiment": "negative", "score": "2",}\n```'
    model = ScriptedChatModel(
        responses=[reply], profile={"tool_calling": False, "structured_output": False}
    )

    assert example.main(model) == {"sentiment": "negative", "score": 2}
    call = model.calls[0]
    assert call.response_format == {"type": "json_object"}
    assert call.tools == []
    out = capsys.readouterr().out
    for kind in ("fence:", "prose:", "trailing_comma:", "coerce_int:"):
        assert kind in out


@pytest.mark.parametrize(
    "script", ["guide/error_handlers.py", "workers_ai_style/no_tools_json_mode.py"]
)
def test_scripted_examples_run_as_scripts(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "scripted" in done.stdout
