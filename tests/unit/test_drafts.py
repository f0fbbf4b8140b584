"""Schemas written for drafts 4 to 2019-09 keep their meaning when read as Draft 2020-12.

Before, a draft-7 `dependencies` rule was silently not checked (2020-12 ignores
the keyword), and a draft-7 tuple (`items` as a list) or a draft-4 exclusive bound
(`exclusiveMaximum: true`) made the schema unusable (2020-12 refuses both).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator
from langchain_core.messages import AIMessage, HumanMessage

from langchain_structx._schemas.drafts import DRAFT_2020_12, upgrade
from langchain_structx._schemas.normalise import normalize
from langchain_structx._validation.validate import JSONSchemaValidator
from langchain_structx.errors import OutputValidationError, SchemaError
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

DRAFT_7 = "http://json-schema.org/draft-07/schema#"
DRAFT_4 = "http://json-schema.org/draft-04/schema#"

ORDER: dict[str, Any] = {  # as zod-to-json-schema and many hand-written schemas say it
    "$schema": DRAFT_7,
    "title": "Order",
    "type": "object",
    "properties": {
        "card": {"type": "string"},
        "billing": {"type": "string"},
        "gift": {"type": "boolean"},
        "line": {
            "type": "array",
            "items": [{"type": "string"}, {"type": "integer"}],
            "additionalItems": False,
        },
        "discount": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMaximum": True},
    },
    "dependencies": {"card": ["billing"], "gift": {"required": ["card"]}},
}


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"card": "4111"}, (), "'billing' is a dependency of 'card'"),
        ({"gift": True}, (), "'card' is required but missing"),
        ({"line": ["pen", "2"]}, ("line", 1), "is not of type 'integer'"),
        ({"line": ["pen", 2, 3]}, ("line",), "Expected at most 2 items"),
        ({"discount": 1}, ("discount",), "greater than or equal to the maximum of 1"),
    ],
    ids=["dependent-names", "dependent-schema", "tuple-item", "tuple-extra", "exclusive-bound"],
)
def test_an_older_drafts_rules_still_hold(
    value: dict[str, Any], path: tuple[Any, ...], words: str
) -> None:
    variant = normalize(ORDER).variants[0]

    with pytest.raises(OutputValidationError) as caught:
        variant.validate(value)

    [issue] = caught.value.issues
    assert issue.path == path
    assert words in issue.message


def test_a_value_that_keeps_an_older_drafts_rules_is_valid() -> None:
    value = {"card": "4111", "billing": "Oslo", "gift": True, "line": ["pen", 2], "discount": 0.5}

    assert normalize(ORDER).variants[0].validate(value) == value


def test_the_schema_sent_on_says_the_same_in_2020_12_and_the_users_is_untouched() -> None:
    given = copy.deepcopy(ORDER)

    sent = normalize(given).variants[0].json_schema

    assert given == ORDER
    assert sent["$schema"] == DRAFT_2020_12
    assert sent["dependentRequired"] == {"card": ["billing"]}
    assert sent["dependentSchemas"] == {"gift": {"required": ["card"]}}
    assert sent["properties"]["line"] == {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": False,
    }
    assert sent["properties"]["discount"] == {"type": "number", "minimum": 0, "exclusiveMaximum": 1}
    assert "dependencies" not in sent


def test_a_2020_12_schema_is_the_same_object() -> None:
    schema = {
        "type": "object",
        "properties": {"dependencies": {"type": "object"}, "items": {"type": "array"}},
        "prefixItems": [{"type": "string"}],
        "$defs": {"x": {"type": "integer", "exclusiveMaximum": 3}},
        "enum": [{"items": [1], "dependencies": {"a": ["b"]}, "exclusiveMaximum": True}],
    }

    assert upgrade(schema) is schema


def test_only_places_that_hold_schemas_are_rewritten() -> None:
    schema = {
        "properties": {"dependencies": {"items": [{"type": "string"}]}},
        "default": {"dependencies": {"a": ["b"]}},
    }

    upgraded = upgrade(schema)

    assert upgraded["properties"] == {"dependencies": {"prefixItems": [{"type": "string"}]}}
    assert upgraded["default"] is schema["default"]


def test_both_spellings_of_a_dependency_are_kept() -> None:
    schema = {
        "dependentRequired": {"a": ["b"]},
        "dependentSchemas": {"c": {"required": ["x"]}},
        "dependencies": {"a": ["b", "d"], "c": {"required": ["y"]}},
    }

    assert upgrade(schema) == {
        "dependentRequired": {"a": ["b", "d"]},
        "dependentSchemas": {"c": {"allOf": [{"required": ["x"]}, {"required": ["y"]}]}},
    }


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"dependencies": {"a": ["b", "b"]}}, "'dependencies' lists 'b'"),
        ({"items": [3]}, "[3] is not of type 'object', 'boolean'"),
        ({"$schema": DRAFT_4, "exclusiveMinimum": True}, "True is not of type 'number'"),
    ],
    ids=["repeated-name", "item-not-a-schema", "bound-missing"],
)
def test_a_broken_older_form_is_reported_as_the_user_wrote_it(
    schema: dict[str, Any], words: str
) -> None:
    assert upgrade(schema) is schema
    with pytest.raises(SchemaError) as caught:
        normalize(schema)

    assert words in str(caught.value)


def test_a_schema_too_deep_to_check_is_left_to_its_checks() -> None:
    deep: dict[str, Any] = {"items": [{"type": "string"}]}
    for _ in range(100):
        deep = {"items": deep}

    assert upgrade(deep) is deep
    with pytest.raises(SchemaError, match="nested deeper than"):
        normalize(deep)


def test_an_agent_retries_a_reply_that_breaks_a_draft_7_dependency() -> None:
    broken = AIMessage("", tool_calls=[tool_call("Order", {"card": "4111"})])
    fixed = AIMessage("", tool_calls=[tool_call("Order", {"card": "4111", "billing": "Oslo"})])
    model = ScriptedChatModel(responses=[broken, fixed])
    agent = create_agent(model, response_format=ToolStrategy(ORDER))

    result = agent.invoke({"messages": [HumanMessage("card 4111, billing Oslo")]})

    assert result["structured_response"] == {"card": "4111", "billing": "Oslo"}
    assert result["structured_output_report"]["attempts"] == 2
    assert "'billing' is a dependency of 'card'" in model.calls[1].messages[-1].text


def test_a_draft_7_fragment_id_names_a_subschema_for_ref() -> None:
    schema = {
        "$schema": DRAFT_7,
        "type": "object",
        "definitions": {
            "address": {
                "$id": "#address",
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }
        },
        "properties": {"home": {"$ref": "#address"}},
    }
    variant = normalize(schema).variants[0]

    assert variant.validate({"home": {"city": "Oslo"}}) == {"home": {"city": "Oslo"}}
    with pytest.raises(OutputValidationError) as caught:
        variant.validate({"home": {}})
    assert [issue.path for issue in caught.value.issues] == [("home",)]
    assert variant.json_schema["definitions"]["address"]["$anchor"] == "address"


# -- meaning kept: jsonschema's own validator for the older draft is the oracle ----------

LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number", "maximum": 2},
        {"type": "null"},
        {"minLength": 2},
        {},
        True,
        False,
    ]
)
NAMES = st.sampled_from("abc")


def _draft_7_nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    tuples = st.builds(
        lambda items, extra: {"type": "array", "items": items, **extra},
        st.lists(children, min_size=1, max_size=3),  # the draft-7 meta-schema wants one
        st.sampled_from([{}, {"additionalItems": False}, {"additionalItems": {"type": "string"}}]),
    )
    dependent = st.builds(
        lambda props, deps: {"properties": props, "dependencies": deps},
        st.dictionaries(NAMES, children, max_size=2),
        st.dictionaries(NAMES, st.lists(NAMES, unique=True, max_size=2) | children, max_size=3),
    )
    combined = st.builds(lambda parts: {"anyOf": parts}, st.lists(children, min_size=1, max_size=2))
    # No `$id` anchors here: jsonschema's draft-7 lookup of one fails on `dependencies`.
    return tuples | dependent | combined | st.builds(lambda s: {"not": s}, children)


DRAFT_7_SCHEMAS = st.recursive(LEAVES, _draft_7_nodes, max_leaves=6)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([1.5, 2.5])
    | st.text("ab", max_size=3),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(NAMES, c, max_size=3),
    max_leaves=8,
)
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@PROPERTY
@given(schema=DRAFT_7_SCHEMAS, values=st.lists(VALUES, min_size=1, max_size=6))
def test_a_draft_7_schema_accepts_what_draft_7_accepts(schema: Any, values: list[Any]) -> None:
    root = {"allOf": [schema]}  # a schema given by a user is an object
    oracle = Draft7Validator(root)
    ours = JSONSchemaValidator(upgrade(root))

    for value in values:
        assert (ours.issues(value) == []) == oracle.is_valid(value), value


@PROPERTY
@given(
    bounds=st.fixed_dictionaries(
        {},
        optional={
            "maximum": st.integers(-3, 3),
            "minimum": st.integers(-3, 3),
            "exclusiveMaximum": st.booleans(),
            "exclusiveMinimum": st.booleans(),
        },
    ).filter(
        lambda b: (
            ("exclusiveMaximum" not in b or "maximum" in b)
            and ("exclusiveMinimum" not in b or "minimum" in b)
        )
    ),
    values=st.lists(st.integers(-4, 4) | st.sampled_from([-2.5, 0.5, 2.5]), max_size=6),
)
def test_a_draft_4_bound_excludes_what_draft_4_excludes(
    bounds: dict[str, Any], values: list[Any]
) -> None:
    schema = {"$schema": DRAFT_4, "type": "number", **bounds}
    oracle = Draft4Validator(schema)
    ours = JSONSchemaValidator(upgrade(schema))

    for value in values:
        assert (ours.issues(value) == []) == oracle.is_valid(value), value


PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
EMPLOYEE = {
    "title": "Emp",
    "type": "object",
    "$defs": {"Person": PERSON},
    "properties": {
        "boss": {
            "$ref": "#/$defs/Person",
            "description": "Who they answer to",
            "properties": {"level": {"type": "integer"}},
            "required": ["level"],
        }
    },
    "required": ["boss"],
}


def test_a_ref_with_rules_beside_it_moves_into_all_of_and_means_the_same():
    from langchain_structx._schemas.drafts import refs_apart

    moved = refs_apart(EMPLOYEE)

    boss = moved["properties"]["boss"]
    assert "$ref" not in boss and boss["allOf"] == [{"$ref": "#/$defs/Person"}]
    assert boss["description"] == "Who they answer to"
    assert EMPLOYEE["properties"]["boss"]["$ref"] == "#/$defs/Person"  # not changed in place
    for value in (
        {"boss": {"level": 3}},
        {"boss": {"name": "Ann"}},
        {"boss": {"name": "A", "level": 1}},
    ):
        assert Draft202012Validator(moved).is_valid(value) == Draft202012Validator(
            EMPLOYEE
        ).is_valid(value)
    # Beside annotations only, in a scope of its own, or with nothing to move: as it was.
    alone = {"properties": {"a": {"$ref": "#/$defs/P", "description": "d"}}, "$defs": {"P": {}}}
    scoped = {"$ref": "#/$defs/P", "$anchor": "x", "required": ["a"], "$defs": {"P": {}}}
    assert refs_apart(alone) is alone and refs_apart(scoped) is scoped
    both = refs_apart({"$ref": "#/$defs/P", "allOf": [{"required": ["a"]}], "$defs": {"P": {}}})
    assert both["allOf"] == [{"required": ["a"]}, {"$ref": "#/$defs/P"}]  # indices kept


@pytest.mark.parametrize("strategy", ["tool", "prompted"])
def test_what_is_sent_for_a_ref_with_rules_beside_it_keeps_the_definition(strategy):
    # LangChain's `dereference_refs` (run when a tool is bound) and the prompt's
    # inliner merge a definition into the referring object, so `required: [level]`
    # replaced Person's `required: [name]`: an answer that followed what was sent
    # failed validation every time.
    from langchain_core.messages import AIMessage

    from langchain_structx import PromptedStrategy, ToolStrategy, create_agent
    from langchain_structx.testing import ScriptedChatModel, tool_call

    answer = {"boss": {"name": "Ann", "level": 3}}
    if strategy == "tool":
        reply = AIMessage("", tool_calls=[tool_call("Emp", answer, id="c1")])
        format_ = ToolStrategy(EMPLOYEE)
    else:
        reply = AIMessage(json.dumps(answer))
        format_ = PromptedStrategy(EMPLOYEE)
    model = ScriptedChatModel(responses=[reply])

    state = create_agent(model, response_format=format_).invoke({"messages": [("user", "?")]})

    assert state["structured_response"] == answer
    call = model.calls[0]
    if strategy == "tool":
        boss = call.tools[0]["function"]["parameters"]["properties"]["boss"]
        assert {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        } in boss["allOf"]
        assert boss["required"] == ["level"]
    else:
        assert '"name": string' in call.messages[0].content
        assert '"level": integer' in call.messages[0].content
