"""Extract a contact as a TypedDict.

A TypedDict schema is validated like a Pydantic model and comes back as a plain
dict with exactly the declared keys.

Run it with `python examples/guide/contact_typeddict.py`.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from langchain_structx import create_agent

TEXT = "You can reach Priya Raman at priya.raman@example.net or on +44 20 7946 0321."


class ContactInfo(TypedDict):
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
    print(contact)
    return contact


if __name__ == "__main__":
    main()
