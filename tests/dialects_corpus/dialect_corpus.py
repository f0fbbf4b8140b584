"""A deterministic corpus of JSON Schemas for the dialect tests and benchmark.

`build_corpus()` returns `(name, schema)` pairs: hand-written families (objects,
recursion, unions, optionals, formats, patterns, enums, maps, allOf, arrays,
tuples, conditionals, limits), Pydantic / dataclass / TypedDict schemas, and a
seeded random family. Names are stable, so failures can be reproduced by name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import random
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

Schema = dict[str, Any]

S: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
N: Schema = {"type": "number"}
B: Schema = {"type": "boolean"}


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> Schema:
    out: Schema = {"type": "object", "properties": props}
    out["required"] = list(props) if required is None else required
    out.update(extra)
    return out


def arr(items: Any, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def _flat() -> dict[str, Schema]:
    out = {
        "flat_scalars": obj({"s": S, "i": INT, "n": N, "b": B}),
        "flat_bounds": obj(
            {
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "score": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "step": {"type": "integer", "multipleOf": 5},
                "name": {"type": "string", "minLength": 1, "maxLength": 20},
            }
        ),
        "flat_described": obj(
            {"title": {"type": "string", "description": "Headline", "title": "Title"}},
            description="An article",
            title="Article",
        ),
        "flat_empty": {"type": "object", "properties": {}},
        "flat_null_field": obj({"nothing": {"type": "null"}, "s": S}),
        "flat_untyped_props": {"properties": {"a": S}, "required": ["a"]},
        "flat_required_only": {"type": "object", "properties": {"a": S}, "required": ["a", "b"]},
        "flat_closed": obj({"a": S}, additionalProperties=False),
        "flat_false_prop": obj({"a": S, "never": False}, ["a"]),
        "flat_bool_true_prop": obj({"anything": True}),
    }
    for n in range(1, 11):
        props = {f"f{k}": [S, INT, N, B][k % 4] for k in range(n * 3)}
        out[f"flat_wide_{n * 3}"] = obj(props, list(props)[::2])
    return out


def _nested() -> dict[str, Schema]:
    out: dict[str, Schema] = {}
    for depth in (2, 3, 5, 8, 10, 11, 12):
        node: Schema = obj({"leaf": S})
        for level in range(depth - 1):
            node = obj({f"child{level}": node, "tag": S}, [f"child{level}"])
        out[f"nested_depth_{depth}"] = node
    out["nested_arrays_of_objects"] = obj(
        {"rows": arr(obj({"cells": arr(obj({"v": N, "note": S}, ["v"]))}))}
    )
    out["nested_matrix"] = obj({"m": arr(arr(N, minItems=2), minItems=1, maxItems=4)})
    return out


def _recursive() -> dict[str, Schema]:
    tree = {
        "$defs": {"Node": obj({"value": INT, "children": arr({"$ref": "#/$defs/Node"})})},
        "$ref": "#/$defs/Node",
    }
    linked = {
        "definitions": {
            "Cell": obj(
                {"head": S, "tail": {"anyOf": [{"$ref": "#/definitions/Cell"}, {"type": "null"}]}}
            )
        },
        "type": "object",
        "properties": {"list": {"$ref": "#/definitions/Cell"}},
        "required": ["list"],
    }
    root_self = obj({"name": S, "parts": arr({"$ref": "#"})}, ["name"])
    mutual = {
        "$defs": {
            "A": obj({"b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}}),
            "B": obj({"a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}, "x": INT}),
        },
        "type": "object",
        "properties": {"start": {"$ref": "#/$defs/A"}},
        "required": ["start"],
    }
    expr = {
        "$defs": {
            "Expr": {
                "anyOf": [
                    obj({"num": N}),
                    obj({"op": {"enum": ["+", "*"]}, "args": arr({"$ref": "#/$defs/Expr"})}),
                ]
            }
        },
        "$ref": "#/$defs/Expr",
    }
    pointer = obj({"home": obj({"street": S, "city": S}), "work": {"$ref": "#/properties/home"}})
    shared = {
        "$defs": {"Money": obj({"amount": N, "currency": {"enum": ["EUR", "USD"]}})},
        **obj({"price": {"$ref": "#/$defs/Money"}, "tax": {"$ref": "#/$defs/Money"}}),
    }
    recursive_map = {
        "$defs": {
            "Dir": obj(
                {"files": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Dir"}}}
            )
        },
        "$ref": "#/$defs/Dir",
    }
    return {
        "rec_tree": tree,
        "rec_linked_list": linked,
        "rec_root_pointer": root_self,
        "rec_mutual": mutual,
        "rec_expression": expr,
        "ref_json_pointer": pointer,
        "ref_shared_def": shared,
        "rec_map": recursive_map,
        "ref_with_siblings": {
            "$defs": {"Color": {"enum": ["red", "green"], "type": "string"}},
            **obj({"c": {"$ref": "#/$defs/Color", "description": "Paint", "default": "red"}}, []),
        },
    }


def _unions() -> dict[str, Schema]:
    cat = obj({"kind": {"const": "cat"}, "lives": INT})
    dog = obj({"kind": {"const": "dog"}, "breed": S})
    bird = obj({"kind": {"const": "bird"}, "wingspan": N}, ["kind"])
    out = {
        "union_any_of_objects": obj({"pet": {"anyOf": [cat, dog]}}),
        "union_one_of_tagged": obj({"pet": {"oneOf": [cat, dog, bird]}}),
        "union_one_of_untagged": obj({"v": {"oneOf": [obj({"a": INT}), obj({"b": S})]}}),
        "union_scalars": obj({"v": {"anyOf": [S, INT, B]}}),
        "union_nullable_scalars": obj({"v": {"anyOf": [S, INT, {"type": "null"}]}}),
        "union_root_any_of": {"anyOf": [cat, dog]},
        "union_root_one_of_scalars": {"oneOf": [{"type": "string", "maxLength": 3}, INT]},
        "union_with_base": {
            "type": "object",
            "properties": {"id": INT},
            "required": ["id"],
            "anyOf": [
                {"properties": {"x": S}, "required": ["x"]},
                {"properties": {"y": N}, "required": ["y"]},
            ],
        },
        "union_of_arrays": obj({"v": {"anyOf": [arr(INT), arr(S)]}}),
        "union_map_or_list": obj(
            {"v": {"anyOf": [{"type": "object", "additionalProperties": INT}, arr(INT)]}}
        ),
        "union_optional_objects": obj(
            {"v": {"anyOf": [obj({"a": INT, "o": S}, ["a"]), obj({"b": INT, "o": INT}, ["b"])]}}
        ),
        "union_nested": obj({"v": {"anyOf": [{"anyOf": [S, INT]}, arr(B)]}}),
        "union_type_list_multi": obj(
            {"v": {"type": ["string", "integer", "null"], "minLength": 2}}
        ),
        "union_type_list_obj": obj(
            {"v": {"type": ["object", "null"], "properties": {"a": S}, "required": ["a"]}}
        ),
        "union_any_of_free": obj({"v": {"anyOf": [{}, {"type": "null"}]}}),
    }
    for n in (2, 3, 5):
        members = [obj({"kind": {"const": f"k{i}"}, f"p{i}": [S, INT, N][i % 3]}) for i in range(n)]
        out[f"union_tagged_{n}"] = obj(
            {"item": {"oneOf": members}, "items": arr({"anyOf": members})}
        )
    return out


def _optionals() -> dict[str, Schema]:
    opt_null = {"anyOf": [S, {"type": "null"}], "default": None}
    return {
        "opt_plain": obj({"a": S, "b": INT, "c": B}, ["a"]),
        "opt_nullable_default_none": obj({"a": S, "b": opt_null}, ["a"]),
        "opt_nullable_default_value": obj({"a": {"type": ["integer", "null"], "default": 5}}, []),
        "opt_required_nullable": obj({"a": {"type": ["string", "null"]}}),
        "opt_all_optional": obj({"a": S, "b": arr(INT), "c": obj({"d": S})}, []),
        "opt_defaults": obj(
            {
                "retries": {"type": "integer", "default": 3},
                "mode": {"enum": ["fast", "safe"], "default": "safe"},
                "tags": {"type": "array", "items": S, "default": []},
            },
            [],
        ),
        "opt_nested_optional_nullable": obj(
            {"inner": obj({"x": opt_null, "y": {"type": "null"}}, [])}, []
        ),
        "opt_optional_ref": {
            "$defs": {"P": obj({"q": S})},
            **obj({"p": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}], "default": None}}, []),
        },
        "opt_free_form_optional": obj({"meta": {}, "note": S}, ["note"]),
        "opt_marker_collision": obj(
            {"v": {"anyOf": [obj({"explicit_null": B}), {"type": "null"}]}}, []
        ),
    }


def _formats() -> dict[str, Schema]:
    names = [
        "date-time", "date", "time", "duration", "email", "hostname", "ipv4",
        "ipv6", "uuid", "uri", "uri-reference", "iri", "json-pointer", "regex",
    ]  # fmt: skip
    out = {f"format_{n}": obj({"v": {"type": "string", "format": n}}) for n in names}
    out["format_mixed"] = obj(
        {n.replace("-", "_"): {"type": "string", "format": n} for n in names[:9]}
    )
    return out


def _patterns() -> dict[str, Schema]:
    pats = {
        "code": "^[A-Z]{3}-[0-9]{3}$",
        "phone": "^\\+?[0-9 -]{7,15}$",
        "lookahead": "^(?=.*[0-9])[a-z0-9]{4,8}$",
        "backref": "^(a+)b\\1$",
        "word": "\\bcat\\b",
        "slug": "^[a-z0-9]+(?:-[a-z0-9]+)*$",
    }
    return {f"pattern_{k}": obj({"v": {"type": "string", "pattern": v}}) for k, v in pats.items()}


def _enums() -> dict[str, Schema]:
    return {
        "enum_strings": obj({"v": {"enum": ["a", "b", "c"]}}),
        "enum_typed_strings": obj({"v": {"type": "string", "enum": ["x", "y"]}}),
        "enum_ints": obj({"v": {"enum": [1, 2, 3]}}),
        "enum_floats": obj({"v": {"enum": [0.5, 1, 2.5]}}),
        "enum_bools": obj({"v": {"enum": [True, False]}}),
        "enum_mixed": obj({"v": {"enum": ["a", 1, True, None]}}),
        "enum_with_null": obj({"v": {"enum": ["a", "b", None]}}),
        "enum_objects": obj({"v": {"enum": [{"x": 1}, [1, 2], "plain"]}}),
        "enum_300": obj({"v": {"enum": [f"value_{i:03d}" for i in range(300)]}}),
        "enum_1200": obj({"v": {"enum": [f"v{i}" for i in range(1200)]}}),
        "enum_260_long": obj({"v": {"enum": [f"{i:03d}" + "x" * 60 for i in range(260)]}}),
        "enum_filtered_by_type": obj({"v": {"type": "string", "enum": ["a", 1, "b"]}}),
        "const_string": obj({"kind": {"const": "fixed"}, "n": INT}),
        "const_int": obj({"version": {"const": 2}}),
        "const_object": obj({"v": {"const": {"a": [1, 2]}}}),
        "const_null": obj({"v": {"const": None}}),
        "enum_root": {"enum": ["one", "two"]},
        "enum_not": obj({"v": {"enum": ["a", "b", "c"], "not": {"const": "b"}}}),
        "enums_many_props": obj({f"e{i}": {"enum": [f"a{i}", f"b{i}"]} for i in range(40)}),
    }


def _maps() -> dict[str, Schema]:
    item = obj({"qty": INT, "note": S}, ["qty"])
    return {
        "map_of_ints": obj({"counts": {"type": "object", "additionalProperties": INT}}),
        "map_of_objects": obj({"items": {"type": "object", "additionalProperties": item}}),
        "map_free_form": obj({"meta": {"type": "object"}}),
        "map_mixed_named_extra": {
            "type": "object",
            "properties": {"id": INT},
            "required": ["id"],
            "additionalProperties": S,
        },
        "map_mixed_true": {
            "type": "object",
            "properties": {"id": INT},
            "additionalProperties": True,
        },
        "map_pattern_single": obj(
            {
                "env": {
                    "type": "object",
                    "patternProperties": {"^[A-Z_]+$": S},
                    "additionalProperties": False,
                }
            }
        ),
        "map_pattern_multi": obj(
            {
                "m": {
                    "type": "object",
                    "patternProperties": {"^s_": S, "^i_": INT},
                    "additionalProperties": False,
                }
            }
        ),
        "map_pattern_and_extra": obj(
            {"m": {"type": "object", "patternProperties": {"^n_": N}, "additionalProperties": B}}
        ),
        "map_property_names": obj(
            {
                "m": {
                    "type": "object",
                    "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 8},
                    "additionalProperties": INT,
                }
            }
        ),
        "map_bounds": obj(
            {
                "m": {
                    "type": "object",
                    "additionalProperties": S,
                    "minProperties": 1,
                    "maxProperties": 3,
                }
            }
        ),
        "map_root": {"type": "object", "additionalProperties": arr(INT)},
        "map_nested": obj(
            {
                "m": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "additionalProperties": B},
                }
            }
        ),
        "map_unevaluated": {"type": "object", "properties": {"a": INT}, "unevaluatedProperties": S},
        "map_nullable_values": obj(
            {"m": {"type": "object", "additionalProperties": {"type": ["integer", "null"]}}}
        ),
    }


def _all_of() -> dict[str, Schema]:
    base = obj({"id": INT}, ["id"])
    named = obj({"name": S}, ["name"])
    return {
        "allof_two_objects": {"allOf": [base, named]},
        "allof_with_refs": {
            "$defs": {"Base": base, "Named": named},
            "allOf": [{"$ref": "#/$defs/Base"}, {"$ref": "#/$defs/Named"}],
        },
        "allof_bounds": obj(
            {"v": {"allOf": [{"type": "number", "minimum": 0}, {"type": "integer", "maximum": 10}]}}
        ),
        "allof_conflicting_patterns": obj(
            {"v": {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "z$"}]}}
        ),
        "allof_nested": {"allOf": [{"allOf": [base, named]}, obj({"extra": B}, [])]},
        "allof_shared_property": {
            "allOf": [obj({"v": {"type": "string", "maxLength": 9}}), obj({"v": {"minLength": 1}})]
        },
        "allof_with_any_of": {"allOf": [base, {"anyOf": [obj({"a": S}), obj({"b": S})]}]},
        "allof_enum_intersection": obj(
            {"v": {"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}}
        ),
        "allof_single_ref_description": {
            "$defs": {"Inner": obj({"x": INT})},
            **obj(
                {
                    "inner": {
                        "allOf": [{"$ref": "#/$defs/Inner"}],
                        "description": "Pydantic v1 style",
                    }
                }
            ),
        },
        "allof_with_items": obj({"v": {"allOf": [arr(INT), {"maxItems": 3}]}}),
    }


def _arrays() -> dict[str, Schema]:
    return {
        "array_of_objects": obj({"people": arr(obj({"name": S, "age": INT}, ["name"]))}),
        "array_bounds": obj({"v": arr(S, minItems=2, maxItems=5)}),
        "array_min_one": obj({"v": arr(S, minItems=1)}),
        "array_unique": obj({"v": arr(INT, uniqueItems=True)}),
        "array_contains": obj({"v": arr(INT, contains={"const": 7})}),
        "array_untyped_items": obj({"v": {"type": "array"}}),
        "array_of_nullable": obj({"v": arr({"type": ["string", "null"]})}),
        "array_of_maps": obj({"v": arr({"type": "object", "additionalProperties": N})}),
        "array_root": arr(obj({"x": INT})),
        "array_root_scalars": arr(S, maxItems=10),
    }


def _tuples() -> dict[str, Schema]:
    return {
        "tuple_fixed": obj(
            {"point": {"type": "array", "prefixItems": [N, N], "minItems": 2, "maxItems": 2}}
        ),
        "tuple_with_rest": obj(
            {"row": {"type": "array", "prefixItems": [S, INT], "items": B, "minItems": 2}}
        ),
        "tuple_optional_tail": obj(
            {
                "t": {
                    "type": "array",
                    "prefixItems": [S, INT, {"type": ["boolean", "null"]}],
                    "items": False,
                }
            }
        ),
        "tuple_draft7": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            **obj(
                {"t": {"type": "array", "items": [S, INT], "additionalItems": False, "minItems": 1}}
            ),
        },
        "tuple_open": obj({"t": {"type": "array", "prefixItems": [INT], "minItems": 1}}),
        "tuple_root": {
            "type": "array",
            "prefixItems": [S, obj({"x": INT})],
            "minItems": 2,
            "maxItems": 2,
        },
    }


def _conditionals() -> dict[str, Schema]:
    return {
        "cond_not_null": obj({"v": {"type": ["string", "integer"], "not": {"type": "integer"}}}),
        "cond_not_enum": obj({"v": {"type": "string", "not": {"enum": ["forbidden"]}}}),
        "cond_if_then_else": {
            **obj({"country": {"enum": ["US", "NL"]}, "postal": S}),
            "if": {"properties": {"country": {"const": "US"}}},
            "then": {"properties": {"postal": {"pattern": "^[0-9]{5}$"}}},
            "else": {"properties": {"postal": {"pattern": "^[0-9]{4}[A-Z]{2}$"}}},
        },
        "cond_dependent_required": {
            **obj({"card": S, "billing": S}, []),
            "dependentRequired": {"card": ["billing"]},
        },
        "cond_dependent_schemas": {
            **obj({"a": INT, "b": INT}, []),
            "dependentSchemas": {"a": {"properties": {"b": {"minimum": 1}}}},
        },
        "cond_min_max_properties": {**obj({"a": INT, "b": INT, "c": INT}, []), "minProperties": 1},
        "cond_examples": obj(
            {"v": {"type": "string", "examples": ["hello"], "$comment": "internal"}}
        ),
        "cond_read_only": obj({"id": {"type": "integer", "readOnly": True, "deprecated": True}}),
    }


def _roots() -> dict[str, Schema]:
    return {
        "root_string": {"type": "string", "maxLength": 50},
        "root_integer": {"type": "integer", "minimum": 1},
        "root_boolean": B,
        "root_nullable": {"type": ["number", "null"]},
        "root_free": {},
        "root_true": True,  # type: ignore[dict-item]
        "root_draft7": {"$schema": "http://json-schema.org/draft-07/schema#", **obj({"a": S})},
        "root_nullable_object": {
            "type": ["object", "null"],
            "properties": {"a": INT},
            "required": ["a"],
        },
    }


def _limits() -> dict[str, Schema]:
    many = {f"p{i:04d}": INT for i in range(5001)}
    long_names = {("n" * 1000) + f"{i:03d}": B for i in range(125)}
    optional = {f"o{i}": S for i in range(30)}
    unions = {f"u{i}": {"type": ["string", "null"]} for i in range(20)}
    return {
        "limit_5001_properties": obj(many),
        "limit_120k_names": obj(long_names),
        "limit_30_optional": obj(optional, []),
        "limit_20_unions": obj(unions),
    }


# -- Pydantic, dataclasses, TypedDict -----------------------------------------


class Color(enum.StrEnum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    street: str
    city: str
    zip: str | None = None


class Person(BaseModel):
    """A person."""

    name: str = Field(min_length=1, description="Full name")
    age: int = Field(ge=0, le=150)
    email: str | None = Field(default=None, pattern=r"^[^@]+@[^@]+$")
    address: Address | None = None
    tags: list[str] = []


class Item(BaseModel):
    sku: str
    qty: int = Field(gt=0)
    price: Decimal


class Order(BaseModel):
    id: uuid.UUID
    created: dt.datetime
    due: dt.date | None = None
    items: list[Item]
    color: Color = Color.RED
    level: Level


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


class Link(BaseModel):
    label: str
    next: Link | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    breed: str


class Owner(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    pets: list[Cat | Dog] = []


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    known: int


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: int | str | list[int]
    pair: tuple[int, str]
    many: tuple[float, ...] = ()
    scores: dict[str, float] = {}
    stock: dict[str, Item] = {}


class Settings(BaseModel):
    mode: Literal["a", "b", 3]
    unique: set[str] = set()
    anything: Any = None
    optional_any: Any | None = None
    timeout: float | None = 1.5
    nested: dict[str, list[int] | None] = {}


class Report(BaseModel):
    title: str
    sections: list[Section]


class Section(BaseModel):
    heading: str
    body: str | None = None
    subsections: list[Section] = []


class Wide(BaseModel):
    a0: str | None = None
    a1: int | None = None
    a2: float | None = None
    a3: bool | None = None
    a4: list[str] | None = None
    a5: dict[str, int] | None = None
    a6: Address | None = None
    a7: Color | None = None


@dataclasses.dataclass
class Point:
    x: float
    y: float
    label: str = "origin"


class Movie(TypedDict):
    title: str
    year: int
    rating: NotRequired[float]


class Partial(TypedDict, total=False):
    a: int
    b: list[str]


def _pydantic() -> dict[str, Schema]:
    models: list[type[BaseModel]] = [
        Address, Person, Item, Order, Tree, Link, Owner, Loose, Strict, Settings, Report, Wide,
    ]  # fmt: skip
    out = {f"pydantic_{m.__name__.lower()}": m.model_json_schema() for m in models}
    out["pydantic_serialization_order"] = Order.model_json_schema(mode="serialization")
    adapters: dict[str, Any] = {
        "dataclass_point": Point,
        "typeddict_movie": Movie,
        "typeddict_partial": Partial,
        "adapter_list_of_points": list[Point],
        "adapter_union_root": int | Movie,
        "adapter_dict_root": dict[str, Movie],
    }
    out.update({k: TypeAdapter(v).json_schema() for k, v in adapters.items()})
    return out


# -- seeded random family --------------------------------------------------------


def _random_schema(rng: random.Random, depth: int) -> Schema:
    leaves = [
        lambda: dict(S),
        lambda: {"type": "integer", "minimum": rng.randint(-5, 5)},
        lambda: {"type": "number", "maximum": 100},
        lambda: dict(B),
        lambda: {"enum": rng.sample(["x", "y", "z", "w"], 2)},
        lambda: {"type": "string", "format": rng.choice(["date", "email", "uuid", "uri"])},
        lambda: {"type": ["integer", "null"]},
    ]
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(leaves)()
    pick = rng.randrange(6)
    if pick == 0:
        props = {f"k{i}": _random_schema(rng, depth - 1) for i in range(rng.randint(1, 4))}
        return obj(props, [k for k in props if rng.random() < 0.6])
    if pick == 1:
        return arr(
            _random_schema(rng, depth - 1), **({"minItems": 1} if rng.random() < 0.3 else {})
        )
    if pick == 2:
        return {"anyOf": [_random_schema(rng, depth - 1) for _ in range(rng.randint(2, 3))]}
    if pick == 3:
        return {"type": "object", "additionalProperties": _random_schema(rng, depth - 1)}
    if pick == 4:
        return {"anyOf": [_random_schema(rng, depth - 1), {"type": "null"}], "default": None}
    return {
        "type": "array",
        "prefixItems": [_random_schema(rng, depth - 1) for _ in range(2)],
        "items": False,
    }


def _random_family(count: int = 60) -> dict[str, Schema]:
    rng = random.Random(20240601)
    return {f"random_{i:02d}": _random_schema(rng, 4) for i in range(count)}


def _open() -> dict[str, Schema]:
    """Objects that name properties and admit others (nothing said, or a schema)."""
    return {
        "open_flat": obj({"id": INT, "name": S}, ["id"]),
        "open_nested": obj({"meta": obj({"source": S}, []), "n": N}, ["meta"]),
        "open_typed_extra": obj({"id": INT}, ["id"], additionalProperties={"type": "integer"}),
        "open_in_array": arr(obj({"sku": S}, ["sku"])),
        "open_optional_nullable": obj({"note": {"type": ["string", "null"]}}, []),
    }


def build_corpus() -> list[tuple[str, Schema]]:
    """Return every corpus schema as `(name, schema)`, in a stable order."""
    families = [
        _flat, _nested, _recursive, _unions, _optionals, _formats, _patterns, _enums,
        _maps, _all_of, _arrays, _tuples, _conditionals, _roots, _limits, _pydantic,
        _random_family, _open,
    ]  # fmt: skip
    out: dict[str, Schema] = {}
    for family in families:
        out.update(family())
    return list(out.items())


EXPECTED_ERRORS: dict[str, frozenset[str]] = {
    "openai": frozenset(
        {
            "nested_depth_11",
            "nested_depth_12",
            "enum_1200",
            "enum_260_long",
            "limit_5001_properties",
            "limit_120k_names",
        }
    ),
}
"""Schemas truly beyond a dialect's limits (recursion is checked separately)."""
