"""Gemini function declarations written in Gemini's own schema, as the client forwards them.

A Gemini function declaration's `parameters` is Gemini's `Schema` (an OpenAPI
subset): an upper-case `type`, `nullable`, `anyOf`, `properties`, `required`,
`items`, `enum`, `description`, `title`. `langchain-google-genai` converts the
JSON schema of every tool it is given into that `Schema` itself, property by
property, and its conversion keeps only part of a JSON schema: a type list
becomes `STRING`, a nullable nested object `STRING` too, a nested object's
`required` is rebuilt from which properties carry a `default`, and constraints
(`format`, `minItems`, ...) are left out. Every tool, a `types.Tool` included,
is converted again on each request, so nothing can bypass it.

So the tool's parameters are written in the part of Gemini's `Schema` that this
conversion carries unchanged:

* a property that is a plain scalar, enum or list of plain scalars is written
  as it is (`{"type": "INTEGER"}`);
* any other property (nullable, a union, an object, a list of objects) is
  written as an `anyOf` of its members, a nullable one as a member with
  `nullable: true` (an `anyOf` of one member when it is not a union): the
  conversion copies `anyOf` members field by field;
* constraints the conversion drops are described instead (the tool dialect
  keeps none), and the answer is validated against the original schema anyway.

`check_forwarded` runs the installed client's own conversion on the result and
raises `DialectError` if it would change anything, so a client that converts
differently is caught before a request is sent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain_structx._dialects.gemini import RULES
from langchain_structx._dialects.rules import Rules
from langchain_structx._exceptions import DialectError

TOOL_RULES: Rules = replace(RULES, keep={}, property_ordering=False)
"""Gemini's dialect for function declarations: no constraint survives the client."""

_SCALARS = frozenset({"string", "number", "integer", "boolean"})


def _types(node: dict[str, Any]) -> tuple[list[str], bool]:
    """The node's JSON types other than null, and whether it accepts null."""
    declared = node.get("type")
    names = declared if isinstance(declared, list) else [declared] if declared else []
    return [t for t in names if t != "null"], "null" in names


def _members(node: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """A node's members (itself unless a union) and whether null is accepted."""
    if "anyOf" in node:
        nullable = False
        members: list[dict[str, Any]] = []
        for member in node["anyOf"]:
            names, accepts_null = _types(member)
            if not names and accepts_null and "enum" not in member:
                nullable = True
            else:
                members.append(member)
        return members, nullable
    names, nullable = _types(node)
    if len(names) > 1:
        bare = {k: v for k, v in node.items() if k != "type"}
        return [{**bare, "type": name} for name in names], nullable
    if names:
        return [{**node, "type": names[0]}], nullable
    return [node], nullable


def _plain(member: dict[str, Any]) -> bool:
    """A scalar or enum, or a list of them, with nothing nullable inside."""
    names, nullable = _types(member)
    if nullable or len(names) != 1 or "anyOf" in member:
        return False
    if names[0] == "array":
        return _plain(member.get("items") or {})
    return names[0] in _SCALARS


def _schema(
    member: dict[str, Any], *, nullable: bool = False, titled: bool = False
) -> dict[str, Any]:
    """One member in Gemini's `Schema` (a single, non-null type)."""
    names, _ = _types(member)
    out: dict[str, Any] = {"type": names[0].upper()} if names else {"type": "STRING"}
    if nullable:
        out["nullable"] = True
    if titled and isinstance(member.get("title"), str):
        out["title"] = member["title"]
    if isinstance(member.get("description"), str):
        out["description"] = member["description"]
    if "enum" in member:
        out["enum"] = list(member["enum"])
    if names and names[0] == "object":
        properties = member.get("properties") or {}
        out["properties"] = {name: _named(name, sub) for name, sub in properties.items()}
        out["required"] = [r for r in member.get("required") or () if r in properties]
    if names and names[0] == "array":
        out["items"] = _items(member.get("items") or {})
    return out


def _items(node: dict[str, Any]) -> dict[str, Any]:
    members, nullable = _members(node)
    if len(members) == 1:
        return _schema(members[0], nullable=nullable)
    return {"anyOf": _union(members, nullable)}


def _union(members: list[dict[str, Any]], nullable: bool) -> list[dict[str, Any]]:
    return [_schema(m, nullable=nullable, titled=True) for m in members]


def _named(name: str, node: dict[str, Any]) -> dict[str, Any]:
    out = property_schema(node)
    if name == "title" and "description" not in out:
        # The client describes a property named "title" that has no description
        # with the text of its schema; a description of its own keeps it out.
        out["description"] = "the title"
    return out


def property_schema(node: dict[str, Any]) -> dict[str, Any]:
    """One property's schema in the form the client forwards unchanged."""
    members, nullable = _members(node)
    described = node.get("description")
    if len(members) == 1 and isinstance(described, str):
        members = [{**members[0], "description": members[0].get("description", described)}]
    if len(members) == 1 and not nullable and _plain(members[0]):
        return _schema(members[0])
    out: dict[str, Any] = {"anyOf": _union(members, nullable)}
    if isinstance(described, str) and len(members) > 1:
        out["description"] = described
    return out


def declaration_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters (Gemini's tool dialect, an object) in Gemini's `Schema`.

    Examples:
        >>> sent = declaration_parameters(
        ...     {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
        ... )
        >>> sent["properties"]["n"]
        {'anyOf': [{'type': 'INTEGER', 'nullable': True}]}
    """
    properties = schema.get("properties") or {}
    return {
        "type": "OBJECT",
        "properties": {name: _named(name, sub) for name, sub in properties.items()},
        "required": [r for r in schema.get("required") or () if r in properties],
    }


def check_forwarded(parameters: dict[str, Any]) -> None:
    """Raise `DialectError` when the installed client would not forward `parameters` as is."""
    try:
        from google.genai import types
        from langchain_google_genai._function_utils import _dict_to_genai_schema
    except ImportError:  # no client installed: nothing converts the declaration
        return
    try:
        converted = _dict_to_genai_schema(parameters)
        meant = types.Schema.model_validate(parameters)
    except (ValueError, TypeError) as exc:
        raise DialectError("gemini", f"the tool parameters cannot be converted: {exc}") from None
    if converted is None or converted.model_dump(exclude_none=True) != meant.model_dump(
        exclude_none=True
    ):
        raise DialectError(
            "gemini",
            "langchain-google-genai would change these tool parameters when sending them",
        )
