"""Small pure helpers on schema nodes, shared by the walker and the object handlers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_structx._dialects.jsonvalues import dump_json
from langchain_structx._dialects.rules import TYPE_KEYWORDS, Rules

JSON_TEXT = "any JSON value, as JSON text"
_ENUMS = frozenset({"enum", "const"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")

dump = dump_json


def json_type_of(schema: Mapping[str, Any]) -> str:
    """Return the declared type, or the type implied by object/array keywords.

    Examples:
        >>> json_type_of({"properties": {}}), json_type_of({"minimum": 1})
        ('object', 'any')
    """
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    for json_type in ("object", "array"):
        if TYPE_KEYWORDS[json_type] & schema.keys():
            return json_type
    return "any"


def split_types(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Turn `"type": [a, b]` into an `anyOf` with one member per type.

    Examples:
        >>> split_types({"type": ["string", "null"], "maxLength": 3})
        {'anyOf': [{'type': 'string', 'maxLength': 3}, {'type': 'null'}]}
    """
    types = list(dict.fromkeys(schema["type"]))
    if len(types) == 1:
        return {**schema, "type": types[0]}
    typed = set().union(*TYPE_KEYWORDS.values())
    shared = {k: v for k, v in schema.items() if k != "type" and k not in typed}
    members = [
        {"type": t, **{k: v for k, v in schema.items() if k in TYPE_KEYWORDS.get(t, ())}}
        for t in types
    ]
    if "anyOf" in shared:
        return {"allOf": [{"anyOf": members}], **shared}
    return {**shared, "anyOf": members}


def split_type_lists(schema: dict[str, Any]) -> None:
    """Rewrite, in place, every `"type": [a, b]` node below `schema` as an `anyOf`.

    Nodes with `enum` or `const` keep their list: the values already say it all.

    Examples:
        >>> node = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
        >>> split_type_lists(node)
        >>> node["properties"]["n"]
        {'anyOf': [{'type': 'integer'}, {'type': 'null'}]}
    """
    stack: list[Any] = [schema, *(schema.get("$defs") or {}).values()]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("type"), list) and not (_ENUMS & node.keys()):
            split = split_types(node)
            node.clear()
            node.update(split)
        stack.extend((node.get("properties") or {}).values())
        stack.extend(node[k] for k in ("items", "additionalProperties") if k in node)
        stack.extend(node.get("anyOf") or ())
        stack.extend(node.get("allOf") or ())


def is_null(schema: Mapping[str, Any]) -> bool:
    """Tell whether a prepared node accepts only `null`."""
    return schema.get("type") == "null" and not (_ENUMS & schema.keys())


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a provider node that also accepts `null`.

    Examples:
        >>> nullable({"type": "integer"})
        {'type': ['integer', 'null']}
    """
    members = schema.get("anyOf")
    if members is not None and not (schema.keys() - {"anyOf", "title", "description"}):
        if any(is_null(m) for m in members):
            return schema
        return {**schema, "anyOf": [*members, {"type": "null"}]}
    declared = schema.get("type")
    if declared == "null" or (isinstance(declared, list) and "null" in declared):
        return schema
    if isinstance(declared, str) and not (_ENUMS & schema.keys()) and "$ref" not in schema:
        return {**schema, "type": [declared, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def json_type(value: Any) -> str:
    """Return the JSON Schema type name of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    names = {float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "object")


def native_enum(values: Sequence[Any], rules: Rules, is_const: bool) -> dict[str, Any] | None:
    """Return the enum as the dialect takes it natively, or None when it cannot.

    Examples:
        >>> from langchain_structx._dialects.openai import RULES
        >>> native_enum(["a", None], RULES, False)
        {'type': ['string', 'null'], 'enum': ['a', None]}
    """
    rest = [v for v in values if v is not None]
    types = {json_type(v) for v in rest}
    if types == {"integer", "number"}:
        types = {"number"}
    if not rest:
        return {"type": "null"}
    if len(types) > 1 or types & {"array", "object"}:
        return None
    if rules.string_enums and types != {"string"}:
        return None
    enum_type = types.pop()
    if rules.string_enums:
        out: dict[str, Any] = {"type": enum_type, "enum": rest}
        return nullable(out) if len(rest) < len(values) else out
    if is_const and len(values) == 1 and rules.const:
        return {"type": enum_type, "const": values[0]}
    return {
        "type": [enum_type, "null"] if len(rest) < len(values) else enum_type,
        "enum": list(values),
    }


