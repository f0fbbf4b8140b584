"""Fake OpenAI Chat Completions, Anthropic Messages and Gemini generateContent servers.

Every rule checked here comes from the provider's public documentation, named in
the comment beside it. Schema rules for strict modes reuse the independent
checkers of `tests/dialects_corpus/dialect_rules.py`, which were written from
the same documents.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from .gemini_schema import schema_rules
from .wire import Ask, FakeProvider, Rendered, Reply, chunks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dialects_corpus"))

from dialect_rules import check_anthropic, check_openai  # noqa: E402

# OpenAI API reference, Chat Completions "tools[].function.name" and
# "response_format.json_schema.name"; Anthropic "Tool use" guide, tool "name".
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Gemini API reference, FunctionDeclaration "name": starts with a letter or an
# underscore; letters, digits, underscores, dots, colons and dashes; at most 64.
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
# Gemini "Structured output" guide, JSON Schema support of responseJsonSchema.
GEMINI_KEYWORDS = {
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
    "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
    "properties", "additionalProperties", "required", "propertyOrdering",
}  # fmt: skip


def _usage_tokens(ask: Ask) -> tuple[int, int]:
    return 11 + len(ask.turns), 7


# -- OpenAI Chat Completions ------------------------------------------------------


def object_parameters(name: Any, schema: Any, field: str) -> list[str]:
    """A tool's parameters, where given, must be an object schema.

    OpenAI's function `parameters` (a 400: "schema must be a JSON Schema of
    'type: "object"'"), Anthropic's `input_schema` (`type: "object"` in the Messages
    API reference) and Gemini's function declarations (the schema "must describe
    an object") all say so.
    """
    kind = schema.get("type") if isinstance(schema, dict) else None
    if schema is None or (isinstance(kind, str) and kind.lower() == "object"):
        return []
    return [f"tool {name}: {field} must be a JSON Schema of type 'object', got {kind!r}"]


def openai_error(message: str, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error body for a refused request (Chat Completions and Responses alike)."""
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }


