"""Object-shaped nodes: plain objects, maps (open objects) and tuples.

* Optional properties stay optional where the dialect allows it. Where every
  property must be required (OpenAI), an optional property becomes nullable and
  `null` stands for "absent". A property that itself accepts `null` needs more
  only when absent and `null` validate to different values: when the validator
  fills in a `default` (`defaults_apply`: Pydantic models, dataclasses), absent
  is the default, so `null` stays `null` and an absent key is sent as its
  default (a `null` default makes both the same). Otherwise (a JSON schema, a
  TypedDict) an explicit `null` travels as `{"explicit_null": true}`.
* Open objects (`additionalProperties` true or a schema, `patternProperties`)
  cannot be closed without losing keys: their extra keys travel as a list of
  `{"key": ..., "value": ...}` entries, in a property `extra_properties` when the
  object also has named properties. An object that names properties and says
  nothing about others is closed, as every strict mode closes it, unless the
  walker was asked to carry undeclared keys (`carry_undeclared=True`).
* Tuples (`prefixItems`) travel as objects with keys `item_0`, `item_1`, ... plus
  `rest` for the items after the prefix.
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_structx._dialects import shapes
from langchain_structx._dialects.checks import SchemaChecks
from langchain_structx._dialects.codecs import (
    IDENTITY,
    Codec,
    Field,
    MapCodec,
    ObjectCodec,
    Result,
    TupleCodec,
)
from langchain_structx._dialects.rules import Rules
from langchain_structx._exceptions import DialectError


class Walker(Protocol):
    """What these handlers need of the walker that calls them (and that they call back)."""

    rules: Rules
    carry_undeclared: bool
    defaults_apply: bool
    original: SchemaChecks

    def node(self, schema: Any, path: str) -> Result:
        """Transform one sub-schema."""
        ...

    def fail(self, reason: str) -> DialectError:
        """Build the error for a schema the dialect cannot express."""
        ...

    def drop(self, path: str, keyword: str, value: Any, why: str = ...) -> str:
        """Record a lossy step; return its wording for the description."""
        ...

    def leftovers(
        self, schema: dict[str, Any], json_type: str, used: set[str], path: str, notes: list[str]
    ) -> dict[str, Any]:
        """Keep what the dialect enforces among unused keywords; note the rest."""
        ...


_MAP_KEYWORDS = frozenset(
    {"additionalProperties", "unevaluatedProperties", "patternProperties", "propertyNames"}
)
_OBJECT_USED = _MAP_KEYWORDS | {"properties", "required"}
_TUPLE_USED = frozenset({"prefixItems", "items", "minItems", "maxItems"})


def is_open(schema: dict[str, Any], carry_undeclared: bool = False) -> bool:
    """Tell whether an object node admits keys beyond its named properties.

    An object that names properties but says nothing about other keys is taken
    as closed (what every strict dialect, the SDKs and LangChain do with it);
    with `carry_undeclared=True` it is open, as JSON Schema has it.

    Examples:
        >>> node = {"type": "object", "properties": {"a": {}}}
        >>> is_open(node), is_open(node, carry_undeclared=True)
        (False, True)
    """
    default = carry_undeclared or "properties" not in schema
    extra = schema.get("additionalProperties", schema.get("unevaluatedProperties", default))
    return extra is not False or bool(schema.get("patternProperties"))


def object_node(w: Walker, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
    """Transform an object node (a map when it has no named properties)."""
    required = {r: None for r in schema.get("required", ()) if isinstance(r, str)}
    if is_open(schema, w.carry_undeclared) and "properties" not in schema and not required:
        return map_node(w, schema, path, notes, bounds=True)
    props = {**dict.fromkeys(required, True), **(schema.get("properties") or {})}
    out_props: dict[str, Any] = {}
    fields: dict[str, Field] = {}
    for name, sub in props.items():
        if sub is False:
            if name in required:
                raise w.fail(f"{path}: required property {name!r} accepts no value")
            continue
        out_sub, codec = w.node(sub, f"{path}.properties.{name}")
        if out_sub.get("title") == default_title(name):
            del out_sub["title"]  # says nothing the key does not
        out_props[name], fields[name] = _field(w, sub, out_sub, codec, name not in required)
    names = list(out_props) if w.rules.all_required else [n for n in out_props if n in required]
    extras_key, extras = None, IDENTITY
    if is_open(schema, w.carry_undeclared):
        extras_key = shapes.unique("extra_properties", out_props)
        out_props[extras_key], extras = map_node(w, schema, path, notes, bounds=False)
        names.append(extras_key)
    w.leftovers(schema, "object", set(_OBJECT_USED), path, notes)
    codec = ObjectCodec(fields, w.rules.all_required, extras_key, extras)
    filled = w.rules.all_required and any(n not in required for n in out_props)
    plain = not filled and all(f.codec.identity and not f.null_is_absent for f in fields.values())
    return shapes.close(w.rules, out_props, names), (
        IDENTITY if plain and not extras_key else codec
    )


def default_title(name: str) -> str:
    """The title Pydantic gives a field when none is set.

    Examples:
        >>> default_title("font_size")
        'Font Size'
    """
    return name.title().replace("_", " ").strip()


def _field(
    w: Walker, orig: Any, out: dict[str, Any], codec: Codec, optional: bool
) -> tuple[dict[str, Any], Field]:
    if not (optional and w.rules.all_required):
        return out, Field(codec)
    default = _applied_default(w, orig)
    if default is not _NO_DEFAULT:
        # Absent validates to the default: the key is sent as it is, and an
        # absent key as its default; `null` keeps its own meaning, if any.
        return out, Field(codec, absent_as=codec.encode(default))
    if not w.original.accepts(orig, None):
        return shapes.nullable(out), Field(codec, null_is_absent=True)
    marker = shapes.unique("explicit_null", shapes.dump(out))
    flag = {"type": "boolean", "const": True} if w.rules.const else {"type": "boolean"}
    meta: dict[str, Any] = {k: out[k] for k in ("title", "description") if k in out}
    inner = shapes.nullable({k: v for k, v in out.items() if k not in meta})
    members = inner["anyOf"] if set(inner) == {"anyOf"} else [inner]
    note = f'null: omitted; {{"{marker}": true}}: null'
    base = meta.get("description")
    marked: dict[str, Any] = {
        **meta,
        "description": f"{base} ({note})" if base else f"({note})",
        "anyOf": [*members, shapes.close(w.rules, {marker: flag}, [marker])],
    }
    return marked, Field(codec, null_is_absent=True, marker=marker)


_NO_DEFAULT: Any = object()


def _applied_default(w: Walker, orig: Any) -> Any:
    """The default the validator fills in for an absent key, or `_NO_DEFAULT`."""
    if not (w.defaults_apply and isinstance(orig, dict) and "default" in orig):
        return _NO_DEFAULT
    default = orig["default"]
    return default if w.original.accepts(orig, default) else _NO_DEFAULT


def _entry(key: Any, value: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"key": key, "value": value},
        "required": ["key", "value"],
        "additionalProperties": False,
    }


def map_node(
    w: Walker, schema: dict[str, Any], path: str, notes: list[str], *, bounds: bool
) -> Result:
    """Transform the open part of an object into a list of key/value entries."""
    names = schema.get("propertyNames")
    key: Any = {"type": "string"} if names is None else {"allOf": [{"type": "string"}, names]}
    patterns = schema.get("patternProperties") or {}
    # Pydantic writes `dict[constr(pattern=...), V]` as patterns alone, and refuses
    # other keys: unless undeclared keys are carried (a JSON schema's own), say so.
    others = w.carry_undeclared or not patterns
    extra = schema.get("additionalProperties", schema.get("unevaluatedProperties", others))
    entries = [_entry({"allOf": [key, {"pattern": p}]}, sub) for p, sub in patterns.items()]
    if extra is not False:
        entries.append(_entry(key, extra))
        if patterns:
            notes.append(w.drop(path, "additionalProperties", "only for keys matching no pattern"))
    entry = entries[0] if len(entries) == 1 else {"anyOf": entries}
    item, codec = w.node(entry, f"{path}.additionalProperties" if extra is not False else path)
    out: dict[str, Any] = {"type": "array", "items": item}
    if bounds:
        sizes = {"minItems": schema.get("minProperties"), "maxItems": schema.get("maxProperties")}
        sized = {k: v for k, v in sizes.items() if v is not None}
        out.update(w.leftovers(sized, "array", set(), path, notes))
        used = set(_OBJECT_USED) | {"minProperties", "maxProperties"}
        w.leftovers(schema, "object", used, path, notes)
    return out, MapCodec(codec)


def tuple_node(w: Walker, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
    """Transform a `prefixItems` tuple into an object keyed by position."""
    prefix = list(schema["prefixItems"])
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if high is not None:
        prefix = prefix[:high]
    names = [f"item_{i}" for i in range(len(prefix))]
    props: dict[str, Any] = dict(zip(names, prefix, strict=True))
    required = names[:low]
    rest_key = None
    items = schema.get("items", True)
    if items is not False and (high is None or high > len(prefix)):
        rest_key = "rest"
        rest: dict[str, Any] = {"type": "array", "items": items}
        if low > len(prefix):
            rest["minItems"] = low - len(prefix)
        if high is not None:
            rest["maxItems"] = high - len(prefix)
        props[rest_key] = rest
        required.append(rest_key)
    shape = {"type": "object", "properties": props, "required": required}
    out, codec = object_node(w, {**shape, "additionalProperties": False}, path, notes)
    w.leftovers(schema, "array", set(_TUPLE_USED), path, notes)
    return out, TupleCodec(codec, tuple(names), rest_key)
