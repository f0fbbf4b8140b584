"""An engine's own constrained decoding as the provider route, trusted once seen honoured.

Once per endpoint and model (per fallback memory: per agent or node, unless one
memory is shared on purpose), the attempt loop learns which serving engine is
behind an OpenAI-compatible client (`_engines.probe`, an `Invoke` step the
driver performs: no model call) and keeps the answer in the memory. On a known
engine:

- the provider route sends the schema in the engine's own field
  (`_engines.settings`), and `AutoStrategy` tries that route first;
- the constraint is trusted only once a reply on it validates. Until then, a
  reply with no JSON in it (prose, nothing) says the server ignored the field:
  under `AutoStrategy` the run moves on to the next strategy at once, the
  fallback record says so, and the memory keeps the route given up for the
  model. Once trusted, such a reply is an ordinary failed attempt.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from langchain_structx._engine.feedback import Invoke
from langchain_structx._models import capabilities as caps
from langchain_structx._models import engines as _engines
from langchain_structx._models.engines import Engine
from langchain_structx._request.plan import CallSpec, Plan
from langchain_structx.strategies import StrategyName, behaviour

_ENGINE = "engine"
_HONOURED = "honoured"

IGNORED_KINDS = frozenset({"no_output", "parse"})
"""Failure kinds that show a constraint was not applied: a grammar built from a
schema never lets a model write prose or nothing (a reply cut short is a
`truncation`, not one of these)."""


class ConstraintIgnored(Exception):  # noqa: N818 - a finding worded for the report, never raised
    """Words the fallback record of a route whose engine ignored the schema it was sent."""


def engine_for(model: Any, memory: caps.FallbackMemory) -> Generator[Invoke, Any, Engine | None]:
    """The engine behind `model`, probed once and then read from `memory`.

    Yields:
        One `Invoke` of the probe, the first time the memory has no answer.

    Returns:
        The engine, or None for a client no engine is known behind.
    """
    where = _engines.endpoint(model)
    if where is None or isinstance(where, Engine):
        return where
    key = caps.model_identity(model)
    name = memory.fact(key, _ENGINE)
    if name is None:
        name = yield Invoke(_engines.probe, (where,), reusable=True)
        if name is None:  # unreachable now: the model call will say why
            return None
        memory.remember_fact(key, _ENGINE, name)
    return _engines.ENGINES.get(name)


def preferring(
    order: tuple[StrategyName, ...],
    plan: Plan,
    model: Any,
    engine: Engine | None,
    memory: caps.FallbackMemory,
    schema_key: str,
) -> tuple[StrategyName, ...]:
    """AutoStrategy's `order` with the provider route in its place when an engine is known.

    The profile's word (`structured_output: False`) and a remembered rejection
    of the route (one ignored constraint is one) still keep it out.
    """
    native = {s for s in plan.candidates if behaviour(s).native_schema}
    if engine is None or not native or native & set(order):
        return order
    profile = getattr(model, "profile", None) or {}
    if profile.get("structured_output") is False:
        return order
    if native & memory.rejected(caps.model_identity(model), schema_key):
        return order
    return tuple(s for s in plan.candidates if s in native or s in order)


def spec(plan: Plan, strategy: StrategyName, engine: Engine, model: Any) -> CallSpec:
    """The provider route's request pieces in `engine`'s own field, built once per plan.

    A client's own `extra_body` (where llama-cpp-python's field travels) is
    merged in at each call, as the client is set up now.
    """
    name, schema = plan.output_name(), plan.output_schema()
    base: CallSpec = plan.memo(
        f"engine:{engine.name}",
        lambda: CallSpec(
            strategy=strategy, model_settings=_engines.settings(engine, name, schema, None)
        ),
    )
    if engine.shape != "json_object_schema" or not getattr(model, "extra_body", None):
        return base
    setup = f"extra:{caps.client_setup(model)}"
    found: CallSpec | None = base.derived.get(setup)
    if found is None:
        merged = _engines.settings(engine, name, schema, model)
        found = base.derived[setup] = replace(base, model_settings=merged, derived={})
    return found


def judge(
    plan: Plan,
    engine: Engine | None,
    strategy: StrategyName,
    kind: str | None,
    memory: caps.FallbackMemory,
    model: Any,
    alternatives: int,
) -> ConstraintIgnored | None:
    """Learn from one reply on `engine`'s route: honoured, ignored, or neither.

    Args:
        plan: The response format's plan.
        engine: The engine behind the model, if known.
        strategy: The strategy of the attempt.
        kind: The failure kind, or None for a valid answer.
        memory: Where what is learnt is kept.
        model: The model (for its identity).
        alternatives: Strategies left after this one.

    Returns:
        The finding to fall back with, when AutoStrategy should leave the route
        at once because the engine ignored the constraint; else None.
    """
    if engine is None or not behaviour(strategy).native_schema:
        return None
    key = caps.model_identity(model)
    honoured = memory.fact(key, _HONOURED) == engine.name
    if kind is None:
        if not honoured:
            memory.remember_fact(key, _HONOURED, engine.name)
        return None
    if honoured or kind not in IGNORED_KINDS or not plan.auto or alternatives < 1:
        return None
    # Model-wide: an engine that drops its own field drops it for every schema.
    memory.remember(key, strategy)
    return ConstraintIgnored(
        f"{engine.title} ignored the schema sent in {engine.field}: the reply had no "
        f"JSON answer ({kind}); the route is given up for this model"
    )
