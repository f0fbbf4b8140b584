"""A decoded value checked against the plan's variants.

One variant validates it directly. For a union, the envelope's `kind` names
the variant, and a bare object is taken as the one variant that accepts it,
preferring a variant that needs no coercion. Coercion runs only on a value that
failed as it is. Every failure is a value (`Failed`), created with its context.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata

from langchain_structx._parsing.parse import Parsed, Repair, coerce
from langchain_structx._request.envelope import ENVELOPE_DATA, ENVELOPE_KIND
from langchain_structx._request.plan import Plan
from langchain_structx._schemas.normalise import Variant
from langchain_structx._validation.bounds import shape_issue
from langchain_structx.errors import (
    AttemptError,
    InvalidOutputError,
    OutputValidationError,
    ValidationIssue,
)
from langchain_structx.limits import Limits

CallIds = tuple[tuple[str, str], ...]
"""`(id, name)` of each structured tool call in a reply."""


@dataclass(slots=True)
class Stamp:
    """The context every failure of one reply is created with."""

    message: AIMessage
    attempt: int = 1
    usage: UsageMetadata | None = None
    truncated: bool = False
    """Whether the reply stopped because the model ran out of tokens."""

    def fields(self) -> dict[str, Any]:
        """Keyword arguments for a run-time failure's constructor."""
        return {"ai_message": self.message, "attempt": self.attempt, "usage": self.usage}


@dataclass(slots=True)
class Found:
    """A validated structured answer.

    Attributes:
        value: The validated object.
        variant: Name of the variant it matched.
        repairs: Every repair and coercion applied on the way.
        call_id: The structured tool call that carried it, if any.
    """

    value: Any
    variant: str
    repairs: tuple[Repair, ...]
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """A failed attempt.

    Attributes:
        error: What went wrong.
        call_ids: `(id, name)` of each tool call that the feedback answers.
        stray_ids: `(id, name)` of each call to a tool the caller does not have,
            beside a structured call that carries the feedback.
    """

    error: AttemptError
    call_ids: CallIds = ()
    stray_ids: CallIds = ()


def decode_output(plan: Plan, parsed: Parsed, at: Stamp) -> Found | Failed:
    if not plan.schemas.is_union:
        return validate(plan, plan.schemas.variants[0], parsed.value, at, parsed.repairs)
    value = parsed.value
    if not (isinstance(value, dict) and ENVELOPE_KIND in value):
        return _infer_kind(plan, value, at, parsed.repairs)
    # A variant may have a field called "kind" itself (a tagged union's usual
    # discriminator). Only `{"kind": <variant>, "data": ...}` is taken as the
    # envelope first; anything else, or an envelope that fails, is also tried
    # as a bare variant, and the envelope's error is kept for the feedback.
    enveloped = _from_envelope(plan, value, at, parsed.repairs)
    if isinstance(enveloped, Found) and set(value) == {ENVELOPE_KIND, ENVELOPE_DATA}:
        return enveloped
    inferred = _infer_kind(plan, value, at, parsed.repairs)
    if isinstance(inferred, Found):
        return inferred
    return enveloped


def _from_envelope(
    plan: Plan, value: dict[str, Any], at: Stamp, repairs: tuple[Repair, ...]
) -> Found | Failed:
    kind = value[ENVELOPE_KIND]
    variant = plan.schemas.get(kind) if isinstance(kind, str) else None
    if variant is None:
        names = ", ".join(repr(n) for n in plan.schemas.names)
        issue = ValidationIssue((ENVELOPE_KIND,), f"must be one of {names}, got {kind!r}")
        return _invalid(plan.output_name(), plan, issue, at)
    if ENVELOPE_DATA not in value:
        issue = ValidationIssue((), f"'{ENVELOPE_DATA}' is required but missing")
        return _invalid(variant.name, plan, issue, at)
    return validate(plan, variant, value[ENVELOPE_DATA], at, repairs)


def _infer_kind(plan: Plan, value: Any, at: Stamp, repairs: tuple[Repair, ...]) -> Found | Failed:
    # Small models often drop the envelope; accept the object when exactly one
    # variant fits it, so the data is not thrown away for a formality. The
    # variants share one validation's time: the reply is one value.
    ends = time.monotonic() + plan.limits.validation_seconds
    matches = []
    for variant in plan.schemas.variants:
        left = ends - time.monotonic()
        if left <= 0:
            seconds = plan.limits.validation_seconds
            late = f"could not be checked against every variant within {seconds} s"
            issue = ValidationIssue((), late, unfinished=True)
            return _invalid(plan.output_name(), plan, issue, at)
        limits = replace(plan.limits, validation_seconds=left)
        if isinstance(found := validate(plan, variant, value, at, repairs, limits=limits), Found):
            matches.append(found)
    # A variant that takes the value as it is wins over ones that need coercion.
    strict = [found for found in matches if found.repairs == repairs]
    if len(strict) == 1 or len(matches) == 1:
        found = strict[0] if len(strict) == 1 else matches[0]
        note = Repair("infer_kind", f"took the answer as {found.variant} (no envelope)")
        return Found(found.value, found.variant, (*found.repairs, note))
    names = ", ".join(repr(n) for n in plan.schemas.names)
    detail = "matches several" if matches else "matches none"
    issue = ValidationIssue(
        (), f'expected {{"{ENVELOPE_KIND}": {names}, "{ENVELOPE_DATA}": ...}}; the object {detail}'
    )
    return _invalid(plan.output_name(), plan, issue, at)


def _invalid(name: str, plan: Plan, issue: ValidationIssue, at: Stamp) -> Failed:
    """A failure of the whole union answer, reported under `name`."""
    error = OutputValidationError(plan.output_name(), [issue])
    return Failed(InvalidOutputError(name, error, **at.fields()))


def validate(
    plan: Plan,
    variant: Variant,
    data: Any,
    at: Stamp,
    repairs: tuple[Repair, ...],
    call_ids: CallIds = (),
    limits: Limits | None = None,
) -> Found | Failed:
    """Validate `data` as `variant`; `call_ids` are the structured calls that carried it."""
    call_id = call_ids[0][0] if call_ids else None
    limits = limits or plan.limits
    try:
        return Found(variant.validate(data, limits), variant.name, repairs, call_id)
    except OutputValidationError as exc:
        first_error = exc
    # Coercion only runs on a value that failed: the happy path pays nothing for it.
    # A value past the bounds (too deep, too long, NaN) is not coerced: turned
    # into a string, it would slip past the very bound that refused it. Nor is one
    # whose check could not finish: a second check would spend the time again.
    fixable = (
        plan.strategy.coerce
        and not first_error.unfinished
        and shape_issue(data, limits).issue is None
    )
    coerced = coerce(data, variant.json_schema) if fixable else None
    if coerced is None or not coerced.repairs:
        return Failed(InvalidOutputError(variant.name, first_error, **at.fields()), call_ids)
    try:
        value = variant.validate(coerced.value, limits)
    except OutputValidationError as exc:
        return Failed(InvalidOutputError(variant.name, exc, **at.fields()), call_ids)
    return Found(value, variant.name, (*repairs, *coerced.repairs), call_id)
