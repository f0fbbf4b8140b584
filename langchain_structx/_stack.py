"""Running a validation that may recurse deeply, without exhausting the stack.

Validators recurse once or more per level of a value. A value nested deeper
than the caller's stack allows is validated on a thread with a large stack,
under a raised recursion limit; a shallow one (nearly every answer) runs in
place, at no cost.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

SHALLOW_DEPTH = 48
"""Values nested up to this depth validate on the caller's stack (if the schema is simple)."""

_FRAMES_PER_LEVEL = 64
"""Generous count of Python frames jsonschema spends on one level of nesting."""

_FRAMES_PER_STEP = 3
"""Generous count of frames per subschema applied in place (jsonschema spends two)."""

_SHALLOW_FRAMES = 600
"""Most frames a validation may be expected to need on the caller's stack."""

_DEEP_STACK_BYTES = 256 * 1024 * 1024

_stack_lock = threading.Lock()
_deep_calls = 0
_saved_limit = 0


@functools.lru_cache(maxsize=64)
def shallow_depth(steps: int = 0) -> int:
    """The deepest nesting validated in place, for `steps` (as in `call_with_deep_stack`).

    Examples:
        >>> shallow_depth(), shallow_depth(200)
        (48, -1)
    """
    return min(SHALLOW_DEPTH, _SHALLOW_FRAMES // (_FRAMES_PER_STEP * (steps + 2)) - 1)


def call_with_deep_stack(function: Callable[..., T], *args: Any, depth: int, steps: int = 0) -> T:
    """Run `function(*args)`, on a thread with a large stack when it may recurse deeply.

    Args:
        function: The validation to run.
        *args: Its arguments.
        depth: How deeply the value is nested.
        steps: The longest run of subschemas the schema applies in place to one
            part of a value (`_references.check_references`); each level of the
            value may cost that many more frames.

    The interpreter's recursion limit is process-wide, so it is raised while any
    deep call runs and put back when the last one ends; the large stack is what
    makes the higher limit safe.
    """
    if depth <= shallow_depth(steps):
        return function(*args)
    per_level = _FRAMES_PER_STEP * (steps + 2)
    frames = (depth + 1) * max(_FRAMES_PER_LEVEL, per_level)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc

    _raise_recursion_limit(sys.getrecursionlimit() + frames)
    try:
        _start_and_join(run)
    finally:
        _restore_recursion_limit()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _start_and_join(run: Callable[[], None]) -> None:
    with _stack_lock:
        previous = threading.stack_size(_DEEP_STACK_BYTES)
        try:
            worker = threading.Thread(target=run, name="structx-deep-validation")
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()


def _raise_recursion_limit(wanted: int) -> None:
    global _deep_calls, _saved_limit
    with _stack_lock:
        if _deep_calls == 0:
            _saved_limit = sys.getrecursionlimit()
        _deep_calls += 1
        if wanted > sys.getrecursionlimit():
            sys.setrecursionlimit(wanted)


def _restore_recursion_limit() -> None:
    global _deep_calls
    with _stack_lock:
        _deep_calls -= 1
        if _deep_calls == 0:
            sys.setrecursionlimit(_saved_limit)
