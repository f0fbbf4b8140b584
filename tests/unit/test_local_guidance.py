"""The embedded model's constrained decoder: llguidance holding output to a JSON schema.

No weights are needed: a tokenizer of one token per byte (plus an end token) stands
in for the model's vocabulary, so each test can ask the matcher whether a text may
be written, or decode greedily from random scores through `SchemaMask`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from langchain_structx._models.rejections import is_lasting, is_model_wide, is_rejection
from langchain_structx.local import GrammarError, LocalChatModel, LocalModelError
from langchain_structx.local._grammar import MAX_PROPERTIES
from langchain_structx.local._guidance import SchemaMask, compiled, matcher_for

pytest.importorskip("llguidance", reason="the decoder ships with the local extra")

from byte_tokenizer import END, accepts, byte_tokenizer  # noqa: E402 - after the skip


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return byte_tokenizer()


def decode(tokenizer: Any, schema: dict[str, Any], seed: int) -> str:
    """Greedy decoding from random scores, as llama-cpp-python drives the mask."""
    rng = np.random.default_rng(seed)
    mask = SchemaMask(matcher_for(tokenizer, compiled(schema)), tokenizer.vocab_size)
    context, written = [7, 8, 9], bytearray()  # a prompt the mask must not read as output
    for _ in range(400):
        scores = rng.normal(size=tokenizer.vocab_size).astype(np.float32)
        assert mask(context, scores) is scores  # edited in place
        token = int(scores.argmax())
        if token == END:
            break
        context.append(token)
        written.append(token)
    return written.decode()


CONTACT = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 18, "maximum": 99},
        "day": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "role": {"enum": ["cto", "ceo"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 2},
    },
    "required": ["name", "age", "day", "role"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("seed", range(8))
def test_greedy_decoding_under_the_mask_writes_a_valid_compact_answer(
    tokenizer: Any, seed: int
) -> None:
    text = decode(tokenizer, CONTACT, seed)
    value = json.loads(text)
    jsonschema.validate(value, CONTACT)
    assert text == json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    assert list(value)[:2] == ["name", "age"], "properties come in the schema's order"


def test_what_the_schema_forbids_cannot_be_written(tokenizer: Any) -> None:
    good = '{"name": "Ada", "age": 36, "day": "1815-12-10", "role": "cto"}'
    assert accepts(tokenizer, CONTACT, good)
    for bad in (
        good.replace("36", "17"),  # minimum
        good.replace("1815-12-10", "10 Dec 1815"),  # pattern with \d
        good.replace('"cto"', '"cfo"'),  # enum
        good.replace("}", ', "x": 1}'),  # additionalProperties
        good.replace(', "role": "cto"', ""),  # required
        good.replace("}", ', "tags": ["a", "b", "c"]}'),  # maxItems
        good.replace('{"name"', '{ "name"'),  # whitespace
        good.replace(", ", ","),  # one space after each separator, no other layout
    ):
        assert not accepts(tokenizer, CONTACT, bad), bad


def test_plain_json_mode_may_lay_the_object_out_over_lines() -> None:
    model = LocalChatModel()
    fmt = {"type": "json_object"}
    _, request = model._request([HumanMessage("hi")], None, {"response_format": fmt})
    matcher = matcher_for(byte_tokenizer(), request["json_grammar"])
    assert matcher.consume_tokens(list(b'{\n  "a": 1,\n  "b": [true]\n}'))
    assert matcher.is_accepting()


def test_a_compiled_schema_is_kept_for_the_next_request() -> None:
    assert compiled(copy.deepcopy(CONTACT)) is compiled(copy.deepcopy(CONTACT))


REFUSALS = [
    pytest.param({"properties": {"a": {"$ref": "#/$defs/Nope"}}}, "/$defs/Nope", id="ref"),
    pytest.param(
        {"type": "object", "properties": {"b": False}, "required": ["b"]},
        "required property 'b'",
        id="required",
    ),
    pytest.param({"type": "string", "pattern": r"(a)\1"}, "backreferences", id="backreference"),
    pytest.param({"type": "string", "pattern": "^(?=a)a$"}, "look-around", id="lookahead"),
]


@pytest.mark.parametrize(("schema", "part"), REFUSALS)
def test_a_schema_the_decoder_refuses_is_a_typed_error_naming_the_part(
    schema: dict[str, Any], part: str
) -> None:
    with pytest.raises(GrammarError, match="refuses this JSON schema") as caught:
        compiled(schema)
    assert part in str(caught.value)
    assert isinstance(caught.value, LocalModelError)


def test_the_refusal_comes_before_any_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_weights(self: LocalChatModel) -> Any:
        raise AssertionError("the weights must not load for a refused schema")

    monkeypatch.setattr(LocalChatModel, "_loaded", no_weights)
    schema = {"type": "object", "properties": {"b": False}, "required": ["b"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    with pytest.raises(GrammarError, match="required property 'b'"):
        LocalChatModel().invoke("hi", response_format=fmt)


def test_a_refusal_sends_auto_to_the_next_route_for_that_schema_only() -> None:
    error = GrammarError("the constrained decoder refuses this JSON schema: a pattern")
    for route in ("provider", "tool"):
        assert is_rejection(error, route)
    assert is_lasting(error, frozenset(), strategy="provider")
    assert not is_model_wide(error, "provider")


def test_an_optional_property_nothing_satisfies_is_never_written(tokenizer: Any) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": False}}
    assert accepts(tokenizer, schema, '{"a": 1}')
    assert not accepts(tokenizer, schema, '{"a": 1, "b": 2}')


def test_an_object_with_too_many_properties_is_refused_naming_its_path() -> None:
    wide = {f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES + 1)}
    schema = {"type": "object", "properties": {"form": {"type": "object", "properties": wide}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    with pytest.raises(GrammarError, match=r"1,001 properties.* at \$\.properties\.form"):
        LocalChatModel()._request([HumanMessage("hi")], None, {"response_format": fmt})
    wide.popitem()
    LocalChatModel()._request([HumanMessage("hi")], None, {"response_format": fmt})


def _string(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", **keywords}}}


HOSTILE = [
    pytest.param(_string(maxLength=20_000), id="maxLength-20000"),
    pytest.param(_string(minLength=100_000), id="minLength-100000"),
    pytest.param({"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}, id="items"),
    pytest.param(_string(pattern="^[a-z]{1,20000}$"), id="pattern-range"),
    pytest.param(_string(pattern="^(a{300}){300}$"), id="pattern-nested"),
    pytest.param(_string(pattern="^(a?){300}$"), id="pattern-optional-run"),
    pytest.param(_string(pattern="^" + "(a|aa)" * 400 + "$"), id="pattern-look-alike"),
    pytest.param({"enum": [f"v{i}" for i in range(10_000)]}, id="enum-10000"),
]


@pytest.mark.parametrize("schema", HOSTILE)
def test_schemas_that_stalled_or_crashed_llama_cpp_compile_or_are_refused(
    tokenizer: Any, schema: dict[str, Any]
) -> None:
    try:
        matcher = matcher_for(tokenizer, compiled(schema))
    except GrammarError:
        return
    assert not matcher.is_error()


_KEYWORDS = st.sampled_from(
    ["type", "properties", "items", "anyOf", "oneOf", "allOf", "enum", "const", "required"]
    + ["pattern", "minLength", "maxLength", "minItems", "maxItems", "$ref", "$defs"]
    + ["additionalProperties", "prefixItems", "format", "not", "minimum"]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["string", "object", "array", "integer", "#/$defs/a", "#", "^a{9999}$"]),
    st.text(max_size=8),
)
_JSONISH = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_KEYWORDS | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYWORDS, _JSONISH, max_size=5))
def test_any_schema_compiles_or_is_a_typed_error(schema: dict[str, Any]) -> None:
    try:
        grammar = compiled(schema)
    except GrammarError:
        return
    assert isinstance(grammar, str) and grammar


def test_a_keyword_the_decoder_panics_on_is_still_a_typed_error() -> None:
    # llguidance 1.9 cuts its quote of an ill-typed value at byte 100, inside `é`.
    with pytest.raises(GrammarError, match="could not be read"):
        compiled({"maxLength": ["x" * 97 + "é" * 5]})


@pytest.mark.parametrize("extra", [0, 5])
def test_the_mask_matches_llguidances_own_numpy_helper(tokenizer: Any, extra: int) -> None:
    from llguidance.numpy import allocate_token_bitmask, apply_token_bitmask_inplace

    grammar = compiled(CONTACT)
    ours, theirs = matcher_for(tokenizer, grammar), matcher_for(tokenizer, grammar)
    for token in b'{"name":"A':
        theirs.consume_token(token)
    mask = SchemaMask(ours, tokenizer.vocab_size)
    written = [1, 2, *b'{"name":"A']  # two prompt tokens, then the output so far
    scores = np.random.default_rng(1).normal(size=tokenizer.vocab_size + extra)
    expected = scores.astype(np.float32)
    mask(written[:2], np.zeros(tokenizer.vocab_size + extra, dtype=np.float32))
    got = mask(written, expected.copy())
    bitmask = allocate_token_bitmask(1, tokenizer.vocab_size)
    from llguidance.numpy import fill_next_token_bitmask

    fill_next_token_bitmask(theirs, bitmask)
    apply_token_bitmask_inplace(expected, bitmask)
    assert np.array_equal(got, expected)
    assert 0 < np.isfinite(got).sum() < 256


def test_min_properties_is_left_to_validation(tokenizer: Any) -> None:
    listed = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    schema = {"type": "object", "properties": {"o": {"properties": listed, "minProperties": 2}}}
    before = copy.deepcopy(schema)
    assert accepts(tokenizer, schema, {"o": {"a": 1, "b": 2}})
    assert accepts(tokenizer, schema, {"o": {"a": 1}})  # too few: validation refuses it
    assert schema == before, "the caller's schema must not change"


def test_an_object_that_lists_its_properties_is_closed(tokenizer: Any) -> None:
    # A call without arguments: left open, a small model copied the schema into them.
    listed = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert accepts(tokenizer, listed, {"a": 1})
    assert not accepts(tokenizer, listed, {"a": 1, "type": "object"})
    assert not accepts(tokenizer, {"type": "object", "properties": {}}, {"type": "object"})
    opened = {**listed, "additionalProperties": True}
    assert accepts(tokenizer, opened, {"a": 1, "type": "object"})
    assert accepts(tokenizer, {"type": "object"}, {"type": "object"})  # lists none: a map


def test_objects_that_make_one_object_together_stay_open(tokenizer: Any) -> None:
    base = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    named = {"type": "object", "properties": {"name": {"type": "string"}}}
    both = {"id": 1, "name": "a"}
    assert accepts(tokenizer, {"allOf": [base, named]}, both)
    refs = [{"$ref": "#/$defs/B"}, {"$ref": "#/$defs/N"}]
    by_ref = {"allOf": refs, "$defs": {"B": base, "N": named}}
    assert accepts(tokenizer, by_ref, both)
    with_union = {"allOf": [base, {"anyOf": [named, {"properties": {"x": {"type": "integer"}}}]}]}
    assert accepts(tokenizer, with_union, both)
    mixed = {**base, "anyOf": [named]}
    assert accepts(tokenizer, mixed, both)
    # A union's variants, each an object of its own, are still closed.
    union = {"anyOf": [base, named]}
    assert not accepts(tokenizer, union, {"id": 1, "other": 2})
