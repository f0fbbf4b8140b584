"""Tool parameters are an object schema that accepts exactly the schema's values.

Each case is checked with jsonschema: every sample the original schema accepts is
accepted as arguments (wrapped as `{"value": ...}` where the root had to be
wrapped) and comes back unchanged, and every sample it refuses is refused too,
except where typing an untyped root as an object only refuses non-objects, which
arguments never are.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, RootModel

from langchain_structx._request.envelope import object_root


class Topic(BaseModel):
    title: str
    subtopics: list[Topic] = []


class Names(RootModel[list[str]]):
    pass


FOLDER = {  # draft-07 spelling, root reference to a recursive definition
    "$ref": "#/definitions/Folder",
    "definitions": {
        "Folder": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "kids": {"items": {"$ref": "#"}}},
            "required": ["name"],
        }
    },
}

CASES: list[tuple[str, dict[str, Any], bool, list[Any], list[Any]]] = [
    # id, schema, wrapped, accepted, refused
    (
        "recursive-model",
        Topic.model_json_schema(),
        False,
        [{"title": "a"}, {"title": "a", "subtopics": [{"title": "b", "subtopics": []}]}],
        [{}, {"title": "a", "subtopics": [{"subtopics": []}]}, {"title": 1}],
    ),
    (
        "definitions-and-root-ref",
        FOLDER,
        False,
        [{"name": "a"}, {"name": "a", "kids": [{"name": "b"}]}],
        [{"name": "a", "kids": [{"kids": []}]}, {"kids": []}],
    ),
    ("list-root", Names.model_json_schema(), True, [[], ["a", "b"]], [[1], "a", None]),
    ("string", {"type": "string", "maxLength": 3}, True, ["", "abc"], ["abcd", 1]),
    (
        "scalar-union",
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        True,
        [1, None],
        ["1", 1.5],
    ),
    ("nullable-object", {"type": ["object", "null"]}, True, [{}, None], [1, []]),
    (
        "untyped-object",
        {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
        False,
        [{"a": 1}],
        [{}, {"a": "x"}],
    ),
    (
        "untyped-map",
        {"additionalProperties": {"type": "integer"}},
        False,
        [{}, {"x": 1}],
        [{"x": "y"}],
    ),
]


@pytest.mark.parametrize(
    ("schema", "wrapped", "accepted", "refused"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_parameters_accept_what_the_schema_accepts(
    schema: dict[str, Any], wrapped: bool, accepted: list[Any], refused: list[Any]
) -> None:
    parameters, unwrap = object_root(schema)
    assert parameters["type"] == "object"
    assert (unwrap is not None) is wrapped
    validator = jsonschema.Draft202012Validator(parameters)
    for value in accepted:
        jsonschema.validate(value, schema)
        arguments = {"value": value} if wrapped else value
        assert validator.is_valid(arguments), value
        assert (unwrap.restore(arguments) if unwrap else arguments) == value
    for value in refused:
        assert not jsonschema.Draft202012Validator(schema).is_valid(value)
        arguments = {"value": value} if wrapped else value
        if isinstance(arguments, dict):
            assert not validator.is_valid(arguments), value


def test_an_object_schema_is_sent_as_it_is() -> None:
    schema = {"type": "object", "properties": {"next": {"$ref": "#"}}}
    assert object_root(schema) == (schema, None)


def test_the_unwrap_hands_back_arguments_without_the_key() -> None:
    _, unwrap = object_root({"type": "array"})
    assert unwrap is not None
    assert unwrap.restore({"other": 1}) == {"other": 1}  # then refused by validation
