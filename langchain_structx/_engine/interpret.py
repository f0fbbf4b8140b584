"""Reading one AI message: find the structured answer, repair it, validate it.

`interpret` turns a model message into an `Interpretation`: a validated value, a
typed failure, or "the model is busy with ordinary tools". It never calls a model
and never raises for bad model output; failures are values here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata

from langchain_structx._clip import NAME_CHARS, clip
from langchain_structx._engine.match import CallIds, Failed, Found, Stamp, decode_output, validate
from langchain_structx._engine.stops import CUT_REASON, LENGTH_REASONS, refusal_text, stop_reason
from langchain_structx._parsing.parse import Parsed, Repair, parse_json
from langchain_structx._request.plan import CallSpec, Plan, Restorer
from langchain_structx.errors import (
    AttemptError,
    InvalidOutputError,
    JSONParseError,
    MissingOutputError,
    MultipleOutputsError,
    OutputValidationError,
    StructuredOutputRefusal,
    TruncatedJSONError,
    TruncatedOutputError,
)
from langchain_structx.strategies import behaviour

Restores = Mapping[str, Restorer]
"""Per structured tool, how its arguments come back to the variant's shape."""


@dataclass(slots=True)
class Interpretation:
    """What one AI message amounts to.

    Attributes:
        outcome: The answer, a failure, or None when the message only calls
            ordinary tools.
        ordinary_calls: Whether the message also calls ordinary tools.
    """

    outcome: Found | Failed | None
    ordinary_calls: bool = False


def interpret(
    plan: Plan,
    spec: CallSpec,
    message: AIMessage,
    *,
    attempt: int = 1,
    usage: UsageMetadata | None = None,
    runs: frozenset[str] | None,
) -> Interpretation:
    """Interpret `message` as the answer to a call made with `spec`.

    Calls to other tools are left to the caller only when it runs tools (`runs`:
    their names, else None) and one names one of them; otherwise they are a
    failed attempt, so a model that keeps inventing tools runs out of retries.
    """
    reason = stop_reason(message)
    at = Stamp(message, attempt, usage, reason in LENGTH_REASONS)
    refusal = refusal_text(message, reason)
    if refusal is not None:
        return Interpretation(Failed(StructuredOutputRefusal(refusal, **at.fields())))
    if behaviour(spec.strategy).answers_in_tool_call:
        seen = _interpret_tool(plan, at, spec.tool_restore)
    elif message.tool_calls:
        seen = Interpretation(None, ordinary_calls=True)
    else:
        return Interpretation(_from_text(plan, at, spec.restore))
    if not seen.ordinary_calls or isinstance(seen.outcome, Found):
        return seen
    if runs is not None and any(c["name"] in runs for c in message.tool_calls):
        return seen
    return Interpretation(_stray(plan, spec, at, seen.outcome))


def _stray(plan: Plan, spec: CallSpec, at: Stamp, outcome: Failed | None) -> Failed:
    """A reply that calls tools the caller does not have, as a failed attempt.

    Every call gets an answer: a structured call that failed carries the
    feedback and the others are told they are no tools here; with no
    structured call, the others carry the feedback.
    """
    in_tool_call = behaviour(spec.strategy).answers_in_tool_call
    ours = plan.tool_names if in_tool_call else frozenset()
    stray = tuple(
        (c.get("id") or "", c["name"]) for c in at.message.tool_calls if c["name"] not in ours
    )
    if outcome is not None:
        return Failed(outcome.error, outcome.call_ids, stray)
    names = ", ".join(sorted({clip(name, NAME_CHARS) for _, name in stray}))
    if in_tool_call:
        wanted = "calling one of these tools: " + ", ".join(plan.schemas.names)
    else:
        wanted = "replying with the JSON object, without calling any tool"
    error = MissingOutputError(
        f"{names} is not a valid tool here. The answer must be given by {wanted}.",
        **at.fields(),
    )
    return Failed(error, stray)


def _interpret_tool(plan: Plan, at: Stamp, restores: Restores) -> Interpretation:
    names, calls, invalid = plan.tool_names, at.message.tool_calls, at.message.invalid_tool_calls
    # Plain loops: this reads every reply, and before Python 3.12 each comprehension
    # is a function call of its own.
    valid, broken, found = [], [], []
    for c in calls:
        if c["name"] in names:
            valid.append(c)
            found.append((c.get("id") or "", c["name"]))
    for bad in invalid:
        if bad.get("name") in names:
            broken.append(bad)
            found.append((bad.get("id") or "", bad.get("name") or ""))
    ordinary = len(valid) < len(calls)
    ids = tuple(found)
    if len(ids) > 1:
        error = MultipleOutputsError([name for _, name in ids], **at.fields())
        return Interpretation(Failed(error, ids), ordinary)
    if valid:
        call = valid[0]
        if at.truncated:
            # Clients merge streamed arguments leniently (and Anthropic hands back
            # a cut-off call as it stands): a call can look whole when it is not.
            cut = f"The call to '{call['name']}' was cut off {_cut_by(plan, at)}."
            return Interpretation(Failed(TruncatedOutputError(cut, **at.fields()), ids), ordinary)
        outcome = _decode_args(plan, call["name"], call["args"], at, (), restores, ids)
        return Interpretation(outcome, ordinary)
    if broken:
        outcome = _from_broken_call(plan, broken[0], at, ids, restores)
        return Interpretation(outcome, ordinary)
    if ordinary:
        return Interpretation(None, ordinary_calls=True)
    written = _call_in_text(plan, at, restores)
    return Interpretation(written if written is not None else Failed(_missing(plan, at)))


