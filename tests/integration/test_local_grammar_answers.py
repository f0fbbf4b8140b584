"""The embedded model's grammar leaves room for an answer the schema allows.

llama.cpp's converter reads some keywords its own way (it closes objects, drops
`patternProperties`, writes tuples in full, puts a pattern's characters into the
JSON string as they are). For each schema here the grammar used to refuse every
valid answer, so the model could never succeed. Each case asks llama.cpp itself,
with the default model's vocabulary, whether the grammar lets a valid answer be
written token by token; the answer is checked against the schema first, so the
case cannot pass on an answer the schema refuses.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

import pytest

from langchain_structx._validation.validate import JSONSchemaValidator
from langchain_structx.local._grammar import schema_to_gbnf

pytestmark = pytest.mark.integration

llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python")


class Vocabulary:
    """The default model's tokenizer, and a grammar sampler to walk a text through."""

    def __init__(self, weights: Path) -> None:
        self.llama = llama_cpp.Llama(model_path=str(weights), vocab_only=True, verbose=False)

    def accepts(self, grammar: str, text: str) -> bool:
        """Whether the grammar lets `text` be written, token by token, and then end."""
        vocab = self.llama._model.vocab
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        assert sampler, "llama.cpp could not parse the grammar"
        candidate = (llama_cpp.llama_token_data * 1)()

        def allowed(token: int) -> bool:
            candidate[0].id, candidate[0].logit, candidate[0].p = token, 0.0, 0.0
            array = llama_cpp.llama_token_data_array(
                data=candidate, size=1, selected=-1, sorted=False
            )
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
            return bool(candidate[0].logit != float("-inf"))

        try:
            for token in self.llama.tokenize(text.encode(), add_bos=False, special=False):
                if not allowed(token):
                    return False
                llama_cpp.llama_sampler_accept(sampler, token)
            return allowed(self.llama.token_eos())
        finally:
            llama_cpp.llama_sampler_free(sampler)


@pytest.fixture(scope="module")
def vocabulary(default_weights: Path) -> Vocabulary:
    return Vocabulary(default_weights)


