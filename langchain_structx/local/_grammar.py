r"""Make JSON schemas safe for llama.cpp's schema-to-grammar converter.

The converter copies regex escapes such as `\d` verbatim into GBNF, which llama.cpp
cannot parse; a bad grammar crashes the server and, in-process, leaves a null sampler.
So every `pattern` is rewritten into the subset GBNF understands (character classes
and `\xHH` escapes; see `_patterns`), or dropped when that is impossible. Dropping
only loosens the constraint: the caller still validates the output against the
original schema.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_structx.errors import UserError
from langchain_structx.local._patterns import anchored_pattern
from langchain_structx.local._weights import LocalModelError

# Escapes llama.cpp's GBNF parser accepts; anything else is a parse error.
_GBNF_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[tnr\\\"\[\]])")

_SCHEMA_VALUED = ("additionalProperties", "items", "not", "contains", "if", "then", "else")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


class GrammarError(LocalModelError):
    """A schema could not be turned into a grammar llama.cpp accepts."""


def sanitize_pattern(pattern: str) -> str | None:
    r"""Rewrite a JSON-schema regex so llama.cpp's grammar converter handles it.

    Shorthand classes become explicit classes, escaped characters become `\xHH`
    classes, lazy quantifiers and non-capturing groups are simplified, and the
    pattern is anchored (JSON Schema patterns match anywhere; the converter wants
    `^...$`).

    Args:
        pattern: A regex as written in a JSON schema.

    Returns:
        An equivalent, anchored pattern, or `None` when it cannot be expressed.

    Examples:
        >>> sanitize_pattern(r"^\d{3}-\d{4}$")
        '^([0-9]{3}-[0-9]{4})$'
        >>> sanitize_pattern(r"\bword\b") is None
        True
    """
    candidate = anchored_pattern(pattern)
    if candidate is None:
        return None
    return candidate if _converts({"type": "string", "pattern": candidate}) else None


def _converts(schema: Mapping[str, Any]) -> bool:
    try:
        lint_gbnf(_convert(schema))
    except (GrammarError, ValueError, AssertionError, KeyError, IndexError, TypeError):
        return False
    return True


def sanitize_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    r"""Return a copy of `schema` whose patterns are all safe for the converter.

    Args:
        schema: A JSON schema; it is not modified.

    Returns:
        A deep copy with each `pattern` rewritten or, when impossible, removed.

    Examples:
        >>> sanitize_schema({"type": "string", "pattern": "^\\d+$"})
        {'type': 'string', 'pattern': '^([0-9]+)$'}
    """
    clean = copy.deepcopy(dict(schema))
    _sanitize_node(clean)
    return clean


def _sanitize_node(node: Any) -> None:
    if not isinstance(node, dict):
        return
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        safe = sanitize_pattern(pattern)
        if safe is None:
            del node["pattern"]
        else:
            node["pattern"] = safe
    for key in _SCHEMA_VALUED:
        _sanitize_node(node.get(key))
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        for child in value if isinstance(value, list) else ():
            _sanitize_node(child)
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        for child in value.values() if isinstance(value, dict) else ():
            _sanitize_node(child)


def lint_gbnf(grammar: str) -> str:
    """Reject grammar text containing escapes that llama.cpp's parser refuses.

    Args:
        grammar: GBNF text.

    Returns:
        The same text, when every backslash starts a valid escape.

    Raises:
        GrammarError: Some escape would make llama.cpp fail to parse the grammar.
    """
    stripped = _GBNF_ESCAPE.sub("", grammar)
    if "\\" in stripped:
        bad = stripped[stripped.index("\\") :][:12]
        raise GrammarError(f"grammar contains an escape llama.cpp cannot parse near {bad!r}")
    return grammar


def _convert(schema: Mapping[str, Any]) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(json.dumps(schema)))


def schema_to_gbnf(schema: Mapping[str, Any]) -> str:
    """Sanitise `schema` and convert it to GBNF text llama.cpp can parse.

    Args:
        schema: A JSON schema.

    Returns:
        Grammar text whose language is (a superset of) the schema's JSON values.

    Raises:
        GrammarError: The converter rejects the schema even after sanitising.
    """
    try:
        grammar = _convert(sanitize_schema(schema))
    except (ValueError, AssertionError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise GrammarError(f"cannot build a grammar for this schema: {exc}") from exc
    if not set(schema) - {"type", "title", "description"}:
        # Plain JSON mode: let the model lay the object out over lines, as it does
        # unconstrained. Held to one line, it drifts from the shape in its prompt.
        grammar = grammar.replace(_ONE_LINE_SPACE, _LINE_SPACE)
    return lint_gbnf(grammar)


_ONE_LINE_SPACE = 'space ::= " "?'
_LINE_SPACE = 'space ::= | " " | "\\n" [ \\t]{0,20}'


# --- Which grammar a request needs -------------------------------------------------

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
    keeps the arguments as good as the model can make them.
    """
    variants = [
        {
            "type": "object",
            "properties": {
                "name": {"const": _tool_name(tool)},
                "arguments": tool["function"].get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for tool in tools
    ]
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def _response_schema(response_format: Any) -> dict[str, Any] | None:
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
    schema = _response_schema(response_format)
    if schema is not None:
        return OutputConstraint("json", schema)
    return OutputConstraint("auto_tool", None, available) if available else OutputConstraint("text")
