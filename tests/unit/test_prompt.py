"""Exact renderings of the compact schema text that the prompted strategy sends."""

import dataclasses
from typing import Literal, NotRequired

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from langchain_structx._request.plan import build_plan
from langchain_structx._request.prompt import render_schema, render_type
from langchain_structx.strategies import PromptedStrategy

SINGLE_HEAD = "Answer with only a JSON object, no other text, matching:\n\n"


def instructions(schema):
    return build_plan(PromptedStrategy(schema)).instructions()


class Contact(BaseModel):
    """A person to reach."""

    name: str = Field(description="Full name")
    role: Literal["admin", "user"] = "user"
    emails: list[str] = Field(default_factory=list, max_length=3)
    score: float = Field(ge=0, lt=10)


def test_pydantic_model_rendering():
    assert instructions(Contact) == (
        "Answer with only a JSON object, no other text, matching:\n"
        "\n"
        "// A person to reach.\n"
        "Contact {\n"
        '  "name": string,  // Full name\n'
        '  "role": "admin" | "user",  // optional\n'
        '  "emails": string[],  // optional; max 3 items\n'
        '  "score": number  // >= 0; < 10\n'
        "}"
    )


@dataclasses.dataclass
class Reading:
    sensor: str
    values: list[int]
    unit: str = "C"


class Tag(TypedDict):
    label: str
    weight: NotRequired[float]


def test_dataclass_rendering_has_no_invented_docstring():
    assert instructions(Reading) == (
        SINGLE_HEAD
        + 'Reading {\n  "sensor": string,\n  "values": integer[],\n  "unit": string  // optional\n}'
    )


TAG = 'Tag {\n  "label": string,\n  "weight": number  // optional\n}'


def test_typeddict_rendering():
    assert instructions(Tag) == SINGLE_HEAD + TAG


CITY = {
    "title": "City",
    "description": "A city.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 80, "pattern": "^[A-Z]"},
        "population": {"type": ["integer", "null"], "minimum": 0},
        "founded": {"type": "string", "format": "date", "description": "ISO date"},
        "districts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            },
            "minItems": 1,
        },
        "meta": {"type": "object", "additionalProperties": {"type": "number"}},
        "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "kind": {"const": "city"},
        "anything": {},
    },
    "required": ["name", "kind"],
}


def test_json_schema_dict_rendering_with_constraints_and_nesting():
    assert instructions(CITY) == (
        "Answer with only a JSON object, no other text, matching:\n"
        "\n"
        "// A city.\n"
        "City {\n"
        '  "name": string,  // min length 1; max length 80; pattern ^[A-Z]\n'
        '  "population": integer | null,  // optional; >= 0\n'
        '  "founded": "YYYY-MM-DD",  // optional; ISO date; '
        "a date written YYYY-MM-DD, e.g. 2024-01-31\n"
        '  "districts": {\n'
        '    "n": integer\n'
        "  }[],  // optional; min 1 items\n"
        '  "meta": { [key: string]: number },  // optional\n'
        '  "tags": (string | integer)[],  // optional\n'
        '  "kind": "city",\n'
        '  "anything": any  // optional\n'
        "}"
    )


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    home: Address
    past: list[Address] = []


def test_definitions_that_do_not_recur_are_written_in_place():
    assert instructions(Person) == (
        SINGLE_HEAD
        + 'Person {\n  "name": string,\n'
        + '  "home": {\n    "street": string,\n    "city": string\n  },\n'
        + '  "past": {\n    "street": string,\n    "city": string\n  }[]  // optional\n}'
    )


class Event(BaseModel):
    """Something on a calendar."""

    title: str
    day: int = Field(ge=1, le=31)


def test_union_rendering_asks_for_the_envelope():
    assert instructions(Contact | Event) == (
        "Answer with only a JSON object, no other text, of the form "
        '{"kind": "Contact" | "Event", "data": <the object>} '
        "where data matches the shape named by kind:\n"
        "\n"
        "// A person to reach.\n"
        "Contact {\n"
        '  "name": string,  // Full name\n'
        '  "role": "admin" | "user",  // optional\n'
        '  "emails": string[],  // optional; max 3 items\n'
        '  "score": number  // >= 0; < 10\n'
        "}\n"
        "\n"
        "// Something on a calendar.\n"
        "Event {\n"
        '  "title": string,\n'
        '  "day": integer  // >= 1; <= 31\n'
        "}"
    )


