"""Extract a contact as a Pydantic model, letting the package pick the strategy.

The schema is given bare, so `create_agent` wraps it in `AutoStrategy`: a model
whose profile advertises native structured output (the embedded local model
does) gets `ProviderStrategy`, others get `ToolStrategy` or, failing that,
`PromptedStrategy`. The answer comes back as a validated `ContactInfo` instance.

Run it with `python examples/guide/contact_pydantic.py`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from langchain_structx import create_agent

TEXT = "You can reach Priya Raman at priya.raman@example.net or on +44 20 7946 0321."


class ContactInfo(BaseModel):
    """Contact details of one person."""

    name: str = Field(description="The person's full name")
    email: str = Field(description="The person's email address")
    phone: str = Field(description="The person's phone number, as written")


def main(model: Any = None) -> ContactInfo:
    """Extract `ContactInfo` from `TEXT`; the embedded local model is the default."""
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel()
    agent = create_agent(model, response_format=ContactInfo)
    state = agent.invoke(
        {"messages": [{"role": "user", "content": f"Extract the contact: {TEXT}"}]}
    )
    contact: ContactInfo = state["structured_response"]
    report = state["structured_output_report"]
    print(repr(contact))
    print(f"strategy={report['strategy']} attempts={report['attempts']}")
    return contact


if __name__ == "__main__":
    main()
