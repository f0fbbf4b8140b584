"""Schema normalisation: every supported schema form becomes named, validating variants."""

import dataclasses
import enum
import gc
import time
import typing
import weakref
from typing import Literal, Union

import pytest
import typing_extensions
from pydantic import BaseModel, Field
from pydantic import v1 as pydantic_v1

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError, SchemaError, ValidationIssue


class Point(BaseModel):
    """A point on a grid."""

    x: int
    y: int = 0


@dataclasses.dataclass
class PointDC:
    x: int
    y: int = 0


class PointTD(typing.TypedDict):
    """A point, as a typing TypedDict."""

    x: int
    y: typing_extensions.NotRequired[int]


class PointTE(typing_extensions.TypedDict):
    """A point, as a typing_extensions TypedDict."""

    x: int
    y: typing_extensions.NotRequired[int]


POINT_DICT = {
    "title": "PointJS",
    "description": "A point as a JSON schema.",
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}


# --- single schemas -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "name", "origin", "description"),
    [
        (Point, "Point", "pydantic", "A point on a grid."),
        (PointDC, "PointDC", "dataclass", ""),
        (PointTD, "PointTD", "typeddict", "A point, as a typing TypedDict."),
        (PointTE, "PointTE", "typeddict", "A point, as a typing_extensions TypedDict."),
        (POINT_DICT, "PointJS", "json_schema", "A point as a JSON schema."),
    ],
    ids=["pydantic", "dataclass", "typing-typeddict", "te-typeddict", "dict"],
)
def test_single_schema_becomes_one_named_variant(schema, name, origin, description):
    schemas = normalize(schema)

    assert schemas.names == (name,)
    assert not schemas.is_union
    variant = schemas.variants[0]
    assert variant.origin == origin
    assert variant.description == description
    assert variant.source == schema
    assert variant.json_schema["properties"]["x"]["type"] == "integer"
    assert "x" in variant.json_schema["required"]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (Point, Point(x=1, y=2)),
        (PointDC, PointDC(x=1, y=2)),
        (PointTD, {"x": 1, "y": 2}),
        (PointTE, {"x": 1, "y": 2}),
        (POINT_DICT, {"x": 1, "y": 2}),
    ],
    ids=["pydantic", "dataclass", "typing-typeddict", "te-typeddict", "dict"],
)
def test_validate_returns_the_natural_python_value(schema, expected):
    value = normalize(schema).variants[0].validate({"x": 1, "y": 2})

    assert value == expected
    assert type(value) is type(expected)


def test_dict_schema_validation_returns_the_same_dict():
    data = {"x": 1}

    assert normalize(POINT_DICT).variants[0].validate(data) is data


class Inner(typing.TypedDict):
    n: int


class Outer(typing.TypedDict):
    inner: Inner
    many: list[Inner]


def test_typing_typeddict_nested_in_a_typing_typeddict_validates():
    variant = normalize(Outer).variants[0]

    assert variant.validate({"inner": {"n": 1}, "many": [{"n": 2}]}) == {
        "inner": {"n": 1},
        "many": [{"n": 2}],
    }
    with pytest.raises(OutputValidationError) as info:
        variant.validate({"inner": {"n": 1}, "many": [{"m": 2}]})
    assert [issue.path for issue in info.value.issues] == [("many", 0, "n")]


def test_typing_typeddict_with_not_required_key_accepts_missing_key():
    assert normalize(PointTD).variants[0].validate({"x": 3}) == {"x": 3}
    assert normalize(PointTD).variants[0].json_schema["required"] == ["x"]


class Tree(typing.TypedDict):
    """A typing TypedDict that refers to itself."""

    name: str
    children: list["Tree"]


class Ping(typing.TypedDict):
    pong: typing.Optional["Pong"]  # noqa: UP045 - a class defined below


class Pong(typing.TypedDict):
    ping: typing.Optional[Ping]  # noqa: UP045
    hits: typing_extensions.NotRequired[int]


class Item(typing.TypedDict):
    sku: str


