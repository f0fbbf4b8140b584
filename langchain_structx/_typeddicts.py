"""`typing.TypedDict` on Python < 3.12, which Pydantic does not accept there.

Users write `from typing import TypedDict` all the time, but before 3.12 Pydantic
only takes `typing_extensions.TypedDict`. Such classes (and TypedDicts nested in
their fields) are rebuilt as `typing_extensions` ones with the same keys and docs.
"""

from __future__ import annotations

import sys
import threading
import types
import typing
import weakref
from typing import Annotated, Any, Union, get_args, get_origin

import typing_extensions

# The classes rebuilt so far, kept while the user's class lives. A class that refers
# to itself (a tree) or to one that refers back is registered before its fields are
# rebuilt, so the reference finds it; the lock keeps others from seeing it unfinished.
_REBUILT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()


def pydantic_ready(tp: Any) -> Any:
    """`tp`, or on Python < 3.12 the same type with its stdlib TypedDicts rebuilt.

    Examples:
        >>> from typing import TypedDict
        >>> class City(TypedDict):
        ...     name: str
        >>> typing_extensions.is_typeddict(pydantic_ready(list[City]).__args__[0])
        True
    """
    if sys.version_info >= (3, 12):
        return tp
    with _LOCK:
        return _rebuild(tp)


def _rebuild(tp: Any) -> Any:
    if _is_stdlib_typeddict(tp):
        return _rebuild_typeddict(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is None or not args:
        return tp
    if origin is Annotated:  # its arguments are the type, then metadata to keep as is
        inner = _rebuild(args[0])
        return tp if inner is args[0] else Annotated[(inner, *tp.__metadata__)]
    new_args = tuple(_rebuild(a) for a in args)
    if new_args == args:
        return tp
    if origin in (Union, types.UnionType):
        return Union[new_args]  # noqa: UP007 - built dynamically from a tuple
    return tp.copy_with(new_args) if hasattr(tp, "copy_with") else origin[new_args]


class _Probe(typing_extensions.TypedDict):
    pass


_EXTENSIONS_META = type(_Probe)


def _is_stdlib_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp) and type(tp) is not _EXTENSIONS_META


def _rebuild_typeddict(tp: Any) -> Any:
    if tp in _REBUILT:
        return _REBUILT[tp]
    hints = typing.get_type_hints(tp, include_extras=True)
    required = {key: key in tp.__required_keys__ for key in hints}
    # First with the right keys and placeholder types, then with the real types.
    rebuilt = typing_extensions.TypedDict(  # type: ignore[misc]
        tp.__name__, {key: _qualified(Any, required[key]) for key in hints}
    )
    rebuilt.__doc__ = tp.__doc__
    rebuilt.__module__ = tp.__module__
    _REBUILT[tp] = rebuilt
    try:
        for key, hint in hints.items():
            rebuilt.__annotations__[key] = _qualified(
                _rebuild(_strip_required(hint)), required[key]
            )
    except BaseException:
        del _REBUILT[tp]
        raise
    return rebuilt


def _qualified(inner: Any, required: bool) -> Any:
    if required:
        return typing_extensions.Required[inner]
    return typing_extensions.NotRequired[inner]


def _strip_required(hint: Any) -> Any:
    if get_origin(hint) in (
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        return get_args(hint)[0]
    return hint
