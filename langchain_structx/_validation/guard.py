"""The guard around every validator: the value's shape, then the check, then its integers.

A validator (Pydantic, jsonschema) recurses, quotes the value in its messages and
may fail in ways of its own on a value nobody trusts. `guard` wraps one so that
only a valid value or an `OutputValidationError` comes out: the value's shape is
checked first (`_bounds.shape_issue`), the check runs on a stack with room for
the value's depth (`_stack`), and when the value held a string a validator may
read as an integer, the answer is checked for integers a checkpoint cannot store
(`_integers`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from referencing.exceptions import Unresolvable

from langchain_structx._exceptions import OutputValidationError, ValidationIssue
from langchain_structx._validation.bounds import clip_path, shape_issue
from langchain_structx._validation.integers import wide_integer
from langchain_structx._validation.stack import call_with_deep_stack, shallow_depth
from langchain_structx.limits import Limits

Checker = Callable[[Any, Limits], Any]
"""Validates a value under limits: the value as the schema makes it, or an error."""

UNCHECKABLE = (RecursionError, OverflowError, MemoryError, ValueError, Unresolvable)
"""What a validator may raise on a value it cannot finish checking (not a schema bug)."""


def guard(check: Checker, name: str, steps: int = 0) -> Checker:
    """Wrap a checker so that only a value or an `OutputValidationError` comes out.

    Args:
        check: The validator.
        name: The variant's name, for the errors.
        steps: The longest run of subschemas the schema applies in place, which
            the stack of a validation must make room for on every level of the value.
    """
    shallow = shallow_depth(steps)

    def guarded(data: Any, limits: Limits) -> Any:
        shape = shape_issue(data, limits)
        issue = shape.issue
        if issue is None:
            try:
                if shape.depth <= shallow:
                    value = check(data, limits)
                else:
                    value = call_with_deep_stack(
                        check, data, limits, depth=shape.depth, steps=steps
                    )
            except OutputValidationError:
                raise
            except UNCHECKABLE as exc:
                reason = f"the value could not be checked ({type(exc).__name__})"
                if isinstance(exc, RecursionError):
                    reason += "; its check needs more frames than sys.getrecursionlimit() allows"
                issue = ValidationIssue((), reason, unfinished=True)
                raise OutputValidationError(name, [issue]) from None
            # A validator may read a string of digits as an integer too wide to store.
            issue = wide_integer(value, limits) if shape.numerals else None
            if issue is None:
                return value
        path = clip_path(issue.path, limits.max_value_chars)
        raise OutputValidationError(name, [ValidationIssue(path, issue.message)])

    return guarded
