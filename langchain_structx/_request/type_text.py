"""One JSON schema written as a compact type expression, for prompts.

`"name": string,` with the field's notes (optional, description, bounds, the
layout of a date) as a comment after it; a union as `A | B`, a composition of
parts as `A & B`, a tuple as `[string, integer]`. How definitions are placed and
the instructions around the shapes are `_prompt`'s part.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

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
    ("uniqueItems", "no item twice"),
    ("minProperties", "min {} keys"),
    ("maxProperties", "max {} keys"),
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
        >>> render_type({"type": "array", "items": False}), render_type({"not": {}})
        ('[]', 'never')
        >>> render_type({"type": "array", "prefixItems": [{"type": "string"}], "items": False})
        '[string]'
        >>> render_type({"allOf": [{"$ref": "#/$defs/Base"}, {"$ref": "#/$defs/Extra"}]})
        'Base & Extra'
    """
    if not isinstance(schema, Mapping):
        # A boolean schema: `true` allows any value, `false` none.
        return "any" if schema else "never"
    if _matches_nothing(schema):
        return "never"
    if "$ref" in schema:  # a definition's name, its pointer escapes undone
        last = unquote(str(schema["$ref"]).rsplit("/", 1)[-1])
        return last.replace("~1", "/").replace("~0", "~")
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_grouped(s, indent) for s in schema[key])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return _render_all_of(schema, indent)
    return _render_typed(schema, indent)


def _render_all_of(schema: Mapping[str, Any], indent: int) -> str:
    # Every part must hold, as must the schema's own shape beside them: `A & B`.
    own = {k: v for k, v in schema.items() if k != "allOf"}
    shaped = any(k in own for k in ("type", "properties", "items", "prefixItems"))
    parts = [_grouped(part, indent) for part in [*([own] if shaped else []), *schema["allOf"]]]
    parts = [p for p in parts if p != "any"] or ["any"]  # a part of only rules says nothing
    return " & ".join(f"({p})" if " & " in p else p for p in parts)


def _matches_nothing(schema: Any) -> bool:
    """Whether `schema` is `false` or `{"not": {}}`, which no value matches."""
    return schema is False or (isinstance(schema, Mapping) and schema.get("not") in ({}, True))


def _grouped(schema: Mapping[str, Any], indent: int) -> str:
    text = render_type(schema, indent)
    return f"({text})" if " | " in text else text


def _render_typed(schema: Mapping[str, Any], indent: int, listed: bool = False) -> str:
    kind = schema.get("type")
    layout = _LAYOUTS.get(str(schema.get("format"))) if kind == "string" else None
    if layout is not None:
        return f'"{layout}"'
    if isinstance(kind, list):
        # Each type once, and `properties` only in the object's branch: writing the
        # object once per listed type would multiply at every level of nesting.
        kinds = dict.fromkeys(str(k) for k in kind)
        return " | ".join(_render_typed({**schema, "type": k}, indent, True) for k in kinds)
    if kind == "object" or ("properties" in schema and not listed):
        return _render_object(schema, indent)
    if kind == "array":
        items = schema.get("items", True)
        if schema.get("prefixItems"):
            return _render_tuple(schema, items, indent)
        if _matches_nothing(items):
            return "[]"
        return f"{_grouped(items, indent)}[]"
    return str(kind) if kind else "any"


def _render_tuple(schema: Mapping[str, Any], items: Any, indent: int) -> str:
    # `[string, integer]`, with `...T[]` where more items may follow the fixed ones.
    parts = [render_type(sub, indent) for sub in schema["prefixItems"]]
    most = schema.get("maxItems")
    if not ((type(most) is int and most <= len(parts)) or _matches_nothing(items)):
        parts.append("..." if items in (True, {}) else f"...{_grouped(items, indent)}[]")
    return f"[{', '.join(parts)}]"


