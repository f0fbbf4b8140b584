"""Generate instances of a JSON Schema with Hypothesis, for round-trip properties.

The generator follows the schema loosely (references, unions, optionals, maps,
tuples, formats, patterns, bounds); callers keep only the values that really
validate against the schema (`valid_instance`).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

FORMAT_SAMPLES = {
    "date-time": ["2024-05-01T12:30:00Z", "1999-12-31T23:59:59+01:00"],
    "date": ["2024-02-29", "1970-01-01"],
    "time": ["12:30:00Z", "08:00:00+02:00"],
    "duration": ["P3D", "PT1H30M"],
    "email": ["ada@example.com", "x.y@mail.example.org"],
    "hostname": ["example.com", "a-b.example"],
    "ipv4": ["192.168.0.1", "10.0.0.255"],
    "ipv6": ["::1", "2001:db8::1"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
    "uri": ["https://example.com/a?b=1", "urn:isbn:0451450523"],
    "uri-reference": ["../x", "https://example.com"],
    "iri": ["https://example.com/\u00e9"],
    "json-pointer": ["/a/0", ""],
    "regex": ["^a+$", "[0-9]{2}"],
}
PATTERN_POOL = ["abc1", "a1b2c3", "aabaa", "aba", "a cat b", "cat", "x", "ABC-123", "2024", "ab-cd"]
_HARD_REGEX = re.compile(r"\\[1-9bB]|\(\?<?[=!]")
DEEP = 4
ANY_JSON = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=4),
    st.lists(st.integers(-3, 3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
)


def _merge(*schemas: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for schema in schemas:
        if not isinstance(schema, dict):
            continue
        for key, value in schema.items():
            if key == "properties" and key in out:
                props = dict(out[key])
                for name, sub in value.items():
                    props[name] = _merge(props[name], sub) if name in props else sub
                out[key] = props
            elif key == "required" and key in out:
                out[key] = list(dict.fromkeys([*out[key], *value]))
            elif key == "pattern" and key in out and out[key] != value:
                out["extra_patterns"] = [*out.get("extra_patterns", []), value]
            elif key == "enum" and key in out:
                out[key] = [v for v in out[key] if v in value] or value
            else:
                out[key] = value
    return out


class Values:
    """Draw candidate instances of one root schema."""

    def __init__(self, root: Any, draw: Any) -> None:
        self.root = root if isinstance(root, dict) else {}
        self.draw = draw

    def resolve(self, ref: str) -> Any:
        node: Any = self.root
        for part in ref.lstrip("#").split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def flatten(self, schema: Any) -> Any:
        for _ in range(20):
            if not isinstance(schema, dict):
                return schema
            if "$ref" in schema:
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(self.resolve(schema["$ref"]), rest)
            elif "allOf" in schema:
                rest = {k: v for k, v in schema.items() if k != "allOf"}
                schema = _merge(*[self.flatten(m) for m in schema["allOf"]], rest)
            elif "if" in schema:
                rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
                branch = (
                    [schema["if"], schema.get("then")]
                    if self.draw(st.booleans())
                    else [schema.get("else")]
                )
                schema = _merge(rest, *branch)
            elif "anyOf" in schema or "oneOf" in schema:
                members = schema.get("anyOf") or schema.get("oneOf")
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                schema = _merge(rest, self.pick_member(members))
            else:
                return schema
        return schema

    def pick_member(self, members: list[Any]) -> Any:
        if self.depth > DEEP:
            nulls = [m for m in members if isinstance(m, dict) and m.get("type") == "null"]
            return nulls[0] if nulls else members[0]
        return self.draw(st.sampled_from(members))

    depth = 0

    def value(self, schema: Any, depth: int = 0) -> Any:
        self.depth = depth
        schema = self.flatten(schema)
        if schema is True or schema == {} or not isinstance(schema, dict):
            return self.draw(ANY_JSON)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.draw(st.sampled_from(schema["enum"]))
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.draw(st.sampled_from(kind))
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else None
        maker = {
            "object": self.object,
            "array": self.array,
            "string": self.string,
            "integer": self.integer,
            "number": self.number,
            "boolean": lambda s, d: self.draw(st.booleans()),
            "null": lambda s, d: None,
        }.get(kind)
        return self.draw(ANY_JSON) if maker is None else maker(schema, depth)

    def key(self, schema: dict[str, Any], pattern: str | None = None) -> str:
        names = schema.get("propertyNames") or {}
        pattern = pattern or names.get("pattern")
        if pattern:
            return self.string({"pattern": pattern}, 0)
        return self.draw(st.text(alphabet="abcxyz_", min_size=1, max_size=4))

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        required = set(schema.get("required") or [])
        for name, sub in (schema.get("properties") or {}).items():
            if sub is False:
                continue
            if name in required or (depth <= DEEP and self.draw(st.booleans())):
                out[name] = self.value(sub, depth + 1)
        for name in required - set(out):
            out[name] = self.draw(ANY_JSON)
        patterns = schema.get("patternProperties") or {}
        # JSON Schema's default: an object admits keys it does not name.
        extra = schema.get("additionalProperties", True)
        count = 0 if depth > DEEP else self.draw(st.integers(0, 2))
        count = max(count, schema.get("minProperties", 0) - len(out))
        for _ in range(count):
            choices = [*patterns.items(), *([(None, extra)] if extra is not False else [])]
            if not choices:
                break
            pattern, sub = self.draw(st.sampled_from(choices))
            name = self.key(schema, pattern)
            if name not in out and name not in (schema.get("properties") or {}):
                out[name] = self.value(True if sub is True else sub, depth + 1)
        return out

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        low, high = schema.get("minItems", 0), schema.get("maxItems", 3)
        prefix = schema.get("prefixItems") or []
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        limit = high if items is not False else min(high, len(prefix))
        size = low if depth > DEEP else self.draw(st.integers(low, max(low, min(limit, low + 3))))
        out = [self.value(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(size)]
        if "contains" in schema and depth <= DEEP and size < high:
            out.append(self.value(schema["contains"], depth + 1))
        return out

    def string(self, schema: dict[str, Any], depth: int) -> str:
        if schema.get("format") in FORMAT_SAMPLES:
            return self.draw(st.sampled_from(FORMAT_SAMPLES[schema["format"]]))
        low, high = schema.get("minLength", 0), schema.get("maxLength", 8)
        pattern = schema.get("pattern")
        if pattern and _HARD_REGEX.search(pattern):
            pool = [s for s in PATTERN_POOL if re.search(pattern, s)] or ["x"]
            return self.draw(st.sampled_from(pool))
        if pattern and schema.get("extra_patterns"):
            # Strings meeting several anchored patterns: join a match of each.
            parts = [pattern, *schema["extra_patterns"]]
            return "".join(self.draw(st.from_regex(p)) for p in parts)
        if pattern:
            return self.draw(
                st.from_regex(pattern).filter(lambda s: low <= len(s) <= max(high, low))
            )
        return self.draw(
            st.text(alphabet="abcde XYZ-_\u00e9", min_size=low, max_size=max(low, high))
        )

    def integer(self, schema: dict[str, Any], depth: int) -> int:
        low = schema.get("minimum", schema.get("exclusiveMinimum", -50))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 50))
        step = schema.get("multipleOf", 1)
        value = self.draw(st.integers(int(low) - 1, int(high) + 1))
        return int(value // step * step) if step != 1 else int(value)

    def number(self, schema: dict[str, Any], depth: int) -> float | int:
        if self.draw(st.booleans()):
            return self.integer(schema, depth)
        low = schema.get("minimum", schema.get("exclusiveMinimum", -100.0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 100.0))
        return self.draw(st.floats(low, high, allow_nan=False, allow_infinity=False))


def validator(schema: Any) -> Any:
    """A format-checking validator for the root schema."""
    cls = validator_for(schema, default=Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def valid_instance(data: Any, schema: Any, check: Any) -> Any:
    """Draw one instance of `schema` from `st.data()`; reject invalid candidates."""
    candidate = Values(schema, data.draw).value(schema)
    assume(check.is_valid(candidate))
    return candidate
