"""Let the model choose between two shapes: a product review or a complaint.

With `ToolStrategy`, each member of the union becomes its own tool; the model
picks one, and `structured_response_kind` names the one it picked (useful for
routing). The caller never sees any wrapper, only the chosen object.

Run it with `python examples/guide/review_or_complaint_union.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from langchain_structx import ToolStrategy, create_agent

TEXTS = (
    "Five stars: the kettle boils in a minute and looks great.",
    "My order arrived two weeks late and the box was crushed. Very disappointing.",
)


class ProductReview(BaseModel):
    """A customer's opinion of a product itself: how good it is and why.

    Not for problems with an order, a delivery, a bill or a service.
    """

    rating: int | None = Field(description="The rating from 1 to 5, if stated", ge=1, le=5)
    sentiment: Literal["positive", "negative"] = Field(description="Overall sentiment")
    key_points: list[str] = Field(description="Key points, lowercase, one to three words each")


class CustomerComplaint(BaseModel):
    """A customer's complaint that something went wrong.

    For example a late or damaged delivery, a faulty product, a wrong bill or poor service.
    """

    issue_type: Literal["product", "service", "shipping", "billing"] = Field(
        description="What the complaint is about"
    )
    severity: Literal["low", "medium", "high"] = Field(description="How serious it is")
    description: str = Field(description="The complaint in one short sentence")


def main(model: Any = None) -> list[ProductReview | CustomerComplaint]:
    """Classify and extract each of `TEXTS`; the embedded local model is the default."""
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel()
    agent = create_agent(
        model,
        response_format=ToolStrategy(ProductReview | CustomerComplaint),
        system_prompt=(
            "Record customer feedback. A text that says something went wrong (a late or"
            " damaged delivery, a fault, a wrong bill) is a complaint; any other is a review."
        ),
    )
    results: list[ProductReview | CustomerComplaint] = []
    for text in TEXTS:
        state = agent.invoke({"messages": [{"role": "user", "content": text}]})
        print(f"{state['structured_response_kind']}: {state['structured_response']!r}")
        results.append(state["structured_response"])
    return results


if __name__ == "__main__":
    main()
