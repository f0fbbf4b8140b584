"""llama-cpp-python's OpenAI-compatible server, with the embedded model's constrained decoder.

`python -m langchain_structx.local_server` takes the options of
`python -m llama_cpp.server` (`--model`, `--host`, `--port`, `--n_threads`, ...)
and serves the same API, but a chat completion with a `response_format` holding a
JSON schema (`{"type": "json_schema", "json_schema": {"schema": ...}}`, which the
stock server cannot take, or `{"type": "json_object", "schema": ...}`) is held to
it by llguidance, as `LocalChatModel` is, instead of llama.cpp's GBNF grammars. A
schema the decoder refuses is an HTTP 400 that names it, which `AutoStrategy`
reads as a refusal of that schema and answers by falling back. Needs the
`local-server` extra.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_structx.errors import UserError
from langchain_structx.local._grammar import GrammarError, check_shape, response_schema
from langchain_structx.local._guidance import SchemaMask, compiled, matcher_for
from langchain_structx.local._vocab import tokenizer_for

__all__ = ("OpenAIForm", "constrain", "install", "main", "openai_form")

_TOKENIZERS: dict[int, Any] = {}
"""llguidance's tokenizer for each loaded model, by the model's `id`."""


def constrain(kwargs: dict[str, Any], tokenizer: Any) -> None:
    """Replace a request's `response_format` with the decoder's logits processor.

    Args:
        kwargs: The arguments of `Llama.create_chat_completion`, changed in place.
        tokenizer: llguidance's tokenizer for the model that will answer.

    Raises:
        GrammarError: The decoder refuses the schema.
    """
    try:
        schema = response_schema(kwargs.get("response_format"))
    except UserError:
        return  # llama-cpp-python's own reply to it stands
    if schema is None:
        return
    check_shape(schema)
    mask = SchemaMask(matcher_for(tokenizer, compiled(schema)), tokenizer.vocab_size)
    processors = list(kwargs.get("logits_processor") or [])
    kwargs["logits_processor"] = [mask, *processors]
    kwargs["response_format"] = None


def install(app: Any) -> None:
    """Make the server module `app` (`llama_cpp.server.app`) constrain through llguidance."""
    original = app.prepare_request_resources
    if getattr(original, "structx", False):
        return

    def prepare(body: Any, proxy: Any, body_model: Any, kwargs: dict[str, Any]) -> Any:
        llama = original(body, proxy, body_model, kwargs)
        if "response_format" in kwargs:
            tokenizer = _TOKENIZERS.get(id(llama))
            if tokenizer is None:
                tokenizer = _TOKENIZERS[id(llama)] = tokenizer_for(llama)
            try:
                constrain(kwargs, tokenizer)
            except GrammarError as exc:
                from fastapi import HTTPException

                raise HTTPException(status_code=400, detail=str(exc)) from exc
        return llama

    prepare.structx = True  # type: ignore[attr-defined]
    app.prepare_request_resources = prepare


def openai_form(body: bytes) -> bytes:
    """A chat request's body with OpenAI's `json_schema` format in the server's form.

    llama-cpp-python's request model takes `{"type": "json_object", "schema": ...}`
    only, and answers OpenAI's `{"type": "json_schema", "json_schema": {"schema":
    ...}}` with an HTTP 500; the schema is the same, so it is moved across.

    Examples:
        >>> openai_form(b'{"response_format": {"type": "json_schema",'
        ...             b' "json_schema": {"name": "A", "schema": {"type": "object"}}}}')
        b'{"response_format": {"type": "json_object", "schema": {"type": "object"}}}'
    """
    try:
        request = json.loads(body)
        spec = request["response_format"]["json_schema"]
        if request["response_format"]["type"] != "json_schema" or "schema" not in spec:
            return body
    except (ValueError, KeyError, TypeError):
        return body
    request["response_format"] = {"type": "json_object", "schema": spec["schema"]}
    return json.dumps(request).encode()


class OpenAIForm:
    """ASGI middleware giving chat completion requests to the server in its own form."""

    def __init__(self, app: Any) -> None:
        """Wrap the ASGI application `app`."""
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Rewrite the body of a chat completion request (see `openai_form`)."""
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        parts, more = [], True
        while more:
            message = await receive()
            parts.append(message.get("body", b""))
            more = message.get("more_body", False)
        body, replayed = openai_form(b"".join(parts)), False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()  # the client's disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def main() -> None:
    """Run the server with the options of `python -m llama_cpp.server`."""
    import llama_cpp.server.__main__ as stock_module
    import llama_cpp.server.app as app

    stock: Any = stock_module

    install(app)
    create = stock.create_app

    def create_app(*args: Any, **kwargs: Any) -> Any:
        served = create(*args, **kwargs)
        served.add_middleware(OpenAIForm)
        return served

    stock.create_app = create_app
    serve: Any = stock.main
    serve()


if __name__ == "__main__":
    main()
