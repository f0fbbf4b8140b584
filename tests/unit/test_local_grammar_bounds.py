"""Hostile schemas give the local model a grammar of bounded size and cost, or a typed error.

Each schema here used to crash the process (llama.cpp's parser overflowing the C
stack), stall sampling for minutes (alternatives multiplying in llama.cpp's parse
stacks), build a grammar of tens of megabytes, or raise an untyped exception. The
assertions are on the grammar text and the loosened schema, never on time; the
measured times are in `benchmarks/local_model.py` and the audit's report.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from langchain_structx.local import GrammarError, LocalChatModel, LocalModelError
from langchain_structx.local._definitions import lifted
from langchain_structx.local._grammar import sanitize_pattern, sanitize_schema, schema_to_gbnf
from langchain_structx.local._grammar_size import Estimate
from langchain_structx.local._limits import (
    MAX_ALTERNATIVES,
    MAX_GRAMMAR_CHARS,
    MAX_GRAMMAR_NESTING,
    MAX_RULE_GROUPS,
)
from langchain_structx.local._patterns import _ANY_CHAR
from langchain_structx.local._widen import ANY_VALUE

pytest.importorskip("llama_cpp", reason="the grammar converter ships with llama-cpp-python")


def _nesting(grammar: str) -> int:
    """Deepest parenthesis nesting outside literals and classes (llama.cpp's recursion)."""
    deepest = depth = 0
    for line in grammar.splitlines():
        body = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', "", line)
        for char in body:
            depth += char == "("
            depth -= char == ")"
            deepest = max(deepest, depth)
    return deepest


def _groups_per_rule(grammar: str) -> int:
    widest = 0
    for line in grammar.splitlines():
        body = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', "", line.partition("::=")[2])
        widest = max(widest, sum(body.count(char) for char in "(?*+{"))
    return widest


def _left_corner_paths(grammar: str) -> int:
    """Most ways llama.cpp's parser can expand a rule before reading a character."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    memo: dict[str, int] = {}

    def paths(name: str) -> int:
        if name not in memo:
            memo[name] = 1  # A loop is llama.cpp's left recursion, refused on its own.
            alternatives = [a.strip() for a in rules[name].split(" | ")]
            memo[name] = sum(
                paths(a.split()[0]) if a.split() and a.split()[0] in rules else 1
                for a in alternatives
            )
        return memo[name]

    return max(map(paths, rules))


def _string(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", **keywords}}}


LONG_COUNTS = [
    pytest.param(_string(maxLength=20_000), id="maxLength-20000"),
    pytest.param(_string(minLength=1, maxLength=5_000), id="maxLength-5000"),
    pytest.param(_string(minLength=100_000), id="minLength-100000"),
    pytest.param({"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}, id="items"),
    pytest.param({"type": "array", "items": {"type": "integer"}, "minItems": 50_000}, id="min"),
    pytest.param(_string(pattern="^[a-z]{1,20000}$"), id="pattern-range"),
    pytest.param(_string(pattern="^x{100000}$"), id="pattern-count"),
    pytest.param(_string(pattern="^(a{300}){300}$"), id="pattern-nested"),
]


@pytest.mark.parametrize("schema", LONG_COUNTS)
def test_long_counts_stay_within_what_llama_cpp_parses(schema: dict[str, Any]) -> None:
    grammar = schema_to_gbnf(schema)
    assert len(grammar) < 5_000
    assert _nesting(grammar) <= MAX_GRAMMAR_NESTING
    assert _groups_per_rule(grammar) <= MAX_RULE_GROUPS


def test_a_long_count_becomes_an_unbounded_repetition() -> None:
    assert sanitize_pattern("^[a-z]{1,20000}$") == "^([a-z]+)$"
    assert sanitize_pattern("^x{0,5000}y{2,}$") == "^(x*y{2,})$"
    assert sanitize_schema(_string(minLength=2, maxLength=20_000))["properties"]["s"] == {
        "type": "string",
        "minLength": 2,
    }


@pytest.mark.parametrize(
    "pattern",
    [
        "^(a?){300}$",  # 88 s for four tokens at 240 copies; unbounded at 300
        "^" + "a?" * 240 + "$",
        "^" + "(a?|b?)" * 48 + "$",  # 52 s for four tokens
        "^" + "(a|aa)" * 400 + "$",
        "[a-z]{900}",  # unanchored: every position may be where the run starts
        "^(" + "(" * 600 + "a" + ")" * 600 + ")$",
    ],
)
def test_patterns_that_keep_many_alternatives_open_are_left_out(pattern: str) -> None:
    assert sanitize_pattern(pattern) is None
    grammar = schema_to_gbnf(_string(pattern=pattern))
    assert len(grammar) < 1_000


ORDINARY_PATTERNS = [
    (r"^[a-f0-9]{64}$", "^([a-f0-9]{64})$"),
    (r"[a-f0-9]{32}", f"^{_ANY_CHAR}*([a-f0-9]{{32}}){_ANY_CHAR}*$"),
    (r"^([0-9]{1,3}\.){3}[0-9]{1,3}$", r"^(([0-9]{1,3}[\x2E]){3}[0-9]{1,3})$"),
    (r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$", None),
    (r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$", None),
    (r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$", None),
    ("^[a-z]{1,1000}$", "^([a-z]{1,1000})$"),
    ("^(" + "|".join(f"word{i}" for i in range(200)) + ")$", None),
]


@pytest.mark.parametrize(("pattern", "expected"), ORDINARY_PATTERNS)
def test_ordinary_patterns_are_kept(pattern: str, expected: str | None) -> None:
    kept = sanitize_pattern(pattern)
    assert kept is not None
    assert expected is None or kept == expected


def test_a_wide_enum_becomes_its_type() -> None:
    wide = {"type": "object", "properties": {"k": {"enum": [f"v{i}" for i in range(5_000)]}}}
    assert sanitize_schema(wide)["properties"]["k"] == {"type": "string"}
    assert len(schema_to_gbnf(wide)) < 2_000
    mixed = {"enum": [*range(3_000), None]}
    assert sanitize_schema(mixed) == {"type": ["null", "number"]}


def test_an_enum_within_the_bound_is_kept_whole() -> None:
    values = [f"v{i}" for i in range(MAX_ALTERNATIVES)]
    schema = {"type": "object", "properties": {"k": {"enum": values}}}
    assert sanitize_schema(schema) == schema
    assert f'\\"v{MAX_ALTERNATIVES - 1}\\"' in schema_to_gbnf(schema)


def test_a_wide_union_becomes_the_types_it_allows() -> None:
    union = {"anyOf": [{"const": f"c{i}"} for i in range(2_000)] + [{"type": "integer"}]}
    assert sanitize_schema(union) == {"type": ["number", "string"]}


def _doubling_chain(levels: int) -> dict[str, Any]:
    """Each definition is a union of two references to the next: 2**levels paths."""
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "integer"}
    return {"type": "object", "properties": {"v": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def test_unions_of_unions_cannot_multiply_the_paths_past_the_bound() -> None:
    # Thirty levels took llama.cpp over 100 s just to set the sampler up.
    grammar = schema_to_gbnf(_doubling_chain(30))
    assert _left_corner_paths(grammar) <= MAX_ALTERNATIVES
    small = _doubling_chain(4)
    assert sanitize_schema(small) == lifted(small), "a few levels are well within the bound"


def _look_alike_chain(levels: int) -> dict[str, Any]:
    """Two identical objects per level: sampling keeps both open at every level."""
    defs: dict[str, Any] = {}
    for i in range(levels):
        variant = {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}},
            "required": ["a"],
        }
        defs[f"d{i}"] = {"anyOf": [variant, {**variant, "title": "twin"}]}
    defs[f"d{levels}"] = {"type": "integer"}
    return {"type": "object", "properties": {"v": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def test_look_alike_unions_nested_deep_are_loosened_before_they_multiply() -> None:
    clean = sanitize_schema(_look_alike_chain(16))
    run = longest = 0
    for i in range(16):
        run = run + 1 if "anyOf" in clean["$defs"][f"def-d{i}"] else 0
        longest = max(longest, run)
    assert 2**longest <= MAX_ALTERNATIVES
    assert any("anyOf" not in clean["$defs"][f"def-d{i}"] for i in range(16))


def test_a_look_alike_union_inside_its_own_recursion_is_loosened() -> None:
    node = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"anyOf": [{**node, "title": "a"}, {**node, "title": "b"}]}},
    }
    tree["$defs"]["N"]["anyOf"][0]["properties"]["kids"]["items"] = {"$ref": "#/$defs/N"}
    tree["$defs"]["N"]["anyOf"][1]["properties"]["kids"]["items"] = {"$ref": "#/$defs/N"}
    assert sanitize_schema(tree)["$defs"]["def-N"] == {"type": "object"}


def test_a_discriminated_recursive_union_is_kept() -> None:
    def variant(kind: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "kind": {"const": kind},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/N"}},
            },
            "required": ["kind", "kids"],
        }

    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"oneOf": [variant("text"), variant("list")]}},
    }
    assert sanitize_schema(tree) == lifted(tree)  # its definitions renamed, nothing else


def test_many_optional_properties_become_generic_pairs() -> None:
    # 3,000 optional properties exhausted the converter's recursion; 900 took a second.
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(3_000)},
        "required": ["p0"],
    }
    clean = sanitize_schema(schema)
    assert list(clean["properties"]) == ["p0"]
    assert clean["additionalProperties"] == ANY_VALUE  # any value, not only objects
    assert len(schema_to_gbnf(schema)) < 2_000


def test_a_true_subschema_means_any_value() -> None:
    # It used to escape as an AttributeError from inside the converter.
    grammar = schema_to_gbnf({"type": "object", "properties": {"x": True}, "required": ["x"]})
    assert "value" in grammar


def test_long_names_nested_deep_are_refused_not_built() -> None:
    # 60 levels of 10,000-character names made a 72 MB grammar: names repeat per level.
    node: dict[str, Any] = {"type": "integer"}
    for i in range(30):
        node = {"type": "object", "properties": {f"{i}" + "k" * 10_000: node}}
    with pytest.raises(GrammarError, match="exceed"):
        schema_to_gbnf(node)


def _named_in_chinese(count: int) -> dict[str, Any]:
    names = [chr(0x4E00 + i) for i in range(count)]
    return {
        "type": "object",
        "properties": {name: {"enum": [i]} for i, name in enumerate(names)},
        "required": names,
    }


class _CountedRules(dict[str, str]):
    """The converter's rule table, counting the names it looks up."""

    lookups = 0

    def __contains__(self, name: object) -> bool:
        type(self).lookups += 1
        return super().__contains__(name)


def _converter_lookups(schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> int:
    from llama_cpp import llama_grammar

    built = llama_grammar.SchemaConverter.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        self._rules = _CountedRules(self._rules)

    _CountedRules.lookups = 0
    with monkeypatch.context() as patch:
        patch.setattr(llama_grammar.SchemaConverter, "__init__", counted)
        llama_grammar.json_schema_to_gbnf(json.dumps(sanitize_schema(schema)))
    return _CountedRules.lookups


def test_names_that_come_out_alike_in_rule_names_are_refused_before_building() -> None:
    # Every name in Chinese is written `-` in a rule's name, and the converter
    # numbers them by trying each number in turn: 16,000 such names took minutes.
    with pytest.raises(GrammarError, match="alike"):
        schema_to_gbnf(_named_in_chinese(2_000))


def test_a_form_with_names_in_chinese_still_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    grammar = schema_to_gbnf(_named_in_chinese(300))
    assert len(re.findall(r"^--kv\d* ::=", grammar, re.MULTILINE)) == 300
    # The estimate is an upper bound of the converter's own lookups.
    estimate = Estimate(sanitize_schema(_named_in_chinese(300)), {})
    estimate.visit(estimate.root, "")
    lookups = _converter_lookups(_named_in_chinese(300), monkeypatch)
    assert 0 < lookups <= estimate.probes


def test_counts_are_dropped_once_the_grammar_would_grow_too_large() -> None:
    fields = {f"f{i}": {"type": "string", "maxLength": 1_000} for i in range(600)}
    schema = {"type": "object", "properties": fields, "required": list(fields)}
    grammar = schema_to_gbnf(schema)  # 4.8 MB written out in full
    assert len(grammar) <= MAX_GRAMMAR_CHARS
    kept = sanitize_schema(schema)["properties"].items()
    bounded = [name for name, field in kept if "maxLength" in field]
    assert bounded[0] == "f0" and 100 < len(bounded) < 600, "the first fields keep their bounds"


def test_ordinary_schemas_convert_exactly_as_before() -> None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    contact = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "email": {"type": "string", "maxLength": 1_000},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
            "role": {"enum": ["cto", "ceo", "engineer"]},
            "age": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
        },
        "required": ["name", "email"],
    }
    # The converter's own output, but for integers, which stop at 16 digits there.
    theirs = json_schema_to_gbnf(json.dumps(contact)).splitlines()
    wide = "integral-part ::= [0-9] | [1-9] [0-9]{1,20}"
    expected = [wide if line.startswith("integral-part ::=") else line for line in theirs]
    assert schema_to_gbnf(contact).splitlines() == expected


