"""A few of the guide examples, on the real embedded model.

The 0.5B model is reliable at copying names and addresses out of a sentence, so
those fields are asserted; judgements (sentiment, key points) are checked for
type only.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from langchain_structx.local import LocalChatModel

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "guide"


def load(name: str) -> ModuleType:
    module_name = f"example_local_{name}"
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def model(local_model: LocalChatModel) -> LocalChatModel:
    # Same loaded weights as the session fixture, with room for a whole record.
    return local_model.model_copy(update={"max_tokens": 256})


def test_contact_pydantic(model: LocalChatModel) -> None:
    example = load("contact_pydantic")

    contact = example.main(model)

    assert isinstance(contact, example.ContactInfo)
    assert contact.email == "priya.raman@example.net"
    assert "Priya" in contact.name


def test_contact_json_schema(model: LocalChatModel) -> None:
    example = load("contact_json_schema")

    contact = example.main(model)

    assert isinstance(contact, dict)
    assert contact["email"] == "priya.raman@example.net"
    assert set(contact) == {"name", "email", "phone"}


def test_product_review_tool(model: LocalChatModel) -> None:
    example = load("product_review_tool")

    review = example.main(model)

    assert isinstance(review, example.ProductReview)
    assert review.rating is None or 1 <= review.rating <= 5
    assert all(isinstance(point, str) for point in review.key_points)


def test_review_or_complaint_union_tells_them_apart(local_model: LocalChatModel) -> None:
    # Measured with one thread and a cold prompt; llama.cpp's sums, and so near-ties
    # in greedy decoding, depend on both.
    single = local_model.model_copy(update={"max_tokens": 512, "n_threads": 1})
    single.load().reset()
    example = load("review_or_complaint_union")

    review, complaint = example.main(single)

    assert isinstance(review, example.ProductReview)
    assert review.sentiment == "positive"
    # The late, crushed delivery is a complaint, not a negative five-star review.
    assert isinstance(complaint, example.CustomerComplaint)
