"""Every form of `handle_errors`, on a scripted model that fails on cue.

A real model will not make the same mistake when asked to, so this example uses
`ScriptedChatModel`: its replies are written out below. In most scenarios the
first reply breaks the schema (a rating of 10 where at most 5 is allowed) and
the second one is valid; the example prints the feedback the model was sent in
between, which is what `handle_errors` decides.

Run it with `python examples/guide/error_handlers.py`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents.structured_output import (
    MultipleStructuredOutputsError,
    StructuredOutputValidationError,
)
from langchain_core.messages import AIMessage, ToolMessage
from pydantic import BaseModel, Field

from langchain_structx import ErrorContext, ToolStrategy, create_agent
from langchain_structx.errors import InvalidOutputError
from langchain_structx.testing import ScriptedChatModel, tool_call

QUESTION = "Parse this review: 'Amazing product, 10/10!'"


class ProductRating(BaseModel):
    """A product rating and the comment that came with it."""

    rating: int = Field(description="Rating from 1 to 5", ge=1, le=5)
    comment: str = Field(description="The review comment")


def _rating(rating: int) -> AIMessage:
    args = {"rating": rating, "comment": "Amazing product"}
    return AIMessage(content="", tool_calls=[tool_call("ProductRating", args)])


def _two_ratings() -> AIMessage:
    args = {"rating": 5, "comment": "Amazing product"}
    calls = [tool_call("ProductRating", args), tool_call("ProductRating", args)]
    return AIMessage(content="", tool_calls=calls)


def plain_feedback(error: Exception) -> str:
    """LangChain's form: the error in, the feedback text out."""
    if isinstance(error, InvalidOutputError):
        return f"That did not fit the schema ({error.source}). Call ProductRating again."
    return f"Error: {error}"


def feedback_with_context(error: Exception, context: ErrorContext) -> str:
    """Our form: the error and what is known about the attempt."""
    return (
        f"Attempt {context.attempt} of at most {context.max_retries + 1} failed ({context.kind}). "
        f"Call {' or '.join(context.variant_names)} with a rating from 1 to 5."
    )


async def async_feedback(error: Exception, context: ErrorContext) -> str:
    """The same, as a coroutine (it could look something up first)."""
    await asyncio.sleep(0)
    return f"Attempt {context.attempt} was rejected: {context.kind}. Please try once more."


# (label, handle_errors, replies); the replies only document the default script.
SCENARIOS: list[tuple[str, Any, list[AIMessage]]] = [
    ("True", True, [_rating(10), _rating(5)]),
    ("str", "Give a whole-number rating from 1 to 5 and the comment.", [_rating(10), _rating(5)]),
    ("exception type", StructuredOutputValidationError, [_rating(10), _rating(5)]),
    (
        "tuple of exception types",
        (MultipleStructuredOutputsError, StructuredOutputValidationError),
        [_two_ratings(), _rating(5)],
    ),
    ("Callable[[Exception], str]", plain_feedback, [_rating(10), _rating(5)]),
    ("Callable[[Exception, ErrorContext], str]", feedback_with_context, [_rating(10), _rating(5)]),
    ("async Callable[[Exception, ErrorContext], str]", async_feedback, [_rating(10), _rating(5)]),
    ("False", False, [_rating(10)]),
]


def default_model() -> ScriptedChatModel:
    """A scripted model holding every scenario's replies, in order."""
    return ScriptedChatModel(responses=[reply for _, _, replies in SCENARIOS for reply in replies])


def _run(model: Any, handle_errors: Any, use_async: bool) -> dict[str, Any]:
    strategy = ToolStrategy(ProductRating, handle_errors=handle_errors, max_retries=2)
    agent = create_agent(model, response_format=strategy)
    inputs = {"messages": [{"role": "user", "content": QUESTION}]}
    if use_async:
        return asyncio.run(agent.ainvoke(inputs))  # type: ignore[no-any-return]
    return agent.invoke(inputs)  # type: ignore[no-any-return]


def _feedback(state: dict[str, Any]) -> str:
    # The first tool message answers the failed call: it is the feedback.
    return next(str(m.content) for m in state["messages"] if isinstance(m, ToolMessage))


def main(model: Any = None) -> dict[str, Any]:
    """Run every scenario on `model` (default: the scripted model above).

    Returns:
        Scenario label to the structured response, or to the name of the
        exception that escaped (for `handle_errors=False`).
    """
    if model is None:
        model = default_model()
    print("The model is scripted: each reply below was written in advance.\n")
    outcomes: dict[str, Any] = {}
    for label, handle_errors, _ in SCENARIOS:
        try:
            state = _run(model, handle_errors, use_async=label.startswith("async"))
        except InvalidOutputError as error:
            print(f"handle_errors={label}: raised {type(error).__name__}: {error}\n")
            outcomes[label] = type(error).__name__
            continue
        print(f"handle_errors={label}\n  feedback: {_feedback(state)!r}")
        print(f"  result:   {state['structured_response']!r}\n")
        outcomes[label] = state["structured_response"]
    return outcomes


if __name__ == "__main__":
    main()
