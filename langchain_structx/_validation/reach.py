"""Checks on every subschema validation can reach, made when a validator is built.

Two gaps are closed here, each in time linear in the schema:

- jsonschema's check against the meta-schema is quadratic on some lists: a `type`
  or `required` list whose items cannot be sorted (`[0, "t0", "t1", ...]`) makes
  its `uniqueItems` compare every pair. So before the meta-schema runs, every list
  it would compare that way is checked here, in one pass: `type` lists distinct
  type names, `required` (and the lists of `dependentRequired` and `dependencies`)
  distinct strings. The same pass bounds what compiling the patterns costs
  (`_regexes.compile_cost`): each one, and all of them together.
- The meta-schema sees a schema's usual places only, and `_regexes` used to compile
  the patterns of those places only; but a `$ref` may lead anywhere in the
  document, under an unknown keyword say, and validation follows it. So every
  reference is followed here: each target gets the list and pattern checks above,
  every pattern validation can reach is compiled, and `patternProperties` may not
  meet `unevaluatedProperties` anywhere validation can reach (jsonschema would
  match those patterns in `re`, outside the deadline).

Targets are checked against the meta-schema, and references for where they lead,
by `_references.check_references`, which runs after `check_reachable`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from langchain_structx._clip import clip
from langchain_structx._exceptions import SchemaError, ValidationIssue
from langchain_structx._validation.bounds import offline_registry, preview
from langchain_structx._validation.regex_cost import compile_cost
from langchain_structx._validation.regexes import MAX_PATTERN_COST, compile_or_fail

MAX_PATTERNS_COST = 1_000_000
"""Most the distinct patterns of one schema may cost to compile, all together."""

TYPE_NAMES = ("array", "boolean", "integer", "null", "number", "object", "string")
_TYPE_LIST = ", ".join(TYPE_NAMES)

ONE_SCHEMA = frozenset(
    {"additionalProperties", "contains", "contentSchema", "else", "if", "items", "not"}
    | {"propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
)
"""Keywords whose value is one subschema (validation reads them; `_drafts` too)."""
SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
"""Keywords whose value is a list of subschemas."""
SCHEMA_MAP = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
"""Keywords whose value maps names to subschemas."""
META_SCHEMA_MAP = SCHEMA_MAP | {"dependencies"}
"""The meta-schema also checks the old `dependencies` (validation ignores it; `_drafts`
rewrites a well-formed one, so only a broken one is left here, for the checks to name)."""

_Link = tuple[str | int, "_Link"] | None


def check_reachable(
    schema: Mapping[str, Any], check_meta_schema: Callable[[Mapping[str, Any]], None]
) -> Registry[Any]:
    """Check `schema` (with `check_meta_schema`) and every subschema validation can reach.

    Returns:
        The schema's offline registry, for the validator.

    Raises:
        SchemaError: A list the meta-schema would compare pair by pair is not made
            of distinct names; a pattern does not compile or costs too much to;
            `patternProperties` meets `unevaluatedProperties`; or the meta-schema
            refuses the schema.
    """
    lists = _Prechecks()
    lists.check(schema, "")
    check_meta_schema(schema)
    registry = offline_registry(schema)
    _Reach(lists).walk(schema, registry)
    return registry


class _Prechecks:
    """The linear checks made on each subschema before the meta-schema sees it."""

    def __init__(self) -> None:
        self.done: set[int] = set()
        self.patterns: set[str] = set()
        self.cost = 0

    def check(self, start: Mapping[str, Any], where: str) -> None:
        """Check `start` and the subschemas in its usual places (`where` names a target)."""
        stack: list[tuple[Mapping[str, Any], _Link]] = [(start, None)]
        while stack:
            node, link = stack.pop()
            if id(node) in self.done:
                continue
            self.done.add(id(node))
            problem = _lists_problem(node)
            if problem is not None:
                raise SchemaError(f"Invalid JSON schema: {problem}, {_place(link, where)}.")
            for pattern in _patterns(node):
                self._count(pattern)
            children = _children(node, META_SCHEMA_MAP)
            stack.extend((child, _extended(link, steps)) for steps, child in children)

    def _count(self, pattern: str) -> None:
        if pattern in self.patterns:
            return
        cost = compile_cost(pattern)
        if cost > MAX_PATTERN_COST:
            raise SchemaError(
                f"Invalid pattern {clip(repr(pattern), 200)} in schema: its repetitions "
                f"would make it longer than {MAX_PATTERN_COST} characters to compile"
            )
        self.patterns.add(pattern)
        self.cost += cost
        if self.cost > MAX_PATTERNS_COST:
            raise SchemaError(
                "Invalid JSON schema: its patterns would come to more than "
                f"{MAX_PATTERNS_COST} characters to compile, repetitions included."
            )


class _Reach:
    """One pass over a schema and the target of every reference it reaches."""

    def __init__(self, prechecks: _Prechecks) -> None:
        self._prechecks = prechecks
        self._seen: set[tuple[int, str]] = set()
        self._pattern_properties = self._unevaluated = False

    def walk(self, schema: Mapping[str, Any], registry: Registry[Any]) -> None:
        root: Resource[Any] = DRAFT202012.create_resource(schema)
        stack: list[tuple[Mapping[str, Any], Any]] = [(schema, registry.resolver_with_root(root))]
        while stack:
            node, resolver = stack.pop()
            # The base URI decides where the node's own references lead.
            key = (id(node), str(getattr(resolver, "_base_uri", "")))
            if key in self._seen:
                continue
            self._seen.add(key)
            self._visit(node)
            stack.extend(self._targets(node, resolver))
            for _, child in _children(node, SCHEMA_MAP):
                inner = _inner(resolver, child)
                if inner is not None:
                    stack.append((child, inner))
        if self._pattern_properties and self._unevaluated:
            raise SchemaError(
                "A schema may not combine patternProperties with unevaluatedProperties: "
                "their patterns could not be checked within the time limit."
            )

    def _visit(self, node: Mapping[str, Any]) -> None:
        for pattern in _patterns(node):
            compile_or_fail(pattern)
        self._pattern_properties |= bool(node.get("patternProperties"))
        self._unevaluated |= node.get("unevaluatedProperties", True) is not True

    def _targets(self, node: Mapping[str, Any], resolver: Any) -> Iterator[tuple[Any, Any]]:
        for keyword in ("$ref", "$dynamicRef"):
            if keyword not in node:
                continue
            try:
                resolved = resolver.lookup(node[keyword])
            except Exception:  # noqa: BLE001 - `check_references` reports it, worded
                continue
            target = resolved.contents
            if isinstance(target, Mapping):
                self._prechecks.check(target, f"in the target of {clip(repr(node[keyword]), 80)}")
                yield target, resolved.resolver


def _inner(resolver: Any, child: Mapping[str, Any]) -> Any:
    """The resolver inside `child`, as validation makes it; None if its `$id` is broken."""
    if "$id" not in child:
        return resolver
    try:
        return resolver.in_subresource(DRAFT202012.create_resource(child))
    except Exception:  # noqa: BLE001 - the meta-schema or `check_references` reports it
        return None


def _children(
    node: Mapping[str, Any], maps: frozenset[str]
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """The objects among `node`'s subschemas, each with the keys that lead to it."""
    for keyword, value in node.items():
        if keyword in ONE_SCHEMA:
            pairs: Any = ((None, value),)
        elif keyword in SCHEMA_LIST and isinstance(value, list):
            pairs = enumerate(value)
        elif keyword in maps and isinstance(value, Mapping):
            pairs = value.items()
        else:
            continue
        for step, child in pairs:
            if isinstance(child, Mapping):
                yield ((keyword,) if step is None else (keyword, step)), child