def test_prompted_call_spec_carries_the_instructions_as_system_suffix():
    plan = build_plan(PromptedStrategy(Tag))

    spec = plan.call_spec("prompted")

    assert spec.system_suffix == SINGLE_HEAD + TAG
    assert spec.tools == ()
    assert dict(spec.model_settings) == {}


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        ({"type": "string"}, "string"),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, '("a" | "b")[]'),
        ({"type": "array"}, "any[]"),
        ({"type": "object"}, "{ [key: string]: any }"),
        ({"$ref": "#/$defs/Thing"}, "Thing"),
        ({"allOf": [{"$ref": "#/$defs/Thing"}]}, "Thing"),
        ({"enum": [1, None, "x"]}, '1 | null | "x"'),
        ({"oneOf": [{"type": "string"}, {"type": "null"}]}, "string | null"),
        ({"type": ["string", "number"]}, "string | number"),
        ({}, "any"),
    ],
)
def test_render_type_expressions(schema, text):
    assert render_type(schema) == text


class Span(BaseModel):
    pair: tuple[int, int]
    row: tuple[str, ...]


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        (Span.model_json_schema()["properties"]["pair"], "[integer, integer]"),
        (Span.model_json_schema()["properties"]["row"], "string[]"),
        ({"type": "array", "prefixItems": [{"type": "string"}], "items": False}, "[string]"),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
            "[string, ...integer[]]",
        ),
        ({"type": "array", "prefixItems": [{"type": "string"}, True]}, "[string, any, ...]"),
    ],
    ids=["pydantic-pair", "pydantic-rest", "closed", "typed-rest", "open"],
)
def test_a_tuple_shows_its_items_in_order(schema, text):
    # It was written as the array of its rest: `[]`, even `any[]` for a Pydantic pair.
    assert render_type(schema) == text


def test_render_schema_nested_object_indents_by_two_spaces():
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"b": {"type": "object", "properties": {"c": {"type": "boolean"}}}},
            }
        },
        "required": ["a"],
    }

    assert render_schema("Deep", schema) == (
        'Deep {\n  "a": {\n    "b": {\n      "c": boolean  // optional\n    }  // optional\n  }\n}'
    )


# --- defects ---------------------------------------------------------------------------


class Documented(BaseModel):
    """A record with a long docstring.

    It continues on a second paragraph.
    """

    a: int


def test_multiline_description_stays_one_comment_line():
    assert instructions(Documented) == (
        SINGLE_HEAD
        + "// A record with a long docstring. It continues on a second paragraph.\n"
        + 'Documented {\n  "a": integer\n}'
    )


class Owner(BaseModel):
    """The owner of a pet."""

    pet: Address


def test_description_sits_directly_above_its_own_shape():
    assert instructions(Owner) == (
        SINGLE_HEAD
        + "// The owner of a pet.\n"
        + 'Owner {\n  "pet": {\n    "street": string,\n    "city": string\n  }\n}'
    )


class TreeNode(BaseModel):
    value: int
    children: list["TreeNode"] = []


def test_recursive_model_renders_its_shape_once():
    assert instructions(TreeNode) == (
        SINGLE_HEAD + 'TreeNode {\n  "value": integer,\n  "children": TreeNode[]  // optional\n}'
    )


class Comment(BaseModel):
    text: str
    replies: list["Comment"] = []


class Thread(BaseModel):
    title: str
    comments: list[Comment]


def test_only_a_definition_that_recurs_stays_a_named_block():
    assert instructions(Thread) == (
        SINGLE_HEAD
        + 'Comment {\n  "text": string,\n  "replies": Comment[]  // optional\n}\n'
        + 'Thread {\n  "title": string,\n'
        + '  "comments": {\n    "text": string,\n    "replies": Comment[]  // optional\n  }[]\n}'
    )


class Limits(BaseModel):
    age: int | None = Field(default=None, ge=0, le=150)
    nick: str | None = Field(default=None, max_length=8)


def test_constraints_of_optional_fields_are_rendered():
    assert instructions(Limits) == (
        SINGLE_HEAD
        + "Limits {\n"
        + '  "age": integer | null,  // optional; >= 0; <= 150\n'
        + '  "nick": string | null  // optional; max length 8\n'
        + "}"
    )


def test_boolean_schemas_render_as_what_they_allow():
    # `false` allows no value: such a property can only be left out, so it is not
    # shown; `true` allows any. A property given as `false` used to raise TypeError.
    schema = {
        "type": "object",
        "properties": {
            "gone": False,
            "via_def": {"$ref": "#/$defs/never"},
            "free": True,
            "empty_list": {"type": "array", "items": False},
            "empty_map": {"type": "object", "additionalProperties": False},
            "name": {"type": "string"},
        },
        "required": ["name"],
        "$defs": {"never": False},
    }

    text = render_schema("Shape", schema)

    assert '"gone"' not in text
    assert '"via_def"' not in text
    assert '"free": any,  // optional' in text
    assert '"empty_list": [],  // optional' in text
    assert '"empty_map": {},  // optional' in text
    assert '"name": string' in text


