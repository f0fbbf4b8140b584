"""The served embedded model: llama-cpp-python's server with the constrained decoder.

A stand-in for `llama_cpp.server.app` shows what `install` changes; the request
arguments it rewrites are those `Llama.create_chat_completion` takes.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from langchain_structx import local_server as serve
from langchain_structx.local import GrammarError
from langchain_structx.local._guidance import SchemaMask

pytest.importorskip("llguidance", reason="the decoder ships with the local extra")

from byte_tokenizer import byte_tokenizer  # noqa: E402 - after the skip

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA}},
        {"type": "json_object", "schema": SCHEMA},
        {"type": "json_object"},
    ],
)
def test_a_schema_becomes_the_decoders_mask(response_format: dict[str, Any]) -> None:
    earlier = object()
    kwargs = {"response_format": response_format, "logits_processor": [earlier]}
    serve.constrain(kwargs, byte_tokenizer())
    first, second = kwargs["logits_processor"]
    assert isinstance(first, SchemaMask) and second is earlier
    assert kwargs["response_format"] is None  # llama.cpp's own grammar is not built


@pytest.mark.parametrize("response_format", [None, {"type": "text"}, {"type": "xml"}, "json"])
def test_other_requests_are_left_as_they_are(response_format: Any) -> None:
    kwargs = {"response_format": response_format}
    serve.constrain(kwargs, byte_tokenizer())
    assert kwargs == {"response_format": response_format}


def _app(llama: Any) -> Any:
    def prepare(body: Any, proxy: Any, body_model: Any, kwargs: dict[str, Any]) -> Any:
        return llama

    return types.SimpleNamespace(prepare_request_resources=prepare)


def test_install_constrains_each_request_and_builds_the_tokenizer_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[Any] = []
    monkeypatch.setattr(
        serve, "tokenizer_for", lambda llama: built.append(llama) or byte_tokenizer()
    )
    llama = object()
    app = _app(llama)
    serve.install(app)
    serve.install(app)  # twice is once
    for _ in range(2):
        kwargs: dict[str, Any] = {"response_format": {"type": "json_object", "schema": SCHEMA}}
        assert app.prepare_request_resources(None, None, None, kwargs) is llama
        assert isinstance(kwargs["logits_processor"][0], SchemaMask)
    assert built == [llama]


def test_a_refused_schema_is_an_http_400_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi import HTTPException

    monkeypatch.setattr(serve, "tokenizer_for", lambda llama: byte_tokenizer())
    app = _app(object())
    serve.install(app)
    bad = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}
    kwargs = {"response_format": {"type": "json_schema", "json_schema": {"schema": bad}}}
    with pytest.raises(HTTPException) as caught:
        app.prepare_request_resources(None, None, None, kwargs)
    assert caught.value.status_code == 400
    assert "/$defs/Nope" in str(caught.value.detail)
    assert isinstance(caught.value.__cause__, GrammarError)


def test_openais_json_schema_form_reaches_the_server_in_its_own_form() -> None:
    import asyncio
    import json

    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])

    body = {
        "messages": [],
        "response_format": {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA}},
    }
    pieces = [json.dumps(body).encode()[:10], json.dumps(body).encode()[10:]]

    async def receive() -> Any:
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    scope = {"type": "http", "path": "/v1/chat/completions"}
    asyncio.run(serve.OpenAIForm(app)(scope, receive, None))
    assert json.loads(seen[0])["response_format"] == {"type": "json_object", "schema": SCHEMA}
    for untouched in (b"not json", b'{"response_format": {"type": "text"}}'):
        assert serve.openai_form(untouched) == untouched
