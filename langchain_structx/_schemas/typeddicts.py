"""TypedDicts rebuilt for Pydantic: stdlib ones before 3.12, and LangChain's field notes.

Users write `from typing import TypedDict` all the time, but before 3.12 Pydantic
only takes `typing_extensions.TypedDict`. And LangChain's `with_structured_output`
reads a field written `Annotated[T, default, "description"]` as optional when the
default is not `...`, with that description; Pydantic ignores both. Such classes
(and TypedDicts nested in their fields) are rebuilt as `typing_extensions` ones
with the same keys and docs, each such field as `NotRequired` (or `Required`) with
a `Field(description=...)`.
"""

from __future__ import annotations

import json
import sys
import threading
import types
import typing
import weakref
from typing import Annotated, Any, Union, get_args, get_origin

import typing_extensions
from pydantic import Field

# The classes rebuilt so far, kept while the user's class lives. A class that refers
# to itself (a tree) or to one that refers back is registered before its fields are
# rebuilt, so the reference finds it; the lock keeps others from seeing it unfinished.
_REBUILT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()


def pydantic_ready(tp: Any) -> Any:
    """`tp`, or the same type with the TypedDicts Pydantic would misread rebuilt.

    Examples:
        >>> from typing import TypedDict
        >>> class City(TypedDict):
        ...     name: Annotated[str, ..., "Its usual name"]
        ...     country: Annotated[str | None, None, "Where it is"]
        >>> ready = pydantic_ready(list[City]).__args__[0]
        >>> sorted(ready.__required_keys__), sorted(ready.__optional_keys__)
        (['name'], ['country'])
    """
    with _LOCK:
        return _rebuild(tp)


def _rebuild(tp: Any) -> Any:
    if _is_typeddict(tp):
        return _rebuild_typeddict(tp) if tp in _REBUILT or _needs_rebuild(tp, set()) else tp
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


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def _needs_rebuild(tp: Any, seen: set[Any]) -> bool:
    """Whether `tp` is (or holds) a TypedDict that Pydantic would reject or misread."""
    if not _is_typeddict(tp):
        return any(_needs_rebuild(arg, seen) for arg in get_args(tp))
    if tp in seen:
        return False
    seen.add(tp)
    if sys.version_info < (3, 12) and type(tp) is not _EXTENSIONS_META:
        return True
    hints = _own_hints(tp).values()
    return any(_noted(hint) is not None or _needs_rebuild(hint, seen) for hint in hints)


def _own_hints(tp: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception:  # noqa: BLE001 - a forward reference Pydantic will name itself
        return {}


def _noted(hint: Any) -> tuple[Any, bool] | None:
    """LangChain's `Annotated[T, default, "description"]`: the type, and whether it is required.

    Only the forms LangChain documents: `...` or a plain default, then an optional
    description. Metadata of other kinds (Pydantic's `Field`, constraints) is Pydantic's.
    """
    if get_origin(_strip_required(hint)) is not Annotated:
        return None
    inner, *notes = get_args(_strip_required(hint))
    plain = (type(None), type(...), str, int, float, bool, list, dict)
    if not notes or len(notes) > 2 or not isinstance(notes[0], plain):
        return None
    if len(notes) == 1 and notes[0] is not ...:
        return None  # a lone value: a description or a default, LangChain cannot tell
    if len(notes) == 2 and not isinstance(notes[1], str):
        return None
    # The default goes to the model as LangChain sends it; the answer is not
    # filled in with it (a TypedDict has no defaults), as LangChain's is not.
    shown: dict[str, Any] = {"description": notes[1]} if len(notes) == 2 else {}
    if notes[0] is not ... and _is_json(notes[0]):
        shown["json_schema_extra"] = {"default": notes[0]}
    return (Annotated[inner, Field(**shown)] if shown else inner), notes[0] is ...


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _rebuild_typeddict(tp: Any) -> Any:
    if tp in _REBUILT:
        return _REBUILT[tp]
    hints = typing.get_type_hints(tp, include_extras=True)
    # The hint's own qualifier first: written as a string (`from __future__ import
    # annotations`), `NotRequired[...]` is missing from `__required_keys__`.
    required = {key: _required(hint, key in tp.__required_keys__) for key, hint in hints.items()}
    for key, hint in hints.items():
        noted = _noted(hint)
        if noted is not None:
            hints[key] = noted[0]
            required[key] = required[key] and noted[1]
    # First with the right keys and placeholder types, then with the real types.
    # A closed one, or one whose extra keys have a type, stays so (PEP 728).
    extra = getattr(tp, "__extra_items__", typing_extensions.NoExtraItems)
    extras: dict[str, Any] = {"closed": True} if getattr(tp, "__closed__", None) else {}
    if extra is not typing_extensions.NoExtraItems:
        extras = {"extra_items": Any}
    rebuilt = typing_extensions.TypedDict(  # type: ignore[misc]
        tp.__name__, {key: _qualified(Any, required[key]) for key in hints}, **extras
    )
    rebuilt.__doc__ = tp.__doc__
    rebuilt.__module__ = tp.__module__
    config = vars(tp).get("__pydantic_config__")  # what `@with_config(...)` set
    if config is not None:
        rebuilt.__pydantic_config__ = config  # type: ignore[attr-defined]
    _REBUILT[tp] = rebuilt
    try:
        for key, hint in hints.items():
            rebuilt.__annotations__[key] = _qualified(
                _rebuild(_strip_required(hint)), required[key]
            )
        if "extra_items" in extras:
            rebuilt.__extra_items__ = _rebuild(extra)  # type: ignore[attr-defined]
    except BaseException:
        del _REBUILT[tp]
        raise
    return rebuilt


def _qualified(inner: Any, required: bool) -> Any:
    if required:
        return typing_extensions.Required[inner]
    return typing_extensions.NotRequired[inner]


def _required(hint: Any, default: bool) -> bool:
    origin = get_origin(hint)
    if origin in (typing.Required, typing_extensions.Required):
        return True
    if origin in (typing.NotRequired, typing_extensions.NotRequired):
        return False
    return default


def _strip_required(hint: Any) -> Any:
    if get_origin(hint) in (
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        return get_args(hint)[0]
    return hint
