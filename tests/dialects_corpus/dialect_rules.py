"""Independent checkers of each provider's schema rules, written from the providers' docs.

Each `check_<dialect>(schema)` returns the list of violations (empty when the schema
would be accepted). They share no code with the library on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

TYPE_NAMES = {"object", "array", "string", "number", "integer", "boolean", "null"}

OPENAI_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "$ref",
    "enum", "const", "title", "description", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
OPENAI_FORMATS = {
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
}  # fmt: skip
ANTHROPIC_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "$ref",
    "enum", "const", "title", "description", "pattern", "format", "minItems",
}  # fmt: skip
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}
GEMINI_KEYS = {
    "type", "properties", "required", "items", "anyOf", "enum", "title", "description",
    "format", "minItems", "maxItems", "propertyOrdering", "$ref",
}  # fmt: skip


def walk(schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Yield `(path, node)` for the root, every definition and every sub-schema."""
    todo: list[tuple[str, Any]] = [("$", schema)]
    todo += [(f"$.$defs.{k}", v) for k, v in (schema.get("$defs") or {}).items()]
    while todo:
        path, node = todo.pop(0)
        yield path, node
        if not isinstance(node, dict):
            continue
        for name, sub in (node.get("properties") or {}).items():
            todo.append((f"{path}.properties.{name}", sub))
        if "items" in node:
            todo.append((f"{path}.items", node["items"]))
        for i, sub in enumerate(node.get("anyOf") or []):
            todo.append((f"{path}.anyOf[{i}]", sub))


def _types(node: dict[str, Any]) -> list[Any]:
    t = node.get("type")
    return t if isinstance(t, list) else [t] if t is not None else []


def _is_object(node: dict[str, Any]) -> bool:
    return "object" in _types(node) or "properties" in node


def _node_rules(path: str, node: dict[str, Any], keys: set[str]) -> list[str]:
    out = []
    extra = set(node) - keys - ({"$defs"} if path == "$" else set())
    out += [f"{path}: keyword {k!r} not accepted" for k in sorted(extra)]
    types = _types(node)
    if any(t not in TYPE_NAMES for t in types):
        out.append(f"{path}: unknown type {node.get('type')!r}")
    if len([t for t in types if t != "null"]) > 1:
        out.append(f"{path}: a type list may only add null to one type")
    if not (types or {"anyOf", "$ref", "enum", "const"} & set(node)):
        out.append(f"{path}: no type")
    if "$ref" in node and len(node) > 1:
        out.append(f"{path}: $ref with sibling keywords")
    if "enum" in node and not node["enum"]:
        out.append(f"{path}: empty enum")
    out += [
        f"{path}: enum value {v!r} is not a scalar"
        for v in node.get("enum") or []
        if isinstance(v, dict | list)
    ]
    if "required" in node and not set(node["required"]) <= set(node.get("properties") or {}):
        out.append(f"{path}: required names an undeclared property")
    return out


def _common(schema: Any, keys: set[str]) -> list[str]:
    if not isinstance(schema, dict):
        return ["$: the schema is not an object"]
    out = []
    if schema.get("type") != "object" or "anyOf" in schema:
        out.append("$: the root must be a plain object schema")
    for path, node in walk(schema):
        out += (
            _node_rules(path, node, keys)
            if isinstance(node, dict)
            else [f"{path}: a boolean schema"]
        )
    return out


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.removeprefix("#/$defs/"))
        for key, value in node.items():
            if key != "enum" and key != "const":
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _ref_targets(schema: dict[str, Any]) -> list[str]:
    defs = schema.get("$defs") or {}
    out = []
    for path, node in walk(schema):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if ref is not None and not (ref.startswith("#/$defs/") and ref[8:] in defs):
            out.append(f"{path}: $ref {ref!r} does not name a definition")
    return out


def is_recursive(schema: dict[str, Any]) -> bool:
    """Tell whether some definition of a provider schema refers back to itself."""
    defs = schema.get("$defs") or {}
    graph = {name: _refs(sub) for name, sub in defs.items()}
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                return True
            if name not in seen:
                seen.add(name)
                todo += graph.get(name, [])
    return False


def _depth(node: Any, defs: dict[str, Any], active: frozenset[str]) -> int:
    if not isinstance(node, dict):
        return 0
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix("#/$defs/")
        return 0 if name in active else _depth(defs.get(name), defs, active | {name})
    subs = list((node.get("properties") or {}).values()) + list(node.get("anyOf") or [])
    subs += [node["items"]] if "items" in node else []
    deepest = max((_depth(s, defs, active) for s in subs), default=0)
    return deepest + (1 if _is_object(node) else 0)


