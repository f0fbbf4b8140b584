"""Codecs: move one value between the original schema's shape and the provider's.

Every transform step that changes the shape of values (wrapping the root, turning
maps into key/value entries, tuples into objects, free-form values into JSON text,
optional keys into nullable ones) leaves a codec behind. `encode` maps a value valid
under the original schema to the provider's shape; `restore` maps the provider's
output back. `restore` never raises: a value of an unexpected shape is handed back
as it is, so the engine's validation against the original schema reports it.
`restore_partial` does the same for a value still being streamed: it leaves out
what is not complete enough to show in the original shape (`PENDING`), so a
partial value never shows the provider's shape nor anything the answer lacks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

from langchain_structx._dialects.guard import MAX_DEPTH, too_deep
from langchain_structx._dialects.jsonvalues import dump_json, json_equal


class _Pending:
    """What a part of a streamed value restores to while it is not complete enough."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING: Any = _Pending()


class Codec:
    """Identity codec; subclasses change the shape of values."""

    identity = True

    def encode(self, value: Any) -> Any:
        """Return `value` in the provider's shape."""
        return value

    def restore(self, value: Any) -> Any:
        """Return a provider value in the original schema's shape."""
        return self.restore_as(value, partial=False)

    def restore_partial(self, value: Any) -> Any:
        """Return the part of a streamed value that is complete enough, or `PENDING`."""
        return self.restore_as(value, partial=True)

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """`restore`, or with `partial` `restore_partial`: each codec writes both at once."""
        return value


Result = tuple[dict[str, Any], "Codec"]
"""What transforming one schema node gives: the provider's node and its codec."""


IDENTITY = Codec()


@dataclass(frozen=True)
class JsonTextCodec(Codec):
    """A value carried as JSON text (free-form values, non-string enum members)."""

    choices: tuple[Any, ...] | None = None
    identity = False

    def encode(self, value: Any) -> Any:
        """Return the JSON text, spelled as the matching enum member when there is one."""
        for choice in self.choices or ():
            if json_equal(choice, value):
                return dump_json(choice)
        return dump_json(value)

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Parse the JSON text back into a value; a partial text waits until it is whole."""
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            # RecursionError: text nested deeper than the JSON reader can follow.
            return PENDING if partial else value
        if too_deep(parsed, MAX_DEPTH):
            return PENDING if partial else value
        return parsed


@dataclass(frozen=True)
class NullableCodec(Codec):
    """`None` passes unchanged; anything else goes through `inner`."""

    inner: Codec
    identity = False

    def encode(self, value: Any) -> Any:
        """Encode a non-null value with the inner codec."""
        return None if value is None else self.inner.encode(value)

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Restore a non-null value with the inner codec."""
        return None if value is None else self.inner.restore_as(value, partial=partial)


@dataclass(frozen=True)
class ArrayCodec(Codec):
    """Apply the item codec to every element of a list."""

    items: Codec
    identity = False

    def encode(self, value: Any) -> Any:
        """Encode each element."""
        return [self.items.encode(v) for v in value] if isinstance(value, list) else value

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Restore each element (partly streamed: up to the first that waits)."""
        if not isinstance(value, list):
            return value
        restored = (self.items.restore_as(v, partial=partial) for v in value)
        return list(takewhile(lambda item: item is not PENDING, restored))


@dataclass(frozen=True)
class Field:
    """How one property travels.

    Attributes:
        codec: Codec of the property's value.
        null_is_absent: The key was optional and the provider must always send it,
            so `null` stands for "absent".
        marker: When the optional key also accepts `null`, an explicit `null` travels
            as `{marker: true}`.
        absent_as: What the provider sends for the optional key when it is absent,
            in the provider's shape (the default the validator fills in).
    """

    codec: Codec
    null_is_absent: bool = False
    marker: str | None = None
    absent_as: Any = None


@dataclass(frozen=True)
class ObjectCodec(Codec):
    """Objects: named properties, absent keys as `null`, extra keys as entries."""

    fields: Mapping[str, Field]
    fill_absent: bool
    extras_key: str | None = None
    extras: Codec = IDENTITY
    identity = False

    def encode(self, value: Any) -> Any:
        """Encode named properties, fill absent optional ones, gather extra keys."""
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for name, spec in self.fields.items():
            if name in value:
                item = value[name]
                marked = spec.marker is not None and item is None
                out[name] = {spec.marker: True} if marked else spec.codec.encode(item)
            elif self.fill_absent:
                out[name] = spec.absent_as
        rest = {k: v for k, v in value.items() if k not in self.fields}
        if self.extras_key is not None:
            out[self.extras_key] = self.extras.encode(rest)
        else:
            out.update(rest)
        return out

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Restore named properties, drop absent ones (and those that wait), merge extras."""
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for name, item in value.items():
            spec = self.fields.get(name)
            if spec is None:
                if name != self.extras_key:
                    out[name] = item
                continue
            restored = _property(spec, item, partial=partial)
            if restored is not PENDING:
                out[name] = restored
        if self.extras_key is not None:
            restored = self.extras.restore_as(value.get(self.extras_key, []), partial=partial)
            if isinstance(restored, dict):
                out.update({k: v for k, v in restored.items() if k not in out})
        return out


