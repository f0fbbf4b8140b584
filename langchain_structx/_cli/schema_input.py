"""What `structx extract --schema` accepts, turned into schemas.

A `--schema` is one of, tried in this order:

- JSON text starting with `{`: a JSON schema given inline;
- a file (any existing path, or a name ending in `.json`) holding a JSON schema,
  read up to `MAX_SCHEMA_BYTES` so that `/dev/zero` or a huge file is refused;
- `module:Class`: a Pydantic model, dataclass or `TypedDict` to import;
- a field list such as `'name, age int, tags list[str], email?'`: each field is a
  name, an optional type (`str`, the default, `int`, `float`, `bool`, `date` or
  `list[...]` of one of those), `?` when the text may not hold it, and an optional
  `: description` (without commas).

`--many` wraps the schema as `{"items": [...]}` so that the model lists every
item of the kind, and the command prints the list.
"""

from __future__ import annotations

import errno
import importlib
import json
import re
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from langchain_structx._cli.exits import CliError
from langchain_structx._clip import clip, read_capped
from langchain_structx._schemas.normalise import normalize
from langchain_structx._schemas.unions import defs_of, movable, without_defs
from langchain_structx.errors import StructxError

MAX_SCHEMA_BYTES = 1 << 20
"""The largest schema file read (1 MiB); a schema is never near that."""

MANY_KEY = "items"
"""The property that holds the list when `--many` is given."""

_SCALARS = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "date": {"type": "string", "format": "date"},
}
_TYPES = {*_SCALARS, *(f"list[{name}]" for name in _SCALARS)}
# A field's name is a word in any script (`姓名`), as JSON property names may be.
_FIELD = re.compile(
    r"(?P<name>[^\W\d]\w*)\s*(?P<opt>\?)?"
    r"(?:\s+(?P<type>[a-z]+(?:\[[a-z]+\])?)\s*(?P<opt2>\?)?)?"
    r"(?:\s*:\s*(?P<desc>[^,]*\S))?"
)
_IMPORT = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class SchemaSpecError(StructxError):
    """A `--schema` that cannot be read, parsed or imported."""


def load_schema(spec: str, *, position: int = 1) -> Any:
    """Load one `--schema` value.

    Args:
        spec: The option's value.
        position: Which `--schema` this is (1 for the first), to name a field-list
            schema uniquely in a union.

    Raises:
        SchemaSpecError: When it cannot be loaded.

    Examples:
        >>> load_schema("name, age int?")["required"]
        ['name']
        >>> load_schema('{"type": "object"}')
        {'type': 'object'}
    """
    if spec.lstrip().startswith("{"):
        return _json_object(spec, "inline JSON schema")
    path = Path(spec)
    if _names_a_file(path):
        return _json_object(_read_capped(path), f"schema file {spec}")
    if _IMPORT.fullmatch(spec):
        return _import(spec)
    fields = [part.strip() for part in spec.split(",")]
    if all(_FIELD.fullmatch(f) for f in fields):
        return field_list_schema(fields, title="Item" if position == 1 else f"Item{position}")
    raise SchemaSpecError(
        f"--schema {spec!r} is not a .json file, JSON text, module:Class, "
        f"or a field list such as 'name, age int'{_field_hint(fields)}"
    )


def _field_hint(fields: list[str]) -> str:
    """Which part of a would-be field list is no field, and the likely cause."""
    if len(fields) == 1 and not re.search(r"\s", fields[0]):
        return ""  # one word that is not a field: a missing file more likely than a list
    bad = next(f for f in fields if not _FIELD.fullmatch(f))
    words = bad.split()
    missing_comma = len(words) > 2 or (len(words) == 2 and words[1].rstrip("?") not in _TYPES)
    cause = "; a missing comma?" if missing_comma and _FIELD.fullmatch(words[0]) else ""
    return (
        f"; the part {clip(repr(bad), 80)} is not a field (a name, an optional type "
        f"such as int or list[str], ? when optional, then an optional ': description'){cause}"
    )


