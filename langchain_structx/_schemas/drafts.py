"""Schemas written for older drafts, rewritten to say the same thing in Draft 2020-12.

Every schema is validated as Draft 2020-12, whatever its `$schema` names (see
`_validate`). Four forms of drafts 4 to 2019-09 are common in schemas written by
hand or by older tools, and 2020-12 either ignores them (so a rule of the schema
would silently not hold) or refuses them. Each is rewritten to the 2020-12 form
with the same meaning before anything else reads the schema:

- `dependencies` (drafts 4-7): its lists of names become `dependentRequired`,
  its schemas `dependentSchemas`;
- `items` as a list (drafts 4-2019-09), a tuple: it becomes `prefixItems`, and
  `additionalItems` becomes `items`;
- a boolean `exclusiveMaximum`/`exclusiveMinimum` (draft 4): the bound moves from
  `maximum`/`minimum` into it;
- an `$id` that is only a fragment (`"#address"`, drafts 6-7's way to name a
  subschema for `$ref`): it becomes `$anchor`.

None of these forms means anything else in 2020-12, so a 2020-12 schema comes back
as the very same object. Only places that hold schemas are rewritten: a property
called `dependencies` stays a property. A `$ref` that points into a rewritten
place no longer resolves, which the schema's checks report.

`refs_apart` is a rewrite of another kind, made after any union is split: a
`$ref` with rules beside it becomes an `allOf`, which means the same, for those
who inline references by merging.

This module knows nothing of models or of LangChain.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from langchain_structx._validation.bounds import schema_shape_problem
from langchain_structx._validation.reach import META_SCHEMA_MAP, ONE_SCHEMA, SCHEMA_LIST
from langchain_structx._validation.validate import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

_ANCHOR = re.compile(r"#[A-Za-z_][-A-Za-z0-9._]*")
"""A plain-name fragment, which 2020-12 spells as an `$anchor` (without the `#`)."""

# Where subschemas sit: where validation looks, plus the older drafts' own places.
_ONE = ONE_SCHEMA | {"additionalItems"}
_LIST = SCHEMA_LIST | {"items"}  # `items` as a list: a draft-7 tuple
_MAP = META_SCHEMA_MAP  # with `dependencies`, whose values may be schemas


def upgrade(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with the older drafts' forms in their Draft 2020-12 spelling.

    Args:
        schema: A JSON schema, as a user gave it.

    Returns:
        The same object when nothing needed rewriting (any 2020-12 schema, and
        any schema too big, too deep or not JSON, which its checks refuse);
        otherwise a copy, sharing the parts that did not change, whose
        `$schema`, where one named an older draft, names 2020-12.

    Examples:
        >>> upgrade({"dependencies": {"card": ["billing"]}})
        {'dependentRequired': {'card': ['billing']}}
        >>> upgrade({"type": "array", "items": [{"type": "string"}], "additionalItems": False})
        {'type': 'array', 'prefixItems': [{'type': 'string'}], 'items': False}
        >>> upgrade({"maximum": 5, "exclusiveMaximum": True})
        {'exclusiveMaximum': 5}
    """
    if (
        schema_shape_problem(schema, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES)
        is not None
    ):
        return schema
    upgraded = _rewritten(schema, _DRAFT_FORMS)
    if upgraded is not schema and "$schema" in upgraded:
        upgraded["$schema"] = DRAFT_2020_12
    return upgraded  # type: ignore[no-any-return]


