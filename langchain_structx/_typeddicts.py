"""`typing.TypedDict` on Python < 3.12, which Pydantic does not accept there.

Users write `from typing import TypedDict` all the time, but before 3.12 Pydantic
only takes `typing_extensions.TypedDict`. Such classes (and TypedDicts nested in
their fields) are rebuilt as `typing_extensions` ones with the same keys and docs.
"""

from __future__ import annotations

import sys
import types
import typing
from typing import Any, Union, get_args, get_origin

import typing_extensions

_REBUILT: dict[Any, Any] = {}


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
    return _rebuild(tp)


def _rebuild(tp: Any) -> Any:
    if _is_stdlib_typeddict(tp):
        return _rebuild_typeddict(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is None or not args:
        return tp
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
    fields: dict[str, Any] = {}
    for key, hint in hints.items():
        inner = _rebuild(_strip_required(hint))
        if key in tp.__required_keys__:
            fields[key] = typing_extensions.Required[inner]
        else:
            fields[key] = typing_extensions.NotRequired[inner]
    rebuilt = typing_extensions.TypedDict(tp.__name__, fields)  # type: ignore[misc]
    rebuilt.__doc__ = tp.__doc__
    rebuilt.__module__ = tp.__module__
    _REBUILT[tp] = rebuilt
    return rebuilt


def _strip_required(hint: Any) -> Any:
    if get_origin(hint) in (
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        return get_args(hint)[0]
    return hint
