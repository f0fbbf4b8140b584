"""Which strategy a run asks with: the one owner of that choice at run time.

A `StrategyChoice` is made for each run. It holds the order of the strategies
left to try (AutoStrategy's, minus what the fallback memory, the run's progress
and the route rule out), the settings the provider refused (JSON mode, a forced
tool choice), the routes the run dropped and why, and what goes to the
`FallbackMemory` for later runs, including what it learns of a serving engine's
constrained decoding (`_engine.constraints`). The attempt loop asks it which
request to send and tells it what happened; no other module reads or writes any
of that.

What must outlive a graph step is kept in the run's `Progress` (its `dropped`,
`suspects`, `unforced`, `without_json_mode` and `fallbacks` keys), and what is
about the caller's tools in the `Route`'s `refused` set; both are written here only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, cast

from langchain_structx._clip import clip
from langchain_structx._engine import constraints
from langchain_structx._engine.progress import Progress, as_usage
from langchain_structx._models import capabilities as caps
from langchain_structx._models.engines import Engine
from langchain_structx._request import quirks
from langchain_structx._request.model_route import Route
from langchain_structx._request.plan import CallSpec, Plan
from langchain_structx.errors import AttemptError, DialectError, ProviderRejectedError
from langchain_structx.strategies import Setting, StrategyName, behaviour

REASON_CHARS = 200
"""Longest provider message quoted in a fallback record."""


class StrategyChoice:
    """The strategies one run may still ask with, and how it moves from one to the next.

    Args:
        plan: The response format's plan.
        route: The plan's route to this model beside these tools.
        memory: What the agent or node remembers of rejected strategies and settings.
        tools: The caller's own tools.
        progress: The run's bookkeeping, carried across graph steps.
        engine: The serving engine behind the model, if one is known: its own
            constrained decoding is the provider route, and preferred.
    """

    def __init__(
        self,
        plan: Plan,
        route: Route,
        memory: caps.FallbackMemory,
        tools: Sequence[Any],
        progress: Progress,
        engine: Engine | None = None,
    ) -> None:
        self._plan = plan
        self._route = route
        self._memory = memory
        self._progress = progress
        self._engine = engine
        self._recall_settings()
        self.order = self._initial_order(tools)

    @property
    def strategy(self) -> StrategyName:
        """The strategy the next attempt asks with."""
        return self.order[0]

    def spec(self) -> CallSpec:
        """The request pieces of the current strategy, without the settings refused.

        Raises:
            DialectError: When the schema cannot be expressed as this model's
                provider needs it.
        """
        strategy = self.order[0]
        if self._engine is not None and behaviour(strategy).native_schema:
            return constraints.spec(self._plan, strategy, self._engine, self._route.model)
        return self._route.spec(
            self._plan,
            strategy,
            json_mode=not self._progress.get("without_json_mode", False),
            unforced=self._progress.get("unforced", False),
        )

    def cannot_send(self, error: DialectError) -> None:
        """The schema does not fit the current route's dialect: ask another way.

        Raises:
            DialectError: `error`, when no other strategy may be tried.
        """
        self._drop(error)

    def rejected(self, spec: CallSpec, error: Exception) -> None:
        """The provider refused `spec`'s request: leave the setting it refused, or the route.

        A refused setting sends the same route again without it for the rest of
        the run; the memory keeps the refusal of the setting, not of the route. A
        refusal that names one of the caller's tools is kept with the route (this
        model beside these tools), never in the memory.

        Raises:
            Exception: `error` itself, when it is no refusal this run can get past.
        """
        strategy = self.order[0]
        model, user_tools = self._route.model, self._route.user_tools
        setting = self._refused_setting(spec, error)
        if setting is not None:
            self._record(strategy, strategy, error)
            self._progress["without_json_mode" if setting == "json_mode" else "unforced"] = True
            self._memory.remember_setting(
                caps.model_identity(model), setting, caps.client_setup(model)
            )
            return
        if not (self._plan.auto and caps.is_rejection(error, strategy, user_tools)):
            raise error
        self._remember(strategy, error)
        self._drop(error)

    def failed(self, error: AttemptError) -> bool:
        """Tell the choice an attempt failed with `error`; whether AutoStrategy leaves its route.

        A route whose answers show it broken (not one wrong answer) is dropped,
        and suspected: remembered only once another route answers, since a
        hopeless input fails every route and must not cost the model its route.
        On a serving engine's route not yet seen honoured, a reply with no JSON
        in it shows the engine ignored the schema: the route is left at once.
        """
        ignored = self._judge(error.kind)
        if ignored is not None:
            self._drop(ignored)
            return True
        if not self._plan.auto:
            return False
        routes = cast("list[StrategyName]", self._progress.get("routes") or [])
        outcomes = list(zip(routes, self._progress["kinds"], strict=True))
        broken = caps.route_broken(self.order[0], outcomes, len(self.order) - 1)
        if broken:
            self._progress.setdefault("suspects", []).append(self.order[0])
            self._drop(error)
        return broken

    def answered(self) -> None:
        """Tell the choice the run answered: the routes it gave up are remembered now.

        A route that kept failing may fail for this schema only (one the model
        cannot write as a tool call), so another schema still tries it. A serving
        engine's constraint that gave a valid answer is trusted from now on.
        """
        if self._engine is not None:
            self._judge(None)
        model = self._route.model
        for suspect in self._progress.get("suspects") or ():
            self._memory.remember(
                caps.model_identity(model),
                cast("StrategyName", suspect),
                schema=schema_key(self._plan),
            )

    def _initial_order(self, tools: Sequence[Any]) -> tuple[StrategyName, ...]:
        plan = self._plan
        if not plan.auto:
            return plan.candidates
        model = self._route.model
        order = caps.auto_order(model, plan.candidates, self._memory, tools, schema_key(plan))
        order = constraints.preferring(
            order, plan, model, self._engine, self._memory, schema_key(plan)
        )
        skipped = {
            *(self._progress.get("dropped") or ()),
            *quirks.lost_routes(model),
            *self._route.refused,
        }
        return tuple(s for s in order if s not in skipped) or order[-1:]

    def _judge(self, kind: str | None) -> Exception | None:
        return constraints.judge(
            self._plan,
            self._engine,
            self.order[0],
            kind,
            self._memory,
            self._route.model,
            len(self.order) - 1,
        )

    def _recall_settings(self) -> None:
        # A forced tool choice for any tool strategy; JSON mode only under auto,
        # since an explicit `PromptedStrategy(json_mode=True)` asked for it by name.
        if not self._memory.holds_settings:
            return
        model = self._route.model
        refused = self._memory.refused_settings(
            caps.model_identity(model), caps.client_setup(model)
        )
        if "tool_choice" in refused:
            self._progress["unforced"] = True
        if "json_mode" in refused and self._plan.auto:
            self._progress["without_json_mode"] = True

    def _refused_setting(self, spec: CallSpec, error: Exception) -> Setting | None:
        # A forced tool choice, for any tool strategy: the route works when the
        # model chooses. JSON mode, under auto only: an explicit
        # `PromptedStrategy(json_mode=True)` asked for it by name.
        setting = behaviour(spec.strategy).optional_setting
        user_tools = self._route.user_tools
        if setting == "tool_choice" and spec.tool_choice is not None:
            return setting if caps.refuses_tool_choice(error, user_tools) else None
        sent = setting == "json_mode" and "response_format" in spec.model_settings
        if sent and self._plan.auto and caps.is_rejection(error, spec.strategy, user_tools):
            return setting
        return None

    def _remember(self, strategy: StrategyName, error: Exception) -> None:
        route, plan = self._route, self._plan
        if caps.refuses_user_tool(error, route.user_tools):
            # About these tools only: kept with the route, never for another tool set.
            route.refused = route.refused | {strategy}
            return
        ours = plan.tool_names | {plan.output_name()}
        if not caps.is_lasting(error, ours, route.user_tools, strategy):
            return
        scope = "" if caps.is_model_wide(error, strategy) else schema_key(plan)
        self._memory.remember(caps.model_identity(route.model), strategy, schema=scope)

    def _drop(self, error: Exception) -> None:
        """Leave the current strategy, or raise when no other may be tried."""
        order = self.order
        if not self._plan.auto or len(order) == 1:
            if isinstance(error, DialectError):
                raise error
            raise ProviderRejectedError(
                order[0],
                error,
                attempt=self._progress["attempts"],
                usage=as_usage(self._progress["usage"]),
            ) from error
        self._record(order[0], order[1], error)
        self._progress.setdefault("dropped", []).append(order[0])
        self.order = order[1:]

    def _record(self, old: StrategyName, new: StrategyName, error: BaseException) -> None:
        reason = clip(f"{type(error).__name__}: {error}", REASON_CHARS)
        self._progress["fallbacks"].append(
            {"from_strategy": old, "to_strategy": new, "reason": reason}
        )


def schema_key(plan: Plan) -> str:
    """A short digest of the plan's schemas, computed once per plan.

    Examples:
        >>> from langchain_structx._request.plan import build_plan
        >>> from langchain_structx.strategies import AutoStrategy
        >>> a = build_plan(AutoStrategy({"title": "A", "type": "object"}))
        >>> b = build_plan(AutoStrategy({"title": "A", "type": "object", "required": ["x"]}))
        >>> len(schema_key(a)), schema_key(a) == schema_key(b)
        (16, False)
    """

    def digest() -> str:
        shapes = [(v.name, v.json_schema) for v in plan.schemas.variants]
        text = json.dumps(shapes, sort_keys=True, default=repr, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    return plan.memo("schema_key", digest)
