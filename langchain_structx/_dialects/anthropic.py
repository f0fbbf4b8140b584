"""Anthropic structured outputs (JSON outputs and strict tool use).

Relied on (Anthropic's "JSON Schema limitations" list for structured outputs):

* accepted: basic types (a `type` list too), `properties`, `required` (optional
  properties allowed), `additionalProperties` (only `false`, required on every
  object), `items`, `anyOf`, `enum` (scalar values only), `const`,
  `$ref`/`$defs` (not recursive), `title`, `description`; strings: `pattern`
  (without backreferences, lookaround or word boundaries) and `format` (date-time,
  time, date, duration, email, hostname, uri, ipv4, ipv6, uuid); arrays: `minItems`
  of 0 or 1 only;
* not accepted: recursive schemas, numeric constraints (`minimum`, `maximum`,
  `multipleOf`, ...), string lengths, other array constraints, `allOf` (kept
  conservative: merged away), `oneOf`, `not`, conditionals, `prefixItems`;
* `type` lists are written as `anyOf` of single types: `ChatAnthropic` passes every
  structured-output schema through the `anthropic` SDK's `transform_schema`, which
  takes a single type only (and moves `pattern` and other kept keywords into the
  description);
* complexity limits (conservative reading, counted over the whole schema): at most
  24 optional properties and 16 properties or nodes using a union (`anyOf` or a
  `type` list).
"""

from __future__ import annotations

import re
from typing import Any

from langchain_structx._dialects.rules import Rules
from langchain_structx._dialects.traversal import find_cycle, iter_nodes
from langchain_structx._exceptions import DialectError

MAX_OPTIONAL = 24
MAX_UNIONS = 16
FORMATS = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    }
)
_UNSUPPORTED_REGEX = re.compile(r"\\[1-9bBk]|\(\?<?[=!]|\(\?P=")


def accepts(keyword: str, value: Any) -> bool:
    """Finer rules: regex features and `minItems` values.

    Examples:
        >>> accepts("pattern", "^(?=a)"), accepts("minItems", 1), accepts("minItems", 2)
        (False, True, False)
    """
    if keyword == "pattern":
        return isinstance(value, str) and not _UNSUPPORTED_REGEX.search(value)
    if keyword == "minItems":
        return value in (0, 1)
    return True


def _is_union(node: Any) -> bool:
    return "anyOf" in node or isinstance(node.get("type"), list)


def check_limits(schema: dict[str, Any]) -> None:
    """Raise `DialectError` for recursion and for the complexity limits."""
    cycle = find_cycle(schema.get("$defs") or {})
    if cycle is not None:
        raise DialectError("anthropic", f"recursive definition {cycle!r} is not supported")
    nodes = list(iter_nodes(schema))
    optional = sum(
        len(set(n.get("properties") or ()) - set(n.get("required") or ())) for n in nodes
    )
    if optional > MAX_OPTIONAL:
        raise DialectError(
            "anthropic", f"{optional} optional properties exceed the limit of {MAX_OPTIONAL}"
        )
    unions = sum(1 for n in nodes if _is_union(n))
    if unions > MAX_UNIONS:
        raise DialectError(
            "anthropic", f"{unions} union-typed nodes exceed the limit of {MAX_UNIONS}"
        )


RULES = Rules(
    name="anthropic",
    keep={"string": frozenset({"pattern", "format"}), "array": frozenset({"minItems"})},
    formats=FORMATS,
    closed_objects=True,
    refs="acyclic",
    type_lists=False,
    accepts=accepts,
    limits=check_limits,
)
