"""Choose the text of the tool message that closes a structured tool call.

With `ToolStrategy`, the model's structured answer is a tool call, and the
conversation needs a tool message to answer it. By default that message repeats
the structured response; `tool_message_content` replaces it with your own text.

Run it with `python examples/guide/custom_tool_message.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from langchain_structx import ToolStrategy, create_agent

NOTES = "Meeting notes: Tomas will send the revised budget to finance by Friday; it is urgent."


class MeetingAction(BaseModel):
    """An action item taken from meeting notes."""

    task: str = Field(description="What has to be done")
    assignee: str = Field(description="Who has to do it")
    priority: Literal["low", "medium", "high"] = Field(description="How urgent it is")


def main(model: Any = None) -> MeetingAction:
    """Extract the action item from `NOTES`; the embedded local model is the default."""
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel()
    strategy = ToolStrategy(MeetingAction, tool_message_content="Action item saved to the notes.")
    agent = create_agent(model, response_format=strategy)
    state = agent.invoke({"messages": [{"role": "user", "content": NOTES}]})
    for message in state["messages"]:
        message.pretty_print()
    action: MeetingAction = state["structured_response"]
    return action


if __name__ == "__main__":
    main()
