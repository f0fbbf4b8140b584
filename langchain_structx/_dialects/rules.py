"""What a dialect accepts, stated as data the walker reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

RefMode = Literal["recursive", "acyclic", "inline"]
"""`$ref` kept with recursion, kept without recursion, or inlined everywhere."""

ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
SILENT = frozenset(
    {
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
        "$defs",
        "definitions",
        "readOnly",
        "writeOnly",
        "deprecated",
        "discriminator",
        "nullable",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
"""Annotations that carry no constraint; removed without a trace."""

TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    ),
    "array": frozenset(
        {
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
        }
    ),
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        }
    ),
}
TYPE_KEYWORDS = {**TYPE_KEYWORDS, "integer": TYPE_KEYWORDS["number"]}
CONDITIONALS = frozenset({"not", "if", "then", "else"})


def _always(_keyword: str, _value: Any) -> bool:
    return True


def _no_limits(_schema: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class Rules:
    """One dialect's rules.

    A dialect names only where it departs from the defaults, which are plain JSON
    Schema's: optional properties, open objects, type lists, `const` and enums of
    any type are all allowed.

    Attributes:
        name: Dialect name used in errors.
        keep: Per JSON type (`string`, `number`, `array`), the constraint keywords
            the provider enforces; anything else is described and dropped.
        formats: String formats the provider accepts.
        all_required: Every property must be listed in `required`; optional ones
            become nullable.
        closed_objects: Every object carries `additionalProperties: false`.
        refs: How `$ref` may be used.
        string_enums: `enum` may hold strings only.
        const: `const` is accepted.
        property_ordering: Objects carry `propertyOrdering` (Gemini).
        type_lists: A `type` may be a list (`["integer", "null"]`); when not,
            such nodes are sent as an `anyOf` of single types.
        optional_cycles: With `refs="inline"`, a definition that recurs is kept
            as `$ref`/`$defs` instead of failing (the dialect's `limits` then
            checks where the cycles run).
        accepts: Finer check of a kept keyword's value.
        limits: Raises `DialectError` when the final schema breaks a size limit.
    """

    name: str
    keep: Mapping[str, frozenset[str]]
    formats: frozenset[str]
    all_required: bool = False
    closed_objects: bool = False
    refs: RefMode
    string_enums: bool = False
    const: bool = True
    property_ordering: bool = False
    type_lists: bool = True
    optional_cycles: bool = False
    accepts: Callable[[str, Any], bool] = _always
    limits: Callable[[dict[str, Any]], None] = field(default=_no_limits)

    def keeps(self, json_type: str, keyword: str, value: Any) -> bool:
        """Tell whether a constraint keyword stays in the provider schema."""
        if keyword not in self.keep.get(json_type, frozenset()):
            return False
        if keyword == "format" and value not in self.formats:
            return False
        return self.accepts(keyword, value)