def _property(spec: Field, item: Any, *, partial: bool) -> Any:
    """A property's value in the original shape, or `PENDING` to leave the key out."""
    if spec.marker is not None and item == {spec.marker: True}:
        return None
    if spec.null_is_absent and item is None:
        return PENDING
    if partial and spec.marker is not None and item == {}:
        return PENDING  # may yet become the marker
    return spec.codec.restore_as(item, partial=partial)


@dataclass(frozen=True)
class MapCodec(Codec):
    """A dict carried as a list of `{"key": ..., "value": ...}` entries."""

    entry: Codec
    identity = False

    def encode(self, value: Any) -> Any:
        """Turn a dict into entries."""
        if not isinstance(value, dict):
            return value
        return [self.entry.encode({"key": k, "value": v}) for k, v in value.items()]

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Turn entries back into a dict (a repeated key keeps its last value).

        Partly streamed, the entries whose value has started; the one being
        written waits.
        """
        if not isinstance(value, list):
            return value
        out: dict[str, Any] = {}
        for raw in value:
            entry = self.entry.restore_as(raw, partial=partial)
            whole = isinstance(entry, dict) and isinstance(entry.get("key"), str)
            if not whole or (partial and "value" not in entry):
                return out if partial else value
            out[entry["key"]] = entry.get("value")
        return out


@dataclass(frozen=True)
class TupleCodec(Codec):
    """A tuple (`prefixItems`) carried as an object with one key per position."""

    inner: Codec
    names: tuple[str, ...]
    rest_key: str | None
    identity = False

    def encode(self, value: Any) -> Any:
        """Spread the positions over keys; later items go to the rest list."""
        if not isinstance(value, list):
            return value
        out: dict[str, Any] = dict(zip(self.names, value, strict=False))
        if self.rest_key is not None:
            out[self.rest_key] = value[len(self.names) :]
        return self.inner.encode(out)

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Collect the positions up to the first absent one, then the rest list."""
        restored = self.inner.restore_as(value, partial=partial)
        if not isinstance(restored, dict):
            return restored
        out: list[Any] = []
        for name in self.names:
            if name not in restored:
                return out
            out.append(restored[name])
        rest = restored.get(self.rest_key, []) if self.rest_key else []
        return out + rest if isinstance(rest, list) else out


@dataclass(frozen=True)
class WrapCodec(Codec):
    """A non-object root carried as `{key: value}`.

    Examples:
        >>> WrapCodec(IDENTITY).restore({"value": [1]}), WrapCodec(IDENTITY).restore_partial({})
        ([1], PENDING)
    """

    inner: Codec
    key: str = "value"
    identity = False

    def encode(self, value: Any) -> Any:
        """Wrap the encoded value."""
        return {self.key: self.inner.encode(value)}

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Unwrap and restore; a value without the key comes back unchanged, or waits."""
        if isinstance(value, dict) and self.key in value:
            return self.inner.restore_as(value[self.key], partial=partial)
        return PENDING if partial and isinstance(value, dict) else value


@dataclass(frozen=True)
class RefCodec(Codec):
    """Codec of a `$defs` entry, looked up when used (definitions may be recursive)."""

    name: str
    table: Mapping[str, Codec]
    identity = False

    def encode(self, value: Any) -> Any:
        """Encode with the definition's codec."""
        return self.table[self.name].encode(value)

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Restore with the definition's codec."""
        return self.table[self.name].restore_as(value, partial=partial)


Check = Callable[[Any], bool]


@dataclass(frozen=True)
class Branch:
    """One union member: who accepts what, and how values travel."""

    accepts_original: Check
    accepts_provider: Check
    codec: Codec


@dataclass(frozen=True)
class UnionCodec(Codec):
    """`anyOf` members with different codecs: pick the member by validation.

    `restore` takes the first member whose provider schema accepts the value and
    whose restored value its original schema accepts. `encode` picks the first
    member that accepts the value and whose encoding restores to the same value,
    so the round trip is exact whenever some member allows it.
    """

    branches: tuple[Branch, ...]
    identity = False

    def encode(self, value: Any) -> Any:
        """Encode with a member that round-trips the value."""
        candidates = [b for b in self.branches if b.accepts_original(value)]
        for branch in candidates:
            encoded = branch.codec.encode(value)
            if json_equal(self.restore(encoded), value):
                return encoded
        return candidates[0].codec.encode(value) if candidates else value

    def restore_as(self, value: Any, *, partial: bool) -> Any:
        """Restore with the first member consistent on both sides.

        Partly streamed, nothing: part of a value can fit a member that the whole
        does not.
        """
        if partial:
            return PENDING
        fitting = [b for b in self.branches if b.accepts_provider(value)]
        for branch in fitting:
            restored = branch.codec.restore(value)
            if branch.accepts_original(restored):
                return restored
        return fitting[0].codec.restore(value) if fitting else value
