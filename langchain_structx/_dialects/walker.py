"""The one walker shared by every dialect.

`Walker.node` reads a (reference-normalised) JSON Schema node and returns the
provider's node plus the codec that moves values between both shapes. Each node is
first *prepared* (booleans, `$ref` with siblings, `allOf`, `oneOf`, type lists),
then handled by what it is: reference, union, enum, object, array, scalar or
free-form. Keywords its handler does not consume are kept when the dialect
enforces them, and otherwise moved into the node's description and reported in
`dropped`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any

from langchain_structx._dialects import objects, shapes
from langchain_structx._dialects.checks import SchemaChecks
from langchain_structx._dialects.codecs import (
    IDENTITY,
    ArrayCodec,
    Branch,
    Codec,
    JsonTextCodec,
    NullableCodec,
    RefCodec,
    Result,
    UnionCodec,
    WrapCodec,
)
from langchain_structx._dialects.guard import MAX_DEPTH
from langchain_structx._dialects.merge import merge_all
from langchain_structx._dialects.refs import ref_name, ref_to
from langchain_structx._dialects.rules import (
    ANNOTATIONS,
    CONDITIONALS,
    SILENT,
    Rules,
)
from langchain_structx._dialects.traversal import reachable
from langchain_structx._exceptions import DialectError

_NODE_BUDGET = 20_000
_MAX_WALK_DEPTH = 2 * MAX_DEPTH
_MAX_PREPARE_STEPS = 4 * MAX_DEPTH
_SCALARS = ("string", "number", "integer", "boolean", "null")


def short(value: Any, limit: int = 80) -> str:
    """Render a keyword value compactly for notes and `dropped`."""
    text = shapes.dump(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Walker:
    """Transform one schema for one dialect (single use)."""

    def __init__(
        self,
        rules: Rules,
        defs: dict[str, Any],
        *,
        carry_undeclared: bool = False,
        defaults_apply: bool = False,
    ) -> None:
        self.rules = rules
        self.carry_undeclared = carry_undeclared
        self.defaults_apply = defaults_apply
        self.defs = defs
        self.out_defs: dict[str, Any] = {}
        self.codecs: dict[str, Codec] = {}
        self.dropped: list[str] = []
        self.dropped_set: set[str] = set()
        self.depth = 0
        self.inlining: list[str] = []
        self.budget = _NODE_BUDGET
        self.original = SchemaChecks(defs)
        self.provider = SchemaChecks(self.out_defs, closed=not rules.closed_objects)

    def fail(self, reason: str) -> DialectError:
        """Build the error for a schema this dialect cannot express."""
        return DialectError(self.rules.name, reason)

    def drop(self, path: str, keyword: str, value: Any, why: str = "enforced by validation") -> str:
        """Record a lossy step; return its wording for the node's description."""
        line = f"{path}: {keyword} {short(value)} ({why})"
        if line not in self.dropped_set:
            self.dropped_set.add(line)
            self.dropped.append(line)
        return f"{keyword}: {short(value)}"

    # -- entry points -----------------------------------------------------------

    def run(self, root: Any) -> tuple[dict[str, Any], Codec, bool]:
        """Transform the root; wrap it when it is not an object schema."""
        out, codec = self.node(root, "$")
        name = ref_name(out)
        if name is not None:
            out = copy.deepcopy(self.out_defs[name])
        wrapped = out.get("type") != "object"
        if wrapped:
            out = shapes.close(self.rules, {"value": out}, ["value"])
            codec = WrapCodec(codec)
        defs = reachable(out, self.out_defs)
        if defs:
            out["$defs"] = defs
        if not self.rules.type_lists:
            shapes.split_type_lists(out)
        self.rules.limits(out)
        return out, codec, wrapped

    def node(self, schema: Any, path: str) -> Result:
        """Transform one schema node."""
        self.budget -= 1
        if self.budget < 0:
            raise self.fail(f"the schema expands to more than {_NODE_BUDGET} nodes")
        # The input was measured (guard), but rewriting adds levels (maps become
        # entry lists, tuples get a rest array): this bound keeps recursion in check.
        if self.depth >= _MAX_WALK_DEPTH:
            raise self.fail(f"{path}: the schema nests deeper than {_MAX_WALK_DEPTH} levels")
        self.depth += 1
        try:
            notes: list[str] = []
            prepared = self.prepare(schema, path, notes)
            out, codec = self.handler(prepared)(prepared, path, notes)
            return self.finish(out, prepared, path, notes), codec
        finally:
            self.depth -= 1

    def handler(self, schema: dict[str, Any]) -> Callable[[dict[str, Any], str, list[str]], Result]:
        """Pick the handler for a prepared node."""
        if "$ref" in schema:
            return self.reference
        if "anyOf" in schema:
            return self.union
        if "enum" in schema or "const" in schema:
            return self.enum
        json_type = shapes.json_type_of(schema)
        if json_type == "object":
            return partial(objects.object_node, self)
        if json_type == "array" and "prefixItems" in schema:
            return partial(objects.tuple_node, self)
        if json_type == "array":
            return self.array
        return self.scalar if json_type in _SCALARS else self.anything

    # -- preparation ------------------------------------------------------------

    def resolve(self, schema: Any) -> Any:
        """Inline a bare reference (used before merging)."""
        if isinstance(schema, dict) and set(schema) == {"$ref"}:
            name = ref_name(schema)
            if name is not None:
                return self.defs[name]
        return schema

    def prepare(self, schema: Any, path: str, notes: list[str]) -> dict[str, Any]:
        """Reduce booleans, `$ref` siblings, `allOf`, `oneOf` and type lists."""
        for _ in range(_MAX_PREPARE_STEPS):
            if schema is True:
                return {}
            if not isinstance(schema, dict):
                raise self.fail(f"{path}: the schema {short(schema)} accepts no value")
            if "$ref" in schema and set(schema) - SILENT - {"$ref"}:
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {"allOf": [{"$ref": schema["$ref"]}, rest]}
            if "allOf" in schema:
                schema = self.merge(schema, path, notes)
            elif "oneOf" in schema:
                schema = self.one_of(schema, path, notes)
            elif isinstance(schema.get("type"), list) and not {"enum", "const"} & schema.keys():
                schema = shapes.split_types(schema)
            else:
                prepared: dict[str, Any] = schema
                return prepared
        # Only `allOf`s that lead back to themselves through references get here.
        raise self.fail(f"{path}: allOf and $ref go round in a circle")

    def merge(self, schema: dict[str, Any], path: str, notes: list[str]) -> dict[str, Any]:
        """Fold `allOf` members (and the node's own keywords) into one schema."""
        members: list[Any] = [self.resolve(m) for m in schema["allOf"]]
        if any(m is False for m in members):
            raise self.fail(f"{path}: an allOf member accepts no value")
        own = {k: v for k, v in schema.items() if k != "allOf"}
        flat = [m if isinstance(m, dict) else {} for m in members]
        merged, conflicts = merge_all([*flat, own])
        for keyword, value in conflicts:
            notes.append(self.drop(path, f"allOf {keyword}", value))
        return merged

    def one_of(self, schema: dict[str, Any], path: str, notes: list[str]) -> dict[str, Any]:
        """Rewrite `oneOf` as `anyOf`, noting the lost exclusivity when it matters."""
        members = schema["oneOf"]
        rest = {k: v for k, v in schema.items() if k != "oneOf"}
        if not shapes.exclusive([self.resolve(m) for m in members]):
            notes.append(self.drop(path, "oneOf", "exactly one option must match", "as anyOf"))
        if "anyOf" in rest:
            return {"allOf": [rest, {"anyOf": members}]}
        return {**rest, "anyOf": members}

    def finish(
        self, out: dict[str, Any], schema: dict[str, Any], path: str, notes: list[str]
    ) -> dict[str, Any]:
        """Carry title and description over; describe dropped keywords and defaults."""
        if "$ref" in out:
            return out
        for key in ("default", "examples"):
            # A `null` default says only that absent means null: nothing to tell.
            if key in schema and not (key == "default" and schema[key] is None):
                notes.append(self.drop(path, key, schema[key], "described, not applied"))
        if isinstance(schema.get("title"), str):
            out["title"] = schema["title"]
        own, inner = schema.get("description"), out.get("description")
        if isinstance(own, str):
            out["description"] = f"{own} {inner}" if inner and inner != own else own
        base = out.get("description", "")
        notes = [note for note in dict.fromkeys(notes) if note not in base]
        if notes:
            text = "; ".join(notes)
            out["description"] = f"{base} ({text})" if base else f"({text})"
        return out

    def leftovers(
        self, schema: dict[str, Any], json_type: str, used: set[str], path: str, notes: list[str]
    ) -> dict[str, Any]:
        """Keep what the dialect enforces among unused keywords; note the rest."""
        kept: dict[str, Any] = {}
        for key, value in schema.items():
            if key in used or key in ANNOTATIONS or key in SILENT or key == "type":
                continue
            if self.rules.keeps(json_type, key, value):
                kept[key] = value
            else:
                notes.append(self.drop(path, key, value))
        return kept

    # -- handlers ---------------------------------------------------------------

    def reference(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """Keep a reference (transforming its definition once) or inline it."""
        name = ref_name(schema)
        if name is None or name not in self.defs:
            raise self.fail(f"{path}: $ref {schema.get('$ref')!r} cannot be resolved")
        if self.rules.refs == "inline" and not (
            name in self.inlining and self.rules.optional_cycles
        ):
            if name in self.inlining:
                dialect = self.rules.name
                raise self.fail(
                    f"recursive definition {name!r} needs $ref, not accepted by {dialect}"
                )
            self.inlining.append(name)
            try:
                return self.node(self.defs[name], f"$.$defs.{name}")
            finally:
                self.inlining.pop()
        if name not in self.out_defs:
            self.out_defs[name] = {}
            self.out_defs[name], self.codecs[name] = self.node(self.defs[name], f"$.$defs.{name}")
        return ref_to(name), RefCodec(name, self.codecs)

    def union(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """`anyOf`: a nullable member, or members told apart by validation."""
        base = {k: v for k, v in schema.items() if k not in ANNOTATIONS | CONDITIONALS | {"anyOf"}}
        members = [{"allOf": [base, m]} if base else m for m in schema["anyOf"]]
        prepared = [self.prepare(m, f"{path}.anyOf[{i}]", notes) for i, m in enumerate(members)]
        for key in CONDITIONALS & schema.keys():
            notes.append(self.drop(path, key, schema[key]))
        nullable = any(shapes.is_null(m) for m in prepared)
        rest = [(i, m) for i, m in enumerate(prepared) if not shapes.is_null(m)]
        if not rest:
            return {"type": "null"}, IDENTITY
        results = [self.node(m, f"{path}.anyOf[{i}]") for i, m in rest]
        if len(results) == 1:
            out, codec = results[0]
        else:
            members, codec = self.union_members([m for _, m in rest], results)
            out = {"anyOf": members}
        if nullable:
            out = shapes.nullable(out)
            codec = codec if codec.identity else NullableCodec(codec)
        return out, codec

    def union_members(
        self, originals: list[dict[str, Any]], results: list[Result]
    ) -> tuple[list[Any], Codec]:
        """Build the members and codec of a union.

        When members are not told apart by a tag property, a member whose codec
        changes values (a map sent as a list, absent keys sent as null, ...) could
        be mistaken for another member of overlapping type; such a member is wrapped
        in an object with one naming key (`entries`, `json`, its title, ...).
        """
        if all(codec.identity for _, codec in results):
            return [out for out, _ in results], IDENTITY
        sent = [shapes.types_of(out, self.out_defs) for out, _ in results]
        tagged = shapes.exclusive([self.resolve(m) for m in originals])
        members: list[Any] = []
        branches: list[Branch] = []
        tags: set[str] = set()
        for i, (orig, (out, codec)) in enumerate(zip(originals, results, strict=True)):
            clash = any(shapes.overlap(sent[i], other) for j, other in enumerate(sent) if j != i)
            if not (codec.identity or tagged or not clash):
                original_types = shapes.types_of(orig, self.defs)
                name = shapes.tag_for(self.resolve(orig), original_types, sent[i], i)
                tag = shapes.unique(name, tags)
                tags.add(tag)
                out, codec = shapes.close(self.rules, {tag: out}, [tag]), WrapCodec(codec, tag)
            members.append(out)
            branches.append(Branch(self.original.check(orig), self.provider.check(out), codec))
        return members, UnionCodec(tuple(branches))

    def enum(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """`enum`/`const`: native when the dialect takes the values, else JSON text."""
        values = self.original.enum_values(schema)
        if not values:
            raise self.fail(f"{path}: no value satisfies the enum")
        native = shapes.native_enum(values, self.rules, "const" in schema)
        if native is not None:
            return native, IDENTITY
        rest = [v for v in values if v is not None]
        out: dict[str, Any] = {"type": "string", "enum": [shapes.dump(v) for v in rest]}
        notes.append("each option is written as JSON text")
        codec: Codec = JsonTextCodec(tuple(rest))
        if len(rest) < len(values):
            return shapes.nullable(out), NullableCodec(codec)
        return out, codec

    def anything(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """A free-form value: carried as JSON text."""
        self.leftovers(schema, "any", set(), path, notes)
        return {"type": "string", "description": shapes.JSON_TEXT}, JsonTextCodec()

    def scalar(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """string, number, integer, boolean or null with the enforced constraints."""
        json_type = schema["type"]
        out = {"type": json_type, **self.leftovers(schema, json_type, set(), path, notes)}
        return out, IDENTITY

    def array(self, schema: dict[str, Any], path: str, notes: list[str]) -> Result:
        """A list: transform the item schema."""
        items, codec = self.node(schema.get("items", True), f"{path}.items")
        kept = self.leftovers(schema, "array", {"items"}, path, notes)
        return {"type": "array", "items": items, **kept}, (
            IDENTITY if codec.identity else ArrayCodec(codec)
        )
