"""Gemini structured output: the subset common to `responseSchema` and `responseJsonSchema`.

Relied on, conservatively:

* accepted: `type` (lower-case JSON Schema names; `[T, "null"]` for nullable),
  `properties`, `required` (optional properties allowed), `propertyOrdering`,
  `items`, `minItems`, `maxItems`, `anyOf`, `enum` (strings only), `format`
  (`date-time` only for strings), `title`, `description`;
* `$ref`/`$defs` only for recursion: definitions are inlined, and one that recurs is
  kept as a `$ref` when every cycle passes through a property that is not required
  (`responseJsonSchema` documents cycles through non-required properties);
  `langchain-google-genai` sends `responseJsonSchema`;
* not used: `additionalProperties` (objects are closed by the provider itself),
  `const` (a one-value `enum` instead), numeric bounds, string lengths, `pattern`,
  and everything OpenAPI 3.0 does not know;
* no published size limits are enforced, but inlining definitions stops at 20,000
  schema nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_structx._dialects.guard import strong_components
from langchain_structx._dialects.refs import ref_name
from langchain_structx._dialects.rules import Rules
from langchain_structx._exceptions import DialectError

FORMATS = frozenset({"date-time"})


def forced_refs(node: Any) -> Iterator[str]:
    """Names referenced below `node` along paths a value cannot avoid.

    Paths stop at properties that are not required: a value may leave them out.

    Examples:
        >>> ref = {"$ref": "#/$defs/N"}
        >>> node = {"type": "object", "properties": {"a": ref, "b": ref}, "required": ["a"]}
        >>> list(forced_refs(node))
        ['N']
    """
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        name = ref_name(item)
        if name is not None:
            yield name
            continue
        required = set(item.get("required") or ())
        props: Mapping[str, Any] = item.get("properties") or {}
        stack.extend(sub for key, sub in props.items() if key in required)
        stack.extend(item[k] for k in ("items", "additionalProperties") if k in item)
        stack.extend(item.get("anyOf") or ())


def check_limits(schema: dict[str, Any]) -> None:
    """Raise `DialectError` for a cycle that runs through required properties only."""
    defs: Mapping[str, Any] = schema.get("$defs") or {}
    edges = {name: [n for n in forced_refs(sub) if n in defs] for name, sub in defs.items()}
    for component in strong_components(edges):
        if len(component) > 1 or component[0] in edges[component[0]]:
            raise DialectError(
                "gemini",
                f"recursive definition {component[0]!r} recurs through required properties;"
                " Gemini allows cycles only through optional ones",
            )


RULES = Rules(
    name="gemini",
    keep={"string": frozenset({"format"}), "array": frozenset({"minItems", "maxItems"})},
    formats=FORMATS,
    refs="inline",
    string_enums=True,
    const=False,
    property_ordering=True,
    optional_cycles=True,
    limits=check_limits,
)