def _openai_limits(schema: dict[str, Any]) -> list[str]:
    out = []
    nodes = [n for _, n in walk(schema) if isinstance(n, dict)]
    props = sum(len(n.get("properties") or {}) for n in nodes)
    enums = [n["enum"] for n in nodes if "enum" in n]
    names = sum(len(k) for n in nodes for k in n.get("properties") or {})
    names += sum(len(k) for k in schema.get("$defs") or {})
    names += sum(len(str(v)) for e in enums for v in e)
    names += sum(len(str(n["const"])) for n in nodes if "const" in n)
    depth = _depth(schema, schema.get("$defs") or {}, frozenset())
    if props > 5000:
        out.append(f"limit: {props} properties > 5000")
    if depth > 10:
        out.append(f"limit: nesting depth {depth} > 10")
    if sum(map(len, enums)) > 1000:
        out.append("limit: more than 1000 enum values")
    if names > 120_000:
        out.append(f"limit: {names} characters > 120000")
    if any(len(e) > 250 and sum(len(v) for v in e if isinstance(v, str)) > 15_000 for e in enums):
        out.append("limit: an enum of more than 250 values over 15000 characters")
    return out


def check_openai(schema: Any) -> list[str]:
    out = _common(schema, OPENAI_KEYS)
    if out and out[0].startswith("$: the schema"):
        return out
    out += _ref_targets(schema)
    for path, node in walk(schema):
        if isinstance(node, dict) and _is_object(node):
            if node.get("additionalProperties") is not False:
                out.append(f"{path}: additionalProperties must be false")
            if set(node.get("required") or []) != set(node.get("properties") or {}):
                out.append(f"{path}: every property must be required")
        if isinstance(node, dict) and "format" in node and node["format"] not in OPENAI_FORMATS:
            out.append(f"{path}: format {node['format']!r} not accepted")
    return out + _openai_limits(schema)


_BAD_REGEX = re.compile(r"\\[1-9]|\\[bB]|\(\?<?[=!]|\\k<")


def _anthropic_node(path: str, node: dict[str, Any]) -> list[str]:
    out = []
    if _is_object(node) and node.get("additionalProperties") is not False:
        out.append(f"{path}: additionalProperties must be false")
    if "format" in node and node["format"] not in ANTHROPIC_FORMATS:
        out.append(f"{path}: format {node['format']!r} not accepted")
    if node.get("minItems", 0) not in (0, 1):
        out.append(f"{path}: minItems above 1")
    if "pattern" in node and _BAD_REGEX.search(node["pattern"]):
        out.append(f"{path}: regex feature not supported")
    return out


def check_anthropic(schema: Any) -> list[str]:
    out = _common(schema, ANTHROPIC_KEYS)
    if out and out[0].startswith("$: the schema"):
        return out
    out += _ref_targets(schema)
    if is_recursive(schema):
        out.append("limit: recursive schema")
    nodes = [(p, n) for p, n in walk(schema) if isinstance(n, dict)]
    for path, node in nodes:
        out += _anthropic_node(path, node)
        # The anthropic SDK's transform_schema (which ChatAnthropic applies) takes one type.
        if isinstance(node.get("type"), list) and not {"enum", "const"} & set(node):
            out.append(f"{path}: type list not accepted by the anthropic SDK")
    optional = sum(
        len(set(n.get("properties") or {}) - set(n.get("required") or [])) for _, n in nodes
    )
    unions = sum(1 for _, n in nodes if "anyOf" in n or isinstance(n.get("type"), list))
    if optional > 24:
        out.append(f"limit: {optional} optional properties > 24")
    if unions > 16:
        out.append(f"limit: {unions} union types > 16")
    return out


def check_gemini(schema: Any) -> list[str]:
    out = _common(schema, GEMINI_KEYS)
    if out and out[0].startswith("$: the schema"):
        return out
    out += _ref_targets(schema)
    out += _gemini_cycles(schema)
    for path, node in walk(schema):
        if not isinstance(node, dict):
            continue
        if "enum" in node and (
            node.get("type") != "string" or not all(isinstance(v, str) for v in node["enum"])
        ):
            out.append(f"{path}: enum must be a string enum")
        if "format" in node and node["format"] != "date-time":
            out.append(f"{path}: format {node['format']!r} not accepted")
        if _is_object(node) and node.get("propertyOrdering") != list(node.get("properties") or {}):
            out.append(f"{path}: propertyOrdering must list the properties")
    return out


def _gemini_cycles(schema: dict[str, Any]) -> list[str]:
    """responseJsonSchema: $ref is for cycles, and a cycle must pass a non-required property."""
    defs = schema.get("$defs") or {}

    def forced(node: Any) -> set[str]:
        found: set[str] = set()
        todo = [node]
        while todo:
            item = todo.pop()
            if not isinstance(item, dict):
                continue
            if "$ref" in item:
                found.add(item["$ref"].rsplit("/", 1)[-1])
                continue
            required = item.get("required") or []
            todo += [v for k, v in (item.get("properties") or {}).items() if k in required]
            todo += [item["items"]] if "items" in item else []
            todo += item.get("anyOf") or []
        return found

    out = []
    for name, sub in defs.items():
        seen, todo = set(), list(forced(sub))
        while todo:
            target = todo.pop()
            if target == name:
                out.append(f"limit: $defs.{name} recurs through required properties")
                break
            if target not in seen and target in defs:
                seen.add(target)
                todo += forced(defs[target])
    return out


CHECKERS: dict[str, Callable[[Any], list[str]]] = {
    "openai": check_openai,
    "anthropic": check_anthropic,
    "gemini": check_gemini,
}
