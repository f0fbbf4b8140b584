"""A fake Cloudflare Workers AI server: the native route and the OpenAI-compatible one.

Routes (Workers AI REST API reference and "OpenAI compatible API endpoints"):
`POST /client/v4/accounts/{account}/ai/run/{model}` with the model in the path,
answering `{"result": {...}, "success": true, "errors": [], "messages": []}`, and
`POST /client/v4/accounts/{account}/ai/v1/chat/completions` with the model in
the body, answering as OpenAI's Chat Completions does. Streams are server-sent
events ending with `data: [DONE]`: `{"response": "..."}` pieces on the native
route, `chat.completion.chunk` objects on the compatible one.

Rules, from the "JSON Mode" and "Function calling" pages: `response_format`
(`json_object`, or `json_schema` holding the JSON Schema) only on
the models that page lists, never together with `stream: true`; tools only on
models with function calling; errors in Cloudflare's envelope
`{"success": false, "errors": [{"code": ..., "message": ...}]}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from .fakes import FakeOpenAI, _text
from .wire import Ask, FakeProvider, Rendered, Reply, chunks

ACCOUNT = "acct"
# "JSON Mode" page, supported models (those this suite uses).
JSON_MODE_MODELS = frozenset(
    {
        "@cf/meta/llama-3.1-8b-instruct-fast",
        "@cf/meta/llama-3.1-70b-instruct",
        "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
        "@cf/meta/llama-3-8b-instruct",
        "@cf/meta/llama-3.1-8b-instruct",
        "@hf/nousresearch/hermes-2-pro-mistral-7b",
    }
)
# Models whose catalogue entry lists function calling.
TOOL_MODELS = frozenset(
    {
        "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
        "@hf/nousresearch/hermes-2-pro-mistral-7b",
        "@cf/mistralai/mistral-small-3.1-24b-instruct",
    }
)
# The only model here whose input schema documents `guided_json`.
GUIDED_JSON_MODELS = frozenset({"@cf/mistralai/mistral-small-3.1-24b-instruct"})
NATIVE = re.compile(rf"^/client/v4/accounts/{ACCOUNT}/ai/run/(?P<model>@[\w./-]+)$")
COMPATIBLE = f"/client/v4/accounts/{ACCOUNT}/ai/v1/chat/completions"


class FakeWorkersAI(FakeProvider):
    """Both routes of Workers AI text generation.

    A model that cannot meet a JSON-mode request is scripted with
    `Reply(reject=(400, "AiError: JSON Mode couldn't be met"))`. `ignored` lists
    parameters a model does not take and silently drops.
    """

    name = "workers_ai"

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.ignored: list[str] = []

    def answer(self, path: str, body: dict[str, Any]) -> Rendered:
        # A model without JSON mode or tools refuses them: that is the provider
        # stating a capability (what AutoStrategy probes), not a broken rule.
        route, model = self.route(path, body)
        refusal = None
        if body.get("tools") and model not in TOOL_MODELS:
            refusal = f"AiError: this model does not support 'tools' ({model})"
        if body.get("response_format") and model not in JSON_MODE_MODELS:
            refusal = f"AiError: JSON Mode is not supported by {model}"
        if refusal is None or route == "none" or self.rules(path, body):
            return super().answer(path, body)
        with self._lock:
            self.requests.append(body)
            self.rejected += 1
        return Rendered(400, self.error(400, refusal))

    @staticmethod
    def route(path: str, body: dict[str, Any]) -> tuple[str, str | None]:
        """("native" | "compatible" | "none", the model asked for)."""
        found = NATIVE.match(path)
        if found:
            return "native", found.group("model")
        if path == COMPATIBLE:
            return "compatible", body.get("model")
        return "none", None

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        route, model = self.route(path, body)
        if route == "none":
            return [f"No route for that URI: {path}"]
        if not model:
            return ["model is required"]
        out: list[str] = []
        fmt = body.get("response_format")
        if fmt is not None:
            out += self._format_rules(route, model, fmt, body)
        for tool in body.get("tools") or []:
            # Function calling page: OpenAI-style {type, function: {...}} tools, or the
            # flat {name, description, parameters} form on the native route.
            spec = tool.get("function", tool)
            if not isinstance(spec.get("name"), str) or not isinstance(
                spec.get("parameters"), dict
            ):
                out.append(f"tools: {tool!r} has no name or parameters")
        return out

    def _format_rules(self, route: str, model: str, fmt: Any, body: dict[str, Any]) -> list[str]:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind not in ("json_object", "json_schema"):
            return [f"response_format.type {kind!r} must be json_object or json_schema"]
        out = []
        if body.get("stream"):
            # JSON Mode page: "JSON Mode currently doesn't support streaming".
            out.append("JSON Mode doesn't support streaming")
        if kind == "json_schema" and not isinstance(fmt.get("json_schema"), dict):
            # JSON Mode page: `json_schema` is a JSON Schema declaration. The page
            # calls the mode compatible with OpenAI's, so OpenAI's {name, schema}
            # wrapper is taken as well.
            out.append("response_format.json_schema must be a JSON Schema")
        return out

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        # Workers AI's body carries its own numeric code; a given string code has no place in it.
        number = 5006 if status == 400 else status
        return {"result": None, "success": False, "errors": [{"code": number, "message": message}]}

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        route, model = self.route(path, body)
        if "guided_json" in body and model not in GUIDED_JSON_MODELS:
            self.ignored.append(f"guided_json on {model}")
        fmt = body.get("response_format") or {}
        tools = {
            t.get("function", t)["name"]: t.get("function", t)["parameters"]
            for t in body.get("tools") or []
        }
        choice = body.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]
            kind, schema = (
                "format",
                schema.get("schema", schema) if route == "compatible" else schema,
            )
        else:
            kind, schema = ("tool" if tools and (choice == "required" or forced) else "text"), None
        turns = [(m.get("role", ""), _text(m.get("content"))) for m in body.get("messages") or []]
        return Ask(kind, schema, tools, forced, turns, {**body, "route": route})

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        if ask.body["route"] == "compatible":
            return FakeOpenAI.render(self, reply, ask, stream)  # type: ignore[arg-type]
        usage = {"prompt_tokens": 11 + len(ask.turns), "completion_tokens": 7}
        usage["total_tokens"] = sum(usage.values())
        calls = [{"name": n, "arguments": a} for n, a in reply.calls]
        if not stream:
            result: dict[str, Any] = {"response": _response(reply.text, ask), "usage": usage}
            if calls:
                result["tool_calls"] = calls
            return Rendered(200, {"result": result, "success": True, "errors": [], "messages": []})
        events: list[tuple[str | None, Any]] = [
            (None, {"response": piece}) for piece in chunks(reply.text)
        ]
        if calls:
            events.append((None, {"response": "", "tool_calls": calls}))
        events += [(None, {"response": "", "usage": usage}), (None, "[DONE]")]
        return Rendered(200, events=events)


def _response(text: str, ask: Ask) -> Any:
    # JSON Mode page: under a JSON schema the native route's `response` is the
    # object itself, not a string.
    if ask.kind != "format":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _schema_of(sent: dict[str, Any]) -> Any:
    wrapped = {"name", "schema"} <= set(sent) and isinstance(sent["schema"], dict)
    return sent["schema"] if wrapped else sent


# -- driving it through the clients (shared by the tests and the benchmark) --------

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # JSON mode and tools
SMALL = "@cf/meta/llama-3.1-8b-instruct"  # JSON mode, no tools
PLAIN = "@cf/qwen/qwen1.5-0.5b-chat"  # neither JSON mode nor tools
HERMES = "@hf/nousresearch/hermes-2-pro-mistral-7b"  # JSON mode and tools, named "mistral"
ROUTES = ("cloudflare", "cloudflare_compatible", "openai")
VALUE = {"label": "box", "weight": None}


class Parcel(BaseModel):
    label: str
    weight: int | None = None


def client(server: FakeWorkersAI, via: str, model: str = LLAMA) -> Any:
    """`ChatCloudflareWorkersAI` on either route, or `ChatOpenAI` on the compatible one."""
    if via == "openai":
        from langchain_openai import ChatOpenAI

        base = f"{server.url}/client/v4/accounts/{ACCOUNT}/ai/v1"
        return ChatOpenAI(model=model, base_url=base, api_key="token", max_retries=0)
    from langchain_cloudflare import ChatCloudflareWorkersAI

    route = "openai_compatible" if via == "cloudflare_compatible" else "workers_ai"
    return ChatCloudflareWorkersAI(
        model=model,
        account_id=ACCOUNT,
        api_token="token",
        base_url=f"{server.url}/client/v4",
        endpoint_format=route,
    )


def answer(ask: Ask) -> Reply:
    """A model that gives `VALUE` by whatever route the request offers."""
    if ask.kind == "tool":
        return Reply(calls=((ask.forced or next(iter(ask.tools)), VALUE),))
    return Reply(text=json.dumps(VALUE))


def strategies(schema: Any) -> dict[str, Any]:
    """Each strategy the Workers AI cases run, by name."""
    from langchain_structx import AutoStrategy, PromptedStrategy, ProviderStrategy, ToolStrategy

    return {
        "tool": ToolStrategy(schema),
        "provider": ProviderStrategy(schema),
        "auto": AutoStrategy(schema),
        "prompted": PromptedStrategy(schema),
        "json_mode": PromptedStrategy(schema, json_mode=True),
    }


def drive(
    model: Any, strategy: Any, *, stream: bool, factory: Callable[..., Any] | None = None
) -> dict[str, Any]:
    """One agent run, invoked or streamed; the final state."""
    if factory is None:
        from langchain_structx import create_agent as factory
    agent = factory(model, tools=[], response_format=strategy)
    ask = {"messages": [("user", "Describe the parcel as JSON.")]}
    # A bound on graph steps: an agent that keeps asking ends here.
    config: Any = {"recursion_limit": 24}
    if not stream:
        return dict(agent.invoke(ask, config))
    last: dict[str, Any] = {}
    for mode, chunk in agent.stream(ask, config, stream_mode=["messages", "values"]):
        if mode == "values":
            last = chunk
    return last