class FakeOpenAI(FakeProvider):
    """`POST /v1/chat/completions`."""

    name = "openai"

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        out: list[str] = []
        tools = [t.get("function", {}) for t in body.get("tools") or []]
        names = [t.get("name", "") for t in tools]
        out += [
            f"tool name {n!r} does not match {TOOL_NAME.pattern}"
            for n in names
            if not TOOL_NAME.match(n)
        ]
        for tool in tools:
            out += object_parameters(tool.get("name"), tool.get("parameters"), "parameters")
            if tool.get("strict"):
                # The API's own wording for a strict tool's schema it cannot take.
                out += [
                    f"Invalid schema for function '{tool.get('name')}': {v}"
                    for v in check_openai(tool.get("parameters"))
                ]
        out += self._format_rules(body)
        out += self._choice_rules(body.get("tool_choice"), names)
        out += self._history_rules(body.get("messages") or [])
        return out

    def _format_rules(self, body: dict[str, Any]) -> list[str]:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_object":
            # JSON mode guide: the word "JSON" must appear somewhere in the messages.
            if "json" not in json.dumps(body.get("messages")).lower():
                return ["response_format json_object without 'JSON' in the messages"]
        if fmt.get("type") != "json_schema":
            return []
        spec = fmt.get("json_schema") or {}
        out = []
        if not TOOL_NAME.match(str(spec.get("name", ""))):
            out.append(f"response_format name {spec.get('name')!r} is invalid")
        if spec.get("strict"):
            # Structured Outputs guide, "Supported schemas".
            out += [f"response_format: {v}" for v in check_openai(spec.get("schema"))]
        return out

    def _choice_rules(self, choice: Any, names: list[str]) -> list[str]:
        # API reference, "tool_choice": none | auto | required | a named function.
        if choice is None or choice in ("none", "auto", "required"):
            return (
                [] if choice in (None, "none", "auto") or names else ["tool_choice without tools"]
            )
        name = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        return [] if name in names else [f"tool_choice {choice!r} names no tool"]

    def _history_rules(self, messages: list[dict[str, Any]]) -> list[str]:
        # API reference, messages: a "tool" message answers a preceding assistant
        # "tool_calls" entry, and every call is answered before the next turn.
        pending: set[str] = set()
        for message in messages:
            role = message.get("role")
            if role == "tool":
                if message.get("tool_call_id") not in pending:
                    return [f"tool message {message.get('tool_call_id')!r} answers no call"]
                pending.discard(message["tool_call_id"])
                continue
            if pending:
                return [f"tool calls {sorted(pending)} are not answered"]
            pending = {c["id"] for c in message.get("tool_calls") or []}
        return []

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return openai_error(message, code)

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        tools = {
            t["function"]["name"]: t["function"].get("parameters") or {}
            for t in body.get("tools") or []
        }
        fmt = body.get("response_format") or {}
        choice = body.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        if fmt.get("type") == "json_schema":
            kind, schema = "format", fmt["json_schema"].get("schema")
        else:
            kind, schema = ("tool" if choice == "required" or forced else "text"), None
        turns = [(m.get("role", ""), _text(m.get("content"))) for m in body.get("messages") or []]
        return Ask(kind, schema, tools, forced, turns, body)

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(reply.calls)
        ]
        refused = reply.stop == "refusal"
        finish = "length" if reply.stop == "length" else "tool_calls" if calls else "stop"
        finish = reply.reason or finish
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if refused or (calls and not reply.text) else reply.text,
            "refusal": reply.text if refused else None,
        }
        if calls:
            message["tool_calls"] = calls
        prompt, completion = _usage_tokens(ask)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        base = {"id": "chatcmpl-1", "created": 0, "model": ask.body.get("model", "gpt-4o")}
        if not stream:
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            return Rendered(
                200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        events: list[tuple[str | None, Any]] = []

        def chunk(delta: dict[str, Any], reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
            events.append((None, {**base, "object": "chat.completion.chunk", "choices": [choice]}))

        chunk({"role": "assistant", "content": ""})
        key = "refusal" if refused else "content"
        for piece in chunks(reply.text):
            chunk({key: piece})
        for i, call in enumerate(calls):
            head = {"index": i, "id": call["id"], "type": "function"}
            chunk(
                {
                    "tool_calls": [
                        {**head, "function": {"name": call["function"]["name"], "arguments": ""}}
                    ]
                }
            )
            for piece in chunks(call["function"]["arguments"]):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        chunk({}, finish)
        if (ask.body.get("stream_options") or {}).get("include_usage"):
            events.append(
                (None, {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            )
        events.append((None, "[DONE]"))
        return Rendered(200, events=events)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            _text(c.get("text") or c.get("content") or "") for c in content if isinstance(c, dict)
        )
    return ""


# -- Anthropic Messages -----------------------------------------------------------


ALWAYS_THINKING = ("claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5")
"""Models that think on every request, as langchain-anthropic lists them."""
_THINKING = ("thinking", "redacted_thinking")


def _thinks(body: dict[str, Any]) -> bool:
    """Whether the model thinks for this request: asked to, or always does.

    Some models think on every request (the client's docstring: "On Opus 5.5,
    thinking can't be disabled"), whatever the body says.
    """
    thinking = body.get("thinking") or {}
    asked = thinking.get("type") in ("enabled", "adaptive")
    return asked or str(body.get("model", "")).startswith(ALWAYS_THINKING)


class FakeAnthropic(FakeProvider):
    """`POST /v1/messages`."""

    name = "anthropic"

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        out: list[str] = []
        # Messages API reference: max_tokens and a non-empty messages list are required.
        if not isinstance(body.get("max_tokens"), int):
            out.append("max_tokens: Field required")
        tools = body.get("tools") or []
        names = [t.get("name", "") for t in tools]
        out += [
            f"tools.name {n!r} does not match {TOOL_NAME.pattern}"
            for n in names
            if not TOOL_NAME.match(n)
        ]
        for tool in tools:
            out += object_parameters(tool.get("name"), tool.get("input_schema", {}), "input_schema")
            if tool.get("strict"):
                out += [
                    f"tool {tool.get('name')}: {v}"
                    for v in check_anthropic(tool.get("input_schema"))
                ]
        fmt = (body.get("output_config") or {}).get("format")
        if fmt is not None:
            # Structured outputs guide: format {"type": "json_schema", "schema": ...}
            # within the "JSON Schema limitations" list.
            if fmt.get("type") != "json_schema":
                out.append("output_config.format.type must be json_schema")
            out += [f"output_config.format.schema: {v}" for v in check_anthropic(fmt.get("schema"))]
        out += self._choice_rules(body.get("tool_choice"), names)
        out += self._thinking_rules(body)
        out += self._history_rules(body.get("messages") or [])
        return out

    def _thinking_rules(self, body: dict[str, Any]) -> list[str]:
        # Extended thinking guide: with thinking, tool_choice may only be auto or
        # none, and an assistant turn that used a tool goes back with its thinking
        # block first (this fake asks it of every such turn, not only the last).
        if not _thinks(body):
            return []
        choice = body.get("tool_choice") or {}
        if choice.get("type") in ("any", "tool"):
            return ["Thinking may not be enabled when tool_choice forces tool use."]
        for i, message in enumerate(body.get("messages") or []):
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            used_tool = any(b.get("type") == "tool_use" for b in blocks)
            first = blocks[0].get("type") if blocks else None
            if message.get("role") == "assistant" and used_tool and first not in _THINKING:
                return [
                    f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`,"
                    f" but found `{first}`"
                ]
        return []

    def _choice_rules(self, choice: Any, names: list[str]) -> list[str]:
        # Tool use guide, "Forcing tool use": auto | any | tool (with a name) | none.
        if choice is None:
            return []
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind in ("auto", "none") or (kind == "any" and names):
            return []
        if kind == "tool" and choice.get("name") in names:
            return []
        return [f"tool_choice {choice!r} is invalid"]

    def _history_rules(self, messages: list[dict[str, Any]]) -> list[str]:
        # Tool use guide, "Handling tool use": each tool_result answers a tool_use
        # of the previous assistant message, and comes first in the user message.
        if not messages:
            return ["messages: at least one message is required"]
        pending: set[str] = set()
        for message in messages:
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if message.get("role") == "user":
                if set(results) != pending:
                    return [
                        f"tool_result blocks {results} do not answer tool_use {sorted(pending)}"
                    ]
                leading = [b.get("type") for b in blocks[: len(results)]]
                if any(t != "tool_result" for t in leading):
                    return ["tool_result blocks must come first in the user message"]
                pending = set()
            else:
                if pending:
                    return [f"tool_use {sorted(pending)} without tool_result"]
                pending = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        return []

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        tools = {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or []}
        fmt = (body.get("output_config") or {}).get("format")
        choice = body.get("tool_choice") or {}
        forced = choice.get("name") if choice.get("type") == "tool" else None
        if fmt is not None:
            kind, schema = "format", fmt.get("schema")
        else:
            kind, schema = ("tool" if choice.get("type") in ("any", "tool") else "text"), None
        turns = [(m.get("role", ""), _text(m.get("content"))) for m in body.get("messages") or []]
        system = body.get("system")
        if system:
            turns.insert(0, ("system", _text(system)))
        return Ask(kind, schema, tools, forced, turns, body)

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        blocks: list[dict[str, Any]] = []
        if _thinks(ask.body):
            blocks.append({"type": "thinking", "thinking": "Let me see.", "signature": "c2ln"})
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for i, (name, args) in enumerate(reply.calls):
            blocks.append({"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args})
        stop = {"length": "max_tokens", "refusal": "refusal"}.get(reply.stop)
        stop = reply.reason or stop or ("tool_use" if reply.calls else "end_turn")
        prompt, completion = _usage_tokens(ask)
        message = {
            "id": "msg_1", "type": "message", "role": "assistant",
            "model": ask.body.get("model", "claude"), "content": blocks,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }  # fmt: skip
        if not stream:
            return Rendered(200, message)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1},
        }
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start})
        ]
        for i, block in enumerate(blocks):
            opened = _opened(block)
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": opened},
                )
            )
            if block["type"] == "text":
                deltas = [{"type": "text_delta", "text": p} for p in chunks(block["text"])]
            elif block["type"] == "thinking":
                # Streaming guide: thinking deltas, then one signature delta.
                deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:
                deltas = [
                    {"type": "input_json_delta", "partial_json": p}
                    for p in chunks(json.dumps(block["input"]))
                ]
            for delta in deltas:
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": delta},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        ending = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": completion},
        }
        events += [("message_delta", ending), ("message_stop", {"type": "message_stop"})]
        return Rendered(200, events=events)


def _opened(block: dict[str, Any]) -> dict[str, Any]:
    """A content block as `content_block_start` opens it, before its deltas."""
    if block["type"] == "text":
        return {**block, "text": ""}
    if block["type"] == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {**block, "input": {}}


# -- Gemini generateContent -------------------------------------------------------


class FakeGemini(FakeProvider):
    """`POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`."""

    name = "gemini"

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        out: list[str] = []
        decls = [d for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        names = [d.get("name", "") for d in decls]
        out += [f"function name {n!r} is invalid" for n in names if not GEMINI_NAME.match(n)]
        for i, d in enumerate(decls):
            field = "parametersJsonSchema" if "parametersJsonSchema" in d else "parameters"
            out += object_parameters(d.get("name"), d.get(field), field)
            if "parameters" in d:
                where = f"tools[0].function_declarations[{i}].parameters"
                out += schema_rules(d["parameters"], where)
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema")
        if schema is not None:
            # GenerationConfig reference: a response schema needs responseMimeType
            # application/json.
            if config.get("responseMimeType") != "application/json":
                out.append("responseJsonSchema requires responseMimeType application/json")
            out += _gemini_schema_rules(schema)
        out += self._choice_rules(body.get("toolConfig") or {}, names)
        out += self._history_rules(body.get("contents") or [])
        return out

    def _choice_rules(self, config: dict[str, Any], names: list[str]) -> list[str]:
        # Function calling guide, "Function calling modes": AUTO, ANY, NONE, VALIDATED;
        # allowedFunctionNames only with ANY (or VALIDATED), naming declared functions.
        calling = config.get("functionCallingConfig") or {}
        mode = calling.get("mode", "AUTO")
        allowed = calling.get("allowedFunctionNames") or []
        if mode not in ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"):
            return [f"functionCallingConfig.mode {mode!r} is invalid"]
        if allowed and (mode not in ("ANY", "VALIDATED") or not set(allowed) <= set(names)):
            return [f"allowedFunctionNames {allowed} not valid with mode {mode}"]
        return []

    def _history_rules(self, contents: list[dict[str, Any]]) -> list[str]:
        # Function calling guide: a turn of functionResponse parts answers the model
        # turn before it, one response per functionCall. API reference, FunctionCall
        # and FunctionResponse: "name" is required, with the declarations' charset.
        if not contents:
            return ["contents is not specified"]
        named = [
            p[kind].get("name", "")
            for content in contents
            for p in content.get("parts") or []
            for kind in ("functionCall", "functionResponse")
            if kind in p
        ]
        bad = [n for n in named if not GEMINI_NAME.match(n)]
        if bad:
            return [f"function name {n!r} in contents is invalid" for n in bad]
        calls: list[str] = []
        for content in contents:
            parts = content.get("parts") or []
            answered = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
            if sorted(answered) != sorted(calls) and (answered or content.get("role") != "model"):
                return [f"function responses {answered} do not answer calls {calls}"]
            calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        return []

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        return ":streamGenerateContent" in path

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        decls = [d for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        tools = {
            d["name"]: d.get("parametersJsonSchema") or d.get("parameters") or {} for d in decls
        }
        config = body.get("generationConfig") or {}
        calling = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        allowed = calling.get("allowedFunctionNames") or []
        forced = allowed[0] if len(allowed) == 1 else None
        if config.get("responseJsonSchema") is not None:
            kind, schema = "format", config["responseJsonSchema"]
        else:
            kind, schema = ("tool" if calling.get("mode") == "ANY" else "text"), None
        turns = [
            (
                c.get("role", ""),
                " ".join(
                    str(p.get("text") or p.get("functionResponse") or "")
                    for p in c.get("parts") or []
                ),
            )
            for c in body.get("contents") or []
        ]
        system = body.get("systemInstruction")
        if system:
            turns.insert(
                0, ("system", " ".join(p.get("text", "") for p in system.get("parts") or []))
            )
        return Ask(kind, schema, tools, forced, turns, body)

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        parts: list[dict[str, Any]] = []
        if reply.text and reply.stop != "refusal" and not reply.reason:
            parts.append({"text": reply.text})
        parts += [{"functionCall": {"name": n, "args": a}} for n, a in reply.calls]
        finish = reply.reason or {"length": "MAX_TOKENS", "refusal": "SAFETY"}.get(
            reply.stop, "STOP"
        )
        prompt, completion = _usage_tokens(ask)
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "totalTokenCount": prompt + completion,
        }
        model = "gemini-2.5-flash"

        def response(pieces: list[dict[str, Any]], reason: str | None) -> dict[str, Any]:
            candidate: dict[str, Any] = {"index": 0}
            if pieces:
                candidate["content"] = {"role": "model", "parts": pieces}
            if reason:
                candidate["finishReason"] = reason
            return {
                "candidates": [candidate],
                "usageMetadata": usage,
                "modelVersion": model,
                "responseId": "r1",
            }

        if not stream:
            return Rendered(200, response(parts, finish))
        events: list[tuple[str | None, Any]] = []
        text = parts[0].get("text", "") if parts and "text" in parts[0] else ""
        for piece in chunks(text, 12):
            events.append((None, response([{"text": piece}], None)))
        rest = parts[1:] if text else parts
        events.append((None, response(rest, finish)))
        return Rendered(200, events=events)


def _gemini_schema_rules(schema: Any) -> list[str]:
    out: list[str] = []
    stack: list[tuple[str, Any]] = [("$", schema)]
    stack += [(f"$.$defs.{k}", v) for k, v in (schema.get("$defs") or {}).items()]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        out += [f"{path}: keyword {k!r} not supported" for k in node if k not in GEMINI_KEYWORDS]
        stack += [(f"{path}.properties.{k}", v) for k, v in (node.get("properties") or {}).items()]
        stack += [
            (f"{path}.{k}", node[k])
            for k in ("items", "additionalProperties")
            if isinstance(node.get(k), dict)
        ]
        stack += [(f"{path}.anyOf", m) for m in node.get("anyOf") or []]
    from dialect_rules import _gemini_cycles

    return out + [v for v in _gemini_cycles(schema) if v.startswith("limit:")]
