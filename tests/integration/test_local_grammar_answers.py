"""The embedded model's decoder leaves room for every answer the schema allows.

llama.cpp's GBNF converter read some keywords its own way (it closed objects,
dropped `patternProperties`, wrote tuples in full, put a pattern's characters into
the JSON string as they were), so for each schema here its grammar once refused
every valid answer. The decoder is llguidance now; each case asks it, with the
default model's vocabulary, whether a valid answer can be written token by token
(as compact JSON, the layout it holds the model to), and that an answer the
schema refuses cannot. Each answer is checked against the schema first, so a case
cannot pass on an answer the schema refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langchain_structx._validation.validate import JSONSchemaValidator
from langchain_structx.local._guidance import compiled, matcher_for
from langchain_structx.local._vocab import tokenizer_for

pytestmark = pytest.mark.integration

llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python")


class Vocabulary:
    """The default model's tokenizer, and the decoder to walk a text through."""

    def __init__(self, weights: Path) -> None:
        self.llama = llama_cpp.Llama(model_path=str(weights), vocab_only=True, verbose=False)
        self.tokenizer = tokenizer_for(self.llama)

    def accepts(self, schema: dict[str, Any], text: str) -> bool:
        """Whether the decoder lets `text` be written, token by token, and then end."""
        matcher = matcher_for(self.tokenizer, compiled(schema))
        tokens = self.llama.tokenize(text.encode(), add_bos=False, special=False)
        return bool(matcher.consume_tokens(tokens) and matcher.is_accepting())


def _json(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


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
    "a part that names no shape": (
        _object(properties={"a": {}, "b": {"title": "B"}}, required=["a", "b"]),
        {"a": 1, "b": "two"},
        {"a": 1},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_decoder_admits_an_answer_the_schema_allows(vocabulary: Vocabulary, case: str) -> None:
    schema, valid, refused = CASES[case]
    validator = JSONSchemaValidator(schema)
    assert not validator.issues(valid), "the case's answer must be one the schema allows"
    assert validator.issues(refused), "the case's other answer must be one the schema refuses"
    assert vocabulary.accepts(schema, _json(valid))
    assert not vocabulary.accepts(schema, _json(refused))


def test_a_pattern_the_decoder_reads_otherwise_is_refused_not_narrowed() -> None:
    # JSON Schema reads `a{,2}` as the text "a{,2}"; llguidance's regex engine
    # refuses it, so the schema goes to the prompted route instead.
    from langchain_structx.local import GrammarError

    with pytest.raises(GrammarError, match=r"\^a\{,2\}\$"):
        compiled({"type": "string", "pattern": "^a{,2}$"})


# (schema, an answer the schema allows, an answer with a part the schema forbids):
# llama.cpp's converter crashed on `false` and wrote an empty rule for the others.
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
def test_a_part_nothing_satisfies_is_never_written(vocabulary: Vocabulary, case: str) -> None:
    schema, valid, forbidden = NOTHING_SATISFIES[case]
    validator = JSONSchemaValidator(schema)
    assert not validator.issues(valid), "the case's answer must be one the schema allows"
    assert validator.issues(forbidden), "the case's other answer must be one the schema refuses"
    assert vocabulary.accepts(schema, _json(valid))
    assert not vocabulary.accepts(schema, _json(forbidden))


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
    assert vocabulary.accepts(schema, _json(value))
    # A raw quote inside the string, or a raw tab: the text would be no JSON.
    assert not vocabulary.accepts(schema, '"ab"c"')
    assert not vocabulary.accepts(schema, '"a\tb"')
