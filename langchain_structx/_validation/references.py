"""The references inside one JSON schema, resolved and measured before any value is checked.

Validation follows `$ref`s recursively, so everything that could go wrong on the
way is found here, once, when a validator is built:

- `offline_registry` holds only the schema itself and refuses to fetch anything.
- `check_references` resolves every reference, those met inside the target of
  another reference included. Each target must be a schema (an object or a
  boolean); a target outside the places the meta-schema checks (under an unknown
  keyword, say) is checked against the meta-schema here, one object at a time.
- It also measures the longest run of subschemas applied *in place*, that is to
  the same part of a value (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`,
  `then`, `else`, `dependentSchemas`): each step costs the validator stack frames
  whatever the value, so a run longer than `MAX_REFERENCE_CHAIN`, or one that loops
  back on itself and would never end, is refused.
- It returns that length, so that a validation decides whether it fits on the caller's stack (see
  `_stack.call_with_deep_stack`).

This module imports no other module of the package but the exceptions and `_clip`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

from langchain_structx._clip import clip
from langchain_structx._exceptions import SchemaError

MAX_REFERENCE_CHAIN = 128
"""Most subschemas applied in place one after another (each `$ref` followed counts one)."""

_IN_PLACE_ONE = frozenset({"not", "if", "then", "else"})
_IN_PLACE_LIST = frozenset({"allOf", "anyOf", "oneOf"})
_IN_PLACE_MAP = frozenset({"dependentSchemas"})
_IN_PLACE = _IN_PLACE_ONE | _IN_PLACE_LIST | _IN_PLACE_MAP
_INNER_ONE = frozenset(
    {"additionalProperties", "contains", "contentSchema", "items", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties"}
)
_INNER_LIST = frozenset({"prefixItems"})
_INNER_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_ONE = _IN_PLACE_ONE | _INNER_ONE
_LIST = _IN_PLACE_LIST | _INNER_LIST
_MAP = _IN_PLACE_MAP | _INNER_MAP

_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)
"""The meta-schema's own validator, without format checks (patterns are checked elsewhere)."""

_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number"}

Key = tuple[int, str]
"""A schema object as the validator meets it: its identity and the base URI around it."""


def _refuse(uri: str) -> NoReturn:
    raise NoSuchResource(uri)


def offline_registry(schema: Mapping[str, Any]) -> Registry[Any]:
    """A registry holding only `schema`, which refuses to fetch anything else.

    Examples:
        >>> offline_registry({"$id": "urn:example:a"}).get_or_retrieve("urn:example:b")
        Traceback (most recent call last):
        ...
        referencing.exceptions.NoSuchResource: 'urn:example:b'
    """
    resource: Resource[Any] = DRAFT202012.create_resource(schema)
    registry: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
    crawled: Registry[Any] = registry.with_resource(resource.id() or "", resource).crawl()
    return crawled


def check_references(schema: Mapping[str, Any], registry: Registry[Any]) -> int:
    """Resolve every reference in `schema` now, so that validation never has to look one up.

    The schema must already have passed the meta-schema: only what it cannot see
    (the targets of references outside the usual places) is checked here.

    Returns:
        The longest run of subschemas applied in place to one part of a value.

    Raises:
        SchemaError: A reference points outside the document, nowhere in it, or at
            something that is not a valid schema; or the subschemas applied in place
            run longer than `MAX_REFERENCE_CHAIN`, or in a loop.

    Examples:
        >>> schema = {"properties": {"a": {"$ref": "#/required"}}, "required": ["a"]}
        >>> try:
        ...     check_references(schema, offline_registry(schema))
        ... except SchemaError as exc:
        ...     print(str(exc)[:70])
        Schema reference '#/required' ($ref) points at an array, not at a sche
    """
    return _Walk(schema, registry).longest()


def _key(node: Any, resolver: Any) -> Key:
    # The base URI decides where the node's own references lead.
    return id(node), str(getattr(resolver, "_base_uri", ""))


