"""The local model checks a schema's shape with the strategies' own walk.

`check_shape` is `_bounds.schema_shape_problem` with the local bounds, tuples taken
as lists (as `json.dumps` writes them): a cycle is reported as a cycle, every
refusal names the JSON path of the offending value, and a huge list is refused
without being copied.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_structx._clip import MESSAGE_CHARS
from langchain_structx._validation.bounds import schema_shape_problem
from langchain_structx.local import GrammarError, LocalChatModel
from langchain_structx.local._grammar import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, check_shape


def _refusal(schema: Any) -> str:
    with pytest.raises(GrammarError) as caught:
        check_shape(schema)
    return str(caught.value)


def _response_format(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}


def test_a_schema_that_contains_itself_is_reported_as_a_cycle_with_its_path() -> None:
    tree: dict[str, Any] = {"type": "array"}
    tree["items"] = {"anyOf": [tree, {"type": "null"}]}
    schema = {"type": "object", "properties": {"tree": tree}}
    expected = "the schema contains itself at $.properties.tree.items.anyOf[0]"
    assert _refusal(schema) == expected
    with pytest.raises(GrammarError) as caught:
        LocalChatModel()._request(
            [HumanMessage("hi")], None, {"response_format": _response_format(schema)}
        )
    assert str(caught.value) == expected
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with pytest.raises(GrammarError) as caught:
        LocalChatModel()._request([HumanMessage("hi")], None, {"tools": [tool]})
    assert str(caught.value) == (
        "the schema contains itself at $.function.parameters.properties.tree.items.anyOf[0]"
    )


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {"type": "object", "properties": {"a": {1: "x"}}},
            "the schema has a key that is not a string at $.properties.a",
            id="int-key",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"enum": [True, {None: 1}]}}},
            "the schema has a key that is not a string at $.properties.a.enum[1]",
            id="none-key",
        ),
        pytest.param(
            {"type": "number", "maximum": float("inf")},
            "the schema holds inf, which is not a JSON number at $.maximum",
            id="infinity",
        ),
        pytest.param(
            {"enum": [1.0, float("nan")]},
            "the schema holds nan, which is not a JSON number at $.enum[1]",
            id="nan",
        ),
        pytest.param(
            {"type": "array", "maxItems": 10**1000},
            "the schema holds an integer with more than 1000 digits at $.maxItems",
            id="integer-of-1001-digits",
        ),
        pytest.param(
            {"type": "string", "enum": {"a", "b"}},
            "the schema holds a set, which is not JSON at $.enum",
            id="set",
        ),
        pytest.param(
            {"anyOf": ({"type": "string"}, {"const": b"x"})},
            "the schema holds a bytes, which is not JSON at $.anyOf[1].const",
            id="bytes-inside-a-tuple",
        ),
    ],
)
def test_a_value_json_cannot_encode_is_a_typed_error_naming_its_path(
    schema: Any, expected: str
) -> None:
    assert _refusal(schema) == expected


def test_tuples_are_accepted_where_json_dumps_writes_lists() -> None:
    pytest.importorskip("llguidance", reason="the decoder ships with the local extra")
    as_tuples = {
        "type": "object",
        "properties": {"kind": {"enum": ("a", "b")}, "n": {"type": ("integer", "null")}},
        "required": ("kind",),
    }
    check_shape(as_tuples)
    as_lists = json.loads(json.dumps(as_tuples))
    constraint, request = LocalChatModel()._request(
        [HumanMessage("hi")], None, {"response_format": _response_format(as_tuples)}
    )
    assert constraint.schema == as_lists
    _, expected = LocalChatModel()._request(
        [HumanMessage("hi")], None, {"response_format": _response_format(as_lists)}
    )
    assert request["json_grammar"] == expected["json_grammar"]
    assert request["messages"] == expected["messages"]


def test_tuples_stay_refused_for_the_strategies_walk() -> None:
    schema = {"type": "object", "required": ("a",)}
    refused = schema_shape_problem(schema, max_depth=64, max_nodes=100)
    assert refused == "the schema holds a tuple, which is not JSON at $.required"
    assert schema_shape_problem(schema, max_depth=64, max_nodes=100, tuples=True) is None


def test_a_cycle_through_a_tuple_is_still_a_cycle() -> None:
    items: list[Any] = []
    items.append(({"type": "array", "items": items},))
    assert _refusal({"anyOf": items}) == "the schema contains itself at $.anyOf[0][0].items"


def test_depth_is_counted_in_objects_and_lists_around_a_value() -> None:
    def nested(levels: int) -> Any:
        value: Any = "leaf"
        for _ in range(levels):
            value = [value]
        return value

    check_shape(nested(MAX_SCHEMA_DEPTH))
    message = _refusal(nested(MAX_SCHEMA_DEPTH + 1))
    assert message == f"the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels at $" + (
        "[0]" * (MAX_SCHEMA_DEPTH + 1)
    )


def test_shared_subschemas_are_fine_and_each_visit_counts() -> None:
    shared = {"type": "string"}
    check_shape({"properties": {"a": shared, "b": shared}, "items": [shared, shared]})
    check_shape({"enum": [shared] * (MAX_SCHEMA_NODES // 2 - 1)})  # 100,000 values
    wide = {"enum": [shared] * (MAX_SCHEMA_NODES // 2)}
    assert _refusal(wide).startswith(f"the schema has more than {MAX_SCHEMA_NODES} parts at $.enum")


def test_a_huge_list_is_refused_without_copying_it() -> None:
    huge = {"enum": list(range(1_000_000))}
    tracemalloc.start()
    try:
        message = _refusal(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith(f"the schema has more than {MAX_SCHEMA_NODES} parts at $.enum[")
    assert peak < 1_000_000  # a copy of the list alone would take 8 MB


def test_a_message_with_a_huge_key_in_its_path_is_cut() -> None:
    schema = {"properties": {"k" * 100_000: {"enum": [float("nan")]}}}
    message = _refusal(schema)
    assert message.startswith("the schema holds nan, which is not a JSON number at $.properties.k")
    assert len(message) <= MESSAGE_CHARS
