"""The `local-server` extra served with the embedded model's constrained decoder.

`python -m langchain_structx.local_server` runs llama-cpp-python's server on
127.0.0.1; the official `openai` client sends the JSON schema as OpenAI's API
takes it, which llama-cpp-python's own server answers with an HTTP 500.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import jsonschema
import pytest

if TYPE_CHECKING:
    from conftest import LlamaServer

pytestmark = pytest.mark.integration

openai = pytest.importorskip("openai")

CONTACT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": "string", "pattern": r"^\S+@\S+$"},
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name", "email", "age"],
    "additionalProperties": False,
}
TEXT = "Maria Lopez, 34, writes from maria.lopez@example.org."


def _client(server: LlamaServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def _ask(server: LlamaServer, schema: dict[str, object]) -> str:
    reply = _client(server).chat.completions.create(
        model=server.model_id,
        messages=[{"role": "user", "content": f"Extract the contact as JSON. {TEXT}"}],
        response_format={"type": "json_schema", "json_schema": {"name": "C", "schema": schema}},
        temperature=0,
        max_tokens=80,
    )
    return str(reply.choices[0].message.content)


def test_a_json_schema_is_answered_in_shape(decoder_server: LlamaServer) -> None:
    answer = json.loads(_ask(decoder_server, CONTACT))
    jsonschema.validate(answer, CONTACT)


def test_a_schema_the_decoder_refuses_is_a_400_naming_it(decoder_server: LlamaServer) -> None:
    bad = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        _ask(decoder_server, bad)
    # Where AutoStrategy reads a refusal: the status and the body's words.
    assert "/$defs/Nope" in caught.value.response.text
    assert "JSON schema" in caught.value.response.text