def test_a_never_matching_shape_is_not_offered_as_any():
    assert render_type({"not": {}}) == "never"
    assert render_type({"anyOf": [False, {"type": "integer"}]}) == "never | integer"


def test_a_composition_of_parts_shows_every_part():
    # `allOf` of more than one part was written as `any`: the model saw no shape.
    schema = {
        "$defs": {
            "Base": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "tags": {"type": "object"}},
                "required": ["name"],
            }
        },
        "allOf": [
            {"$ref": "#/$defs/Base"},
            {"type": "object", "properties": {"barks": {"type": "boolean"}}},
            {"anyOf": [{"required": ["barks"]}, {"required": ["tags"]}]},
        ],
    }

    text = render_schema("Dog", schema)

    assert text == (
        'Dog {\n  "name": string,\n  "tags": { [key: string]: any }  // optional\n} & {\n'
        '  "barks": boolean  // optional\n} & (any | any)'
    )
    assert render_type(
        {"type": "object", "properties": {"a": {}}, "allOf": [{"$ref": "#/x/B"}]}
    ) == ('{\n  "a": any  // optional\n} & B')
    # A part of rules alone (`required`) shows no shape, and is not written as `& any`.
    assert render_type({"properties": {"a": {}}, "allOf": [{"required": ["a"]}]}) == (
        '{\n  "a": any  // optional\n}'
    )


def test_rules_on_keys_and_items_are_written_where_they_apply():
    # Validation enforced these, but the prompt did not mention them, so a model
    # could only learn them from a failed attempt's feedback.
    schema = {
        "type": "object",
        "properties": {
            "card": {"type": "string"},
            "cvv": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "labels": {"type": "object", "maxProperties": 3, "additionalProperties": True},
        },
        "additionalProperties": {"type": "integer"},
        "dependentRequired": {"card": ["cvv"]},
    }

    assert render_type(schema) == (
        "{\n"
        '  "card": string,  // optional; if given, also give "cvv"\n'
        '  "cvv": string,  // optional\n'
        '  "tags": string[],  // optional; no item twice\n'
        '  "labels": { [key: string]: any },  // optional; max 3 keys\n'
        "  [key: string]: integer\n"
        "}"
    )


def test_keys_given_by_pattern_or_by_name_are_written_with_their_values():
    # `patternProperties` and `propertyNames` were left out: a map of patterned
    # keys read `{}`, and a Pydantic `dict[constr(pattern=...), int]` read
    # `{ [key: string]: any }`, so an answer that followed it was refused.
    schema = {
        "type": "object",
        "properties": {
            "tags": {
                "type": "object",
                "patternProperties": {"^t_": {"type": "string"}},
                "additionalProperties": False,
            },
            "scores": {
                "type": "object",
                "propertyNames": {"enum": ["x", "y"]},
                "additionalProperties": {"type": "integer"},
            },
            "codes": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Z]{2}$"},
                "additionalProperties": {"type": "number"},
            },
        },
        "patternProperties": {"^x-": {"type": "boolean"}},
    }

    assert render_type(schema) == (
        "{\n"
        '  "tags": { [key matching "^t_"]: string },  // optional\n'
        '  "scores": { [key: "x" | "y"]: integer },  // optional\n'
        '  "codes": { [key: string matching "^[A-Z]{2}$"]: number },  // optional\n'
        '  [key matching "^x-"]: boolean\n'
        "}"
    )


def test_every_local_reference_is_written_as_what_it_points_at():
    # Only `#/$defs/<name>` was followed: `#` read `#`, a pointer into a
    # definition read its last step (`zip`), an escaped name read `a~1b`, each
    # a word the prompt defines nowhere.
    schema = {
        "type": "object",
        "$defs": {
            "Addr": {
                "type": "object",
                "properties": {"zip": {"type": "integer"}},
                "required": ["zip"],
            },
            "a/b": {"type": "string", "format": "email"},
        },
        "properties": {
            "home": {"$ref": "#/$defs/Addr"},
            "zip2": {"$ref": "#/$defs/Addr/properties/zip"},
            "code": {"$ref": "#/$defs/a~1b"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["home", "zip2", "code"],
    }

    assert render_schema("Family", schema) == (
        "Family {\n"
        '  "home": {\n'
        '    "zip": integer\n'
        "  },\n"
        '  "zip2": integer,\n'
        '  "code": string,  // format email\n'
        '  "kids": Family[]  // optional\n'
        "}"
    )
