"""Which constraint a request needs, and the schema that expresses it.

A forced tool call becomes a schema of the call itself (`call_schema`), a
`response_format` the schema it names; the decoder (`_guidance`) then holds the
model's output to that schema while it writes. Every schema is checked first
(`check_shape`): plain JSON, bounded in depth and size, no object with more
properties than the decoder compiles quickly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_structx._clip import MESSAGE_CHARS, clip
from langchain_structx._validation.bounds import schema_shape_problem
from langchain_structx.errors import UserError
from langchain_structx.local._definitions import has_local_refs, lift, subschemas
from langchain_structx.local._errors import GrammarError

__all__ = ("GrammarError", "OutputConstraint", "call_schema", "check_shape", "constrain_output")

MAX_SCHEMA_DEPTH = 128
"""Most JSON objects and lists a value in a schema may sit inside; deeper is a
`GrammarError` (the decoder's JSON reader stops at 128 levels too)."""

MAX_SCHEMA_NODES = 100_000
"""Most JSON values (each visit of a shared one counts) in a schema; more is a
`GrammarError`. This matches the strategies' own bound on schemas."""

MAX_PROPERTIES = 1_000
"""Most properties one object of a schema may list. The decoder's compile time grows
with the square of their number (1,000 take 0.04 s, 16,000 six seconds); a schema
with a wider object is a `GrammarError`, and a strategy falls back to its prompt."""


def check_shape(schema: Any) -> None:
    """Refuse a schema that is not plain JSON, nests too deep, or is too large.

    This is the walk the strategies run on every schema they accept
    (`_bounds.schema_shape_problem`), with the local bounds, and with tuples taken
    as lists since `json.dumps` writes them so; then each object's properties are
    counted. It is iterative and stops at the first problem, so it is safe on any
    input.

    Args:
        schema: The schema (or a tool definition) as given by the caller.

    Raises:
        GrammarError: The schema contains itself, has a value inside more than
            `MAX_SCHEMA_DEPTH` objects and lists, holds more than `MAX_SCHEMA_NODES`
            values, holds something JSON cannot encode (an object key that is not
            a string, NaN or infinity, an integer of more than 1,000 digits, a set
            or any other Python object), or has an object with more than
            `MAX_PROPERTIES` properties. The message ends in the JSON path of the
            offending value.

    Examples:
        >>> check_shape({"type": "object", "required": ("a",)})
        >>> loop: dict = {"type": "array"}
        >>> loop["items"] = loop
        >>> check_shape(loop)
        Traceback (most recent call last):
        ...
        langchain_structx.local._errors.GrammarError: the schema contains itself at $.items
    """
    problem = schema_shape_problem(
        schema, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES, tuples=True
    )
    if problem is None and isinstance(schema, dict):
        problem = _too_wide(schema)
    if problem is not None:
        # The path may hold keys of any length: keep the message readable.
        raise GrammarError(clip(problem, MESSAGE_CHARS))


def _too_wide(schema: dict[str, Any]) -> str | None:
    for path, node in subschemas(schema):
        properties = node.get("properties")
        if isinstance(properties, dict) and len(properties) > MAX_PROPERTIES:
            return (
                f"an object lists {len(properties):,} properties, more than the "
                f"{MAX_PROPERTIES:,} the decoder takes, at {path}.properties"
            )
    return None


OutputMode = Literal["text", "json", "forced_tool", "auto_tool"]


@dataclass(frozen=True, slots=True)
class OutputConstraint:
    """How one request constrains the model's output.

    Attributes:
        mode: Free text, schema-constrained JSON, a forced tool call, or free text
            that may contain a tool call.
        schema: The schema the grammar enforces (`json` and `forced_tool` only).
        tools: OpenAI-style function definitions to describe in the prompt.
    """

    mode: OutputMode
    schema: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] = ()


def _tool_name(tool: Mapping[str, Any]) -> str:
    return str(tool["function"]["name"])


def _chosen_name(tool_choice: Any) -> str | None:
    """The tool a choice names, if it names exactly one."""
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "any", "required", "none"):
        return tool_choice
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool_choice.get("name")
        if isinstance(name, str):
            return name
        raise UserError(f"tool_choice {tool_choice!r} does not name a tool")
    return None


