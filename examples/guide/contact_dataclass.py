"""Extract a contact as a dataclass.

Unlike stock LangChain, which hands back a dict for a dataclass schema, the
answer here is an instance of the dataclass itself, validated by Pydantic.

Run it with `python examples/guide/contact_dataclass.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_structx import create_agent

TEXT = "You can reach Priya Raman at priya.raman@example.net or on +44 20 7946 0321."


@dataclass
class ContactInfo:
    """Contact details of one person."""

    name: str
    email: str
    phone: str


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
    print(repr(contact))
    return contact


if __name__ == "__main__":
    main()
