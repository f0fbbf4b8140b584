"""A compact, JSON-like rendering of JSON schemas for prompts.

Small models follow `"name": string,` far better than a pasted JSON schema, and the
rendering costs a fraction of the tokens. Keys are quoted and fields separated by
commas as in the JSON to write: a 0.5B model copies the layout it is shown, so
unquoted keys came back as unquoted values. Definitions (`$defs`) are written in
place, where they are read as part of the answer; only definitions that refer back
to themselves are written once as named blocks, so recursive schemas terminate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_CONSTRAINTS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("multipleOf", "multiple of {}"),
    ("minLength", "min length {}"),
    ("maxLength", "max length {}"),
    ("pattern", "pattern {}"),
    ("format", "{}"),
    ("minItems", "min {} items"),
    ("maxItems", "max {} items"),
)


def render_type(schema: Mapping[str, Any], indent: int = 0) -> str:
    """Render one schema as a compact type expression.

    Args:
        schema: A JSON schema (sub-schema).
        indent: Current indentation depth, in levels of two spaces.

    Returns:
        Text such as `string[]`, or an object written with quoted keys.

    Examples:
        >>> render_type({"type": "array", "items": {"enum": ["a", "b"]}})
        '("a" | "b")[]'
    """
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_grouped(s, indent) for s in schema[key])
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return render_type(schema["allOf"][0], indent)
    return _render_typed(schema, indent)


def _grouped(schema: Mapping[str, Any], indent: int) -> str:
    text = render_type(schema, indent)
    return f"({text})" if " | " in text else text


def _render_typed(schema: Mapping[str, Any], indent: int) -> str:
    kind = schema.get("type")
    layout = _LAYOUTS.get(str(schema.get("format"))) if kind == "string" else None
    if layout is not None:
        return f'"{layout}"'
    if isinstance(kind, list):
        return " | ".join(_render_typed({**schema, "type": k}, indent) for k in kind)
    if kind == "object" or "properties" in schema:
        return _render_object(schema, indent)
    if kind == "array":
        items = schema.get("items")
        inner = _grouped(items, indent) if isinstance(items, Mapping) else "any"
        return f"{inner}[]"
    return str(kind) if kind else "any"


def _render_object(schema: Mapping[str, Any], indent: int) -> str:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if not properties:
        extra = schema.get("additionalProperties")
        value = render_type(extra, indent) if isinstance(extra, Mapping) else "any"
        return f"{{ [key: string]: {value} }}"
    required = set(schema.get("required") or ())
    pad = "  " * (indent + 1)
    names = list(properties)
    lines = [
        _render_field(name, properties[name], name in required, indent + 1, pad, name != names[-1])
        for name in names
    ]
    return "{\n" + "\n".join(lines) + "\n" + "  " * indent + "}"


def _render_field(
    name: str, schema: Mapping[str, Any], required: bool, indent: int, pad: str, comma: bool
) -> str:
    # Keys are quoted and fields end in commas as in the JSON to write: small models
    # copy the layout they are shown, unquoted keys included.
    text = f"{pad}{json.dumps(name, ensure_ascii=False)}: {render_type(schema, indent)}"
    text += "," if comma else ""
    notes = _notes(schema, required)
    return f"{text}  // {notes}" if notes else text


def _notes(schema: Mapping[str, Any], required: bool = True) -> str:
    parts = _constraints(schema)
    description = schema.get("description")
    if description:
        parts.insert(0, _one_line(description))
    if not required:
        parts.insert(0, "optional")
    return "; ".join(parts)


_LAYOUTS = {"date": "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SS", "time": "HH:MM:SS"}

_FORMATS = {
    "date": "a date written YYYY-MM-DD, e.g. 2024-01-31",
    "date-time": "a date-time written YYYY-MM-DDTHH:MM:SS, e.g. 2024-01-31T09:30:00",
    "time": "a time written HH:MM:SS, e.g. 09:30:00",
}
"""Formats written as the layout to use: small models convert dates to a layout they
are shown far more often than to a format name."""


def _constraint(key: str, template: str, value: Any) -> str:
    if key == "format":
        return _FORMATS.get(str(value), f"format {value}")
    return template.format(value)


def _constraints(schema: Mapping[str, Any]) -> list[str]:
    parts = [_constraint(key, t, schema[key]) for key, t in _CONSTRAINTS if key in schema]
    # `X | None` puts the constraints of X inside its branch of anyOf.
    for branch in schema.get("anyOf") or schema.get("oneOf") or ():
        if isinstance(branch, Mapping) and branch.get("type") != "null":
            parts.extend(_constraints(branch))
    return parts


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def render_schema(name: str, schema: Mapping[str, Any], description: str = "") -> str:
    """Render a named schema and the definitions it uses.

    Args:
        name: Name of the shape, written before it.
        schema: The full JSON schema, possibly with `$defs`.
        description: Written as a comment right above the shape.

    Returns:
        One block per definition, then the shape itself.

    Examples:
        >>> point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        >>> print(render_schema("Point", point))
        Point {
          "x": integer
        }
    """
    definitions = _definitions(schema)
    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    # A recursive model is a bare reference to its own definition: draw it once.
    if _bare_ref(body) == name and name in definitions:
        body = definitions.pop(name)
        kept = {name}
        body = _inline(body, definitions, (name,), kept)
    else:
        kept = set()
        body = _inline(body, definitions, (), kept)
    # Definitions that refer back to themselves stay named blocks; the rest are
    # written in place, where a small model reads them as part of the answer.
    blocks = []
    for def_name in [n for n in definitions if n in kept and n != name]:
        shape = _inline(definitions[def_name], definitions, (def_name,), kept)
        blocks.append(f"{def_name} {render_type(shape)}")
    head = f"// {_one_line(description)}\n" if description.strip() else ""
    blocks.append(f"{head}{name} {render_type(body)}")
    return "\n".join(blocks)


def _inline(
    node: Any, definitions: Mapping[str, Any], stack: tuple[str, ...], kept: set[str]
) -> Any:
    """Replace references by their definitions, except those that recur.

    A reference already on `stack` is recursive: it stays a name, added to `kept`.
    """
    if isinstance(node, list):
        return [_inline(item, definitions, stack, kept) for item in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    target = str(ref).rsplit("/", 1)[-1] if isinstance(ref, str) else None
    if target is not None and target in definitions:
        if target in stack:
            kept.add(target)
            return dict(node)
        site = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**definitions[target], **site}, definitions, (*stack, target), kept)
    return {k: _inline(v, definitions, stack, kept) for k, v in node.items()}


def _bare_ref(body: Mapping[str, Any]) -> str | None:
    ref = body.get("$ref")
    if not isinstance(ref, str) or set(body) - {"$ref", "title", "description"}:
        return None
    return ref.rsplit("/", 1)[-1]


def _definitions(schema: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found.update(schema.get(key) or {})
    return found


def instructions(shapes: Sequence[tuple[str, str, Mapping[str, Any]]], *, envelope: bool) -> str:
    """Write the system-prompt text that asks for JSON output.

    Args:
        shapes: `(name, description, schema)` for each variant.
        envelope: Whether the answer must be wrapped as `{"kind": ..., "data": ...}`.

    Returns:
        Instructions to append to the system prompt.
    """
    body = "\n\n".join(render_schema(n, s, d) for n, d, s in shapes)
    if envelope:
        names = " | ".join(json.dumps(name) for name, _, _ in shapes)
        return (
            "Answer with only a JSON object, no other text, of the form "
            f'{{"kind": {names}, "data": <the object>}} where data matches the shape '
            f"named by kind:\n\n{body}"
        )
    return f"Answer with only a JSON object, no other text, matching:\n\n{body}"
