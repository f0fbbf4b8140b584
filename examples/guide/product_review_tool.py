"""Analyse a product review with `ToolStrategy`.

The schema becomes an artificial tool and the tool choice is forced, so the
model answers by calling it. Field constraints (`ge`/`le`, the `Literal`) are
enforced on the answer; a violation is sent back to the model as a tool message.

Run it with `python examples/guide/product_review_tool.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from langchain_structx import ToolStrategy, create_agent

REVIEW = "Four stars out of five. Setup took two minutes and it is quiet, but the cable is short."


class ProductReview(BaseModel):
    """Analysis of one product review."""

    rating: int | None = Field(description="The rating from 1 to 5, if stated", ge=1, le=5)
    sentiment: Literal["positive", "negative"] = Field(description="Overall sentiment")
    key_points: list[str] = Field(description="Key points, lowercase, one to three words each")


def main(model: Any = None) -> ProductReview:
    """Analyse `REVIEW`; the embedded local model is the default."""
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel()
    agent = create_agent(model, response_format=ToolStrategy(ProductReview, max_retries=2))
    state = agent.invoke(
        {"messages": [{"role": "user", "content": f"Analyse this review: {REVIEW}"}]}
    )
    review: ProductReview = state["structured_response"]
    print(repr(review))
    return review


if __name__ == "__main__":
    main()
