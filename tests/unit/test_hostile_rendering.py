"""Hostile schemas in prompt rendering, union envelopes and dialect references.

A tenant's schema must cost time and memory in proportion to its size wherever the
package reads it: written into a prompt, hoisted into the union envelope, or
rewritten for a provider. Where a reference cannot be followed exactly, the answer
is a typed error, never a schema that means something else.

Costs are counted in function calls, not seconds, so the bounds hold on a loaded
machine too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from langchain_structx import (
    PromptedStrategy,
    ProviderStrategy,
    with_structured_output,
)
from langchain_structx._request import plan as _plan
from langchain_structx._request import prompt as _prompt
from langchain_structx._request.envelope import envelope_schema
from langchain_structx._request.plan import build_plan
from langchain_structx._request.prompt import render_schema
from langchain_structx._schemas.normalise import normalize
from langchain_structx.dialects import Dialect, Transformed, transform
from langchain_structx.errors import DialectError, SchemaError
from langchain_structx.testing import ScriptedChatModel

DIALECTS: tuple[Dialect, ...] = ("openai", "anthropic", "gemini")

LINEAR = 15
"""Largest growth in calls accepted for ten times the input: linear is 10, quadratic 100."""


def calls_made(action: Callable[[], Any]) -> int:
    """Run `action` and count the Python and builtin function calls it makes."""
    count = 0

    def tally(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(tally)
    try:
        action()
    finally:
        sys.setprofile(previous)
    return count


def growth(run: Callable[[int], Any], size: int) -> float:
    """How many more calls `run(10 * size)` makes than `run(size)`."""
    return calls_made(lambda: run(10 * size)) / calls_made(lambda: run(size))


# -- prompt rendering ------------------------------------------------------------------


def chained(links: int, fanout: int) -> dict[str, Any]:
    """`d<i>` holds `fanout` properties, each of type `d<i-1>`; the root uses the last."""
    defs: dict[str, Any] = {"d0": {"type": "string"}}
    for i in range(1, links + 1):
        props = {key: {"$ref": f"#/$defs/d{i - 1}"} for key in "ab"[:fanout]}
        defs[f"d{i}"] = {"type": "object", "properties": props}
    return {
        "title": "Rec",
        "type": "object",
        "properties": {"x": {"$ref": f"#/$defs/d{links}"}},
        "$defs": defs,
    }


def names_used_and_defined(text: str) -> tuple[set[str], set[str]]:
    """The `d<i>` names written as types, and those written as named blocks."""
    used = set(re.findall(r": (d\d+)\b", text))
    defined = set(re.findall(r"^(d\d+) ", text, flags=re.MULTILINE))
    return used, defined


def test_a_long_chain_of_definitions_renders_without_recursion_error() -> None:
    schema = chained(3_000, 1)

    text = render_schema("Rec", schema)

    assert text.splitlines()[-1] == "}"
    assert "\nRec {\n" in text
    used, defined = names_used_and_defined(text)
    assert used <= defined  # every name written as a type is shown as a block
    assert text.count("string") == 1  # the chain's end is written once


def test_definitions_used_twice_at_every_level_are_written_once_by_name() -> None:
    links = 14  # writing each in place would repeat d0 2**14 times
    schema = chained(links, 2)

    text = render_schema("Rec", schema)

    for i in range(links):
        assert text.count(f"\nd{i} ") + text.startswith(f"d{i} ") == 1
    assert '"a": d13,' in text
    used, defined = names_used_and_defined(text)
    assert used <= defined
    assert len(text) < 40 * len(str(schema))


def test_rendering_cost_grows_linearly_with_a_doubling_chain() -> None:
    assert growth(lambda n: render_schema("Rec", chained(n, 2)), 20) < LINEAR


def test_a_schema_too_deep_to_render_is_a_schema_error() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        schema = {"type": "array", "items": schema}

    with pytest.raises(SchemaError, match="deeper than"):
        render_schema("Deep", schema)


def test_a_type_list_writes_an_object_once() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(12):
        schema = {"type": ["object", "null"], "properties": {"a": schema}}

    text = _prompt.render_type(schema)

    assert text.count('"a"') == 12
    assert text.endswith("} | null")


def test_a_prompted_run_with_a_long_chain_sends_its_shape() -> None:
    model = ScriptedChatModel(responses=['{"x": {"a": {}}}'])
    runnable = with_structured_output(model, PromptedStrategy(chained(600, 1), max_retries=0))

    runnable.invoke("go")

    system = model.calls[0].messages[0]
    assert system.type == "system"
    assert "Rec {" in str(system.content)


def test_the_prompt_is_rendered_once_per_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    original = _prompt.instructions

    def counting(*args: Any, **kwargs: Any) -> str:
        rendered.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_prompt, "instructions", counting)
    plan = build_plan(PromptedStrategy(chained(3, 2)))

    first = plan.call_spec("prompted").system_suffix
    again = plan.call_spec("prompted", dialect="openai").system_suffix

    assert first == again == plan.instructions()
    assert len(rendered) == 1


# -- union envelope ----------------------------------------------------------------------


def reversed_chain(title: str, base: dict[str, Any], links: int) -> dict[str, Any]:
    """Definitions `a<links>` -> ... -> `a0` (= `base`), listed from the top down.

    Each link is an object whose property `v` holds the next one.
    """
    defs: dict[str, Any] = {
        f"a{i}": {"type": "object", "properties": {"v": {"$ref": f"#/$defs/a{i - 1}"}}}
        for i in range(links, 0, -1)
    }
    defs["a0"] = base
    return {
        "title": title,
        "type": "object",
        "properties": {"x": {"$ref": f"#/$defs/a{links}"}},
        "required": ["x"],
        "$defs": defs,
    }


def clashing_union(links: int) -> list[dict[str, Any]]:
    return [
        reversed_chain("A", {"type": "string"}, links),
        reversed_chain("B", {"type": "integer"}, links),
    ]


def test_clashing_definition_names_are_renamed_in_linear_time() -> None:
    small, large = (normalize(clashing_union(links)).variants for links in (50, 500))

    calls = calls_made(lambda: envelope_schema(large)) / calls_made(lambda: envelope_schema(small))

    assert calls < LINEAR


def test_renamed_definitions_keep_each_variant_its_meaning() -> None:
    envelope = envelope_schema(normalize(clashing_union(5)).variants)
    validator = jsonschema.Draft202012Validator(envelope)

    def answer(kind: str, leaf: Any) -> dict[str, Any]:
        value: Any = leaf
        for _ in range(5):
            value = {"v": value}
        return {"kind": kind, "data": {"x": value}}

    assert validator.is_valid(answer("A", "s"))
    assert validator.is_valid(answer("B", 1))
    assert not validator.is_valid(answer("A", 1))
    assert not validator.is_valid(answer("B", "s"))
    assert sorted(n for n in envelope["$defs"] if not n.startswith("B__")) == sorted(
        f"a{i}" for i in range(6)
    )


def test_identical_definitions_are_shared_not_renamed() -> None:
    same = {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}}
    union = [
        {"title": "A", **same, "$defs": {"N": {"type": "integer"}}},
        {"title": "B", **same, "$defs": {"N": {"type": "integer"}}},
    ]

    assert list(envelope_schema(normalize(union).variants)["$defs"]) == ["N"]


def test_a_variant_referring_to_its_root_keeps_that_meaning() -> None:
    tree = {
        "title": "Tree",
        "type": "object",
        "properties": {"kid": {"$ref": "#"}, "n": {"type": "integer"}},
        "additionalProperties": False,
    }
    envelope = envelope_schema(normalize([tree, {"title": "Leaf", "type": "string"}]).variants)
    validator = jsonschema.Draft202012Validator(envelope)

    assert validator.is_valid({"kind": "Tree", "data": {"kid": {"kid": {"n": 1}}}})
    assert not validator.is_valid({"kind": "Tree", "data": {"kid": {"kind": "Leaf", "data": "s"}}})


def test_the_envelope_is_built_once_per_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = _plan.envelope_schema

    def counting(variants: Any) -> dict[str, Any]:
        built.append(1)
        return original(variants)

    monkeypatch.setattr(_plan, "envelope_schema", counting)
    plan = build_plan(ProviderStrategy(clashing_union(3)))

    plan.call_spec("provider")
    plan.call_spec("provider", dialect="openai")
    assert plan.output_schema() is plan.output_schema()
    assert len(built) == 1


# -- references in dialects ------------------------------------------------------------


def with_anchor(target: dict[str, Any], ref: str = "#num") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"a": {"$ref": ref}},
        "required": ["a"],
        "additionalProperties": False,
        "$defs": {"n": target},
    }


def agrees(schema: dict[str, Any], result: Transformed, value: Any) -> bool:
    """Whether `value` passes the original exactly when its encoding passes the rewrite."""
    original = jsonschema.Draft202012Validator(schema).is_valid(value)
    rewritten = jsonschema.Draft202012Validator(result.schema).is_valid(result.encode(value))
    return original == rewritten


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_anchor_reference_resolves_to_its_anchor(dialect: Dialect) -> None:
    schema = with_anchor({"$anchor": "num", "type": "integer"})

    result = transform(schema, dialect)

    for value in ({"a": 5}, {"a": "five"}, {"a": {"a": 5}}):
        assert agrees(schema, result, value)
    assert result.restore(result.encode({"a": 5})) == {"a": 5}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_anchor_inside_properties_resolves_too(dialect: Dialect) -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"$anchor": "ident", "type": "string"},
            "other": {"$ref": "#ident"},
        },
        "required": ["id", "other"],
        "additionalProperties": False,
    }

    result = transform(schema, dialect)

    for value in ({"id": "x", "other": "y"}, {"id": "x", "other": 2}):
        assert agrees(schema, result, value)


@pytest.mark.parametrize(
    ("target", "ref", "reason"),
    [
        ({"$anchor": "num", "type": "integer"}, "#missing", "names no $anchor"),
        ({"$dynamicAnchor": "num", "type": "integer"}, "#num", "$dynamicAnchor"),
        (
            {"$id": "https://example.com/n", "$anchor": "num", "type": "integer"},
            "#num",
            "names no $anchor",
        ),
        (
            {"anyOf": [{"$anchor": "num"}, {"$anchor": "num", "type": "integer"}]},
            "#num",
            "declared twice",
        ),
    ],
)
def test_an_anchor_that_does_not_resolve_exactly_is_refused(
    target: dict[str, Any], ref: str, reason: str
) -> None:
    with pytest.raises(DialectError) as caught:
        transform(with_anchor(target, ref), "openai")
    assert reason in caught.value.reason


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_reference_inside_a_subschema_with_its_own_id_is_refused(dialect: Dialect) -> None:
    inner = {"$id": "https://example.com/inner", "$ref": "#/$defs/B"}
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [inner, {"type": "integer"}]}},
        "$defs": {"B": {"type": "string"}},
    }

    with pytest.raises(DialectError) as caught:
        transform(schema, dialect)
    assert "its own $id" in caught.value.reason


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_definition_with_its_own_id_is_refused_when_it_refers(dialect: Dialect) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Box"}},
        "$defs": {
            "Box": {"$id": "https://example.com/box", "items": {"$ref": "#/$defs/B"}},
            "B": {"type": "string"},
        },
    }

    with pytest.raises(DialectError, match=r"its own \$id"):
        transform(schema, dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_id_on_the_root_keeps_local_references(dialect: Dialect) -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/B"}},
        "required": ["a"],
        "additionalProperties": False,
        "$defs": {"B": {"type": "string"}},
    }

    result = transform(schema, dialect)

    for value in ({"a": "s"}, {"a": 1}):
        assert agrees(schema, result, value)


def test_a_boolean_definition_renders_as_any_value_or_none() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Any"}, "b": {"$ref": "#/$defs/Never"}},
        "$defs": {"Any": True, "Never": False},
    }
    text = render_schema("Box", schema)
    # `false` allows no value: the property can only be left out, so it is not offered.
    assert text.startswith("Box {") and '"a": any' in text and '"b"' not in text
