"""Routing by the variant a structured answer matched: `route_by_kind` and its checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_structx._request.plan import as_strategy
from langchain_structx.errors import RouteError
from langchain_structx.report import KIND_KEY


def check_routes(names: Sequence[str], routes: Mapping[str, str]) -> None:
    """Check that every variant has a route and every route a variant.

    Raises:
        RouteError: Naming the variants without a route, or the unknown names.
    """
    _check_targets(routes.values())
    problems = []
    missing = [n for n in names if n not in routes]
    if missing:
        problems.append(f"No route for variant(s) {', '.join(missing)}; add them to routes.")
    unknown = [n for n in routes if n not in names]
    if unknown:
        problems.append(
            f"Route(s) for unknown variant(s) {', '.join(unknown)}; known: {', '.join(names)}."
        )
    if problems:
        # Both at once: a misspelt variant is usually one of each.
        raise RouteError(" ".join(problems))


def _check_targets(targets: Any) -> None:
    wrong = [t for t in targets if not isinstance(t, str) or not t]
    if wrong:
        raise RouteError(f"Routes must lead to node names, got {wrong!r}.")


class KindRouter:
    """A conditional-edge router from `structured_response_kind` to a node.

    Its return annotation lists its destinations, so even without a `path_map`
    LangGraph refuses at compile time a route to a node the graph lacks.

    Attributes:
        routes: Variant name to node name.
        default: Node for states without a known kind, or None to raise.
    """

    def __init__(self, routes: Mapping[str, str], default: str | None) -> None:
        _check_targets([*routes.values(), *([] if default is None else [default])])
        self.routes = dict(routes)
        self.default = default
        if self.destinations:
            # LangGraph reads `get_type_hints(router)` for a router without a path_map.
            self.__annotations__ = {"return": Literal[tuple(self.destinations)]}

    @property
    def destinations(self) -> list[str]:
        """Every node this router may go to; pass it as `path_map`."""
        found = list(dict.fromkeys(self.routes.values()))
        return [*found, self.default] if self.default and self.default not in found else found

    def __call__(self, state: Any) -> str:
        """Pick the next node for `state`."""
        if isinstance(state, Mapping):
            kind = state.get(KIND_KEY)
        else:
            kind = getattr(state, KIND_KEY, None)
        if kind in self.routes:
            return self.routes[kind]
        if self.default is not None:
            return self.default
        raise RouteError(f"No route for structured_response_kind {kind!r}.")


def route_by_kind(
    routes: Mapping[str, str], *, schema: Any = None, default: str | None = None
) -> KindRouter:
    """A router for `add_conditional_edges` that follows the variant's name.

    Args:
        routes: Variant name to node name.
        schema: The node, strategy or schema whose variants must all be routed;
            given it, a missing route is an error now, not at run time.
        default: Node for an unknown kind; without it an unknown kind raises.

    Returns:
        The router; use `graph.add_conditional_edges(src, router, router.destinations)`.

    Raises:
        RouteError: When `schema` has a variant without a route, or vice versa.

    Examples:
        >>> router = route_by_kind({"Contact": "save", "Event": "plan"})
        >>> router({"structured_response_kind": "Event"})
        'plan'
    """
    if schema is not None:
        check_routes(_names_of(schema), routes)
    return KindRouter(routes, default)


def _names_of(schema: Any) -> tuple[str, ...]:
    names = getattr(schema, "variant_names", None)  # a StructuredOutputNode
    if names is not None:
        return tuple(names)
    return as_strategy(schema).schemas.names
