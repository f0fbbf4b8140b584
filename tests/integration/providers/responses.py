"""A fake OpenAI Responses API server: `POST /v1/responses`.

The request and response shapes follow the API reference ("Create a model
response", "The response object", "Streaming events") and the types the `openai`
SDK generates from it (`openai.types.responses`): input items, `text.format`,
function tools in Responses form (name at the top level), `tool_choice`, and the
output items `message` (with `output_text` or `refusal` parts) and
`function_call`. A cut-off or filtered answer is `status: "incomplete"` with
`incomplete_details.reason` `max_output_tokens` or `content_filter`.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from .fakes import (
    TOOL_NAME,
    _text,
    _usage_tokens,
    check_openai,
    object_parameters,
    openai_error,
)
from .wire import Ask, FakeProvider, Rendered, Reply, chunks

# The Responses reference, `tool_choice`: a mode string or a named function.
CHOICE_MODES = ("none", "auto", "required")
# Input item types this fake understands (reference, "Input item list").
INPUT_TYPES = ("message", "function_call", "function_call_output")


class FakeOpenAIResponses(FakeProvider):
    """`POST /v1/responses`, non-streaming and streaming."""

    name = "openai_responses"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        if not path.split("?")[0].endswith("/responses"):
            return [f"no route for {path}"]
        out: list[str] = []
        tools = body.get("tools") or []
        for tool in tools:
            # Reference, FunctionTool: type "function", name and parameters at the top
            # level (the Chat Completions "function" wrapper is not accepted).
            if tool.get("type") != "function" or "function" in tool:
                out.append(f"tools: {tool.get('type')!r} is not a Responses function tool")
                continue
            if not TOOL_NAME.match(str(tool.get("name", ""))):
                out.append(f"tools.name {tool.get('name')!r} does not match {TOOL_NAME.pattern}")
            out += object_parameters(tool.get("name"), tool.get("parameters"), "parameters")
            if tool.get("strict"):
                # Structured Outputs guide, "Supported schemas" (function calling too).
                out += [f"tool {tool['name']}: {v}" for v in check_openai(tool.get("parameters"))]
        out += self._format_rules(body)
        out += self._choice_rules(body.get("tool_choice"), [t.get("name") for t in tools])
        out += self._input_rules(body.get("input"))
        return out

    def _format_rules(self, body: dict[str, Any]) -> list[str]:
        fmt = (body.get("text") or {}).get("format") or {}
        kind = fmt.get("type")
        if kind in (None, "text"):
            return []
        if kind == "json_object":
            # Text generation guide, JSON mode: the input must contain the word "JSON".
            if "json" not in json.dumps([body.get("input"), body.get("instructions")]).lower():
                return ["'text.format' of type 'json_object' without 'JSON' in the input"]
            return []
        if kind != "json_schema":
            return [f"text.format.type {kind!r} is invalid"]
        # Reference, ResponseFormatTextJSONSchemaConfig: name and schema at the top
        # level of `format` (no "json_schema" wrapper), name as for tools.
        out = []
        if "json_schema" in fmt or not isinstance(fmt.get("schema"), dict):
            out.append("text.format: 'schema' is required at the top level of the format")
        if not TOOL_NAME.match(str(fmt.get("name", ""))):
            out.append(f"text.format.name {fmt.get('name')!r} is invalid")
        if fmt.get("strict"):
            out += [f"text.format.schema: {v}" for v in check_openai(fmt.get("schema"))]
        return out

    def _choice_rules(self, choice: Any, names: list[Any]) -> list[str]:
        if choice is None or choice in ("none", "auto"):
            return []
        if choice == "required":
            return [] if names else ["tool_choice 'required' without tools"]
        if isinstance(choice, dict) and choice.get("type") == "function":
            if "function" not in choice and choice.get("name") in names:
                return []
        return [f"tool_choice {choice!r} is invalid"]

    def _input_rules(self, items: Any) -> list[str]:
        # Function calling guide: every function_call in the input is answered by a
        # function_call_output with its call_id ("No tool output found for function
        # call ..."), and an output answers a call before it. Item ids are unique.
        if isinstance(items, str):
            return []
        if not isinstance(items, list) or not items:
            return ["input: a string or a non-empty list of items is required"]
        calls: set[str] = set()
        answered: set[str] = set()
        ids: set[str] = set()
        for item in items:
            kind = item.get("type", "message")
            if kind not in INPUT_TYPES:
                return [f"input item type {kind!r} is not supported"]
            if item.get("id") in ids:
                return [f"Duplicate item found with id {item['id']}"]
            if item.get("id"):
                ids.add(item["id"])
            if kind == "function_call":
                calls.add(item.get("call_id", ""))
            elif kind == "function_call_output":
                if item.get("call_id") not in calls:
                    return [f"No tool call found for function call output {item.get('call_id')}"]
                answered.add(item["call_id"])
        missing = sorted(calls - answered)
        return [f"No tool output found for function call {missing[0]}"] if missing else []

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        return openai_error(message, code)

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        tools = {t["name"]: t.get("parameters") or {} for t in body.get("tools") or []}
        fmt = (body.get("text") or {}).get("format") or {}
        choice = body.get("tool_choice")
        forced = choice.get("name") if isinstance(choice, dict) else None
        if fmt.get("type") == "json_schema":
            kind, schema = "format", fmt.get("schema")
        else:
            kind, schema = ("tool" if choice == "required" or forced else "text"), None
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        turns = [_turn(item) for item in items]
        if body.get("instructions"):
            turns.insert(0, ("system", str(body["instructions"])))
        return Ask(kind, schema, tools, forced, turns, body)

    # -- output ---------------------------------------------------------------------

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        n = next(self._ids)
        items = self._items(reply, n)
        reason = reply.reason or ("max_output_tokens" if reply.stop == "length" else None)
        status = "incomplete" if reason else "completed"
        if reason:
            for item in items:
                item["status"] = "incomplete"
        prompt, completion = _usage_tokens(ask)
        usage = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
        body = ask.body
        response = {
            "id": f"resp_{n}", "object": "response", "created_at": 0, "status": status,
            "model": body.get("model", "gpt-4o"), "output": items, "error": None,
            "incomplete_details": {"reason": reason} if reason else None,
            "instructions": body.get("instructions"), "metadata": {},
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "temperature": 1.0, "top_p": 1.0, "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "text": body.get("text") or {"format": {"type": "text"}},
            "usage": usage,
        }  # fmt: skip
        if not stream:
            return Rendered(200, response)
        return Rendered(200, events=_events(response))

    def _items(self, reply: Reply, n: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.text or not reply.calls:
            part: dict[str, Any] = (
                {"type": "refusal", "refusal": reply.text}
                if reply.stop == "refusal"
                else {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
            )
            items.append(
                {"type": "message", "id": f"msg_{n}", "role": "assistant",
                 "status": "completed", "content": [part]}
            )  # fmt: skip
        for i, (name, args) in enumerate(reply.calls):
            items.append(
                {"type": "function_call", "id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}",
                 "name": name, "arguments": json.dumps(args), "status": "completed"}
            )  # fmt: skip
        return items


def _turn(item: dict[str, Any]) -> tuple[str, str]:
    kind = item.get("type", "message")
    if kind == "function_call_output":
        return "tool", str(item.get("output", ""))
    if kind == "function_call":
        return "assistant", f"{item.get('name')}({item.get('arguments')})"
    return str(item.get("role", "")), _text(item.get("content"))


def _events(response: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """The documented event sequence of a streamed response."""
    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    opening = {**response, "status": "in_progress", "output": [], "incomplete_details": None}
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "function_call":
            emit("response.output_item.added", output_index=index,
                 item={**item, "arguments": "", "status": "in_progress"})  # fmt: skip
            for piece in chunks(item["arguments"]):
                emit("response.function_call_arguments.delta", **where, delta=piece)
            emit("response.function_call_arguments.done", **where, arguments=item["arguments"])
        else:
            emit("response.output_item.added", output_index=index,
                 item={**item, "content": [], "status": "in_progress"})  # fmt: skip
            for content_index, part in enumerate(item["content"]):
                _part_events(emit, {**where, "content_index": content_index}, part)
        emit("response.output_item.done", output_index=index, item=item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    emit(final, response=response)
    return events


def _part_events(emit: Any, where: dict[str, Any], part: dict[str, Any]) -> None:
    if part["type"] == "refusal":
        emit("response.content_part.added", **where, part={**part, "refusal": ""})
        for piece in chunks(part["refusal"]):
            emit("response.refusal.delta", **where, delta=piece)
        emit("response.refusal.done", **where, refusal=part["refusal"])
    else:
        emit("response.content_part.added", **where, part={**part, "text": ""})
        for piece in chunks(part["text"]):
            emit("response.output_text.delta", **where, delta=piece, logprobs=[])
        emit("response.output_text.done", **where, text=part["text"], logprobs=[])
    emit("response.content_part.done", **where, part=part)