def _patterns(node: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(node.get("pattern"), str):
        yield node["pattern"]
    properties = node.get("patternProperties")
    if isinstance(properties, Mapping):
        yield from (key for key in properties if isinstance(key, str))


def _lists_problem(node: Mapping[str, Any]) -> str | None:
    types = node.get("type")
    if isinstance(types, list):
        problem = _names_problem(types, TYPE_NAMES)
        if problem is not None:
            return f"'type' {problem}; it may list only distinct type names ({_TYPE_LIST})"
    if isinstance(node.get("required"), list):
        problem = _names_problem(node["required"], None)
        if problem is not None:
            return f"'required' {problem}; it may list only distinct property names"
    for keyword in ("dependentRequired", "dependencies"):
        value = node.get(keyword)
        lists = value.values() if isinstance(value, Mapping) else ()
        for names in lists:
            problem = _names_problem(names, None) if isinstance(names, list) else None
            if problem is not None:
                return f"{keyword!r} {problem}; it may list only distinct property names"
    return None


def _names_problem(values: list[Any], allowed: tuple[str, ...] | None) -> str | None:
    """What is wrong with a list that must hold distinct strings (from `allowed`), if anything."""
    seen: set[str] = set()
    for value in values:
        if not isinstance(value, str) or (allowed is not None and value not in allowed):
            return f"lists {preview(value, 60)}"
        if value in seen:
            return f"lists {preview(value, 60)} twice"
        seen.add(value)
    return None


def _extended(link: _Link, steps: tuple[str | int, ...]) -> _Link:
    for step in steps:
        link = (step, link)
    return link


def _place(link: _Link, where: str) -> str:
    steps: list[str | int] = []
    while link is not None:
        steps.append(link[0])
        link = link[1]
    location = clip(ValidationIssue(tuple(reversed(steps)), "").location, 200)
    return f"at {location}" + (f" {where}" if where else "")
