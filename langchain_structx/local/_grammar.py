r"""Make JSON schemas safe for llama.cpp's schema-to-grammar converter.

The converter copies regex escapes such as `\d` verbatim into GBNF, which llama.cpp
cannot parse; a bad grammar crashes the server and, in-process, leaves a null sampler.
So every `pattern` is rewritten into the subset GBNF understands (character classes
and `\xHH` escapes; see `_patterns`), or dropped when that is impossible. Dropping
only loosens the constraint: the caller still validates the output against the
original schema.

The schema is also held within bounds (`_limits`) before it is converted: llama.cpp
crashes on deeply nested grammars and spends unbounded time on grammars that keep
many alternatives open, so long counts, wide enums and unions, and costly patterns
are loosened (`_schema_bounds`, `_pattern_bounds`), and schemas that cannot be
loosened enough are refused with a `GrammarError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_structx.errors import UserError
from langchain_structx.limits import DEFAULT_LIMITS
from langchain_structx.local._dead_ends import drop_dead_ends
from langchain_structx.local._definitions import has_local_refs, lift, lifted
from langchain_structx.local._grammar_size import PatternLoads
from langchain_structx.local._limits import MAX_PATTERNS_WORK, MAX_RULE_GROUPS
from langchain_structx.local._pattern_bounds import PatternBudget, affordable, pattern_load
from langchain_structx.local._patterns import anchored_pattern
from langchain_structx.local._schema_bounds import bound_schema, schema_nodes
from langchain_structx.local._schema_shape import check_grammar, check_shape, grammar_stats
from langchain_structx.local._weights import LocalModelError
from langchain_structx.local._widen import widen

# Escapes llama.cpp's GBNF parser accepts; anything else is a parse error.
_GBNF_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[tnr\\\"\[\]])")

_CONVERTER_ERRORS = (
    ValueError,
    AssertionError,
    AttributeError,
    KeyError,
    IndexError,
    TypeError,
    RecursionError,
)


class GrammarError(LocalModelError):
    """A schema could not be turned into a grammar llama.cpp accepts."""


def sanitize_pattern(
    pattern: str, budget: PatternBudget | None = None, loads: PatternLoads | None = None
) -> str | None:
    r"""Rewrite a JSON-schema regex so llama.cpp's grammar converter handles it.

    Shorthand classes become explicit classes, escaped characters become `\xHH`
    classes, lazy quantifiers and non-capturing groups are simplified, counts past
    `MAX_REPEAT` become `*` or `+`, and the pattern is anchored (JSON Schema
    patterns match anywhere; the converter wants `^...$`). A pattern that would
    keep more than `MAX_ALTERNATIVES` alternatives open per character, or make a
    rule llama.cpp refuses, is left out.

    Args:
        pattern: A regex as written in a JSON schema.
        budget: Analysis steps shared by the patterns of one schema.
        loads: Where to record what the rewritten pattern costs.

    Returns:
        An equivalent or looser anchored pattern, or `None` when it cannot be used.

    Examples:
        >>> sanitize_pattern(r"^\d{3}-\d{4}$")
        '^([0-9]{3}-[0-9]{4})$'
        >>> sanitize_pattern(r"\bword\b") is None
        True
        >>> sanitize_pattern("^a{5000}$"), sanitize_pattern("^(a?){300}$")
        ('^(a+)$', None)
    """
    candidate = anchored_pattern(pattern) if affordable(pattern, budget) else None
    if candidate is None:
        return None
    load = pattern_load(candidate, budget)
    grammar = _pattern_grammar(candidate) if load is not None else None
    if load is None or grammar is None or grammar_stats(grammar)[0] > MAX_RULE_GROUPS:
        return None
    if loads is not None:
        loads[candidate] = (load, len(grammar))
    return candidate


def _pattern_grammar(pattern: str) -> str | None:
    try:
        return lint_gbnf(_convert({"type": "string", "pattern": pattern}))
    except (GrammarError, *_CONVERTER_ERRORS):
        return None


def sanitize_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    r"""Return a copy of `schema` that converts to a grammar of bounded cost.

    Patterns are rewritten or, when impossible or too costly, removed; counts,
    enums, unions and optional properties past the bounds in `_limits` are loosened;
    `not`, which the converter cannot express, is left out; so are optional
    properties and union branches no value satisfies (`false`, `{"enum": []}`; see
    `_dead_ends`), and `"items": false` closes an array at its `prefixItems`.

    Args:
        schema: A JSON schema; it is not modified.

    Returns:
        A loosened copy, as plain JSON (tuples become lists, as for the converter).

    Raises:
        GrammarError: The schema is not plain JSON, nests deeper than
            `MAX_SCHEMA_DEPTH`, is larger than `MAX_SCHEMA_NODES`, admits no value
            (a required property that allows none, say), or its grammar would
            exceed `MAX_GRAMMAR_CHARS` even loosened.

    Examples:
        >>> sanitize_schema({"type": "string", "pattern": "^\\d+$"})
        {'type': 'string', 'pattern': '^([0-9]+)$'}
        >>> sanitize_schema({"type": "string", "maxLength": 20_000})
        {'type': 'string'}
    """
    check_shape(schema)
    # Exactly what the converter will read: a tuple of subschemas is a list there,
    # so it must be one here, or its patterns and counts would escape the bounds.
    plain = json.loads(json.dumps(schema))
    drop_dead_ends(plain)  # `false` and `{"enum": []}`: the converter crashes or writes ""
    clean: dict[str, Any] = lifted(plain)
    budget, loads = PatternBudget(MAX_PATTERNS_WORK), PatternLoads()
    for node in schema_nodes(clean):
        # The converter cannot write "anything but X" and refuses a bare `not`;
        # without it the grammar is wider, and validation still checks it.
        node.pop("not", None)
        widen(node)
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            safe = sanitize_pattern(pattern, budget, loads)
            if safe is None:
                del node["pattern"]
            else:
                node["pattern"] = safe
    try:
        bound_schema(clean, loads)
    except _CONVERTER_ERRORS as exc:  # A malformed schema the converter would refuse too.
        raise GrammarError(f"cannot build a grammar for this schema: {exc}") from exc
    return clean


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
        GrammarError: The schema is refused by `sanitize_schema`, or the converter
            rejects it even after sanitising, or the grammar fails `check_grammar`.
    """
    clean = sanitize_schema(schema)
    try:
        grammar = _convert(clean)
    except _CONVERTER_ERRORS as exc:
        raise GrammarError(f"cannot build a grammar for this schema: {exc}") from exc
    if not set(schema) - {"type", "title", "description"}:
        # Plain JSON mode: let the model lay the object out over lines, as it does
        # unconstrained. Held to one line, it drifts from the shape in its prompt.
        grammar = grammar.replace(_ONE_LINE_SPACE, _LINE_SPACE)
    # The converter's integers stop at 16 digits: a longer id in the text came back
    # cut short, as a valid and wrong value. One digit more than the widest integer
    # a value may hold means that whatever the grammar cuts is refused as too wide.
    grammar = _INTEGRAL_PART.sub(_WIDE_INTEGRAL_PART, grammar)
    return check_grammar(lint_gbnf(grammar))


_ONE_LINE_SPACE = 'space ::= " "?'
_LINE_SPACE = 'space ::= | " " | "\\n" [ \\t]{0,20}'
_INTEGRAL_PART = re.compile(r"^integral-part ::= .*$", re.MULTILINE)
_WIDE_INTEGRAL_PART = (
    f"integral-part ::= [0-9] | [1-9] [0-9]{{1,{len(str(2**DEFAULT_LIMITS.max_integer_bits))}}}"
)


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
