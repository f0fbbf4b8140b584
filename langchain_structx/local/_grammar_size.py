"""Estimate the size of the grammar the converter will write for a schema.

The converter names each rule after the path of property names that leads to it,
and writes a count out as that many references to the item's rule: the text grows
with the length of the names times the nesting, and with the counts. `Estimate`
follows the converter's own walk to add it up before anything is built.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from langchain_structx.local._limits import MAX_GRAMMAR_CHARS, MAX_NAME_PROBES
from langchain_structx.local._schema_shape import builds_object, refuse, resolve, union_branches

__all__ = ("Estimate", "PatternLoads")

_OPTIONAL_SHARE = MAX_GRAMMAR_CHARS * 3 // 4
"""Counts and patterns are kept while the estimate stays under this, leaving room
for the estimate's own error before the grammar itself is checked."""

_NOT_IN_RULE_NAMES = re.compile(r"[^a-zA-Z0-9-]+")
"""What the converter replaces with `-` in a rule's name."""

PatternLoads = dict[str, tuple[int, int]]
"""For each rewritten pattern: the alternatives it keeps open per character, and the
length of its grammar when converted on its own."""


class Estimate:
    """Pass 3 of `bound_schema`: add up the grammar text the converter will write.

    Attributes:
        chars: The text counted so far.
        probes: At most how many names the converter looks up while naming the
            rules counted so far (names that come out alike are numbered in turn).
    """

    def __init__(self, root: dict[str, Any], loads: PatternLoads) -> None:
        self.root = root
        self.loads = loads
        self.chars = 0
        self.probes = 0
        self.done: set[str] = set()
        self._names: Counter[str] = Counter()

    def named(self, name: str) -> None:
        """Count the lookups the converter spends naming one more rule `name`.

        Raises:
            GrammarError: Past `MAX_NAME_PROBES`.
        """
        written = _NOT_IN_RULE_NAMES.sub("-", name)
        self.probes += self._names[written] + 1
        self._names[written] += 1
        if self.probes > MAX_NAME_PROBES:
            refuse(
                "the grammar for this schema would take too long to build: too many of"
                " its property names come out alike in the grammar's rule names"
            )

    def fits(self, chars: int) -> bool:
        """Whether `chars` more characters of counts or patterns may be kept."""
        return self.chars + chars <= _OPTIONAL_SHARE

    def visit(self, node: Any, name: str) -> None:
        """Count the rules for `node`, named `name`, as the converter's `visit` writes them."""
        if not isinstance(node, dict):
            return
        self.chars += 2 * len(name) + 8  # the rule's name, and one reference to it
        self.named(name)
        if "$ref" in node:
            ref_name = str(node["$ref"]).split("/")[-1]
            if ref_name not in self.done:  # The converter writes each target once.
                self.done.add(ref_name)
                self.visit(resolve(self.root, node["$ref"]), ref_name)
            return
        branches = union_branches(node)
        if branches is not None:
            for index, branch in enumerate(branches):
                self.visit(branch, f"{name}{'-' if name else 'alternative-'}{index}")
            return
        values = node.get("enum")
        if isinstance(node.get("type"), list) or "const" in node or "enum" in node:
            literals = (
                values if "const" not in node and isinstance(values, list) else [node.get("const")]
            )
            self.chars += sum(2 * len(json.dumps(value)) + 8 for value in literals)
            return
        self.body(node, name)

    def body(self, node: dict[str, Any], name: str) -> None:
        """Count an object, array or string rule, dropping counts that do not fit."""
        prefix, kind = f"{name}-" if name else "", node.get("type")
        if builds_object(node):
            self.object(node, prefix)
        elif kind in (None, "object") and isinstance(node.get("allOf"), list):
            for part in node["allOf"]:
                for piece in (part.get("anyOf") or [part]) if isinstance(part, dict) else ():
                    piece = resolve(self.root, piece.get("$ref")) or piece
                    self.object(piece if isinstance(piece, dict) else {}, prefix)
        elif kind in (None, "array") and ("items" in node or "prefixItems" in node):
            self.array(node, prefix)
        elif kind in (None, "string") and isinstance(node.get("pattern"), str):
            standalone = self.loads.get(node["pattern"], (1, 4 * len(node["pattern"])))[1]
            # Each character of the pattern's own grammar may be a reference to a
            # sub-rule, whose name then starts with this rule's name.
            chars = standalone * (len(name) + 8) // 8
            if not self.fits(chars):
                del node["pattern"]  # Falls back to `minLength`/`maxLength` or any string.
                self.body(node, name)
                return
            self.chars += chars
        elif kind == "string":
            self.counts(node, "minLength", "maxLength", 9)

    def array(self, node: dict[str, Any], prefix: str) -> None:
        """Count a tuple's item rules, or a list's item rule and its written-out count."""
        items = node.get("items") or node.get("prefixItems")
        if isinstance(items, list):
            for index, item in enumerate(items):
                self.visit(item, f"{prefix}tuple-{index}")
        else:
            self.visit(items, f"{prefix}item")
            self.counts(node, "minItems", "maxItems", len(prefix) + 24)

    def object(self, node: dict[str, Any], prefix: str) -> None:
        """Count an object's key/value rules (each named after its key) and their values."""
        properties, required = node.get("properties"), node.get("required")
        needed = (
            set(required)
            if isinstance(required, list) and all(isinstance(name, str) for name in required)
            else set()
        )
        for key, value in properties.items() if isinstance(properties, dict) else ():
            # The key/value rule: its name, the quoted key, the reference to the value.
            self.chars += 3 * (len(prefix) + len(key)) + 2 * len(json.dumps(key)) + 24
            self.named(f"{prefix}{key}-kv")
            if key not in needed:  # the rule naming the optional properties after it
                self.chars += 3 * (len(prefix) + len(key)) + 24
            self.visit(value, f"{prefix}{key}")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            self.visit(extra, f"{prefix}additional-value")

    def counts(self, node: dict[str, Any], low: str, high: str, per_copy: int) -> None:
        """Add the copies a count writes out, or drop the count when they do not fit."""
        least, most = node.get(low, 0), node.get(high)
        chars = per_copy * (least + 1 if most is None else max(least, most))
        if not self.fits(chars):
            node.pop(low, None)
            node.pop(high, None)
            chars = per_copy
        self.chars += chars