class Order(typing.TypedDict):
    items: typing.Annotated[list[Item], Field(max_length=2)]


@pytest.mark.parametrize(
    ("schema", "good", "bad", "path"),
    [
        (
            Tree,
            {"name": "a", "children": [{"name": "b", "children": []}]},
            {"name": "a", "children": [{"name": "b"}]},
            ("children", 0, "children"),
        ),
        (
            Ping,
            {"pong": {"ping": {"pong": None}}},
            {"pong": {"ping": {}}},
            ("pong", "ping", "pong"),
        ),
        (Pong, {"ping": {"pong": {"ping": None, "hits": 1}}}, {"ping": 1}, ("ping",)),
        (Order, {"items": [{"sku": "x"}]}, {"items": [{"sku": "x"}] * 3}, ("items",)),
    ],
    ids=["self-reference", "mutual-reference", "mutual-reference-other-end", "annotated"],
)
def test_typing_typeddicts_that_refer_to_themselves_or_carry_metadata(schema, good, bad, path):
    # Python 3.11 needs them rebuilt for Pydantic; references back into the class being
    # rebuilt recursed without end, and Annotated metadata failed an assertion.
    variant = normalize(schema).variants[0]

    assert variant.validate(good) == good
    with pytest.raises(OutputValidationError) as info:
        variant.validate(bad)
    assert [issue.path for issue in info.value.issues] == [path]


def test_a_typing_typeddict_is_not_kept_alive_by_its_schema_once_unused():
    def make() -> type:
        class Passing(typing.TypedDict):
            text: str

        return Passing

    passing = make()
    assert normalize(passing).variants[0].validate({"text": "a"}) == {"text": "a"}
    gone = weakref.ref(passing)
    del passing
    gc.collect()

    assert gone() is None


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object"}, "response_format"),
        ({"title": "My Point!", "type": "object"}, "My_Point_"),
        ({"title": "a" * 80, "type": "object"}, "a" * 64),
    ],
    ids=["untitled", "cleaned", "capped"],
)
def test_dict_schema_names(schema, expected):
    assert normalize(schema).names == (expected,)


def test_explicit_name_overrides_title_and_class_name():
    assert normalize(POINT_DICT, name="Coordinates").names == ("Coordinates",)
    assert normalize(Point, name="Where").names == ("Where",)


class 联系人(BaseModel):  # noqa: N801 - a class name in another script
    """联系方式。"""

    姓名: str


@pytest.mark.parametrize(
    ("schema", "names"),
    [
        (联系人, ("response_format",)),
        ({"title": "联系人", "type": "object"}, ("response_format",)),
        ([联系人, Point], ("response_format_1", "Point")),
        ([{"title": "联系人"}, {"title": "事件"}], ("response_format_1", "response_format_2")),
        ({"title": "Contact 联系人", "type": "object"}, ("Contact____",)),
    ],
    ids=["class", "title", "union-with-class", "union-of-titles", "partly-ascii"],
)
def test_a_name_in_another_script_gives_way_to_a_generic_one(schema, names):
    # Providers take only ASCII tool names; before, such a schema was a SchemaError,
    # and a union of them could not be named at all.
    assert normalize(schema).names == names


def test_unusable_name_is_a_schema_error():
    with pytest.raises(SchemaError, match=r"Cannot derive a usable name from '!!!'; pass name="):
        normalize({"title": "!!!", "type": "object"})
    with pytest.raises(SchemaError, match=r"Cannot derive a usable name from '联系人'; pass name="):
        normalize(Point, name="联系人")  # a name passed is used as it is, or refused


# --- unions ----------------------------------------------------------------------------


class Contact(BaseModel):
    name: str


class Event(BaseModel):
    title: str


@pytest.mark.parametrize(
    "schema",
    [
        Union[Contact, Event],  # noqa: UP007 - the typing form is what is under test
        Contact | Event,
        [Contact, Event],
        (Contact, Event),
    ],
    ids=["typing-union", "pipe-union", "list", "tuple"],
)
def test_union_forms_give_one_variant_per_member_in_order(schema):
    schemas = normalize(schema)

    assert schemas.names == ("Contact", "Event")
    assert schemas.is_union
    assert schemas.get("Event").validate({"title": "t"}) == Event(title="t")
    assert schemas.get("Missing") is None


