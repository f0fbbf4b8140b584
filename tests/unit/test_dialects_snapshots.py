"""Snapshots: the exact provider schema for representative inputs, per dialect."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from langchain_structx.dialects import transform
from langchain_structx.errors import DialectError

CASES: dict[str, Any] = {
    "person": {
        "type": "object",
        "title": "Person",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "age": {"type": "integer", "minimum": 0},
            "email": {
                "anyOf": [{"type": "string", "format": "email"}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["name"],
    },
    "list_root": {"type": "array", "items": {"type": "string", "format": "uri"}, "maxItems": 3},
    "map_and_tuple": {
        "type": "object",
        "properties": {
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
            "point": {
                "type": "array",
                "prefixItems": [{"type": "number"}, {"type": "number"}],
                "minItems": 2,
                "maxItems": 2,
            },
        },
        "required": ["scores", "point"],
    },
    "tree": {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["v", "kids"],
            }
        },
        "$ref": "#/$defs/Node",
    },
    "tagged_union": {
        "type": "object",
        "properties": {
            "pet": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "cat"}},
                        "required": ["kind"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "dog"}, "bark": {"type": "boolean"}},
                        "required": ["kind", "bark"],
                    },
                ]
            }
        },
        "required": ["pet"],
    },
    "untagged_mixed_union": {
        "type": "object",
        "properties": {
            "v": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"type": "integer"}},
                    {"type": "array", "items": {"type": "integer"}},
                    {"enum": [1, "one"]},
                ]
            }
        },
        "required": ["v"],
    },
}

EXPECTED: dict[tuple[str, str], Any] = {
    ("person", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "(minLength: 1)"},
                "age": {"type": ["integer", "null"], "minimum": 0},
                "email": {
                    # A JSON schema does not apply its default: absent and null differ.
                    "description": '(null: omitted; {"explicit_null": true}: null)',
                    "anyOf": [
                        {"type": ["string", "null"], "format": "email"},
                        {
                            "type": "object",
                            "properties": {"explicit_null": {"type": "boolean", "const": True}},
                            "required": ["explicit_null"],
                            "additionalProperties": False,
                        },
                    ],
                },
            },
            "required": ["name", "age", "email"],
            "additionalProperties": False,
            "title": "Person",
        },
        "wrapped": False,
        "dropped": ("$.properties.name: minLength 1 (enforced by validation)",),
    },
    ("person", "anthropic"): {
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "(minLength: 1)"},
                "age": {"type": "integer", "description": "(minimum: 0)"},
                # A single type per node: ChatAnthropic's SDK transform takes no type list.
                "email": {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]},
            },
            "required": ["name"],
            "additionalProperties": False,
            "title": "Person",
        },
        "wrapped": False,
        "dropped": (
            "$.properties.name: minLength 1 (enforced by validation)",
            "$.properties.age: minimum 0 (enforced by validation)",
        ),
    },
    ("person", "gemini"): {
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "(minLength: 1)"},
                "age": {"type": "integer", "description": "(minimum: 0)"},
                "email": {
                    "type": ["string", "null"],
                    "description": '(format: "email")',
                },
            },
            "required": ["name"],
            "propertyOrdering": ["name", "age", "email"],
            "title": "Person",
        },
        "wrapped": False,
        "dropped": (
            "$.properties.name: minLength 1 (enforced by validation)",
            "$.properties.age: minimum 0 (enforced by validation)",
            '$.properties.email.anyOf[0]: format "email" (enforced by validation)',
        ),
    },
    ("list_root", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "value": {
                    "type": "array",
                    "items": {"type": "string", "description": '(format: "uri")'},
                    "maxItems": 3,
                }
            },
            "required": ["value"],
            "additionalProperties": False,
        },
        "wrapped": True,
        "dropped": ('$.items: format "uri" (enforced by validation)',),
    },
    ("list_root", "anthropic"): {
        "schema": {
            "type": "object",
            "properties": {
                "value": {
                    "type": "array",
                    "items": {"type": "string", "format": "uri"},
                    "description": "(maxItems: 3)",
                }
            },
            "required": ["value"],
            "additionalProperties": False,
        },
        "wrapped": True,
        "dropped": ("$: maxItems 3 (enforced by validation)",),
    },
    ("list_root", "gemini"): {
        "schema": {
            "type": "object",
            "properties": {
                "value": {
                    "type": "array",
                    "items": {"type": "string", "description": '(format: "uri")'},
                    "maxItems": 3,
                }
            },
            "required": ["value"],
            "propertyOrdering": ["value"],
        },
        "wrapped": True,
        "dropped": ('$.items: format "uri" (enforced by validation)',),
    },
    ("map_and_tuple", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                        "required": ["key", "value"],
                        "additionalProperties": False,
                    },
                },
                "point": {
                    "type": "object",
                    "properties": {"item_0": {"type": "number"}, "item_1": {"type": "number"}},
                    "required": ["item_0", "item_1"],
                    "additionalProperties": False,
                },
            },
            "required": ["scores", "point"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("map_and_tuple", "anthropic"): {
        "schema": {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                        "required": ["key", "value"],
                        "additionalProperties": False,
                    },
                },
                "point": {
                    "type": "object",
                    "properties": {"item_0": {"type": "number"}, "item_1": {"type": "number"}},
                    "required": ["item_0", "item_1"],
                    "additionalProperties": False,
                },
            },
            "required": ["scores", "point"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("map_and_tuple", "gemini"): {
        "schema": {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                        "required": ["key", "value"],
                        "propertyOrdering": ["key", "value"],
                    },
                },
                "point": {
                    "type": "object",
                    "properties": {"item_0": {"type": "number"}, "item_1": {"type": "number"}},
                    "required": ["item_0", "item_1"],
                    "propertyOrdering": ["item_0", "item_1"],
                },
            },
            "required": ["scores", "point"],
            "propertyOrdering": ["scores", "point"],
        },
        "wrapped": False,
        "dropped": (),
    },
    ("tree", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["v", "kids"],
            "additionalProperties": False,
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["v", "kids"],
                    "additionalProperties": False,
                }
            },
        },
        "wrapped": False,
        "dropped": (),
    },
    ("tree", "anthropic"): {"error": "recursive definition 'Node' is not supported"},
    # `kids` is required: the cycle has no optional property to stop at.
    ("tree", "gemini"): {
        "error": "recursive definition 'Node' recurs through required properties;"
        " Gemini allows cycles only through optional ones"
    },
    ("tagged_union", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "pet": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "const": "cat"}},
                            "required": ["kind"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "dog"},
                                "bark": {"type": "boolean"},
                            },
                            "required": ["kind", "bark"],
                            "additionalProperties": False,
                        },
                    ]
                }
            },
            "required": ["pet"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("tagged_union", "anthropic"): {
        "schema": {
            "type": "object",
            "properties": {
                "pet": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "const": "cat"}},
                            "required": ["kind"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "dog"},
                                "bark": {"type": "boolean"},
                            },
                            "required": ["kind", "bark"],
                            "additionalProperties": False,
                        },
                    ]
                }
            },
            "required": ["pet"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("tagged_union", "gemini"): {
        "schema": {
            "type": "object",
            "properties": {
                "pet": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "enum": ["cat"]}},
                            "required": ["kind"],
                            "propertyOrdering": ["kind"],
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "enum": ["dog"]},
                                "bark": {"type": "boolean"},
                            },
                            "required": ["kind", "bark"],
                            "propertyOrdering": ["kind", "bark"],
                        },
                    ]
                }
            },
            "required": ["pet"],
            "propertyOrdering": ["pet"],
        },
        "wrapped": False,
        "dropped": (),
    },
    ("untagged_mixed_union", "openai"): {
        "schema": {
            "type": "object",
            "properties": {
                "v": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "entries": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "key": {"type": "string"},
                                            "value": {"type": "integer"},
                                        },
                                        "required": ["key", "value"],
                                        "additionalProperties": False,
                                    },
                                }
                            },
                            "required": ["entries"],
                            "additionalProperties": False,
                        },
                        {"type": "array", "items": {"type": "integer"}},
                        {
                            "type": "string",
                            "enum": ["1", '"one"'],
                            "description": "(each option is written as JSON text)",
                        },
                    ]
                }
            },
            "required": ["v"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("untagged_mixed_union", "anthropic"): {
        "schema": {
            "type": "object",
            "properties": {
                "v": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "entries": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "key": {"type": "string"},
                                            "value": {"type": "integer"},
                                        },
                                        "required": ["key", "value"],
                                        "additionalProperties": False,
                                    },
                                }
                            },
                            "required": ["entries"],
                            "additionalProperties": False,
                        },
                        {"type": "array", "items": {"type": "integer"}},
                        {
                            "type": "string",
                            "enum": ["1", '"one"'],
                            "description": "(each option is written as JSON text)",
                        },
                    ]
                }
            },
            "required": ["v"],
            "additionalProperties": False,
        },
        "wrapped": False,
        "dropped": (),
    },
    ("untagged_mixed_union", "gemini"): {
        "schema": {
            "type": "object",
            "properties": {
                "v": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "entries": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "key": {"type": "string"},
                                            "value": {"type": "integer"},
                                        },
                                        "required": ["key", "value"],
                                        "propertyOrdering": ["key", "value"],
                                    },
                                }
                            },
                            "required": ["entries"],
                            "propertyOrdering": ["entries"],
                        },
                        {"type": "array", "items": {"type": "integer"}},
                        {
                            "type": "string",
                            "enum": ["1", '"one"'],
                            "description": "(each option is written as JSON text)",
                        },
                    ]
                }
            },
            "required": ["v"],
            "propertyOrdering": ["v"],
        },
        "wrapped": False,
        "dropped": (),
    },
}

SAMPLES: dict[str, list[Any]] = {
    "person": [
        {"name": "Ada"},
        {"name": "Ada", "age": 36, "email": None},
        {"name": "B", "email": "b@x.io"},
    ],
    "list_root": [[], ["https://example.com"]],
    "map_and_tuple": [
        {"scores": {}, "point": [0, 1.5]},
        {"scores": {"a": 1, "b": 2.5}, "point": [1, 2]},
    ],
    "tree": [{"v": 1, "kids": [{"v": 2, "kids": []}]}],
    "tagged_union": [{"pet": {"kind": "cat"}}, {"pet": {"kind": "dog", "bark": True}}],
    "untagged_mixed_union": [
        {"v": {}},
        {"v": []},
        {"v": {"a": 1}},
        {"v": [1]},
        {"v": 1},
        {"v": "one"},
    ],
}


@pytest.mark.parametrize(("case", "dialect"), list(EXPECTED))
def test_snapshot(case: str, dialect: Any) -> None:
    expected = EXPECTED[(case, dialect)]
    if "error" in expected:
        with pytest.raises(DialectError) as info:
            transform(CASES[case], dialect, carry_undeclared=False)
        assert info.value.reason == expected["error"]
        return
    result = transform(CASES[case], dialect, carry_undeclared=False)
    assert result.schema == expected["schema"]
    assert result.wrapped == expected["wrapped"]
    assert result.dropped == expected["dropped"]
    for value in SAMPLES[case]:
        encoded = result.encode(value)
        Draft202012Validator(result.schema).validate(encoded)
        assert result.restore(encoded) == value


OPEN = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": ["integer", "null"]}},
    "required": ["name"],
}


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
def test_open_object_carries_undeclared_keys(dialect: Any) -> None:
    # An object that omits additionalProperties is closed, as strict modes close it.
    assert "extra_properties" not in transform(OPEN, dialect).schema["properties"]
    result = transform(OPEN, dialect, carry_undeclared=True)
    entries = result.schema["properties"]["extra_properties"]
    assert entries["type"] == "array"
    assert set(entries["items"]["properties"]) == {"key", "value"}
    for value in ({"name": "a"}, {"name": "a", "age": None, "nick": ["x", {"y": 1}], "z": None}):
        encoded = result.encode(value)
        Draft202012Validator(result.schema).validate(encoded)
        assert result.restore(encoded) == value
    asked = transform({**OPEN, "additionalProperties": {"type": "integer"}}, dialect)
    assert "extra_properties" in asked.schema["properties"]
