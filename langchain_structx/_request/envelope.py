"""The envelopes an answer travels in: a union's, and a tool's object root.

A union answer is `{"kind": <variant name>, "data": <the variant>}`; the
variants' definitions are hoisted into one `$defs`. A variant's references are
first brought into the one form `#/$defs/<name>` (`normalise_refs`): moved into
the envelope, its `$id`, its anchors and its references to its own root or to any
other JSON pointer would otherwise resolve against the envelope instead.

Tool parameters must be an object schema (`object_root`); a variant that is not
one travels as `{"value": <the variant>}`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from langchain_structx._dialects.codecs import IDENTITY, Codec, WrapCodec
from langchain_structx._dialects.refs import normalise_refs, ref_name
from langchain_structx._exceptions import DialectError
from langchain_structx._schemas.normalise import Variant

ENVELOPE_KIND = "kind"
ENVELOPE_DATA = "data"


def envelope_schema(variants: tuple[Variant, ...]) -> dict[str, Any]:
    """The schema of `{"kind": <name>, "data": <variant>}` over all variants.

    Each variant's own definitions are hoisted into one `$defs`, renamed where two
    variants use the same definition name for different things.

    Examples:
        >>> from langchain_structx._schemas.normalise import normalize
        >>> s = normalize([{"title": "A", "type": "object"}, {"title": "B", "type": "object"}])
        >>> envelope_schema(s.variants)["anyOf"][0]["properties"]["kind"]
        {'const': 'A'}
    """
    defs: dict[str, Any] = {}
    branches = []
    for variant in variants:
        body = _hoist(variant, defs)
        branches.append(
            {
                "type": "object",
                "properties": {ENVELOPE_KIND: {"const": variant.name}, ENVELOPE_DATA: body},
                "required": [ENVELOPE_KIND, ENVELOPE_DATA],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


_OBJECT_WORDS = frozenset(
    {"properties", "additionalProperties", "patternProperties", "required", "propertyNames"}
)
_POINTER = re.compile(r"#(/[^/~%]*)*")
_OTHER_SHAPES = frozenset({"anyOf", "oneOf", "allOf", "not", "enum", "const", "$ref", "items"})


def object_root(schema: dict[str, Any]) -> tuple[dict[str, Any], Codec | None]:
    """Tool parameters for `schema` that are an object schema, and how to unwrap the arguments.

    Tool APIs take an object schema, with `"type": "object"` at its root, as a
    tool's parameters (OpenAI refuses any other with a 400). A schema that is one
    comes back as it is. A root that is only a reference (Pydantic's form for a
    model that refers to itself) is replaced by the definition it names, and an
    untyped root with object keywords (`properties`, `required`, ...) is typed as
    an object, as arguments always are. Anything else (an array, a string, a
    union) travels as `{"value": ...}`, and the returned codec takes the
    arguments back out; otherwise it is None.

    Examples:
        >>> object_root({"type": "array", "items": {"type": "string"}})[0]["required"]
        ['value']
        >>> object_root({"properties": {"a": {}}})[0]["type"]
        'object'
    """
    if schema.get("type") == "object" and _plain_refs(schema):
        return schema, None
    try:
        root, defs = normalise_refs(copy.deepcopy(schema), "tool")
    except DialectError:
        if _plain_refs(schema):
            return schema, None  # references only the schema as written resolves
        raise  # another resource's URI: no tool API follows one, nor does LangChain
    name = ref_name(root)
    if name in defs and set(root) <= {"$ref", "title", "description"}:
        root = dict(defs[name])
    unwrap = None
    if root.get("type") != "object":
        keys = root.keys()
        if "type" in root or not _OBJECT_WORDS & keys or _OTHER_SHAPES & keys:
            root = {"type": "object", "properties": {"value": root}, "required": ["value"]}
            unwrap = WrapCodec(IDENTITY)
        else:
            root = {"type": "object", **root}
    return ({**root, "$defs": defs} if defs else root), unwrap


def _plain_refs(schema: dict[str, Any]) -> bool:
    """Whether every `$ref` in `schema` is a JSON pointer LangChain's tool conversion follows.

    It follows `#` and `#/a/b`, but not an anchor (`#name`, or a draft-7
    `"$id": "#name"`), another resource's URI, or a pointer with an escape (`~1`,
    `%20`): it raises `ValueError` or `KeyError` when it binds the tool.
    """
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not _POINTER.fullmatch(ref):
                return False
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return True


def _hoist(variant: Variant, defs: dict[str, Any]) -> dict[str, Any]:
    """The variant's body for the envelope; its definitions go into `defs`.

    Inside the envelope the variant is no longer a document of its own: its
    `$id` (its base URI), its anchors and its references to its own root or to
    any other place outside its definitions would resolve against the envelope.
    So its references are first brought into one form, each to a definition
    (`normalise_refs`), and then only definitions move.
    """
    try:
        body, local = normalise_refs(copy.deepcopy(variant.json_schema), "envelope")
    except DialectError:
        return _embedded(variant)
    renames = _def_names(variant.name, local, defs)
    for name, sub in local.items():
        defs.setdefault(renames[name], _rewrite_refs(sub, renames))
    # A variant that refers to its own root has it among its definitions: the
    # body then refers to that definition rather than repeating it.
    root = next((name for name, sub in local.items() if sub == body), None)
    if root is not None:
        return {"$ref": f"#/$defs/{_escape(renames[root])}"}
    rewritten: dict[str, Any] = _rewrite_refs(body, renames)
    return rewritten


def _embedded(variant: Variant) -> dict[str, Any]:
    """The variant whole, as a resource of its own, where its references resolve as written.

    For the few references that cannot be pointed elsewhere exactly: those inside
    a sub-schema with an `$id` of its own, and dynamic references. Strict dialects
    refuse such a schema; a provider without one gets it exact.
    """
    body = copy.deepcopy(variant.json_schema)
    own = body.get("$id")
    if not isinstance(own, str) or own.startswith("#"):
        body = {"$id": f"urn:structx:variant:{variant.name}", **body}
    return body


def _def_names(prefix: str, local: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, str]:
    """Where each of a variant's definitions goes in the shared `$defs`.

    A definition keeps its name only when the shared one is identical once its
    own references are renamed. Renaming one definition changes every other
    that refers to it, so this is decided in two linear passes: each definition
    is compared once with the shared one, treating a reference to a definition
    that might keep its name as kept (and noting the dependency); then every
    definition that differs, and by the dependencies every one that refers to
    it, is renamed. A renamed reference never matches a shared one, since fresh
    names are taken by no shared definition.
    """
    renamed: list[str] = []
    needed_by: dict[str, list[str]] = {}
    for name, sub in local.items():
        if name not in defs:
            continue
        uses: list[str] = []
        if _same(sub, defs[name], uses):
            for used in uses:
                if used in defs and used in local:
                    needed_by.setdefault(used, []).append(name)
        else:
            renamed.append(name)
    moved = set(renamed)
    while renamed:
        for name in needed_by.get(renamed.pop(), ()):
            if name not in moved:
                moved.add(name)
                renamed.append(name)
    taken = set(defs) | set(local)
    return {name: _fresh(f"{prefix}__{name}", taken) if name in moved else name for name in local}


def _same(node: Any, shared: Any, uses: list[str]) -> bool:
    """Whether `node`, its references unrenamed, equals `shared`.

    Appends to `uses` the definition names `node` refers to: the equality holds
    only while each of them keeps its name.
    """
    if isinstance(node, list):
        return (
            isinstance(shared, list)
            and len(node) == len(shared)
            and all(_same(a, b, uses) for a, b in zip(node, shared, strict=True))
        )
    if not isinstance(node, dict):
        return bool(node == shared)
    if not isinstance(shared, dict) or node.keys() != shared.keys():
        return False
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_DEF_PREFIXES):
            if shared[key] != _renamed_ref(value, {}):
                return False
            uses.append(_unescape(value.split("/", 2)[2].partition("/")[0]))
        elif not _same(value, shared[key], uses):
            return False
    return True


def _fresh(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


_DEF_PREFIXES = ("#/$defs/", "#/definitions/")


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    """Copy `node`, pointing references at renamed definitions."""
    if isinstance(node, list):
        return [_rewrite_refs(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_refs(v, renames) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEF_PREFIXES):
        out["$ref"] = _renamed_ref(ref, renames)
    return out


def _renamed_ref(ref: str, renames: Mapping[str, str]) -> str:
    """`ref` pointed at the renamed definition, keeping any path inside it.

    Examples:
        >>> _renamed_ref("#/definitions/a~1b/properties/x", {"a/b": "V__a/b"})
        '#/$defs/V__a~1b/properties/x'
    """
    rest = ref.split("/", 2)[2]
    first, _, inside = rest.partition("/")
    name = _unescape(first)
    target = _escape(renames.get(name, name))
    return f"#/$defs/{target}/{inside}" if inside else f"#/$defs/{target}"


def _unescape(segment: str) -> str:
    # JSON pointer order: "~1" before "~0", so "~01" reads as "~1", not "/".
    return segment.replace("~1", "/").replace("~0", "~")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