def test_union_of_mixed_kinds():
    schemas = normalize([Contact, PointDC, PointTE, POINT_DICT])

    assert schemas.names == ("Contact", "PointDC", "PointTE", "PointJS")
    assert [v.origin for v in schemas.variants] == [
        "pydantic",
        "dataclass",
        "typeddict",
        "json_schema",
    ]


def test_nested_unions_are_flattened():
    assert normalize([Contact | Event, POINT_DICT]).names == ("Contact", "Event", "PointJS")


def test_untitled_dicts_in_a_union_are_numbered():
    assert normalize([{"type": "object"}, {"type": "object"}]).names == (
        "response_format_1",
        "response_format_2",
    )


def test_name_argument_is_ignored_for_unions():
    assert normalize([Contact, Event], name="Ignored").names == ("Contact", "Event")


@pytest.mark.parametrize("keyword", ["oneOf", "anyOf"])
def test_top_level_one_of_any_of_objects_is_a_union(keyword):
    schema = {
        keyword: [
            {"title": "Cat", "type": "object", "properties": {"meow": {"type": "boolean"}}},
            {"title": "Dog", "properties": {"bark": {"type": "integer"}}, "required": ["bark"]},
        ]
    }

    schemas = normalize(schema)

    assert schemas.names == ("Cat", "Dog")
    assert schemas.get("Dog").validate({"bark": 2}) == {"bark": 2}
    with pytest.raises(OutputValidationError):
        schemas.get("Dog").validate({"bark": "loud"})


def test_top_level_one_of_with_ref_branches_resolves_defs():
    schema = {
        "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
        "$defs": {
            "Cat": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "toy": {"$ref": "#/$defs/Toy"}},
                "required": ["name"],
            },
            "Dog": {"type": "object", "properties": {"bark": {"type": "integer"}}},
            "Toy": {
                "type": "object",
                "properties": {"kind": {"type": "string"}},
                "required": ["kind"],
            },
        },
    }

    schemas = normalize(schema)

    assert schemas.names == ("Cat", "Dog")
    cat = schemas.get("Cat")
    assert cat.validate({"name": "Tom", "toy": {"kind": "ball"}}) == {
        "name": "Tom",
        "toy": {"kind": "ball"},
    }
    with pytest.raises(OutputValidationError) as info:
        cat.validate({"name": "Tom", "toy": {}})
    assert info.value.issues == (ValidationIssue(("toy",), "'kind' is required but missing"),)


def test_ref_branch_keeps_its_explicit_title():
    schema = {
        "anyOf": [{"$ref": "#/$defs/a"}, {"title": "B", "type": "object"}],
        "$defs": {"a": {"title": "Alpha", "type": "object"}},
    }

    assert normalize(schema).names == ("Alpha", "B")


@pytest.mark.parametrize(
    "schema",
    [
        {"title": "S", "anyOf": [{"type": "string"}, {"type": "object"}]},
        {"title": "S", "anyOf": [{"type": "object"}]},
        {
            "title": "S",
            "type": "object",
            "properties": {"a": {}},
            "oneOf": [{"type": "object"}, {"type": "object"}],
        },
    ],
    ids=["non-object-branch", "single-branch", "has-properties"],
)
def test_dict_that_is_not_a_union_of_objects_stays_one_variant(schema):
    assert normalize(schema).names == ("S",)


def test_unresolvable_ref_branch_is_a_schema_error():
    with pytest.raises(SchemaError, match=r"Schema reference '#/\$defs/Nope' does not resolve"):
        normalize({"oneOf": [{"$ref": "#/$defs/Nope"}, {"type": "object"}], "$defs": {}})


# --- errors ----------------------------------------------------------------------------