def _cyclic() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": {}}
    node["properties"]["self"] = node
    return node


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}}
    return node


REFUSED = [
    pytest.param({"type": "array", "maxItems": 10**5000}, id="huge-integer"),
    pytest.param({"type": "string", "enum": {1, 2}}, id="set"),
    pytest.param({"type": "object", "properties": {("a",): {}}}, id="tuple-key"),
    pytest.param(_cyclic(), id="cyclic"),
    pytest.param(_deep(2_000), id="deep"),
    pytest.param({"enum": list(range(150_000))}, id="too-many-parts"),
]


@pytest.mark.parametrize("schema", REFUSED)
def test_unusable_schemas_are_a_typed_error_before_any_model_call(schema: Any) -> None:
    model = LocalChatModel()
    response_format = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    with pytest.raises(GrammarError):
        model._request([HumanMessage("hi")], None, {"response_format": response_format})
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with pytest.raises(GrammarError):
        model._request([HumanMessage("hi")], None, {"tools": [tool], "tool_choice": "auto"})


_KEYWORDS = st.sampled_from(
    ["type", "properties", "items", "anyOf", "oneOf", "allOf", "enum", "const", "required"]
    + ["pattern", "minLength", "maxLength", "minItems", "maxItems", "$ref", "$defs"]
    + ["additionalProperties", "prefixItems", "format"]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False),
    st.sampled_from(["string", "object", "array", "integer", "#/$defs/a", "#", "^a{9999}$"]),
    st.text(max_size=8),
)
_JSONISH = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_KEYWORDS | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYWORDS, _JSONISH, max_size=5))
def test_any_schema_gives_a_bounded_grammar_or_a_typed_error(schema: dict[str, Any]) -> None:
    try:
        grammar = schema_to_gbnf(schema)
    except LocalModelError:
        return
    assert len(grammar) <= MAX_GRAMMAR_CHARS
    assert _nesting(grammar) <= MAX_GRAMMAR_NESTING