def refs_apart(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with each `$ref` that has rules beside it moved into an `allOf`.

    In Draft 2020-12 a `$ref` and the keywords beside it all apply, which is what
    `allOf` says too. But whoever inlines references by merging the definition
    into the referring object (LangChain's `dereference_refs`, which binding a
    tool runs; the prompt's own inliner) lets those keywords replace the
    definition's own (`properties`, `required`): the model would be shown less
    than validation asks for. Beside annotations only (`description`, ...), a
    `$ref` stays as it is; so does one in a subschema that sets its own
    identifier or anchors. As `upgrade`, a schema with nothing to move comes back
    as the same object.

    Examples:
        >>> refs_apart({"$ref": "#/$defs/P", "required": ["level"]})
        {'required': ['level'], 'allOf': [{'$ref': '#/$defs/P'}]}
        >>> refs_apart({"$ref": "#/$defs/P", "description": "The boss"})
        {'$ref': '#/$defs/P', 'description': 'The boss'}
    """
    if (
        schema_shape_problem(schema, max_depth=MAX_SCHEMA_DEPTH, max_nodes=MAX_SCHEMA_NODES)
        is not None
    ):
        return schema
    return _rewritten(schema, (_ref_beside_rules,))  # type: ignore[no-any-return]


Form = Callable[[dict[str, Any]], bool]
"""Rewrites one schema object in place; True when it changed it."""


def _rewritten(node: Any, forms: tuple[Form, ...]) -> Any:
    """`node`, or a copy with its subschemas and its own keywords rewritten by `forms`."""
    if not isinstance(node, dict):
        return node  # a boolean schema, or something the meta-schema refuses
    changed: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict) and key in _ONE:
            new = _rewritten(value, forms)
        elif isinstance(value, list) and key in _LIST:
            new = [_rewritten(v, forms) for v in value]
            new = value if all(a is b for a, b in zip(new, value, strict=True)) else new
        elif isinstance(value, dict) and key in _MAP:
            new = {name: _rewritten(v, forms) for name, v in value.items()}
            new = value if all(new[k] is v for k, v in value.items()) else new
        else:
            continue
        if new is not value:
            changed[key] = new
    result = {**node, **changed}
    rewrote = [form(result) for form in forms]
    return result if changed or any(rewrote) else node


_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated"}
    | {"readOnly", "writeOnly"}
)
_SCOPES = frozenset({"$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$schema"})


def _ref_beside_rules(schema: dict[str, Any]) -> bool:
    ref, all_of = schema.get("$ref"), schema.get("allOf", [])
    if not isinstance(ref, str) or not isinstance(all_of, list) or not _SCOPES.isdisjoint(schema):
        return False
    if all(key == "$ref" or key in _ANNOTATIONS for key in schema):
        return False
    del schema["$ref"]
    # At the end: a pointer into the existing `allOf` keeps its index.
    schema["allOf"] = [*all_of, {"$ref": ref}]
    return True


def _split_dependencies(schema: dict[str, Any]) -> bool:
    dependencies = schema.get("dependencies")
    if not isinstance(dependencies, dict):
        return False
    names = {k: v for k, v in dependencies.items() if isinstance(v, list)}
    schemas = {k: v for k, v in dependencies.items() if not isinstance(v, list)}
    required = schema.get("dependentRequired", {})
    applied = schema.get("dependentSchemas", {})
    well_formed = all(_distinct_names(v) for v in names.values()) and all(
        isinstance(v, (dict, bool)) for v in schemas.values()
    )
    targets = isinstance(required, dict) and isinstance(applied, dict)
    if not (well_formed and targets and all(_distinct_names(v) for v in required.values())):
        return False  # left as written, for the checks to say what is wrong in its words
    del schema["dependencies"]
    if names:
        merged = {**required}
        for key, more in names.items():
            earlier = merged.get(key, [])
            seen = set(earlier)
            merged[key] = [*earlier, *(n for n in more if n not in seen)]
        schema["dependentRequired"] = merged
    if schemas:
        both = {k: {"allOf": [applied[k], v]} for k, v in schemas.items() if k in applied}
        schema["dependentSchemas"] = {**applied, **schemas, **both}
    return True


def _distinct_names(names: Any) -> bool:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return False
    return len(set(names)) == len(names)


def _tuple_items(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    if not isinstance(items, list) or "prefixItems" in schema:
        return False
    if not all(isinstance(item, (dict, bool)) for item in items):
        return False
    del schema["items"]
    schema["prefixItems"] = items
    if "additionalItems" in schema:  # absent, any further item is allowed
        schema["items"] = schema.pop("additionalItems")
    return True


def _exclusive_bounds(schema: dict[str, Any]) -> bool:
    rewrote = False
    for exclusive, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
        flag, limit = schema.get(exclusive), schema.get(bound)
        number = isinstance(limit, (int, float)) and not isinstance(limit, bool)
        if flag is True and number:
            schema[exclusive] = schema.pop(bound)
        elif flag is False:  # the bound stays inclusive
            del schema[exclusive]
        else:
            continue
        rewrote = True
    return rewrote


def _fragment_id(schema: dict[str, Any]) -> bool:
    given = schema.get("$id")
    if not isinstance(given, str) or "$anchor" in schema:
        return False
    if not _ANCHOR.fullmatch(given):
        return False
    del schema["$id"]
    schema["$anchor"] = given[1:]
    return True


_DRAFT_FORMS: tuple[Form, ...] = (
    _split_dependencies,
    _tuple_items,
    _exclusive_bounds,
    _fragment_id,
)