def _twin(name: str) -> type[BaseModel]:
    return type(name, (BaseModel,), {"__annotations__": {"v": int}})


@pytest.mark.parametrize(
    ("schema", "shown"),
    [
        ([_twin("Same"), _twin("Same")], "Same"),
        ([Contact, {"title": "Contact", "type": "object"}], "Contact"),
        ([{"title": "T", "type": "object"}, {"title": "T", "type": "object"}], "T"),
        ({"oneOf": [{"title": "T", "type": "object"}, {"title": "T", "type": "object"}]}, "T"),
    ],
    ids=["two-classes", "class-and-dict", "two-dicts", "one-of"],
)
def test_duplicate_variant_names_are_a_schema_error(schema, shown):
    with pytest.raises(SchemaError) as info:
        normalize(schema)

    assert str(info.value) == (
        f"Two schemas share the name {shown!r}; give each union member a distinct class name "
        "or JSON-schema title."
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "objectx"},
            "Invalid JSON schema: 1 problem: at $.type: 'objectx' is not a JSON type: use "
            "array, boolean, integer, null, number, object or string, or a list",
        ),
        (
            {"type": "object", "properties": 5},
            "Invalid JSON schema: 1 problem: at $.properties: 5 is not of type 'object'",
        ),
        (
            {"type": "object", "required": "x"},
            "Invalid JSON schema: 1 problem: at $.required: 'x' is not of type 'array'",
        ),
        (
            {"type": "string", "minLength": -1},
            "Invalid JSON schema: 1 problem: at $.minLength: -1 is less than the minimum of 0",
        ),
    ],
    ids=["bad-type", "bad-properties", "bad-required", "bad-min-length"],
)
def test_invalid_dict_schema_is_a_schema_error(schema, message):
    with pytest.raises(SchemaError) as info:
        normalize(schema)

    assert str(info.value) == message


@pytest.mark.parametrize("schema", [int, str, "Contact", 3, None, list[int]])
def test_unsupported_schema_is_a_schema_error(schema):
    with pytest.raises(
        SchemaError, match=r"^Unsupported schema .*Use a Pydantic model, a dataclass"
    ):
        normalize(schema)


T = typing.TypeVar("T")


class Page(typing_extensions.TypedDict, typing.Generic[T]):
    """One page of results."""

    items: list[T]


@dataclasses.dataclass
class Pair(typing.Generic[T]):
    """Two of a kind."""

    left: T
    right: T


@pytest.mark.parametrize(
    ("schema", "name", "good", "bad", "value"),
    [
        (Page[Point], "Page", {"items": [{"x": 1}]}, {"items": [{"x": "a"}]}, None),
        (Pair[int], "Pair", {"left": 1, "right": 2}, {"left": 1, "right": "b"}, Pair(1, 2)),
    ],
    ids=["typeddict", "dataclass"],
)
def test_a_generic_typeddict_or_dataclass_with_its_arguments_is_a_schema(
    schema, name, good, bad, value
):
    [variant] = normalize(schema).variants

    assert (variant.name, variant.description) == (name, schema.__origin__.__doc__)
    assert variant.validate(good) == (value or {"items": [Point(x=1)]})
    with pytest.raises(OutputValidationError):
        variant.validate(bad)


class Legacy(pydantic_v1.BaseModel):
    name: str


class Corner(typing.NamedTuple):
    x: int
    y: int


class Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        (Legacy, "a pydantic.v1 model: derive it from pydantic.BaseModel instead"),
        (Point | None, "None cannot be a variant: an answer always takes one of the shapes"),
        (Point(x=1, y=2), "an instance: pass its class"),
        ('{"type": "object"}', "a string: pass the class, or the JSON schema as a dict"),
        (list[Point], "a plain type: make it a field of a model"),
        (Literal["a", "b"], "a plain type: make it a field of a model"),
        (Corner, "a NamedTuple, which JSON holds as an array: make it a dataclass"),
        (Colour, "an Enum: make it a field of a model"),
        (
            typing.Annotated[Point | PointDC, Field(discriminator="kind")],
            "Annotated: pass the type inside it, and put what annotates it on a field or in "
            "a validator; a union's variants are told apart by their names without a "
            "discriminator",
        ),
    ],
    ids=[
        "pydantic-v1",
        "optional",
        "instance",
        "json-text",
        "list",
        "literal",
        "namedtuple",
        "enum",
        "annotated",
    ],
)
def test_a_near_miss_schema_says_what_to_pass_instead(schema, hint):
    with pytest.raises(SchemaError, match=r"^Unsupported schema ") as info:
        normalize(schema)

    assert f"({hint})" in str(info.value)


