"""`handle_errors`, checked and compiled once when a strategy is built.

The engine never looks at the user's value again: it applies the `ErrorPolicy`
(see `_feedback`). A value it could not act on is refused with `UserError` at
construction, not at the first failure.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_structx._exceptions import UserError


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorPolicy:
    """`handle_errors`, decided once when the plan is built.

    Attributes:
        mode: Raise at once, retry with text, or call the user's handler.
        text: Fixed feedback for "retry", or None for the default wording.
        types: For "retry", the only exception types retried (refusals too),
            or None for every failure but a refusal.
        handler: The user's callable, for "call".
        with_context: Whether the handler takes `(error, context)`.
    """

    mode: Literal["raise", "retry", "call"]
    text: str | None = None
    types: tuple[type[Exception], ...] | None = None
    handler: Callable[..., Any] | None = None
    with_context: bool = False


def compile_policy(handle_errors: Any) -> ErrorPolicy:
    """Check a `handle_errors` value and turn it into an `ErrorPolicy`.

    Raises:
        UserError: For anything but a bool, a string, an exception type, a
            non-empty tuple of exception types, or a callable.

    Examples:
        >>> compile_policy(lambda error, context: "again").with_context
        True
        >>> compile_policy(ValueError).types
        (<class 'ValueError'>,)
    """
    check_handle_errors(handle_errors)
    if handle_errors is False:
        return ErrorPolicy(mode="raise")
    if handle_errors is True:
        return ErrorPolicy(mode="retry")
    if isinstance(handle_errors, str):
        return ErrorPolicy(mode="retry", text=handle_errors)
    if isinstance(handle_errors, type):
        return ErrorPolicy(mode="retry", types=(handle_errors,))
    if isinstance(handle_errors, tuple):
        return ErrorPolicy(mode="retry", types=handle_errors)
    return ErrorPolicy(
        mode="call", handler=handle_errors, with_context=_takes_context(handle_errors)
    )


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def check_handle_errors(policy: Any) -> None:
    """Refuse a `handle_errors` value the engine could not act on.

    Raises:
        UserError: For anything but a bool, a string, an exception type, a
            non-empty tuple of exception types, or a callable.

    Examples:
        >>> check_handle_errors((ValueError,))
        >>> check_handle_errors(())
        Traceback (most recent call last):
        ...
        langchain_structx.errors.UserError: handle_errors tuple must not be empty
    """
    if isinstance(policy, (bool, str)) or _is_exception_type(policy):
        return
    if isinstance(policy, tuple):
        if not policy:
            raise UserError("handle_errors tuple must not be empty")
        wrong = [member for member in policy if not _is_exception_type(member)]
        if wrong:
            raise UserError(f"handle_errors tuple members must be exception types, got {wrong!r}")
        return
    if isinstance(policy, type) or not callable(policy):
        raise UserError(
            "handle_errors must be a bool, a str, an exception type or tuple of them, "
            f"or a callable; got {policy!r}"
        )


def _is_exception_type(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Exception)
