"""Schema-guided coercion: nudge a parsed JSON value towards a JSON Schema.

Models often get the shape right and a scalar wrong (`"42"` for an integer, `"Yes"`
for a boolean, a lone item where a list is wanted). `coerce` fixes only those, and
records each change as a `Repair` with the JSON path of the value it touched.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from langchain_structx._parsing.decode import floats
from langchain_structx._parsing.repairs import Parsed, Repair

__all__ = ("coerce", "whole_numbers")

_MAX_COERCE_DEPTH: Final = 100
_MAX_REF_HOPS: Final = 32
_EXACT_INTEGERS: Final = 2**53
"""Past this size a float no longer stands for one integer exactly."""
_INT_TEXT = re.compile(r"\s*[-+]?\d{1,300}(?:\.0*)?\s*")
_NUMBER_TEXT = re.compile(r"\s*[-+]?(?:\d{1,300}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,4})?\s*")
_BOOL_TEXT: Final = {"true": True, "yes": True, "false": False, "no": False}
_TYPE_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, Mapping),
}


def coerce(
    value: Any, schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None
) -> Parsed:
    """Nudge an already-parsed value towards a JSON Schema, recording each change.

    A value is only changed where it does not already fit the schema there (its
    type, `enum` and `const`) and the changed value does. Where `anyOf`, `oneOf` or
    a list of types is given, a value that fits any branch is left alone. Coercion
    follows `properties`, `additionalProperties`, `items`, `prefixItems`, `allOf`,
    `anyOf`, `oneOf` and local `$ref`s. Unchanged parts of the result may be shared
    with `value`, which is never mutated.

    Args:
        value: A JSON value, as returned by `parse_json`.
        schema: The JSON Schema to coerce towards.
        root: The document that `$ref`s resolve against; defaults to `schema`.

    Returns:
        The coerced value and one repair per change, each with its JSON path.
    """
    coercer = _Coercer(schema if root is None else root)
    return Parsed(coercer.visit(value, schema, ()), tuple(coercer.repairs))


def whole_numbers(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` with each whole float where `schema` wants an integer made an `int`.

    JSON Schema counts `1.0` as an integer, so a valid answer may hold one where
    Python code expects an `int` (as Pydantic's `int` fields give). Nothing else
    changes, and a value without such a float is returned as it is.

    Examples:
        >>> whole_numbers({"n": 3.0, "x": 2.0}, {"properties": {"n": {"type": "integer"}}})
        {'n': 3, 'x': 2.0}
    """
    if not any(_whole(number) for number in floats(value)):
        return value
    return _Coercer(schema, whole_only=True).visit(value, schema, ())


def _whole(number: float) -> bool:
    return number.is_integer() and abs(number) <= _EXACT_INTEGERS


