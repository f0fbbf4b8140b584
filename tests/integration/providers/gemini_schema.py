"""Gemini's `Schema` object, as a function declaration's `parameters` must be written.

From the Gemini API reference, "Schema": the fields are `type` (one of the
`Type` enum names: STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL),
`format`, `title`, `description`, `nullable`, `enum`, `maxItems`, `minItems`,
`properties`, `required`, `minProperties`, `maxProperties`, `minLength`,
`maxLength`, `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`,
`items`, `minimum`, `maximum`. The request body is read as proto3 JSON, which
takes a field under its JSON name or its proto name (`anyOf` or `any_of`; the
API's own error messages name fields the proto way, and Google's `google-genai`
SDK sends the proto names); anything else is refused with a 400 "Invalid JSON
payload received. Unknown name ...: Cannot find field." A list where one value
is expected (`"type": ["integer", "null"]`) is refused too ("Proto field is
not repeating, cannot start list").
"""

from __future__ import annotations

import re
from typing import Any

FIELDS = (
    "type format title description nullable enum maxItems minItems properties required "
    "minProperties maxProperties minLength maxLength pattern example anyOf propertyOrdering "
    "default items minimum maximum"
).split()
TYPES = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
_SCALAR_FIELDS = {"type", "format", "title", "description", "nullable", "pattern", "minimum"}
_SCALAR_FIELDS |= {"maximum", "maxItems", "minItems", "minProperties", "maxProperties"}
_SCALAR_FIELDS |= {"minLength", "maxLength"}


def _proto_name(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


NAMES = {name: name for name in FIELDS} | {_proto_name(name): name for name in FIELDS}


def schema_rules(schema: Any, path: str) -> list[str]:
    """Each way `schema` breaks the rules of Gemini's `Schema`, worded as the API words it."""
    out: list[str] = []
    stack: list[tuple[str, Any]] = [(path, schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            out.append(f"Invalid value at '{where}': a Schema must be an object")
            continue
        for key, value in node.items():
            field = NAMES.get(key)
            if field is None:
                out.append(f"Invalid JSON payload received. Unknown name {key!r} at '{where}'")
                continue
            if field in _SCALAR_FIELDS and isinstance(value, list):
                out.append(
                    f"Invalid JSON payload received. Unknown name {key!r} at '{where}': "
                    "Proto field is not repeating, cannot start list."
                )
            elif field == "type" and str(value).upper() not in TYPES:
                out.append(f"Invalid value at '{where}.type' ({value!r})")
            elif field == "properties" and isinstance(value, dict):
                stack += [(f"{where}.properties[{k}]", v) for k, v in value.items()]
            elif field == "items":
                stack.append((f"{where}.items", value))
            elif field == "anyOf" and isinstance(value, list):
                stack += [(f"{where}.any_of[{i}]", v) for i, v in enumerate(value)]
    return out