def _object(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", **keywords}


A_STRING = {"a": {"type": "string"}}

# (schema, an answer the schema allows, an answer the grammar must still refuse)
CASES = {
    "required key it does not list": (
        _object(properties=A_STRING, required=["a", "b"]),
        {"a": "x", "b": 1},
        {"a": 1, "b": 1},
    ),
    "more keys wanted than it lists": (
        _object(properties=A_STRING, minProperties=2),
        {"a": "x", "b": 1},
        [],
    ),
    "keys allowed by patternProperties": (
        _object(patternProperties={"^x_": {"type": "integer"}}, additionalProperties=False),
        {"x_a": 1},
        [],
    ),
    "a property named like the converter's marker": (
        _object(
            properties={"*": {"type": "string"}},
            required=["*"],
            additionalProperties={"type": "integer"},
        ),
        {"*": "x"},
        [],
    ),
    "extra keys of any value": (
        _object(properties=A_STRING, required=["a"], additionalProperties=True),
        {"a": "x", "b": 1},
        {"a": 1},
    ),
    "many optional properties": (
        _object(properties={f"p{i}": {"type": "integer"} for i in range(200)}, required=["p0"]),
        {"p0": 1, "p7": 7},
        {"p0": "one"},
    ),
    "a tuple longer than maxItems": (
        {"type": "array", "prefixItems": [{"type": "string"}] * 2, "maxItems": 1},
        ["a"],
        {},
    ),
    "a pattern anchored on one branch each": (
        {"type": "string", "pattern": "^a|b$", "minLength": 3},
        "abc",
        7,
    ),
    "a pattern with a quote": ({"type": "string", "pattern": '^a"b$'}, 'a"b', 7),
    "a pattern with a backslash": ({"type": "string", "pattern": r"^a\\b$"}, "a\\b", 7),
    "a pattern with a tab": ({"type": "string", "pattern": r"^a\tb$"}, "a\tb", 7),
    "a brace that is no count": ({"type": "string", "pattern": "^a{,2}$"}, "a{,2}", 7),
    "a part that names no shape": (
        _object(properties={"a": {}, "b": {"title": "B"}}, required=["a", "b"]),
        {"a": 1, "b": "two"},
        {"a": 1},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_grammar_admits_an_answer_the_schema_allows(vocabulary: Vocabulary, case: str) -> None:
    schema, valid, refused = CASES[case]
    validator = JSONSchemaValidator(schema)
    assert not validator.issues(valid), "the case's answer must be one the schema allows"
    assert validator.issues(refused), "the case's other answer must be one the schema refuses"
    grammar = schema_to_gbnf(schema)
    assert vocabulary.accepts(grammar, json.dumps(valid))
    assert not vocabulary.accepts(grammar, json.dumps(refused))


# (schema, an answer the schema allows, an answer with a part the schema forbids):
# the converter crashed on `false` and wrote an empty rule, which llama.cpp
# refuses, for the others; now the part is left out of the grammar.
NOTHING_SATISFIES = {
    "an optional property that is false": (
        _object(properties={**A_STRING, "b": False}, required=["a"]),
        {"a": "x"},
        {"a": "x", "b": 1},
    ),
    "an optional property with an empty enum": (
        _object(properties={**A_STRING, "b": {"enum": []}}),
        {"a": "x"},
        {"a": "x", "b": "y"},
    ),
    "a branch that is false": (
        _object(properties={"a": {"anyOf": [False, {"type": "integer"}]}}, required=["a"]),
        {"a": 1},
        {"a": "x"},
    ),
    "extra keys with an empty enum": (
        _object(properties=A_STRING, additionalProperties={"enum": []}),
        {"a": "x"},
        {"a": "x", "b": 1},
    ),
    "items that are false": ({"type": "array", "items": False}, [], [1]),
    "a tuple closed by its items": (
        {"type": "array", "prefixItems": [{"type": "string"}], "items": {"enum": []}},
        ["a"],
        ["a", "b"],
    ),
}


@pytest.mark.parametrize("case", list(NOTHING_SATISFIES))
def test_a_part_nothing_satisfies_is_left_out_of_the_grammar(
    vocabulary: Vocabulary, case: str
) -> None:
    schema, valid, forbidden = NOTHING_SATISFIES[case]
    validator = JSONSchemaValidator(schema)
    assert not validator.issues(valid), "the case's answer must be one the schema allows"
    assert validator.issues(forbidden), "the case's other answer must be one the schema refuses"
    grammar = schema_to_gbnf(schema)
    assert vocabulary.accepts(grammar, json.dumps(valid))
    assert not vocabulary.accepts(grammar, json.dumps(forbidden))


# (pattern, a value it allows, written as JSON) for every form of "any character"
WILDCARDS = {
    "a dot": ("^a.+$", 'ab"c\\d'),
    "padding around an unanchored pattern": ("b", 'a"b\\c'),
    "a class that leaves characters out": ("^[^x]+$", "abc"),
    "not a space": (r"^\S+$", "abc"),
    "not a digit": (r"^\D+$", "abc"),
    "a space": (r"^a\sb$", "a\tb"),
}


@pytest.mark.parametrize("case", list(WILDCARDS))
def test_any_character_in_a_pattern_is_one_a_json_string_holds(
    vocabulary: Vocabulary, case: str
) -> None:
    pattern, value = WILDCARDS[case]
    schema = {"type": "string", "pattern": pattern}
    assert not JSONSchemaValidator(schema).issues(value)
    grammar = schema_to_gbnf(schema)

    assert vocabulary.accepts(grammar, json.dumps(value))
    # A raw quote inside the string, or a raw tab: the text would be no JSON.
    assert not vocabulary.accepts(grammar, '"ab"c"')
    assert not vocabulary.accepts(grammar, '"a\tb"')
