"""Parts of a JSON schema moved to a root of their own, only when that keeps their meaning.

Three things take a part out of a schema dict and make it the root of another:

- a tool definition (OpenAI's function format, Anthropic's tool format), which
  `with_structured_output` takes as a schema, gives up its parameters, a schema
  document of their own, named after the tool (`from_tool_format`);
- a top-level `anyOf`/`oneOf` of objects becomes one variant per branch
  (`split_union`), so that the model names the shape it answers with;
- `structx extract --many` puts the whole schema under `items` of a list.

Either is exact only when nothing the part relies on is left behind: every
reference must point into the root's `$defs` or `definitions` (which travel with
the part), never at the root itself (`#`), into a branch (`#/anyOf/0`) or into an
unknown keyword, and no `$id`, anchor or dynamic reference may change where one
leads (`movable`). A split must also leave no keyword of the root that constrains
the value (`required`, `not`, a second `anyOf`...). When any of this fails, the
schema is not split: it stays one variant, which validates exactly as written.

References are JSON pointers in a URI fragment: percent-decoded first, then split
at `/`, with `~1` read as `/` and `~0` as `~` (RFC 3986 and RFC 6901).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from jsonschema import Draft202012Validator

from langchain_structx._exceptions import SchemaError
from langchain_structx._validation.bounds import schema_shape_problem
from langchain_structx._validation.validate import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES

DEFS_KEYS = ("$defs", "definitions")
"""Where definitions live; they travel with every part taken out of the root."""

_UNION_KEYS = ("oneOf", "anyOf")

_CONSTRAINING = frozenset(Draft202012Validator.VALIDATORS) | {"then", "else"}
"""Keywords that constrain a value; at the root of a union, each would be dropped by a split."""

_SCOPING = frozenset({"$id", "$anchor", "$dynamicAnchor", "$dynamicRef"})
_SCOPING |= {"$recursiveRef", "$recursiveAnchor"}
"""Keywords that change where a reference leads, or lead somewhere only known at run time."""


_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})
_ANTHROPIC_KEYS = frozenset({"name", "description", "input_schema", "type", "cache_control"})


def from_tool_format(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The parameters of a tool definition as a schema named after the tool, else `schema`.

    Takes OpenAI's function (`{"name", "description", "parameters"}`, bare or as
    `{"type": "function", "function": ...}`) and Anthropic's tool (`input_schema`).
    Such a dict has none of JSON Schema's keywords at its top, so it cannot be
    meant as a schema itself: read as one, it would accept any value.

    Examples:
        >>> tool = {"name": "City", "parameters": {"type": "object", "title": "Args"}}
        >>> from_tool_format({"type": "function", "function": tool})
        {'type': 'object', 'title': 'City'}
    """
    tool = schema
    if set(schema) == {"type", "function"} and schema["type"] == "function":
        tool = schema["function"] if isinstance(schema["function"], Mapping) else schema
    name = tool.get("name")
    for key, allowed in (("parameters", _FUNCTION_KEYS), ("input_schema", _ANTHROPIC_KEYS)):
        body = tool.get(key)
        if isinstance(name, str) and isinstance(body, Mapping) and set(tool) <= allowed:
            described = {"description": tool["description"]} if "description" in tool else {}
            return {**body, "title": name, **described}
    return schema


def decode_pointer(ref: str) -> list[str] | None:
    """The tokens of a local JSON-pointer reference, or None for any other reference.

    Examples:
        >>> decode_pointer("#/$defs/a~1b/c~0d%25")
        ['$defs', 'a/b', 'c~d%']
        >>> decode_pointer("#"), decode_pointer("#name"), decode_pointer("other.json#/a")
        ([], None, None)
    """
    if not ref.startswith("#"):
        return None
    pointer = unquote(ref[1:])
    if not pointer:
        return []
    if not pointer.startswith("/"):
        return None
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def movable(root: Mapping[str, Any]) -> bool:
    """Whether any part of `root` keeps its meaning under another root with the same definitions.

    Conservative: a key spelled like a reference anywhere (even as a property
    name) counts as one.

    Examples:
        >>> movable({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}})
        True
        >>> movable({"properties": {"a": {"$ref": "#"}}})
        False
    """
    if schema_shape_problem(root, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES):
        return False
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if not _SCOPING.isdisjoint(node):
            return False
        if "$ref" in node and _definition(node["$ref"], root) is None:
            return False
        stack.extend(node.values())
    return True