class _Walk:
    """One pass over a schema and every reference target it reaches."""

    def __init__(self, schema: Mapping[str, Any], registry: Registry[Any]) -> None:
        self.graph: dict[Key, list[tuple[Key, str | None]]] = {}
        """For each object, the objects applied in place to the same value (with the $ref)."""
        self.placed: set[int] = set()
        self.checked: set[int] = set()
        self.refs: list[tuple[Key, Any, Any, str]] = []
        self.anchors: dict[str, list[Key]] = {}
        self.dynamic: list[tuple[Key, str]] = []
        root: Resource[Any] = DRAFT202012.create_resource(schema)
        self._visit(schema, registry.resolver_with_root(root), first=True)
        self._follow()

    def _visit(self, start: Mapping[str, Any], resolver: Any, *, first: bool) -> Key:
        stack: list[tuple[Mapping[str, Any], Any]] = [(start, resolver)]
        while stack:
            node, resolver = stack.pop()
            key = _key(node, resolver)
            if key in self.graph:
                continue
            edges: list[tuple[Key, str | None]] = []
            self.graph[key] = edges
            if first:
                self.placed.add(id(node))
            anchor = node.get("$dynamicAnchor")
            if isinstance(anchor, str):
                self.anchors.setdefault(anchor, []).append(key)
            for keyword in ("$ref", "$dynamicRef"):
                if keyword in node:
                    self.refs.append((key, resolver, node[keyword], keyword))
            for child, in_place in _subschemas(node):
                self._admit(child, first=first)
                if "$id" in child:
                    inner = resolver.in_subresource(DRAFT202012.create_resource(child))
                else:
                    inner = resolver
                if in_place:
                    edges.append((_key(child, inner), None))
                stack.append((child, inner))
        return _key(start, resolver)

    def _admit(self, node: dict[str, Any], *, first: bool) -> None:
        """Check an object the meta-schema has not seen, before anything reads it."""
        if first or id(node) in self.placed or id(node) in self.checked:
            return
        error = best_match(_META.iter_errors(_shallow(node)))
        if error is not None:
            raise SchemaError(
                f"Invalid JSON schema: a reference leads to {clip(repr(node), 120)}, which is "
                f"not a valid schema: {clip(error.message, 200)}"
            )
        self.checked.add(id(node))

    def _follow(self) -> None:
        while self.refs:
            key, resolver, ref, keyword = self.refs.pop()
            resolved = _lookup(resolver, ref, keyword)
            target = resolved.contents
            if isinstance(target, bool):
                continue
            if not isinstance(target, dict):
                kind = "null" if target is None else _JSON_TYPES.get(type(target), "a value")
                raise SchemaError(
                    f"Schema reference {clip(repr(ref), 200)} ({keyword}) points at {kind}, "
                    "not at a schema (an object or a boolean)."
                )
            self._admit(target, first=False)
            self.graph[key].append((self._visit(target, resolved.resolver, first=False), ref))
            if keyword == "$dynamicRef":
                self.dynamic.append((key, ref))
        for key, ref in self.dynamic:
            # Resolved at run time to any object with the same dynamic anchor.
            name = ref.partition("#")[2]
            self.graph[key].extend((other, ref) for other in self.anchors.get(name, ()))

    def longest(self) -> int:
        """The most edges on one path through the in-place graph; refuses loops and long runs."""
        graph = self.graph
        steps: dict[Key, int] = {}
        for start in graph:
            if start in steps:
                continue
            path: list[tuple[Key, Iterator[tuple[Key, str | None]], str | None]] = [
                (start, iter(graph[start]), None)
            ]
            on_path = {start}
            while path:
                key, edges, _ = path[-1]
                for child, label in edges:
                    if child in on_path:
                        _refuse_loop(path, child, label)
                    if child not in steps:
                        path.append((child, iter(graph[child]), label))
                        on_path.add(child)
                        break
                else:
                    path.pop()
                    on_path.discard(key)
                    steps[key] = max((steps[c] + 1 for c, _ in graph[key]), default=0)
                    if steps[key] > MAX_REFERENCE_CHAIN:
                        raise SchemaError(
                            "Invalid JSON schema: it applies more than "
                            f"{MAX_REFERENCE_CHAIN} subschemas in a row to one part of a value "
                            "($ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas), "
                            "which is the most a schema may chain."
                        )
        return max(steps.values(), default=0)


def _refuse_loop(
    path: list[tuple[Key, Iterator[tuple[Key, str | None]], str | None]],
    back_to: Key,
    label: str | None,
) -> NoReturn:
    start = next(i for i, (key, _, _) in enumerate(path) if key == back_to)
    labels = [entry[2] for entry in path[start + 1 :]] + [label]
    ref = next((each for each in labels if each is not None), "?")
    raise SchemaError(
        f"Invalid JSON schema: the reference {clip(repr(ref), 200)} leads back to a schema "
        "that is still being applied to the same value, a loop validation would never leave."
    )


def _subschemas(node: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """The objects among a schema's subschemas, each with whether it applies in place."""
    for keyword, value in node.items():
        if keyword in _ONE:
            children: Any = (value,)
        elif keyword in _LIST and isinstance(value, list):
            children = value
        elif keyword in _MAP and isinstance(value, dict):
            children = value.values()
        else:
            continue
        in_place = keyword in _IN_PLACE
        for child in children:
            if isinstance(child, dict):
                yield child, in_place


def _shallow(node: dict[str, Any]) -> dict[str, Any]:
    """`node` with each subschema replaced by `true`: the meta-schema then checks one object."""
    shallow = dict(node)
    for keyword, value in node.items():
        if keyword in _ONE and isinstance(value, (dict, bool)):
            shallow[keyword] = True
        elif keyword in _LIST and isinstance(value, list) and all(_is_schema(v) for v in value):
            shallow[keyword] = [True] * len(value)
        elif keyword in _MAP and isinstance(value, dict) and all(map(_is_schema, value.values())):
            shallow[keyword] = dict.fromkeys(value, True)
    return shallow


def _is_schema(value: Any) -> bool:
    return isinstance(value, (dict, bool))


def _lookup(resolver: Any, ref: Any, keyword: str) -> Any:
    try:
        return resolver.lookup(ref)
    except (Unresolvable, TypeError, ValueError) as exc:
        raise SchemaError(
            f"Schema reference {clip(repr(ref), 200)} ({keyword}) does not resolve inside "
            f"the schema; references to other documents are not followed: {clip(str(exc), 200)}"
        ) from None
