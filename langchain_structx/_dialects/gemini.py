"""Gemini structured output: the subset common to `responseSchema` and `responseJsonSchema`.

Relied on, conservatively:

* accepted: `type` (lower-case JSON Schema names; `[T, "null"]` for nullable),
  `properties`, `required` (optional properties allowed), `propertyOrdering`,
  `items`, `minItems`, `maxItems`, `anyOf`, `enum` (strings only), `format`
  (`date-time` only for strings), `title`, `description`;
* not used: `$ref`/`$defs` (definitions are inlined, so recursive schemas cannot be
  expressed), `additionalProperties` (objects are closed by the provider itself),
  `const` (a one-value `enum` instead), numeric bounds, string lengths, `pattern`,
  and everything OpenAPI 3.0 does not know;
* no published size limits are enforced, but inlining definitions stops at 20,000
  schema nodes.
"""

from __future__ import annotations

from langchain_structx._dialects.rules import Rules

FORMATS = frozenset({"date-time"})

RULES = Rules(
    name="gemini",
    keep={"string": frozenset({"format"}), "array": frozenset({"minItems", "maxItems"})},
    formats=FORMATS,
    all_required=False,
    closed_objects=False,
    refs="inline",
    string_enums=True,
    const=False,
    property_ordering=True,
)
