"""Which strategy a run asks with, and how it moves on when a route fails.

AutoStrategy's order (minus what the fallback memory and the run's progress
rule out), leaving a route whose answers show it broken, and the reactions to a
provider's refusal: the same route without a setting it refused (JSON mode, a
forced tool choice), the next strategy, or the error. What is worth keeping for
later runs goes to the `FallbackMemory`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_structx import _capabilities as caps
from langchain_structx import _constraints
from langchain_structx import _quirks as quirks
from langchain_structx._capabilities import Setting
from langchain_structx._plan import CallSpec, Plan
from langchain_structx._progress import Progress, as_usage
from langchain_structx.errors import DialectError, ProviderRejectedError
from langchain_structx.strategies import StrategyName

if TYPE_CHECKING:
    from langchain_structx._decide import Route
    from langchain_structx._engine import _Run
    from langchain_structx._engines import Engine


def initial_order(
    plan: Plan,
    route: Route,
    memory: caps.FallbackMemory,
    tools: Sequence[Any],
    progress: Progress,
    engine: Engine | None = None,
) -> tuple[StrategyName, ...]:
    """The strategies to try, best first (auto: minus rejected, unsendable, given up).

    A known serving `engine` puts the provider route in its place: the engine
    constrains the answer to the schema itself.
    """
    if not plan.auto:
        return plan.candidates
    model = route.model
    order = caps.auto_order(model, plan.candidates, memory, tools, schema_key(plan))
    order = _constraints.preferring(order, plan, model, engine, memory, schema_key(plan))
    skipped = {*(progress.get("dropped") or ()), *quirks.lost_routes(model), *route.refused}
    return tuple(s for s in order if s not in skipped) or order[-1:]


def leaves_route(run: _Run, order: tuple[StrategyName, ...]) -> bool:
    """Whether AutoStrategy should leave the current strategy for its route's failures."""
    if not run.plan.auto:
        return False
    routes = cast("list[StrategyName]", run.progress.get("routes") or [])
    outcomes = list(zip(routes, run.progress["kinds"], strict=True))
    broken = caps.route_broken(order[0], outcomes, len(order) - 1)
    if broken:
        # Remembered only once another route answers: a hopeless input fails
        # every route, and must not cost the model its route for later runs.
        run.progress.setdefault("suspects", []).append(order[0])
    return broken


def confirm_suspects(
    plan: Plan, progress: Progress, memory: caps.FallbackMemory, model: Any
) -> None:
    """Remember the routes this run gave up, for its schema, now that another one answered.

    A route that keeps failing may fail for this schema only (one the model
    cannot write as a tool call), so another schema still tries it.
    """
    for suspect in progress.get("suspects") or ():
        memory.remember(
            caps.model_identity(model), cast("StrategyName", suspect), schema=schema_key(plan)
        )


def schema_key(plan: Plan) -> str:
    """A short digest of the plan's schemas, computed once per plan.

    Examples:
        >>> from langchain_structx._plan import build_plan
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


def _remember(
    plan: Plan, memory: caps.FallbackMemory, route: Route, strategy: StrategyName, error: Exception
) -> None:
    if caps.refuses_user_tool(error, route.user_tools):
        # About these tools only: kept with the route, never for another tool set.
        route.refused = route.refused | {strategy}
        return
    ours = plan.tool_names | {plan.output_name()}
    if not caps.is_lasting(error, ours, route.user_tools, strategy):
        return
    scope = "" if caps.is_model_wide(error, strategy) else schema_key(plan)
    memory.remember(caps.model_identity(route.model), strategy, schema=scope)


def recall_settings(
    plan: Plan, progress: Progress, memory: caps.FallbackMemory, model: Any
) -> None:
    """Start the run without the settings the model refused in earlier runs.

    A forced tool choice for any tool strategy; JSON mode only under auto, since
    an explicit `PromptedStrategy(json_mode=True)` asked for it by name.
    """
    if not memory.holds_settings:
        return
    refused = memory.refused_settings(caps.model_identity(model), caps.client_setup(model))
    if "tool_choice" in refused:
        progress["unforced"] = True
    if "json_mode" in refused and plan.auto:
        progress["without_json_mode"] = True


def _refused_setting(
    plan: Plan, spec: CallSpec, error: Exception, user_tools: frozenset[str]
) -> Setting | None:
    """The setting `error` refuses on a route that works without it, if any.

    A forced tool choice, for any tool strategy: the route works when the model
    chooses, and a reply without the call is a failed attempt like any other.
    JSON mode, under auto only: an explicit `PromptedStrategy(json_mode=True)`
    asked for it by name.
    """
    forced = spec.strategy == "tool" and spec.tool_choice is not None
    if forced and caps.refuses_tool_choice(error, user_tools):
        return "tool_choice"
    json_mode = spec.strategy == "prompted" and "response_format" in spec.model_settings
    if json_mode and plan.auto and caps.is_rejection(error, "prompted", user_tools):
        return "json_mode"
    return None


def after_rejection(
    run: _Run,
    order: tuple[StrategyName, ...],
    spec: CallSpec,
    error: Exception,
    memory: caps.FallbackMemory,
    route: Route,
) -> tuple[StrategyName, ...]:
    """The strategies left to try once the provider refused `spec`'s request.

    A refused setting sends the same route again without it for the rest of the
    run; the memory keeps the refusal of the setting, not of the route. A
    refusal that names one of the caller's tools is kept with the route (this
    model beside these tools), never in the memory.

    Raises:
        Exception: `error` itself, when it is no refusal this run can get past.
    """
    strategy = order[0]
    model, user_tools = route.model, route.user_tools
    setting = _refused_setting(run.plan, spec, error, user_tools)
    if setting is not None:
        run.fallback(strategy, strategy, error)
        memory.remember_setting(caps.model_identity(model), setting, caps.client_setup(model))
        return order
    if not (run.plan.auto and caps.is_rejection(error, strategy, user_tools)):
        raise error
    _remember(run.plan, memory, route, strategy, error)
    return fall_back(run, order, error)


def fall_back(
    run: _Run, order: tuple[StrategyName, ...], error: Exception
) -> tuple[StrategyName, ...]:
    """Drop the failed strategy, or raise when no other may be tried."""
    if not run.plan.auto or len(order) == 1:
        if isinstance(error, DialectError):
            raise error
        raise ProviderRejectedError(
            order[0],
            error,
            attempt=run.progress["attempts"],
            usage=as_usage(run.progress["usage"]),
        ) from error
    run.fallback(order[0], order[1], error)
    return order[1:]
