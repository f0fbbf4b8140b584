"""The union envelope keeps what each variant's references mean.

Inside the envelope a variant is no longer a document of its own, so its `$id`,
its anchors and its references to its own root must not resolve against the
envelope. Each test checks the envelope with jsonschema itself, and the strict
dialects where they apply.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from langchain_structx._request.plan import build_plan
from langchain_structx.strategies import ProviderStrategy

PERSON = {
    "$id": "https://example.com/person.schema.json",
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Person",
    "type": "object",
    "properties": {"name": {"$ref": "#/$defs/name"}},
    "required": ["name"],
    "$defs": {"name": {"type": "string"}},
}
PET = {
    "$id": "https://example.com/pet.schema.json",
    "title": "Pet",
    "type": "object",
    "properties": {"legs": {"$ref": "#/$defs/legs"}},
    "required": ["legs"],
    "$defs": {"legs": {"type": "integer"}},
}


def _envelope(*variants: dict[str, Any]) -> dict[str, Any]:
    return build_plan(ProviderStrategy(list(variants))).output_schema()


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(value)]


def test_variants_with_their_own_id_keep_their_references_inside_the_envelope() -> None:
    envelope = _envelope(PERSON, PET)

    assert _errors(envelope, {"kind": "Person", "data": {"name": "Ada"}}) == []
    assert _errors(envelope, {"kind": "Pet", "data": {"legs": 4}}) == []
    assert _errors(envelope, {"kind": "Person", "data": {"name": 3}}) != []
    assert _errors(envelope, {"kind": "Pet", "data": {"legs": "four"}}) != []


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
def test_variants_with_their_own_id_fit_the_strict_dialects(dialect: str) -> None:
    plan = build_plan(ProviderStrategy([PERSON, PET], strict=True))

    spec = plan.call_spec("provider", dialect=dialect)  # type: ignore[arg-type]

    assert spec.model_settings["response_format"]["type"] == "json_schema"


def test_two_variants_declaring_one_anchor_name_each_keep_their_own() -> None:
    def variant(title: str, field: str, kind: str) -> dict[str, Any]:
        return {
            "title": title,
            "type": "object",
            "properties": {field: {"$ref": "#item"}},
            "required": [field],
            "$defs": {"item": {"$anchor": "item", "type": kind}},
        }

    envelope = _envelope(variant("Words", "word", "string"), variant("Counts", "count", "integer"))

    assert _errors(envelope, {"kind": "Words", "data": {"word": "hi"}}) == []
    assert _errors(envelope, {"kind": "Counts", "data": {"count": 2}}) == []
    assert _errors(envelope, {"kind": "Counts", "data": {"count": "two"}}) != []
    assert _errors(envelope, {"kind": "Words", "data": {"word": 2}}) != []


def test_a_variant_that_refers_to_its_own_root_is_one_definition() -> None:
    tree = {
        "title": "Tree",
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
        "additionalProperties": False,
    }
    leaf = {"title": "Leaf", "type": "object", "properties": {"v": {"type": "string"}}}

    envelope = _envelope(tree, leaf)

    body = envelope["anyOf"][0]["properties"]["data"]
    assert set(body) == {"$ref"}
    deep = {"children": [{"children": [{"children": []}]}]}
    assert _errors(envelope, {"kind": "Tree", "data": deep}) == []
    wrong = {"children": [{"children": [{"children": [], "extra": 1}]}]}
    assert _errors(envelope, {"kind": "Tree", "data": wrong}) != []


def test_a_reference_inside_a_nested_resource_keeps_the_variant_whole() -> None:
    nested = {
        "title": "Boxed",
        "type": "object",
        "properties": {
            "box": {
                "$id": "https://example.com/box.json",
                "type": "object",
                "properties": {"size": {"$ref": "#/$defs/size"}},
                "$defs": {"size": {"type": "integer"}},
            }
        },
    }
    envelope = _envelope(nested, PET)

    assert _errors(envelope, {"kind": "Boxed", "data": {"box": {"size": 3}}}) == []
    assert _errors(envelope, {"kind": "Boxed", "data": {"box": {"size": "big"}}}) != []
    assert _errors(envelope, {"kind": "Pet", "data": {"legs": 4}}) == []