def _names_a_file(path: Path) -> bool:
    """Whether a `--schema` is a file: a `.json` name, or anything on disk.

    A text too long to be a file name, such as a long field list, names none.
    """
    if path.suffix == ".json":
        return True
    try:
        return path.exists()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise SchemaSpecError(f"cannot read schema file {path}: {exc.strerror or exc}") from None


def _read_capped(path: Path) -> str:
    try:
        return read_capped(path, MAX_SCHEMA_BYTES, f"schema file {path}")
    except ValueError as exc:
        raise SchemaSpecError(str(exc)) from None


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise SchemaSpecError(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise SchemaSpecError(f"{what} is nested too deeply to be a schema") from None
    if not isinstance(loaded, dict):
        raise SchemaSpecError(f"{what} must hold a JSON object")
    return loaded


def _import(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # noqa: BLE001 - whatever the import raised, it is the user's spec
        raise SchemaSpecError(f"cannot import {spec}: {exc}") from None


def field_list_schema(fields: list[str], *, title: str) -> dict[str, Any]:
    """The JSON schema of a field list such as `['name', 'age int?']`.

    Raises:
        SchemaSpecError: For an unknown type or a repeated name.

    Examples:
        >>> field_list_schema(["tags list[str]: topics"], title="Item")["properties"]
        {'tags': {'type': 'array', 'items': {'type': 'string'}, 'description': 'topics'}}
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in fields:
        match = _FIELD.fullmatch(field)
        assert match is not None  # checked by the caller
        name = match["name"]
        if name in properties:
            raise SchemaSpecError(f"--schema names the field {name!r} twice")
        properties[name] = _field_type(match["type"] or "str")
        if match["desc"]:
            properties[name]["description"] = match["desc"]
        if not (match["opt"] or match["opt2"]):
            required.append(name)
    return {"title": title, "type": "object", "properties": properties, "required": required}


def _field_type(name: str) -> dict[str, Any]:
    inner = name.removeprefix("list[").removesuffix("]")
    if inner not in _SCALARS:
        known = ", ".join([*_SCALARS, "list[...]"])
        raise SchemaSpecError(f"--schema type {name!r} is unknown; use one of {known}")
    if inner == name:
        return dict(_SCALARS[name])
    return {"type": "array", "items": dict(_SCALARS[inner])}


def variant_count(schemas: list[Any]) -> int:
    """How many shapes the schemas allow (a one-file `oneOf` counts each branch).

    Raises:
        SchemaSpecError: When the schemas do not form a valid set.
    """
    try:
        return len(normalize(schemas[0] if len(schemas) == 1 else schemas).variants)
    except StructxError as exc:
        raise SchemaSpecError(str(exc)) from None


def many(schema: Any) -> Any:
    """`schema` wrapped as an object whose `items` list holds every match.

    A JSON schema moves under the new root as a union branch moves to a variant of
    its own: its definitions go to the new root, and it must not refer to its own
    root or outside its definitions (see `_unions.movable`).

    Raises:
        CliError: A usage error, when moving the schema would change its meaning.

    Examples:
        >>> many({"title": "City", "type": "object"})["properties"]["items"]["type"]
        'array'
    """
    if not isinstance(schema, dict):
        # A Python class keeps its own validation: the list is typed with it.
        return TypedDict(f"{getattr(schema, '__name__', 'Item')}List", {MANY_KEY: list[schema]})  # type: ignore[operator]
    if not movable(schema):
        raise CliError(
            "--many cannot wrap this schema: it has a $ref to its own root or outside its "
            "$defs/definitions, or an $id or anchor; point references into $defs"
        )
    title = str(schema.get("title") or "Item")
    return {
        "title": f"{title}List",
        "type": "object",
        "properties": {MANY_KEY: {"type": "array", "items": without_defs(schema)}},
        "required": [MANY_KEY],
        **defs_of(schema),
    }