def _definition(ref: Any, root: Mapping[str, Any]) -> list[str] | None:
    """The pointer tokens of `ref` when it leads into one of the root's definitions."""
    tokens = decode_pointer(ref) if isinstance(ref, str) else None
    if not tokens or len(tokens) < 2 or tokens[0] not in DEFS_KEYS:
        return None
    return tokens if isinstance(root.get(tokens[0]), dict) else None


def without_defs(part: Mapping[str, Any]) -> dict[str, Any]:
    """`part` without its own definitions keys (they are the root's job)."""
    return {key: value for key, value in part.items() if key not in DEFS_KEYS}


def defs_of(root: Mapping[str, Any]) -> dict[str, Any]:
    """The definitions keys of `root`, to put on the root a part moves to."""
    return {key: root[key] for key in DEFS_KEYS if key in root}


def split_union(schema: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The branches of a top-level `anyOf`/`oneOf` of objects, each a schema of its own.

    Returns:
        One standalone schema per branch, or None when the schema is not such a
        union or a split would change what it accepts.

    Raises:
        SchemaError: A branch that is only a reference into the definitions
            points at none.

    Examples:
        >>> a = {"type": "object", "required": ["a"]}
        >>> union = {"anyOf": [{"$ref": "#/$defs/A"}, a], "$defs": {"A": a}}
        >>> [part.get("title") for part in split_union(union)]
        ['A', None]
        >>> split_union({"anyOf": [a, a], "required": ["z"]}) is None
        True
    """
    present = [key for key in _UNION_KEYS if key in schema]
    if len(present) != 1:
        return None
    branches = schema[present[0]]
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    bodies = [_body(branch, schema) for branch in branches]
    if any(body is None for body in bodies) or not movable(schema):
        return None
    checked = [body for body in bodies if body is not None]
    if not all(_is_object(body, schema) for body, _ in checked):
        return None
    if not _only_redundant_constraints(schema, present[0], [body for body, _ in checked]):
        return None
    parts = []
    for body, title in checked:
        part = {**without_defs(body), **defs_of(schema)}
        if title is not None and "title" not in part:
            part["title"] = title
        parts.append(part)
    return parts


def _body(branch: Any, root: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None] | None:
    """What a branch says, and the title it implies, inlining a branch that is only a `$ref`."""
    if not isinstance(branch, dict):
        return None
    ref = branch.get("$ref")
    tokens = _definition(ref, root)
    if tokens is None:
        return branch, None
    if len(branch) > 1:
        return branch, tokens[-1]
    target = resolve_tokens(tokens, root, str(ref))
    return (target, tokens[-1]) if isinstance(target, dict) else None


def resolve_tokens(tokens: list[str], root: Mapping[str, Any], ref: str) -> Any:
    """Follow pointer tokens the way the validator's resolver does (list indexes as numbers)."""
    node: Any = root
    for token in tokens:
        try:
            node = node[int(token)] if isinstance(node, list) else node[token]
        except (LookupError, ValueError, TypeError):
            message = f"Schema reference {ref!r} does not resolve inside the schema."
            raise SchemaError(message) from None
    return node


def _is_object(body: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if body.get("type") == "object" or "properties" in body:
        return True
    tokens = _definition(body.get("$ref"), root)
    if tokens is None:
        return False
    target = resolve_tokens(tokens, root, str(body["$ref"]))
    return isinstance(target, dict) and (target.get("type") == "object" or "properties" in target)


def _only_redundant_constraints(
    root: Mapping[str, Any], union: str, bodies: list[Mapping[str, Any]]
) -> bool:
    """Whether every constraint at the root besides the union is repeated in each branch."""
    for key in _CONSTRAINING.intersection(root).difference({union}):
        # Only `type` is compared: it means the same wherever it stands.
        if key != "type" or any(body.get("type") != root["type"] for body in bodies):
            return False
    return True
