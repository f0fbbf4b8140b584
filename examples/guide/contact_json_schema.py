"""Extract a contact described by a JSON-schema dict, with `ProviderStrategy`.

Stock LangChain returns whatever the provider sent for a dict schema. Here the
answer is checked against the schema (Draft 2020-12, `format` included), so a
malformed email address is sent back to the model as an error instead of
reaching your code.

Run it with `python examples/guide/contact_json_schema.py`.
"""

from __future__ import annotations

from typing import Any

from langchain_structx import ProviderStrategy, create_agent

TEXT = "You can reach Priya Raman at priya.raman@example.net or on +44 20 7946 0321."

CONTACT_SCHEMA: dict[str, Any] = {
    "title": "ContactInfo",
    "description": "Contact details of one person.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The person's full name"},
        "email": {"type": "string", "format": "email", "description": "Email address"},
        "phone": {"type": "string", "description": "Phone number, as written"},
    },
    "required": ["name", "email", "phone"],
    "additionalProperties": False,
}


def main(model: Any = None) -> dict[str, Any]:
    """Extract a contact dict from `TEXT`; the embedded local model is the default."""
    if model is None:
        from langchain_structx.local import LocalChatModel

        model = LocalChatModel()
    agent = create_agent(model, response_format=ProviderStrategy(CONTACT_SCHEMA))
    state = agent.invoke(
        {"messages": [{"role": "user", "content": f"Extract the contact: {TEXT}"}]}
    )
    contact: dict[str, Any] = state["structured_response"]
    print(contact)
    return contact


if __name__ == "__main__":
    main()