def _render_object(schema: Mapping[str, Any], indent: int) -> str:
    # A property no value matches can only be left out: it is not shown.
    properties = {
        name: sub
        for name, sub in (schema.get("properties") or {}).items()
        if not _matches_nothing(sub)
    }
    if not properties:
        keys = _key_entries(schema, indent, named=False)
        return f"{{ {'; '.join(keys)} }}" if keys else "{}"
    required = set(schema.get("required") or ())
    pad = "  " * (indent + 1)
    names = list(properties)
    keys = _key_entries(schema, indent + 1, named=True)
    depends = schema.get("dependentRequired")
    depends = depends if isinstance(depends, Mapping) else {}
    lines = [
        _render_field(
            name,
            properties[name],
            name in required,
            indent + 1,
            pad,
            bool(keys) or name != names[-1],
            _needs(depends.get(name)),
        )
        for name in names
    ]
    lines.extend(f"{pad}{entry}" for entry in keys)
    return "{\n" + "\n".join(lines) + "\n" + "  " * indent + "}"


def _key_entries(schema: Mapping[str, Any], indent: int, *, named: bool) -> list[str]:
    """What keys beyond the named ones may hold: `[key matching "^x"]: integer`.

    Keys any value may follow are left unsaid beside named keys or patterns.
    """
    patterns = schema.get("patternProperties")
    patterns = patterns if isinstance(patterns, Mapping) else {}
    entries = [
        f"[key matching {json.dumps(pattern, ensure_ascii=False)}]: {render_type(sub, indent)}"
        for pattern, sub in patterns.items()
        if not _matches_nothing(sub)
    ]
    extra = schema.get("additionalProperties", True)
    anything = extra is True or extra == {}
    if not _matches_nothing(extra) and not (anything and (named or entries)):
        entries.append(f"[key: {_key_type(schema)}]: {render_type(extra, indent)}")
    return entries


def _key_type(schema: Mapping[str, Any]) -> str:
    names = schema.get("propertyNames")
    if not isinstance(names, Mapping):
        return "string"
    if "enum" in names or "const" in names:
        return render_type(names)
    pattern = names.get("pattern")
    return f"string matching {json.dumps(pattern, ensure_ascii=False)}" if pattern else "string"


def _needs(names: Any) -> str:
    # `dependentRequired`: the keys that must come with this one.
    if not isinstance(names, list) or not names:
        return ""
    return "if given, also give " + ", ".join(json.dumps(n, ensure_ascii=False) for n in names)


def _render_field(
    name: str,
    schema: Mapping[str, Any],
    required: bool,
    indent: int,
    pad: str,
    comma: bool,
    needs: str = "",
) -> str:
    # Keys are quoted and fields end in commas as in the JSON to write: small models
    # copy the layout they are shown, unquoted keys included.
    text = f"{pad}{json.dumps(name, ensure_ascii=False)}: {render_type(schema, indent)}"
    text += "," if comma else ""
    notes = "; ".join(n for n in (_notes(schema, required), needs) if n)
    return f"{text}  // {notes}" if notes else text


def _notes(schema: Mapping[str, Any], required: bool = True) -> str:
    if not isinstance(schema, Mapping):
        return "" if required else "optional"
    parts = _constraints(schema)
    description = schema.get("description")
    if description:
        parts.insert(0, one_line(description))
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
    if key == "uniqueItems":
        return template if value is True else ""
    if key == "format":
        return _FORMATS.get(str(value), f"format {value}")
    return template.format(value)


def _constraints(schema: Mapping[str, Any]) -> list[str]:
    parts = [_constraint(key, t, schema[key]) for key, t in _CONSTRAINTS if key in schema]
    parts = [part for part in parts if part]
    # `X | None` puts the constraints of X inside its branch of anyOf.
    for branch in schema.get("anyOf") or schema.get("oneOf") or ():
        if isinstance(branch, Mapping) and branch.get("type") != "null":
            parts.extend(_constraints(branch))
    return parts


def one_line(text: Any) -> str:
    return " ".join(str(text).split())
