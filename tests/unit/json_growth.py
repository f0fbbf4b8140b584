"""JSON values for the property tests, and what "a partial value only grows" means."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
"""Any JSON scalar."""
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=20,
)
"""Any JSON value, nested a little."""


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
