"""Hostile schemas and values: every dialect answers with a result or a typed error.

A schema from an untrusted tenant, or a value from a model, must never crash the
rewriting with an untyped exception (`AutoStrategy` falls back only on
`DialectError`), never recurse without bound and never take more than linear time.

A refusal is measured in function calls, not seconds: a count does not change with
the machine's load or with coverage tracing, so its bound can be tight. Growth is
measured as the ratio of the best of three timings of one input and of one ten
times larger, from the same run: about 10 when linear, about 100 when quadratic,
and work done inside builtins (a list scanned for each of its items) counts too.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_structx.dialects import Dialect, Transformed, transform
from langchain_structx.errors import (
    DialectError,
    OutputValidationError,
    SchemaError,
    UserError,
)

DIALECTS: tuple[Dialect, ...] = ("openai", "anthropic", "gemini")
CALLS = 1_500_000
"""Most calls a hostile schema may cost. Walking `MAX_NODES` parts once takes over
twenty million; every case here is answered with far fewer."""


def outcome(schema: Any, dialect: Dialect) -> Transformed | DialectError | UserError:
    """Transform, turning the two accepted errors into values; anything else fails."""
    try:
        return transform(schema, dialect)
    except (DialectError, UserError) as exc:
        return exc


def calls_made(action: Callable[[], Any]) -> tuple[Any, int]:
    """Run `action` and count the Python and builtin function calls it makes."""
    count = 0

    def tally(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(tally)
    try:
        result = action()
    finally:
        sys.setprofile(previous)
    return result, count


def growth(run: Callable[[int], Any], size: int) -> float:
    """How many more function calls `run(10 * size)` makes than `run(size)`.

    Calls, not seconds: the count is the same on a loaded machine, and time
    targets belong to the benchmarks.
    """
    return calls_made(lambda: run(10 * size))[1] / calls_made(lambda: run(size))[1]


LINEAR = 15
"""Largest growth in calls accepted for ten times the input: linear is 10, quadratic 100."""


def bounded(make: Callable[[], Any], dialect: Dialect) -> Transformed | DialectError | UserError:
    """Transform the schema `make` builds, within `CALLS` calls."""
    schema = make()
    result, count = calls_made(lambda: outcome(schema, dialect))
    assert count < CALLS
    return result


def wrap(sub: Any, defs: dict[str, Any] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": sub}, "required": ["a"]}
    if defs is not None:
        schema["$defs"] = defs
    return schema


def nested(levels: int, step: Callable[[Any], Any]) -> dict[str, Any]:
    sub: Any = {"type": "string"}
    for _ in range(levels):
        sub = step(sub)
    return wrap(sub)


DEEP = {
    "items": lambda s: {"type": "array", "items": s},
    "properties": lambda s: {"type": "object", "properties": {"a": s}, "required": ["a"]},
    "anyOf": lambda s: {"anyOf": [s, {"type": "null"}]},
    "allOf": lambda s: {"allOf": [s]},
    "enum value": lambda s: {"enum": [[s]]} if isinstance(s, dict) else s,
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("levels", [500, 2000])
@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_nesting_is_refused(dialect: Dialect, levels: int, kind: str) -> None:
    result = bounded(lambda: nested(levels, DEEP[kind]), dialect)
    assert isinstance(result, DialectError)
    assert "nests deeper than" in result.reason


def alias_chain(length: int) -> dict[str, Any]:
    defs: dict[str, Any] = {f"A{i}": {"$ref": f"#/$defs/A{i + 1}"} for i in range(length)}
    defs[f"A{length}"] = {"type": "array", "items": {"type": "integer"}}
    return wrap({"$ref": "#/$defs/A0"}, defs)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_alias_chain_of_2000_is_followed_to_its_end(dialect: Dialect) -> None:
    result = bounded(lambda: alias_chain(2000), dialect)
    assert isinstance(result, Transformed)
    assert result.restore(result.encode({"a": [1, 2]})) == {"a": [1, 2]}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_alias_loop_is_refused(dialect: Dialect) -> None:
    defs = {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}
    result = outcome(wrap({"$ref": "#/$defs/A"}, defs), dialect)
    assert isinstance(result, DialectError)
    assert "only a reference to itself" in result.reason


@pytest.mark.parametrize("dialect", DIALECTS)
def test_allof_loop_is_refused(dialect: Dialect) -> None:
    defs = {"A": {"allOf": [{"$ref": "#/$defs/A"}, {"minLength": 1}]}}
    result = bounded(lambda: wrap({"$ref": "#/$defs/A"}, defs), dialect)
    assert isinstance(result, DialectError)


def reference_chain(length: int) -> dict[str, Any]:
    """Each definition is an array of the previous one; the root names them in order,
    so a walker finishes each one early and the chain is only met through `$ref`s."""
    defs: dict[str, Any] = {"D0": {"type": "string"}}
    for i in range(1, length):
        defs[f"D{i}"] = {"anyOf": [{"$ref": f"#/$defs/D{i - 1}"}, {"type": "null"}]}
    props = {f"p{i}": {"$ref": f"#/$defs/D{i}"} for i in range(length)}
    return {"type": "object", "properties": props, "$defs": defs}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_long_reference_chain_is_refused(dialect: Dialect) -> None:
    result = bounded(lambda: reference_chain(2000), dialect)
    assert isinstance(result, DialectError)
    assert "through its references" in result.reason


def doubling(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"D0": {"type": "string"}}
    for i in range(1, levels):
        ref = {"$ref": f"#/$defs/D{i - 1}"}
        defs[f"D{i}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    return wrap({"$ref": f"#/$defs/D{levels - 1}"}, defs)


def doubling_union(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"D0": {"type": "object", "additionalProperties": {"type": "string"}}}
    for i in range(1, levels):
        ref = {"$ref": f"#/$defs/D{i - 1}"}
        defs[f"D{i}"] = {"anyOf": [ref, {"type": "array", "items": ref}]}
    return wrap({"$ref": f"#/$defs/D{levels - 1}"}, defs)


def shared_python_dicts(levels: int) -> dict[str, Any]:
    sub: Any = {"type": "string"}
    for _ in range(levels):
        sub = {"anyOf": [sub, sub]}  # one dict, used twice: 2**levels paths
    return wrap(sub)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("make", [doubling, doubling_union, shared_python_dicts])
def test_doubling_is_never_expanded(dialect: Dialect, make: Callable[[int], Any]) -> None:
    levels = 55 if make is shared_python_dicts else 30
    result = bounded(lambda: make(levels), dialect)
    assert isinstance(result, DialectError)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_shared_part_that_stays_small_reads_as_its_expanded_tree(dialect: Dialect) -> None:
    shared = shared_python_dicts(3)  # 8 paths to the innermost dict, 7 unions once expanded
    tree = json.loads(json.dumps(shared))  # the same schema with nothing shared
    result, tree_result = outcome(shared, dialect), outcome(tree, dialect)
    assert isinstance(result, Transformed) and isinstance(tree_result, Transformed)
    assert result.schema == tree_result.schema
    assert result.restore(result.encode({"a": "x"})) == {"a": "x"}


def many_defs(count: int) -> dict[str, Any]:
    defs = {
        f"D{i}": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
        for i in range(count)
    }
    return wrap({"$ref": "#/$defs/D0"}, defs)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_many_defs_take_linear_time(dialect: Dialect) -> None:
    # 40,000 definitions took 18-20 s when names were looked up by scanning every pointer.
    def run(count: int) -> None:
        result = transform(many_defs(count), dialect)
        assert result.restore(result.encode({"a": {"x": "y"}})) == {"a": {"x": "y"}}

    assert growth(run, 1_500) < LINEAR


HUGE: dict[str, Callable[[int], dict[str, Any]]] = {
    "huge enum": lambda n: {"enum": list(range(n))},
    "allOf of huge enums": lambda n: {
        "allOf": [{"enum": list(range(n))}, {"enum": list(range(n, 0, -1))}]
    },
    "underscores": lambda n: {"type": ["string", "null"], "description": "_" * n + "explicit_null"},
    "many required": lambda n: {"type": "object", "required": [f"k{i}" for i in range(n)]},
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", list(HUGE))
def test_huge_keywords_are_linear(dialect: Dialect, name: str) -> None:
    def run(size: int) -> None:
        assert isinstance(outcome(wrap(HUGE[name](size)), dialect), Transformed | DialectError)

    assert growth(run, 3_000) < LINEAR


def self_dict() -> Any:
    loop: dict[str, Any] = {"type": "object"}
    loop["properties"] = {"a": loop}
    return loop


def self_list() -> Any:
    members: list[Any] = [{"type": "null"}]
    members.append({"anyOf": members})
    return wrap({"anyOf": members})


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "make",
    [
        self_dict,
        self_list,
        lambda: wrap({"enum": [{1, 2}]}),
        lambda: wrap({"type": b"string"}),
        lambda: {"type": "object", "properties": {1: {"type": "string"}}},
        lambda: wrap({"default": object()}),
    ],
    ids=["dict contains itself", "list contains itself", "set", "bytes", "int key", "object"],
)
def test_not_json_is_a_schema_error(dialect: Dialect, make: Callable[[], Any]) -> None:
    assert isinstance(outcome(make(), dialect), SchemaError)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("junk", [None, 3, "schema", [{"type": "string"}], 1.5])
def test_a_schema_that_is_no_mapping_is_a_user_error(dialect: Dialect, junk: Any) -> None:
    assert isinstance(outcome(junk, dialect), UserError)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(_self: Any, address: Any) -> None:
        attempts.append(address)
        raise OSError("network use in a dialect test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "ref",
    [
        "http://127.0.0.1:9/schema.json",
        "https://example.com/schema.json#/$defs/A",
        "file:///etc/passwd",
        "urn:uuid:0a6b2d1e-0000-4000-8000-000000000000",
        "other.json#/x",
    ],
)
def test_references_outside_the_document_are_refused_unfetched(
    dialect: Dialect, ref: str, no_network: list[Any]
) -> None:
    result = outcome(wrap({"$ref": ref}), dialect)
    assert isinstance(result, DialectError)
    assert "points outside the schema" in result.reason
    assert no_network == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_reference_under_an_id_is_refused_unfetched(
    dialect: Dialect, no_network: list[Any]
) -> None:
    # Under its own $id, "#/$defs/B" means that other document's B, not the
    # root's: it is neither fetched nor read from the root.
    sub = {"$id": "http://127.0.0.1:9/x", "anyOf": [{"$ref": "#/$defs/B"}, {"type": "integer"}]}
    result = outcome(wrap(sub, {"B": {"type": "object", "additionalProperties": True}}), dialect)
    assert isinstance(result, DialectError)
    assert "its own $id" in result.reason
    assert no_network == []


# -- values given to restore (model output) and encode -------------------------------

TREE = {
    "$ref": "#/$defs/N",
    "$defs": {
        "N": {
            "type": "object",
            "properties": {
                "v": {"type": "string"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/N"}},
                "m": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "object"}]},
                "free": {},
            },
            "required": ["v"],
        }
    },
}


def deep_value(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"v": "x"}
    for _ in range(levels):
        value = {"v": "x", "kids": [value]}
    return value


def restored(t: Transformed, value: Any) -> Any:
    try:
        return t.restore(value)
    except OutputValidationError as exc:
        return exc


def test_a_recursive_value_of_ordinary_depth_round_trips() -> None:
    t = transform(TREE, "openai")
    value = deep_value(30)
    assert t.restore(t.encode(value)) == value


@pytest.mark.parametrize("levels", [500, 5000, 100_000])
def test_deep_values_are_a_validation_error(levels: int) -> None:
    t = transform(TREE, "openai")
    value = deep_value(levels)
    for step in (t.restore, t.encode):
        with pytest.raises(OutputValidationError, match="nests deeper"):
            step(value)


def test_a_value_that_contains_itself_is_a_validation_error() -> None:
    t = transform(TREE, "openai")
    loop: dict[str, Any] = {"v": "x"}
    loop["kids"] = [loop]
    with pytest.raises(OutputValidationError):
        t.restore(loop)


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, "[" * 5_000 + "]" * 5_000, '{"a":' * 3_000 + "1" + "}" * 3_000, "9" * 10_000],
    ids=["unclosed", "deep array", "deep object", "long integer"],
)
def test_deep_json_text_in_a_free_form_field_is_handed_back(text: str) -> None:
    t = transform(TREE, "openai")
    value = t.encode({"v": "x", "free": 1})
    value["free"] = text
    assert t.restore(value)["free"] == text


@pytest.mark.parametrize("dialect", DIALECTS)
def test_wide_values_restore_in_linear_time(dialect: Dialect) -> None:
    t = transform(
        {"type": "array", "items": {"type": "object", "additionalProperties": {}}}, dialect
    )

    def run(size: int) -> None:
        value = [{f"k{i}": [i]} for i in range(size)]
        assert t.restore(t.encode(value)) == value

    assert growth(run, 2_000) < LINEAR


# -- generated schemas and values ----------------------------------------------------

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYWORDS = st.sampled_from(
    [
        "type",
        "items",
        "properties",
        "anyOf",
        "allOf",
        "oneOf",
        "enum",
        "const",
        "$ref",
        "additionalProperties",
        "prefixItems",
        "required",
        "not",
        "minimum",
        "pattern",
        "default",
    ]
)
REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#", "#/$defs/missing", "http://x/y"])
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "null", "boolean"])


def schema_nodes(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    field_value = (
        inner
        | st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | REFS
        | TYPES
        | st.lists(TYPES, max_size=3)
        | JSON_VALUES
    )
    return st.dictionaries(KEYWORDS, field_value, max_size=4)


SCHEMAS = st.recursive(st.booleans() | st.builds(dict), schema_nodes, max_leaves=25)
DOCUMENTS = st.builds(
    lambda root, defs: {**root, "$defs": defs} if isinstance(root, dict) else root,
    SCHEMAS,
    st.dictionaries(st.sampled_from(["A", "B"]), SCHEMAS, max_size=2),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=DOCUMENTS, dialect=st.sampled_from(DIALECTS), value=JSON_VALUES)
def test_any_generated_schema_and_value_get_a_typed_answer(
    document: Any, dialect: Dialect, value: Any
) -> None:
    result = outcome(document, dialect)
    if isinstance(result, Transformed):
        answer = restored(result, value)
        assert not isinstance(answer, BaseException) or isinstance(answer, OutputValidationError)


@settings(max_examples=40, deadline=None)
@given(
    depth=st.integers(min_value=100, max_value=3000),
    dialect=st.sampled_from(DIALECTS),
    kind=st.sampled_from(sorted(DEEP)),
)
def test_generated_deep_schemas_are_typed(depth: int, dialect: Dialect, kind: str) -> None:
    result = outcome(nested(depth, DEEP[kind]), dialect)
    assert isinstance(result, Transformed | DialectError)


# --- patterns inside the dialects run in the bounded engine -----------------------------

_SLOW_PATTERN = "^(?=a)(a|a)*$"
"""Backtracks exponentially on a run of a's ending in `!`; the look-ahead keeps it out of RE2."""


