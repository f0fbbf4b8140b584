"""Fake self-hosted serving engines: vLLM, SGLang, Ollama (native and /v1) and LM Studio.

Each speaks OpenAI's Chat Completions on `POST /v1/chat/completions` (Ollama
also its native `POST /api/chat`), names itself as the real one does on its
`GET` routes, and reads a schema only from the fields its documentation names.
Any other field is dropped without a word, as these servers do: the request
succeeds (HTTP 200) and the model writes what it likes. So the scripted model
sees `Ask.kind == "format"` with the schema only when the engine really
constrains the answer; `kind == "format"` with no schema means "some JSON", and
`"text"` means free text.

What each engine enforces, from its own documentation:

- vLLM ("Structured Outputs"): `response_format` `json_schema` (the schema under
  `json_schema.schema`) or `json_object`; the `structured_outputs` body field
  (`{"json": schema}`); the `guided_json` field was removed in 0.12 and is ignored.
  `GET /v1/models` lists `owned_by: "vllm"`.
- SGLang ("Structured Outputs"): `response_format` `json_schema` or
  `json_object`. `owned_by: "sglang"`.
- Ollama ("Structured outputs", "OpenAI compatibility"): `format` (a schema, or
  `"json"`) on `/api/chat`; `response_format` `json_schema` or `json_object` on
  `/v1`. Versions before 0.5 know no schema: `json_schema` is dropped there.
  `GET /api/version` answers `{"version": ...}`; `/v1/models` lists
  `owned_by: "library"`.
- LM Studio ("Structured Output"): `response_format` `json_schema`; another
  `response_format` type is a 400. `GET /api/v0/models` lists each model with
  its `arch` and `state`; `/v1/models` says `owned_by: "organization_owner"`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fakes import FakeOpenAI, _text
from .wire import Ask, Model, Rendered, Reply, chunks

MODEL = "qwen2.5-0.5b-instruct"


class FakeEngine(FakeOpenAI):
    """An OpenAI-compatible engine; subclasses say how it names itself and what it reads."""

    name = "engine"
    owned_by = "engine"

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.gets: list[str] = []

    # -- what the engine says about itself -----------------------------------------

    def get(self, path: str) -> Rendered:
        """A `GET` route's answer."""
        if path == "/v1/models":
            entry = {"id": MODEL, "object": "model", "created": 0, "owned_by": self.owned_by}
            return Rendered(200, {"object": "list", "data": [entry]})
        return Rendered(404, {"detail": "Not Found"})

    # -- what it enforces ----------------------------------------------------------

    def constraint(self, path: str, body: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """(constrained at all, the schema it enforces) for this request."""
        return _response_format(body, schema_types=("json_schema",))

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        # These servers check little of the request: what they do not read, they drop.
        return self._choice_rules(body.get("tool_choice"), _tool_names(body))

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        tools = {
            t["function"]["name"]: t["function"].get("parameters") or {}
            for t in body.get("tools") or []
        }
        choice = body.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        constrained, schema = self.constraint(path, body)
        if constrained:
            kind = "format"
        else:
            kind = "tool" if forced or (choice == "required" and tools) else "text"
        turns = [(m.get("role", ""), _text(m.get("content"))) for m in body.get("messages") or []]
        return Ask(kind, schema, tools, forced, turns, body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with fake._lock:
                    fake.gets.append(self.path)
                self._send(fake.get(self.path))

            def _encode(self, out: Rendered) -> tuple[bytes, str]:
                if out.status == 200 and out.events and self.path == "/api/chat":
                    # Ollama streams newline-delimited JSON, not server-sent events.
                    lines = (json.dumps(data) + "\n" for _, data in out.events)
                    return "".join(lines).encode(), "application/x-ndjson"
                return super()._encode(out)  # type: ignore[no-any-return]

        return Handler


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]


def _response_format(
    body: dict[str, Any], schema_types: tuple[str, ...]
) -> tuple[bool, dict[str, Any] | None]:
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return False, None
    if fmt.get("type") in schema_types:
        schema = (fmt.get("json_schema") or {}).get("schema")
        return isinstance(schema, dict), schema if isinstance(schema, dict) else None
    if fmt.get("type") == "json_object":
        return True, None  # some JSON object; a "schema" beside it is not read
    return False, None


class FakeVLLM(FakeEngine):
    """vLLM's OpenAI-compatible server."""

    name = "vllm"
    owned_by = "vllm"

    def constraint(self, path: str, body: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        structured = body.get("structured_outputs")
        if isinstance(structured, dict) and isinstance(structured.get("json"), dict):
            return True, structured["json"]
        # `guided_json` is no field of this version: dropped like any unknown one.
        return _response_format(body, schema_types=("json_schema",))


class FakeSGLang(FakeEngine):
    """SGLang's OpenAI-compatible server."""

    name = "sglang"
    owned_by = "sglang"


class FakeLMStudio(FakeEngine):
    """LM Studio's local server."""

    name = "lm-studio"
    owned_by = "organization_owner"

    def get(self, path: str) -> Rendered:
        if path == "/api/v0/models":
            entry = {
                "id": MODEL,
                "object": "model",
                "type": "llm",
                "publisher": "qwen",
                "arch": "qwen2",
                "compatibility_type": "gguf",
                "quantization": "Q4_K_M",
                "state": "loaded",
                "max_context_length": 32768,
            }
            return Rendered(200, {"object": "list", "data": [entry]})
        return super().get(path)

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") not in ("json_schema", "text"):
            return ["'response_format.type' must be 'json_schema' or 'text'"]
        return super().rules(path, body)

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return {"error": message}


class FakeOllama(FakeEngine):
    """Ollama: its native chat route and its OpenAI-compatible one.

    Args:
        model: The scripted model.
        version: The version it reports; before 0.5 it knows no schema.
    """

    name = "ollama"
    owned_by = "library"

    def __init__(self, model: Model, version: str = "0.12.3") -> None:
        super().__init__(model)
        self.version = version
        self._route = threading.local()  # which route the request in this thread came by

    @property
    def schemas(self) -> bool:
        """Whether this version has structured outputs (0.5 and later)."""
        major, minor = (int(part) for part in self.version.split(".")[:2])
        return (major, minor) >= (0, 5)

    def get(self, path: str) -> Rendered:
        if path == "/api/version":
            return Rendered(200, {"version": self.version})
        return super().get(path)

    def constraint(self, path: str, body: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        if path == "/api/chat":
            fmt = body.get("format")
            if fmt == "json":
                return True, None
            if isinstance(fmt, dict) and self.schemas:
                return True, fmt
            return False, None  # `response_format` and the like: not fields of this route
        types = ("json_schema",) if self.schemas else ()
        return _response_format(body, schema_types=types)

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        if path == "/api/chat":
            return [] if body.get("model") else ["model is required"]
        return super().rules(path, body)

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        # The native route streams unless told not to.
        return bool(body.get("stream", path == "/api/chat"))

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return {"error": message}

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        if getattr(self._route, "native", False):
            return _native(reply, ask, stream)
        return super().render(reply, ask, stream)

    def answer(self, path: str, body: dict[str, Any]) -> Rendered:
        self._route.native = path == "/api/chat"
        return super().answer(path, body)


def _native(reply: Reply, ask: Ask, stream: bool) -> Rendered:
    """An `/api/chat` answer: one object, or newline-delimited objects when streamed."""
    base = {"model": ask.body.get("model"), "created_at": "2026-12-07T00:00:00Z"}
    calls = [{"function": {"name": n, "arguments": a}} for n, a in reply.calls]
    done = {
        **base,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "length" if reply.stop == "length" else "stop",
        "total_duration": 1,
        "prompt_eval_count": 11,
        "eval_count": 7,
    }
    if not stream:
        message = {"role": "assistant", "content": reply.text}
        if calls:
            message["tool_calls"] = calls
        return Rendered(200, {**done, "message": message})
    events: list[tuple[str | None, Any]] = []
    for piece in chunks(reply.text):
        events.append((None, {**base, "message": {"role": "assistant", "content": piece}}))
    if calls:
        message = {"role": "assistant", "content": "", "tool_calls": calls}
        events.append((None, {**base, "message": message, "done": False}))
    events.append((None, done))
    return Rendered(200, events=events)


def answering(value: dict[str, Any], prose: str, loose: dict[str, Any]) -> Callable[[Ask], Reply]:
    """A model that writes `value` when the engine constrains it to a schema.

    Unconstrained it writes `prose`; held to "some JSON" without a schema, it
    writes `loose`, JSON of another shape; offered a forced tool, it calls it
    with `value`.
    """

    def model(ask: Ask) -> Reply:
        if ask.kind == "format":
            return Reply(text=json.dumps(value if ask.schema is not None else loose))
        if ask.kind == "tool":
            return Reply(calls=((ask.forced or next(iter(ask.tools)), value),))
        return Reply(text=prose)

    return model
