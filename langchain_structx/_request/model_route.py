"""Deciding once what a plan sends to one model beside one set of tools.

Every attempt of every run asks the same questions before it calls the model:
which model the call will reach, which of the caller's tools clash with ours,
which names are declared, the provider's dialect, and the request pieces of the
strategy it runs. The answers depend only on the plan, the model object (its
class and identity: its settings are read at every call) and the caller's
tools, so a `Route` holds them, and each plan keeps the routes of the models
and tool sets it has met. A route keeps its model and tools alive (so their ids
are never reused while it is kept), and the routes are bounded: a caller that
makes a new model or new tools for every call costs a route per call and keeps
at most `KEPT_ROUTES` of them, never unbounded memory.

What changes from run to run (the fallback memory, the run's progress) is not
in a route: the attempt loop reads it at every run.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_structx._models import capabilities as caps
from langchain_structx._request import quirks
from langchain_structx._request.plan import CallSpec, Plan
from langchain_structx.dialects import Dialect
from langchain_structx.strategies import StrategyName

KEPT_ROUTES = 64
"""Routes (model and tool set) one plan keeps."""


@dataclass(slots=True)
class Route:
    """What a plan sends to one model beside one set of the caller's tools.

    Attributes:
        model: The model whose capabilities and identity count (for a
            configurable model, the one built for this call).
        user_tools: Names of the caller's tools.
        declared: Names of every tool the model may call: ours and the caller's.
        native: The model's own strict dialect, if its provider has one.
        plain: Whether no provider adjustment can concern the model's class
            (`_quirks.plain`), so its settings need no reading at each call.
        refused: Strategies AutoStrategy leaves for good beside these tools: the
            provider refused one for a reason in the caller's tools (some
            clients change them on that route). Replaced, never changed in
            place, so a run reading it never sees it change.
    """

    model: Any
    user_tools: frozenset[str]
    declared: frozenset[str]
    native: Dialect | None
    plain: bool = False
    refused: frozenset[StrategyName] = frozenset()
    _specs: dict[tuple[StrategyName, bool, bool], CallSpec] = field(default_factory=dict)

    def spec(
        self, plan: Plan, strategy: StrategyName, *, json_mode: bool, unforced: bool
    ) -> CallSpec:
        """The request pieces of `strategy` for this model, built once per setting.

        The model's own settings (thinking, its endpoint) are read at every call,
        so a model changed after its first call is asked as it now is.

        Args:
            plan: The plan the route belongs to.
            strategy: The strategy to ask with.
            json_mode: Whether JSON mode may be asked for (the provider has not
                refused it).
            unforced: Whether the run leaves the tool choice to the model (the
                provider refused a forced one).

        Raises:
            DialectError: When the schema cannot be expressed as this model's
                provider needs it (never kept: each run meets it afresh).
        """
        plain = self.plain
        forced = not unforced and (plain or quirks.forces_tools(self.model))
        key = (strategy, json_mode, forced)
        found = self._specs.get(key)
        if found is None:
            found = self._specs[key] = plan.call_spec(
                strategy,
                dialect=plan.strict_dialect(self.native),
                native=self.native,
                alone=not self.user_tools,
                json_mode=json_mode,
                forced=forced,
            )
        return found if plain else quirks.for_model(found, self.model)


class _Routes:
    """One plan's routes, by the identity of the model and of each tool."""

    def __init__(self) -> None:
        self._routes: dict[int | tuple[int, ...], tuple[Any, tuple[Any, ...], Route]] = {}
        self._lock = threading.Lock()

    def get(self, plan: Plan, model: Any, tools: Sequence[Any]) -> Route:
        key = (id(model), *map(id, tools)) if tools else id(model)
        kept = self._routes.get(key)
        # The objects are kept with their route, so an id is never reused for another.
        if (
            kept is not None
            and kept[0] is model
            and (not tools or all(map(operator.is_, kept[1], tools)))
        ):
            return kept[2]
        route = _route(plan, model, tools)
        with self._lock:
            self._routes[key] = (model, tuple(tools), route)
            while len(self._routes) > KEPT_ROUTES:
                del self._routes[next(iter(self._routes))]
        return route


def route(plan: Plan, model: Any, tools: Sequence[Any]) -> Route:
    """The route of `plan` to `model` beside `tools`, decided once per model and tool set.

    Raises:
        UserError: When one of `tools` is named like a structured-output variant.
    """
    chosen = caps.chosen_model(model)
    if chosen is not model:
        # A configurable model builds a new model for every call.
        return _route(plan, chosen, tools)
    return plan.memo("routes", _Routes).get(plan, model, tools)


def _route(plan: Plan, model: Any, tools: Sequence[Any]) -> Route:
    plan.check_tools(tools)
    user_tools = caps.tool_names(tools)
    declared = plan.tool_names | user_tools
    return Route(model, user_tools, declared, caps.model_dialect(model), quirks.plain(model))