class _Coercer:
    def __init__(self, root: Any, depth: int = 0, *, whole_only: bool = False) -> None:
        self.root = root
        self.depth = depth
        self.repairs: list[Repair] = []
        self.active: set[tuple[int, int]] = set()
        # Only whole floats to integers, for a value that is already valid.
        self.whole_only = whole_only

    def visit(self, value: Any, schema: Any, path: tuple[str | int, ...]) -> Any:
        schema = self.resolve(schema)
        marker = (id(schema), id(value))
        if not isinstance(schema, Mapping) or self.depth > _MAX_COERCE_DEPTH:
            return value
        if marker in self.active:  # a $ref cycle that consumes no part of the value
            return value
        self.active.add(marker)
        self.depth += 1
        try:
            for part in schema.get("allOf", ()):
                value = self.visit(value, part, path)
            branches = schema.get("anyOf") or schema.get("oneOf")
            if branches:
                value = self._union(value, branches, path)
            if not _fits_here(value, schema):
                value = self._convert(value, schema, path)
            return self._descend(value, schema, path)
        finally:
            self.depth -= 1
            self.active.discard(marker)

    def resolve(self, schema: Any) -> Any:
        """Follow local `$ref`s; sibling keywords override the target's."""
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(schema, Mapping) or not isinstance(schema.get("$ref"), str):
                return schema
            target = _pointer(self.root, schema["$ref"])
            rest = {key: item for key, item in schema.items() if key != "$ref"}
            schema = {**target, **rest} if rest and isinstance(target, Mapping) else target
        return {}

    def fits(self, value: Any, schema: Any, depth: int = 0) -> bool:
        """Whether `value` has the shape `schema` asks for (types, enums, required keys)."""
        schema = self.resolve(schema)
        if not isinstance(schema, Mapping):
            return schema is not False
        marker = (id(schema), id(value))
        if depth > _MAX_COERCE_DEPTH or marker in self.active:
            return True
        if not _fits_here(value, schema):
            return False
        self.active.add(marker)
        try:
            return self._fits_parts(value, schema, depth + 1)
        finally:
            self.active.discard(marker)

    def _fits_parts(self, value: Any, schema: Mapping[str, Any], depth: int) -> bool:
        if not all(self.fits(value, part, depth) for part in schema.get("allOf", ())):
            return False
        for key in ("anyOf", "oneOf"):
            if key in schema and not any(self.fits(value, part, depth) for part in schema[key]):
                return False
        if isinstance(value, Mapping):
            if not all(key in value for key in schema.get("required", ())):
                return False
            children = ((item, _property_schema(schema, key)) for key, item in value.items())
        elif isinstance(value, list):
            children = ((item, _item_schema(schema, index)) for index, item in enumerate(value))
        else:
            return True
        return all(self.fits(item, sub, depth) for item, sub in children)

    def _union(self, value: Any, branches: Any, path: tuple[str | int, ...]) -> Any:
        if any(self.fits(value, branch) for branch in branches):
            return value
        for branch in branches:
            trial = _Coercer(self.root, self.depth, whole_only=self.whole_only)
            result = trial.visit(value, branch, path)
            if trial.repairs and self.fits(result, branch):
                self.repairs.extend(trial.repairs)
                return result
        return value

    def _convert(self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
        if self.whole_only:
            if isinstance(value, float) and _whole(value) and "integer" in _target_types(schema):
                result = int(value)
                if _fits_here(result, schema):
                    self.repairs.append(Repair("coerce_int", "whole number", path))
                    return result
            return value
        for target in _target_types(schema):
            if target == "array":
                wrapped = self._wrap(value, schema, path)
                if wrapped is not None:
                    return wrapped
                continue
            converter = _CONVERTERS.get(target)
            converted = converter(value, schema) if converter else None
            if converted is not None and _fits_here(converted[1], schema):
                repair_kind, result, detail = converted
                self.repairs.append(Repair(repair_kind, detail, path))
                return result
        return value

    def _wrap(
        self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]
    ) -> list[Any] | None:
        if value is None or isinstance(value, list) or not _fits_here([value], schema):
            return None
        item_schema = _item_schema(schema, 0)
        trial = _Coercer(self.root, self.depth)
        item = trial.visit(value, item_schema, (*path, 0))
        if not self.fits(item, item_schema):
            return None
        self.repairs.append(Repair("wrap_array", "wrapped a single value in an array", path))
        self.repairs.extend(trial.repairs)
        return [item]

    def _descend(self, value: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
        pick: Callable[[Mapping[str, Any], Any], Any]
        if isinstance(value, Mapping):
            pairs, pick = value.items(), _property_schema
        elif isinstance(value, list):
            pairs, pick = enumerate(value), _item_schema  # type: ignore[assignment]
        else:
            return value
        changed: dict[Any, Any] = {}
        for key, item in pairs:
            sub = pick(schema, key)
            if sub is not None:
                result = self.visit(item, sub, (*path, key))
                if result is not item:
                    changed[key] = result
        if not changed:
            return value
        if isinstance(value, list):
            return [changed.get(index, item) for index, item in enumerate(value)]
        return {**value, **changed}


def _pointer(root: Any, ref: str) -> Any:
    """Resolve a local JSON pointer such as `#/$defs/Item`; `{}` when it points nowhere."""
    if not ref.startswith("#"):
        return {}
    node = root
    for raw in ref[1:].split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return {}
    return node


def _property_schema(schema: Mapping[str, Any], key: Any) -> Any:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping | bool) else None


def _item_schema(schema: Mapping[str, Any], index: Any) -> Any:
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return items if isinstance(items, Mapping | bool) else None


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [item for item in declared if isinstance(item, str)]
    return None


def _same(left: Any, right: Any) -> bool:
    """JSON equality: unlike Python, `true` is not `1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def _fits_here(value: Any, schema: Mapping[str, Any]) -> bool:
    """The checks coercion can change: `type`, `enum` and `const`."""
    types = _types(schema)
    if types is not None and not any(_TYPE_CHECKS.get(t, _anything)(value) for t in types):
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(value, member) for member in enum):
        return False
    return "const" not in schema or _same(value, schema["const"])


def _anything(value: Any) -> bool:
    return True


def _target_types(schema: Mapping[str, Any]) -> list[str]:
    types = _types(schema)
    if types is not None:
        return types
    return ["string"] if isinstance(schema.get("enum"), list) else []


def _show(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 40 else shown[:37] + "..."


_Converted = tuple[str, Any, str] | None


def _to_integer(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value):
        result = int(value.strip().split(".")[0])
    else:
        return None
    return "coerce_int", result, f"converted {_show(value)} to the integer {result}"


def _to_number(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or not _NUMBER_TEXT.fullmatch(value):
        return None
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    result = int(value) if _INT_TEXT.fullmatch(value) and "." not in value else number
    return "coerce_number", result, f"converted {_show(value)} to the number {_show(result)}"


def _to_boolean(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or value.strip().casefold() not in _BOOL_TEXT:
        return None
    result = _BOOL_TEXT[value.strip().casefold()]
    return "coerce_bool", result, f"converted {_show(value)} to {_show(result)}"


def _to_null(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if not isinstance(value, str) or value.strip().casefold() not in ("null", "none"):
        return None
    return "coerce_null", None, f"converted {_show(value)} to null"


def _to_string(value: Any, schema: Mapping[str, Any]) -> _Converted:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        try:
            text = json.dumps(value)
        except ValueError:  # an integer with more digits than Python will print
            return None
        return "coerce_string", text, f"converted the number {text} to the string {_show(text)}"
    enum = schema.get("enum")
    if not isinstance(value, str) or not isinstance(enum, list):
        return None
    folded = value.casefold()
    matches = [item for item in enum if isinstance(item, str) and item.casefold() == folded]
    if len(matches) != 1:
        return None
    return "enum_case", matches[0], f"matched {_show(value)} to the enum member {_show(matches[0])}"


_CONVERTERS: Final[dict[str, Callable[[Any, Mapping[str, Any]], _Converted]]] = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "null": _to_null,
    "string": _to_string,
}