_ARGUMENT_KEYS = ("arguments", "parameters", "args")


def _call_in_text(plan: Plan, at: Stamp, restores: Restores) -> Found | Failed | None:
    """A structured call the model wrote as text, as chat templates often make it do."""
    if not at.message.text.strip():
        return None
    try:
        parsed = parse_json(at.message.text, limits=plan.limits)
    except JSONParseError:
        return None
    call = parsed.value
    name = call.get("name") if isinstance(call, dict) else None
    if not isinstance(name, str) or name not in plan.tool_names:  # a list is no name
        return None
    args = next((call[k] for k in _ARGUMENT_KEYS if k in call), None)
    if isinstance(args, str):
        try:
            args = parse_json(args, limits=plan.limits).value
        except JSONParseError:
            return None
    if not isinstance(args, dict):
        return None
    note = Repair("tool_call_in_text", f"read the {name} call the model wrote as text")
    return _decode_args(plan, name, args, at, (*parsed.repairs, note), restores)


def _from_broken_call(
    plan: Plan,
    call: Any,
    at: Stamp,
    ids: CallIds,
    restores: Restores,
) -> Found | Failed:
    name = call.get("name") or ""
    try:
        parsed = parse_json(call.get("args") or "", limits=plan.limits)
    except JSONParseError as exc:
        return Failed(_parse_failure(plan, name, exc, at), ids)
    return _decode_args(plan, name, parsed.value, at, parsed.repairs, restores, ids)


def _missing(plan: Plan, at: Stamp) -> AttemptError:
    if at.truncated:
        return TruncatedOutputError(
            "The model ran out of tokens before calling a structured-output tool.",
            **at.fields(),
        )
    names = ", ".join(plan.schemas.names)
    return MissingOutputError(
        "The answer must be given by calling one of these tools: "
        f"{names}. Do not answer in plain text.",
        **at.fields(),
    )


def _cut_by(plan: Plan, at: Stamp) -> str:
    """What cut a reply off: the model's token limit, or our bound on a streamed reply."""
    if stop_reason(at.message) == CUT_REASON:
        return f"after {plan.limits.max_reply_chars} characters, the most that is read"
    return "by the token limit"


def _from_text(plan: Plan, at: Stamp, restore: Restorer | None) -> Found | Failed:
    text = at.message.text
    name = plan.output_name()
    if not text.strip():
        if at.truncated:
            cut = f"The answer was cut off {_cut_by(plan, at)}."
            return Failed(TruncatedOutputError(cut, **at.fields()))
        return Failed(
            MissingOutputError("The answer was empty; reply with the JSON object.", **at.fields())
        )
    try:
        parsed = parse_json(text, limits=plan.limits)
    except JSONParseError as exc:
        return _worded_as_text(Failed(_parse_failure(plan, name, exc, at)))
    if restore is not None:
        try:
            parsed = Parsed(restore.restore(parsed.value), parsed.repairs)
        except OutputValidationError as exc:
            # A value too deep or too large to map back is a bad answer, retried as such.
            return _worded_as_text(Failed(InvalidOutputError(name, exc, **at.fields())))
    return _worded_as_text(decode_output(plan, parsed, at))


def _worded_as_text(outcome: Found | Failed) -> Found | Failed:
    error = outcome.error if isinstance(outcome, Failed) else None
    if not isinstance(error, InvalidOutputError):
        return outcome
    reworded = InvalidOutputError(
        error.tool_name,
        error.source,
        ai_message=error.ai_message,
        attempt=error.attempt,
        usage=error.usage,
        via_tool=False,
    )
    return Failed(reworded, outcome.call_ids if isinstance(outcome, Failed) else ())


def _parse_failure(plan: Plan, name: str, exc: JSONParseError, at: Stamp) -> AttemptError:
    if stop_reason(at.message) == CUT_REASON:
        cut = f"The output for '{name}' was cut off {_cut_by(plan, at)}."
        return TruncatedOutputError(cut, **at.fields())
    if isinstance(exc, TruncatedJSONError) or at.truncated:
        cut = f"The output for '{name}' was cut off before the JSON was complete: {exc}"
        return TruncatedOutputError(cut, **at.fields())
    return InvalidOutputError(name, exc, **at.fields())


def _decode_args(
    plan: Plan,
    name: str,
    args: Any,
    at: Stamp,
    repairs: tuple[Repair, ...],
    restores: Restores,
    call_ids: CallIds = (),
) -> Found | Failed:
    variant = plan.schemas.get(name)
    assert variant is not None  # callers only pass names of our tools
    restore = restores.get(name)
    if restore is not None:
        try:
            args = restore.restore(args)
        except OutputValidationError as exc:
            return Failed(InvalidOutputError(name, exc, **at.fields()), call_ids)
    return validate(plan, variant, args, at, repairs, call_ids)
