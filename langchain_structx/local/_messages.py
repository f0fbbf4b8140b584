"""Chat messages in and out of the local model, as plain text.

Small models' chat templates often drop `tool_calls` fields and `tool` roles, so
history is rendered as plain role/content pairs with tool calls and results written
inline in Qwen's `<tool_call>` / `<tool_response>` form. On the way back, the
model's text is read into an `AIMessage`: a grammar-forced call, calls the model
chose to write, or plain text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, InvalidToolCall, ToolCall, ToolMessage

from langchain_structx._request import prompt as _prompt
from langchain_structx.local._grammar import OutputConstraint

__all__ = (
    "ANSWER_FROM_RESULTS",
    "detect_calls",
    "forced_message",
    "message_for",
    "encodable",
    "to_llama_messages",
    "with_shape",
    "with_tools",
)

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
_DEFAULT_SYSTEM = "You are a helpful assistant."
ANSWER_FROM_RESULTS = "Use the tool results above to answer my question in plain text."


def _text(content: str | list[str | dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    pieces = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "".join(pieces)


def _render_call(name: str, args: dict[str, Any]) -> str:
    payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def to_llama_messages(
    messages: Sequence[BaseMessage], *, nudge: bool = True
) -> list[dict[str, str]]:
    """Render LangChain messages as plain role/content pairs any template accepts.

    Tool calls and results are written as text in the `<tool_call>` /
    `<tool_response>` form Qwen's own template produces, because many templates
    silently drop `tool_calls` fields and `tool` roles. With `nudge`, a trailing
    tool result asks the model to answer from it.
    """
    out: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            response = f"<tool_response>\n{_text(message.content)}\n</tool_response>"
            if out and out[-1].get("tool_results") == "1":
                out[-1]["content"] += "\n" + response  # Consecutive results share a turn.
            else:
                out.append({"role": "user", "content": response, "tool_results": "1"})
            continue
        role = {"system": "system", "human": "user", "ai": "assistant"}.get(message.type, "user")
        content = _text(message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [_render_call(c["name"], c["args"]) for c in message.tool_calls]
            content = "\n".join(filter(None, [content, *calls]))
        out.append({"role": role, "content": content})
    if nudge and messages and isinstance(messages[-1], ToolMessage):
        # Measured: without this the 0.5B model answers a tool result by repeating
        # the same call forever; with it, it answers in plain text.
        out[-1]["content"] += "\n" + ANSWER_FROM_RESULTS
    return [{"role": m["role"], "content": m["content"]} for m in out]


_CHOOSE = (
    "\n\nCall exactly one function: first decide which description fits the user's "
    "message best, then call that one."
)


def encodable(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    r"""`messages` with each lone surrogate (no UTF-8 text can hold one) read as U+FFFD.

    Text decoded from broken JSON (`"\ud800"`) may hold one; llama.cpp encodes the
    prompt as UTF-8 and would fail on it with an untyped error.

    Examples:
        >>> encodable([{"role": "user", "content": "a\ud800b"}])[0]["content"] == "a\ufffdb"
        True
    """
    for message in messages:
        message["content"] = _LONE_SURROGATE.sub("\ufffd", message["content"])
    return messages


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _describe_tools(tools: Sequence[dict[str, Any]]) -> str:
    listing = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return (
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{listing}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def with_tools(
    messages: list[dict[str, str]], tools: Sequence[dict[str, Any]], *, forced: bool = False
) -> None:
    """Describe `tools` in the system message, adding one when there is none.

    When a call is forced among several tools, the model is also told to choose by
    the descriptions: left alone, the 0.5B model tends to call the first tool listed.
    """
    block = _describe_tools(tools) + (_CHOOSE if forced and len(tools) > 1 else "")
    if messages and messages[0]["role"] == "system":
        messages[0] = {"role": "system", "content": messages[0]["content"] + block}
    else:
        messages.insert(0, {"role": "system", "content": _DEFAULT_SYSTEM + block})


def with_shape(
    messages: list[dict[str, str]], response_format: Any, schema: dict[str, Any]
) -> None:
    """Show the model the shape its grammar enforces, at the end of the system message.

    The grammar alone keeps the answer valid but hides field descriptions, date
    layouts and what each union variant is for; hosted providers show the schema to
    their models too. Placed in the system message, the shape is part of the prompt
    prefix that llama.cpp reuses from one request to the next.
    """
    if not set(schema) - {"type", "title", "description"}:
        return  # Plain JSON mode: there is no shape to show.
    spec = response_format.get("json_schema") if isinstance(response_format, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    name = str(name or schema.get("title") or "Answer")
    shape = _prompt.render_schema(name, schema, str(schema.get("description") or ""))
    block = f"\n\nAnswer with a JSON object of this shape:\n\n{shape}"
    if messages and messages[0]["role"] == "system":
        messages[0] = {"role": "system", "content": messages[0]["content"] + block}
    else:
        messages.insert(0, {"role": "system", "content": _DEFAULT_SYSTEM + block})


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _call_from(obj: Any, names: set[str]) -> ToolCall | None:
    name = obj.get("name") if isinstance(obj, dict) else None
    if not isinstance(name, str) or name not in names:  # a list is no name
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(name=name, args=args, id=_new_call_id(), type="tool_call")


def _loads(text: str) -> Any:
    try:
        return json.loads(_FENCE.sub("", text.strip()))
    except (ValueError, RecursionError):
        return None


def detect_calls(text: str, tools: Sequence[dict[str, Any]]) -> list[ToolCall]:
    """Find tool calls the model wrote as text (best effort, for `auto`)."""
    names = {str(tool["function"]["name"]) for tool in tools}
    blocks = _TOOL_CALL_BLOCK.findall(text) or [text]
    calls = [_call_from(_loads(block), names) for block in blocks]
    return [call for call in calls if call is not None]


def forced_message(text: str, finish: str) -> AIMessage:
    """Turn grammar-forced `{"name", "arguments"}` output into a tool call."""
    obj = _loads(text)
    if isinstance(obj, dict) and isinstance(obj.get("arguments"), dict):
        call = ToolCall(
            name=str(obj.get("name")), args=obj["arguments"], id=_new_call_id(), type="tool_call"
        )
        return AIMessage(content="", tool_calls=[call])
    error = "output truncated at max_tokens" if finish == "length" else "output is not JSON"
    bad = InvalidToolCall(
        name=None, args=text, id=_new_call_id(), error=error, type="invalid_tool_call"
    )
    return AIMessage(content="", invalid_tool_calls=[bad])


def message_for(constraint: OutputConstraint, text: str, finish: str) -> tuple[AIMessage, str]:
    """The reply to `constraint`'s request, and the finish reason to report with it."""
    if constraint.mode == "forced_tool":
        message = forced_message(text, finish)
        return message, finish if finish == "length" else "tool_calls"
    if constraint.mode == "auto_tool":
        calls = detect_calls(text, constraint.tools)
        if calls:
            return AIMessage(content="", tool_calls=calls), "tool_calls"
    return AIMessage(content=text), finish