@pytest.mark.parametrize("schema", [[], ()], ids=["list", "tuple"])
def test_an_empty_union_is_a_schema_error(schema):
    with pytest.raises(SchemaError, match=r"^No schema given: .* is an empty union\.$"):
        normalize(schema)


def test_schema_error_is_a_user_error_and_value_error():
    from langchain_structx.errors import UserError

    with pytest.raises(UserError):
        normalize(int)
    with pytest.raises(ValueError):
        normalize(int)


# --- validation errors ----------------------------------------------------------------


class Item(BaseModel):
    name: str
    qty: int


class Order(BaseModel):
    id: int
    items: list[Item]
    status: Literal["open", "closed"] = "open"
    note: str | None = Field(default=None, max_length=5)


@pytest.mark.parametrize(
    ("data", "message", "paths"),
    [
        (
            {"id": "x", "items": []},
            "1 problem with Order:\n"
            "- at $.id: Input should be a valid integer, unable to parse string as an integer "
            "(got 'x')",
            [("id",)],
        ),
        (
            {"items": [{"name": "a", "qty": 1}, {"name": "b"}]},
            "2 problems with Order:\n"
            "- at $.id: required field is missing\n"
            "- at $.items[1].qty: required field is missing",
            [("id",), ("items", 1, "qty")],
        ),
        (
            {"id": 1, "items": [], "status": "done"},
            "1 problem with Order:\n- at $.status: Input should be 'open' or 'closed' (got 'done')",
            [("status",)],
        ),
        (
            {"id": 1, "items": [{"name": 7, "qty": 1}]},
            "1 problem with Order:\n- at $.items[0].name: Input should be a valid string (got 7)",
            [("items", 0, "name")],
        ),
    ],
    ids=["bad-int", "missing-nested", "enum", "nested-type"],
)
def test_pydantic_validation_errors_have_paths_and_exact_wording(data, message, paths):
    with pytest.raises(OutputValidationError) as info:
        normalize(Order).variants[0].validate(data)

    assert str(info.value) == message
    assert [issue.path for issue in info.value.issues] == paths
    assert info.value.schema_name == "Order"


def test_pydantic_forbidden_extra_field_wording():
    class Strict(BaseModel, extra="forbid"):
        a: int

    with pytest.raises(OutputValidationError) as info:
        normalize(Strict).variants[0].validate({"a": 1, "b": 2})

    assert str(info.value) == "1 problem with Strict:\n- at $.b: unexpected field"


def test_long_inputs_are_shortened_in_messages():
    with pytest.raises(OutputValidationError) as info:
        normalize(Item).variants[0].validate({"name": "n", "qty": "z" * 100})

    message = info.value.issues[0].message
    assert message.endswith("(got '" + "z" * 76 + "...)")


ORDER_DICT = {
    "title": "OrderJS",
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
        "email": {"type": "string", "format": "email"},
    },
    "required": ["id"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": 0}, "1 problem with OrderJS:\n- at $.id: 0 is less than the minimum of 1"),
        ({}, "1 problem with OrderJS:\n- at $: 'id' is required but missing"),
        (
            {"id": 1, "items": [{"name": 3}, {}]},
            "2 problems with OrderJS:\n"
            "- at $.items[0].name: 3 is not of type 'string'\n"
            "- at $.items[1]: 'name' is required but missing",
        ),
        (
            {"id": 1, "extra": True},
            "1 problem with OrderJS:\n"
            "- at $: Additional properties are not allowed ('extra' was unexpected)",
        ),
        (
            {"id": 1, "email": "nope"},
            "1 problem with OrderJS:\n- at $.email: 'nope' is not a 'email'",
        ),
    ],
    ids=["minimum", "required", "nested-deepest-first", "additional", "format"],
)
def test_dict_validation_errors_have_paths_and_exact_wording(data, message):
    with pytest.raises(OutputValidationError) as info:
        normalize(ORDER_DICT).variants[0].validate(data)

    assert str(info.value) == message