def call_schema(tools: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """Schema of `{"name": ..., "arguments": ...}` for any one of `tools`.

    This is the shape Qwen-style models are trained to emit for a call, so forcing it
    keeps the arguments as good as the model can make them. Parameters that refer
    to their own definitions (a Pydantic model with a nested one) bring them to the
    root `$defs`, named after the tool's place (see `_definitions.lift`).

    Raises:
        GrammarError: Parameters fail `check_shape`.

    Examples:
        >>> tool = {"function": {"name": "Box", "parameters": {
        ...     "type": "object", "properties": {"in": {"$ref": "#/$defs/Item"}},
        ...     "$defs": {"Item": {"type": "string"}}}}}
        >>> schema = call_schema((tool,))
        >>> schema["properties"]["arguments"]["properties"], schema["$defs"]
        ({'in': {'$ref': '#/$defs/arguments0-Item'}}, {'arguments0-Item': {'type': 'string'}})
    """
    definitions: dict[str, Any] = {}
    variants = []
    for index, tool in enumerate(tools):
        arguments = tool["function"].get("parameters") or {"type": "object"}
        check_shape(arguments)
        if has_local_refs(arguments):
            arguments, found = lift(arguments, f"arguments{index}-")
            definitions.update(found)
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": _tool_name(tool)}, "arguments": arguments},
                "required": ["name", "arguments"],
            }
        )
    schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {**schema, "$defs": definitions} if definitions else schema


def response_schema(response_format: Any) -> dict[str, Any] | None:
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise UserError(f"response_format must be a dict, got {type(response_format).__name__}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return dict(response_format.get("schema") or {"type": "object"})
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if not isinstance(schema, Mapping):
            raise UserError("response_format json_schema needs json_schema.schema")
        return dict(schema)
    raise UserError(f"unsupported response_format type {kind!r}")


def constrain_output(
    tools: list[dict[str, Any]] | None, tool_choice: Any, response_format: Any
) -> OutputConstraint:
    """Decide how to constrain one request.

    A forced tool call wins over `response_format`, which wins over optional tools.

    Args:
        tools: OpenAI-style tool definitions, as stored by `bind_tools`.
        tool_choice: `None`, `"auto"`, `"none"`, `"any"`, `"required"`, a tool name,
            or `{"type": "function", "function": {"name": ...}}`.
        response_format: `None` or an OpenAI-style `response_format` dict.

    Returns:
        The constraint for the request.

    Raises:
        UserError: The choice names an unknown tool or forces a call with no tools.

    Examples:
        >>> constrain_output(None, None, {"type": "json_object"}).schema
        {'type': 'object'}
    """
    available = tuple(tools or ())
    if tool_choice in ("none", False):
        available = ()
    forced = tool_choice in ("any", "required", True)
    name = _chosen_name(tool_choice)
    if name is not None:
        available = tuple(t for t in available if _tool_name(t) == name)
        if not available:
            raise UserError(f"tool_choice names {name!r}, which is not among the bound tools")
        forced = True
    if forced:
        if not available:
            raise UserError("tool_choice forces a tool call but no tools are bound")
        return OutputConstraint("forced_tool", call_schema(available), available)
    schema = response_schema(response_format)
    if schema is not None:
        return OutputConstraint("json", schema)
    return OutputConstraint("auto_tool", None, available) if available else OutputConstraint("text")


def checked_json(constraint: OutputConstraint) -> OutputConstraint:
    """`constraint` with its schemas checked by `check_shape`, then as plain JSON.

    They are checked before anything recursive (the prompt renderer, `json.dumps`)
    reads them, then copied through JSON so that what follows (the prompt, the
    grammar) reads a tuple as the list `json.dumps` makes of it.

    Raises:
        GrammarError: A schema fails `check_shape`.

    Examples:
        >>> checked_json(OutputConstraint("json", {"enum": ("a", "b")})).schema
        {'enum': ['a', 'b']}
    """
    for schema in (constraint.schema, *constraint.tools):
        if schema is not None:
            check_shape(schema)
    schema = None if constraint.schema is None else json.loads(json.dumps(constraint.schema))
    tools = tuple(json.loads(json.dumps(tool)) for tool in constraint.tools)
    return replace(constraint, schema=schema, tools=tools)