def exclusive(members: Sequence[Any]) -> bool:
    """Tell whether object members are told apart by a required tag property.

    Examples:
        >>> tag = lambda v: {"properties": {"k": {"const": v}}, "required": ["k"]}
        >>> exclusive([tag("a"), tag("b")])
        True
    """
    if len(members) < 2:
        return True
    if not all(isinstance(m, dict) for m in members):
        return False
    keys = [set(m.get("required", ())) & set(m.get("properties") or ()) for m in members]
    for name in set.intersection(*keys):
        tags = [_tags(m["properties"][name]) for m in members]
        if all(tags) and len(set().union(*tags)) == sum(map(len, tags)):
            return True
    return False


def _tags(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    if "const" in schema:
        return {dump(schema["const"])}
    return {dump(v) for v in schema.get("enum", ())}


Types = frozenset[str] | None
"""JSON types a node admits (`integer` counted as `number`); None when unknown."""
Known = dict[str, Types]


def types_of(schema: Any, defs: Mapping[str, Any]) -> Types:
    """Return the JSON types a prepared or provider node admits, following references.

    Examples:
        >>> sorted(types_of({"anyOf": [{"type": "integer"}, {"enum": ["a"]}]}, {}) or ())
        ['number', 'string']
    """
    return _types_of(schema, defs, (), {})


def _types_of(schema: Any, defs: Mapping[str, Any], seen: tuple[str, ...], known: Known) -> Types:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if name in seen or not target:
            return None
        # Whether a definition reaches a loop does not depend on where the walk
        # came from, so its answer can be kept (a definition used twice by each
        # of thirty others would otherwise cost 2**30 steps).
        if name not in known:
            known[name] = _types_of(target, defs, (*seen, name), known)
        return known[name]
    declared = schema.get("type")
    if declared is not None:
        names = [declared] if isinstance(declared, str) else declared
        return frozenset("number" if t == "integer" else t for t in names)
    if "anyOf" in schema:
        found = [_types_of(m, defs, seen, known) for m in schema["anyOf"]]
        return None if any(t is None for t in found) else frozenset().union(*found)  # type: ignore[arg-type]
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return frozenset("number" if json_type(v) == "integer" else json_type(v) for v in values)
    implied = json_type_of(schema)
    return frozenset({implied}) if implied in ("object", "array") else None


def overlap(left: Types, right: Types) -> bool:
    """Tell whether two type sets may share a value."""
    return left is None or right is None or bool(left & right)


def tag_for(original: Mapping[str, Any], original_types: Types, sent: Types, index: int) -> str:
    """Name the wrapper key of a union member that needs one.

    Examples:
        >>> tag_for({"title": "Cat"}, frozenset({"object"}), frozenset({"object"}), 0)
        'Cat'
    """
    if original_types == frozenset({"object"}) and sent == frozenset({"array"}):
        return "entries"
    if original_types == frozenset({"array"}) and sent == frozenset({"object"}):
        return "positions"
    if original_types != sent:
        return "json"
    title = original.get("title")
    if isinstance(title, str) and _IDENTIFIER.fullmatch(title):
        return title
    return f"variant_{index}"


def close(rules: Rules, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Build a provider object node with the dialect's object keywords.

    Examples:
        >>> from langchain_structx._dialects.openai import RULES
        >>> close(RULES, {"a": {"type": "string"}}, ["a"])["additionalProperties"]
        False
    """
    out: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if rules.closed_objects:
        out["additionalProperties"] = False
    if rules.property_ordering:
        out["propertyOrdering"] = list(properties)
    return out


def unique(name: str, taken: object) -> str:
    """Return `name`, prefixed with underscores until it is not in `taken`.

    `taken` is a collection of names, or a text in which the name must not appear.

    Examples:
        >>> unique("rest", {"rest", "_rest"}), unique("a", '{"__a": 1, "a": 2}')
        ('__rest', '___a')
    """
    if isinstance(taken, str):
        # One pass over the text, however many underscores it holds before the name.
        runs = [len(m) for m in re.findall(f"(_*){re.escape(name)}", taken)]
        return "_" * (max(runs) + 1) + name if runs else name
    while name in taken:  # type: ignore[operator]
        name = "_" + name
    return name