def test_dict_validation_lists_deepest_issues_first():
    with pytest.raises(OutputValidationError) as info:
        normalize(ORDER_DICT).variants[0].validate({"id": 0, "items": [{}]})

    assert [issue.location for issue in info.value.issues] == ["$.items[0]", "$.id"]


def test_issue_location_renders_json_path():
    issue = ValidationIssue(("a", 0, "b"), "bad")

    assert issue.location == "$.a[0].b"
    assert str(issue) == "at $.a[0].b: bad"
    assert ValidationIssue((), "x").location == "$"


def test_dict_validation_reports_at_most_twenty_issues():
    schema = {"title": "Many", "type": "array", "items": {"type": "integer"}}

    with pytest.raises(OutputValidationError) as info:
        normalize(schema).variants[0].validate(["x"] * 50)

    assert len(info.value.issues) == 20
    assert str(info.value).startswith("20 problems with Many:\n")


# --- catastrophic patterns ---------------------------------------------------------------

EVIL = r"^(?=a)(a|aa)+$"  # the look-ahead keeps it out of RE2, in the backtracking engine
EVIL_INPUT = "a" * 40 + "b"


def test_catastrophic_pattern_returns_in_bounded_time():
    schema = {
        "title": "Code",
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": EVIL}},
    }
    variant = normalize(schema).variants[0]

    started = time.perf_counter()
    with pytest.raises(OutputValidationError) as info:
        variant.validate({"code": EVIL_INPUT})
    elapsed = time.perf_counter() - started

    assert elapsed < 5.0
    assert str(info.value) == (
        "1 problem with Code:\n"
        f"- at $: the value could not be checked against the pattern {EVIL!r} within 1.0 s"
    )


def test_catastrophic_pattern_properties_is_a_failure_not_a_pass():
    # A key the pattern cannot be checked against in time must not slip through
    # unvalidated (the old behaviour read the time-out as "no match").
    schema = {
        "title": "Keys",
        "type": "object",
        "patternProperties": {EVIL: {"type": "integer"}},
    }
    variant = normalize(schema).variants[0]

    started = time.perf_counter()
    with pytest.raises(OutputValidationError, match="could not be checked against the pattern"):
        variant.validate({EVIL_INPUT: "not checked"})
    assert time.perf_counter() - started < 5.0
    with pytest.raises(OutputValidationError):
        variant.validate({"aa": "x"})


def test_ordinary_patterns_still_match_and_fail():
    schema = {"title": "Code", "type": "string", "pattern": "^[A-Z]{3}$"}
    variant = normalize(schema).variants[0]

    assert variant.validate("ABC") == "ABC"
    with pytest.raises(OutputValidationError) as info:
        variant.validate("abc")
    assert str(info.value) == "1 problem with Code:\n- at $: 'abc' does not match '^[A-Z]{3}$'"


def test_a_key_that_is_not_a_name_is_quoted_in_the_path():
    # `$.a.b` read as two keys, `$.0` as an index: the model could not tell which.
    schema = {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in ("a.b", "0", "", "x y", "姓名")},
    }
    with pytest.raises(OutputValidationError) as info:
        normalize(schema).variants[0].validate({k: "?" for k in ("a.b", "0", "", "x y", "姓名")})

    assert sorted(issue.location for issue in info.value.issues) == [
        "$.姓名",
        '$[""]',
        '$["0"]',
        '$["a.b"]',
        '$["x y"]',
    ]
