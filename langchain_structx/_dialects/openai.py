"""OpenAI Structured Outputs (`strict: true`), from the "supported schemas" guide.

Relied on:

* root must be an object, not `anyOf`; every object has `additionalProperties: false`
  and lists every property in `required` (optional = union with `null`);
* accepted: `type` (a list with `"null"` too), `properties`, `required`, `items`,
  `anyOf`, `enum`, `const`, `$ref`/`$defs` (recursion allowed; a `$ref` must stand
  alone), `title`, `description`; strings: `pattern`, `format` (date-time, time,
  date, duration, email, hostname, ipv4, ipv6, uuid); numbers: `minimum`,
  `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`; arrays:
  `minItems`, `maxItems`;
* not accepted (conservative reading): `allOf`, `oneOf`, `not`, `if`/`then`/`else`,
  `dependent*`, `patternProperties`, `minLength`/`maxLength`, `uniqueItems`,
  `contains`, `prefixItems`, `default`, `examples`;
* limits: 5,000 object properties, 10 levels of object nesting (arrays do not count
  as a level; references are followed until they recur), 1,000 enum values,
  120,000 characters of property names, definition names, enum and const values,
  and 15,000 characters for the string values of one enum of more than 250 values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_structx._dialects.refs import ref_name
from langchain_structx._dialects.rules import Rules
from langchain_structx._dialects.traversal import children, iter_nodes
from langchain_structx._exceptions import DialectError

MAX_PROPERTIES = 5_000
MAX_DEPTH = 10
MAX_ENUM_VALUES = 1_000
MAX_CHARS = 120_000
LARGE_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def _chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(str(value))


def nesting(
    node: Any,
    defs: Mapping[str, Any],
    stack: tuple[str, ...] = (),
    known: dict[str, int] | None = None,
) -> int:
    """Return the deepest object nesting below `node`, following references once.

    Each definition is measured once (`known`), so a definition used many times
    does not multiply the work.

    Examples:
        >>> nesting({"type": "object", "properties": {"a": {"type": "object"}}}, {})
        2
    """
    known = {} if known is None else known
    if not isinstance(node, dict):
        return 0
    name = ref_name(node)
    if name is not None:
        if name in stack or name not in defs:
            return 0
        if name not in known:
            known[name] = nesting(defs[name], defs, (*stack, name), known)
        return known[name]
    json_type = node.get("type")
    here = (
        1 if json_type == "object" or (isinstance(json_type, list) and "object" in json_type) else 0
    )
    return here + max((nesting(c, defs, stack, known) for c in children(node)), default=0)


def _fail(reason: str) -> DialectError:
    return DialectError("openai", reason)


def check_limits(schema: dict[str, Any]) -> None:
    """Raise `DialectError` when a provider schema breaks an OpenAI size limit."""
    nodes = list(iter_nodes(schema))
    defs = schema.get("$defs") or {}
    properties = sum(len(n.get("properties") or {}) for n in nodes)
    if properties > MAX_PROPERTIES:
        raise _fail(f"{properties} object properties exceed the openai limit of {MAX_PROPERTIES}")
    depth = nesting(schema, defs)
    if depth > MAX_DEPTH:
        raise _fail(f"nesting depth {depth} exceeds the openai limit of {MAX_DEPTH}")
    enums = [n["enum"] for n in nodes if isinstance(n.get("enum"), list)]
    values = sum(map(len, enums))
    if values > MAX_ENUM_VALUES:
        raise _fail(f"{values} enum values exceed the openai limit of {MAX_ENUM_VALUES}")
    for enum in enums:
        size = sum(len(v) for v in enum if isinstance(v, str))
        if len(enum) > LARGE_ENUM and size > MAX_LARGE_ENUM_CHARS:
            raise _fail(
                f"an enum of {len(enum)} values has {size} characters, over the openai limit"
                f" of {MAX_LARGE_ENUM_CHARS} for enums of more than {LARGE_ENUM} values"
            )
    chars = sum(len(k) for n in nodes for k in n.get("properties") or {}) + sum(map(len, defs))
    chars += sum(_chars(v) for enum in enums for v in enum)
    chars += sum(_chars(n["const"]) for n in nodes if "const" in n)
    if chars > MAX_CHARS:
        raise _fail(
            f"{chars} characters of names and values exceed the openai limit of {MAX_CHARS}"
        )


RULES = Rules(
    name="openai",
    keep={
        "string": frozenset({"pattern", "format"}),
        "number": frozenset(
            {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
        ),
        "integer": frozenset(
            {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
        ),
        "array": frozenset({"minItems", "maxItems"}),
    },
    formats=FORMATS,
    all_required=True,
    closed_objects=True,
    refs="recursive",
    limits=check_limits,
)