def test_enum_filtering_with_a_catastrophic_pattern_stops_at_the_deadline() -> None:
    from langchain_structx.limits import Limits

    values = ["a" * 40 + "!", "a" * 41 + "!"]
    schema = {
        "type": "object",
        "properties": {"tag": {"type": "string", "enum": values, "pattern": _SLOW_PATTERN}},
        "required": ["tag"],
        "additionalProperties": False,
    }
    started = time.monotonic()
    with pytest.raises(DialectError, match="could not be checked within 0.2 s"):
        transform(schema, "openai", limits=Limits(validation_seconds=0.2))
    # Unbounded, each value would backtrack for hours; the one deadline covers both.
    assert time.monotonic() - started < 10


def test_a_deep_value_that_cannot_be_restored_is_retried_as_an_invalid_answer() -> None:
    from langchain_core.messages import AIMessage

    from langchain_structx import ProviderStrategy, StructuredOutputRetryError, create_agent
    from langchain_structx.testing import ScriptedChatModel

    schema = {
        "title": "Note",
        "type": "object",
        "properties": {"text": {"type": "string"}, "extra": {}},
        "required": ["text"],
    }
    deep = "[" * 150 + "]" * 150
    bad = AIMessage(f'{{"text": "hi", "extra": {deep}}}')
    model = ScriptedChatModel(responses=[bad, bad])
    agent = create_agent(
        model, response_format=ProviderStrategy(schema, strict=True, max_retries=1)
    )
    with pytest.raises(StructuredOutputRetryError) as caught:
        agent.invoke({"messages": [("user", "note")]})
    assert caught.value.n_attempts == 2
    assert all(e.kind == "validation" for e in caught.value.errors)
    assert "nests deeper than 128 levels" in str(caught.value.errors[0])
