"""Every problem the JSON Schema meta-schema finds in a schema, each with its path.

jsonschema's `check_schema` raises the first problem only, without saying
where it is; a schema written by hand often has several. The list is bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from langchain_structx._clip import clip
from langchain_structx._exceptions import ValidationIssue
from langchain_structx._validation.keywords import SCHEMA_FORMAT_CHECKER

MAX_SCHEMA_PROBLEMS = 8
"""The most problems a message lists; the rest are counted."""
_COUNTED = 200
"""The most problems counted: past it the count reads "200 or more"."""
_META = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=SCHEMA_FORMAT_CHECKER)


def schema_problems(schema: Mapping[str, Any]) -> str | None:
    """The meta-schema's problems with `schema`, as one message; None when it has none.

    Examples:
        >>> print(schema_problems({"type": "object", "required": "a", "minProperties": -1}))
        2 problems: at $.minProperties: -1 is less than the minimum of 0; at $.required: 'a' is not of type 'array'
        >>> schema_problems({"type": "object"}) is None
        True
    """  # noqa: E501
    shown: list[str] = []
    total = 0
    for error in _META.iter_errors(schema):
        total += 1
        if len(shown) < MAX_SCHEMA_PROBLEMS:
            shown.append(_describe(best_match([error]) or error))
        if total >= _COUNTED:
            break
    if not total:
        return None
    noun = "problem" if total == 1 else "problems"
    count = f"{total} or more" if total >= _COUNTED else str(total)
    more = total - len(shown)
    rest = f"; and {more} more" if more else ""
    return f"{count} {noun}: " + "; ".join(shown) + rest


_QUOTED = 80
"""The most characters of a schema's value a problem quotes."""
_TYPES = "array, boolean, integer, null, number, object or string"


def _describe(error: ValidationError) -> str:
    path = tuple(error.absolute_path)
    message = str(error.message)
    if error.validator == "anyOf" and path and path[-1] == "type":
        # The meta-schema's own wording ("not valid under any of the given schemas")
        # names neither the choices nor the mistake.
        message = f"{clip(repr(error.instance), 80)} is not a JSON type: use {_TYPES}, or a list"
    quoted = repr(error.instance)
    if len(quoted) > _QUOTED and message.startswith(quoted):  # jsonschema quotes it first
        message = clip(quoted, _QUOTED) + message[len(quoted) :]
    return str(ValidationIssue(path, clip(message, 300)))
