"""Running a validation that may recurse deeply, without exhausting the stack.

Validators recurse once or more per level of a value. A value nested deeper
than the caller's stack is sure to allow is validated on a new thread with a
large stack, which starts with no frames of its own; a shallow one (nearly
every answer) runs in place, at no cost.

The interpreter's recursion limit is never changed: it is shared by every
thread of the process, and raising it lets another thread's ordinary deep
recursion (a `repr`, an `==` on nested lists) overflow its C stack and kill
the process. A value whose check needs more frames than the limit allows is
reported as a value that could not be checked (`RecursionError`, see `_guard`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

SHALLOW_DEPTH = 48
"""Values nested up to this depth validate on the caller's stack (if the schema is simple)."""

_FRAMES_PER_STEP = 3
"""Generous count of frames per subschema applied in place (jsonschema spends two)."""

_SHALLOW_FRAMES = 600
"""Most frames a validation may be expected to need on the caller's stack."""

_DEEP_STACK_BYTES = 256 * 1024 * 1024
"""C stack of the thread deep values are checked on: room for far more frames
than any sane recursion limit allows, so that the limit, not the stack, stops it."""

_stack_size_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def shallow_depth(steps: int = 0) -> int:
    """The deepest nesting validated in place, for `steps` (as in `call_with_deep_stack`).

    Examples:
        >>> shallow_depth(), shallow_depth(200)
        (48, -1)
    """
    return min(SHALLOW_DEPTH, _SHALLOW_FRAMES // (_FRAMES_PER_STEP * (steps + 2)) - 1)


def call_with_deep_stack(function: Callable[..., T], *args: Any, depth: int, steps: int = 0) -> T:
    """Run `function(*args)`, on a fresh thread with a large stack when it may recurse deeply.

    Args:
        function: The validation to run.
        *args: Its arguments.
        depth: How deeply the value is nested.
        steps: The longest run of subschemas the schema applies in place to one
            part of a value (`_references.check_references`); each level of the
            value may cost that many more frames.

    Raises:
        RecursionError: When the check needs more frames than the interpreter's
            recursion limit allows, even on a thread of its own.
    """
    if depth <= shallow_depth(steps):
        return function(*args)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc

    with _stack_size_lock:
        previous = threading.stack_size(_DEEP_STACK_BYTES)
        try:
            worker = threading.Thread(target=run, name="structx-deep-validation")
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
