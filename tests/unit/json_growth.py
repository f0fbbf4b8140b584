"""What "a partial value only grows" means, for the streaming tests."""

from __future__ import annotations

from typing import Any


def grows(before: Any, after: Any) -> bool:
    """Whether `after` only adds to `before`: keys, list items, string characters.

    Anything else (numbers, booleans, null) must stay equal and of the same type.

    Examples:
        >>> grows({"a": [1], "b": "x"}, {"a": [1, 2], "b": "xy", "c": None})
        True
        >>> grows({"a": "xy"}, {"a": "x"}), grows([1], [1.0])
        (False, False)
    """
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and grows(item, after[key]) for key, item in before.items()
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(before) <= len(after)
            and all(grows(a, b) for a, b in zip(before, after, strict=False))
        )
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return before == after and type(before) is type(after)
