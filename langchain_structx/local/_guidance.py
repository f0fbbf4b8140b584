"""Constrained decoding with llguidance: a JSON schema held while the model writes.

A schema is compiled once (`compiled`), checked without the vocabulary, so a
refused one is a `GrammarError` before any weights load; llguidance bounds what
compiling and masking may cost itself (`_limits`). At run time `SchemaMask`, a
llama-cpp-python logits processor, masks every token that would leave the schema.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from typing import Any

from langchain_structx._clip import MESSAGE_CHARS, clip
from langchain_structx.local._definitions import subschemas
from langchain_structx.local._errors import GrammarError

__all__ = ("KEPT_GRAMMARS", "GrammarError", "SchemaMask", "compiled", "matcher_for")

KEPT_GRAMMARS = 64
"""Schemas kept compiled: a batch repeats one schema, a server a few."""

KEPT_TEXT_CHARS = 256 * 1024
"""Longest schema text kept compiled: many large tenant schemas must not pile up."""

COMPACT: dict[str, Any] = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
    "lenient": True,  # an unknown keyword (`not`) widens the grammar; validation checks it
}
"""JSON on one line, as `json.dumps` writes it by default (one space after each
separator): a small model given room for whitespace writes blank lines and
pretty-printed JSON, and one held to no space at all writes worse values (a
leading ", " inside a string, a list left empty), as the quality tests measured."""

LOOSE: dict[str, Any] = {
    "whitespace_flexible": True,
    "whitespace_pattern": r"( |\n[ \t]{0,20})?",
    "lenient": True,
}
"""Plain JSON mode: the object may be laid out over lines, as the model does
unconstrained; held to one line it drifted from the shape in its prompt."""


def _limits() -> Any:
    from llguidance import LLParserLimits

    # Defaults, but errors without the grammar's text (a tenant's schema in a log).
    return LLParserLimits(verbose_errors=False)


def compiled(schema: dict[str, Any]) -> str:
    """The llguidance grammar for `schema`, checked, compiled once per schema.

    Args:
        schema: A plain-JSON schema (it passed `check_shape`). One that names no
            more than a type (plain JSON mode) lets whitespace in (`LOOSE`).

    Returns:
        The grammar text `matcher_for` takes.

    Raises:
        GrammarError: llguidance refuses the schema (an unknown `$ref`, a bad
            pattern, a schema no value satisfies, one past its limits).
    """
    loose = isinstance(schema, dict) and not set(schema) - {"type", "title", "description"}
    text = json.dumps(schema)
    if len(text) > KEPT_TEXT_CHARS:
        return _compile(text, loose)
    return _kept(text, loose)


_OPEN_KEYWORDS = frozenset({"additionalProperties", "patternProperties", "unevaluatedProperties"})


def _prepared(text: str) -> str:
    """The schema text as llguidance is to read it.

    - An object that lists its properties and says nothing of others is closed,
      as strict modes and the request builders close it: left open, a small
      model asked for a call without arguments copied the parameters' schema
      into them. One that requires a key it does not list, or more keys than it
      lists, stays open (closed, it would admit nothing).
    - `minProperties` is dropped: llguidance 1.9 reads it wrongly (the object
      admits no value at all, even one with enough properties), so the model
      could never answer; validation checks it after decoding instead.

    Examples:
        >>> _prepared('{"type": "object", "properties": {"a": {}}, "minProperties": 1}')
        '{"type": "object", "properties": {"a": {}}, "additionalProperties": false}'
    """
    schema = json.loads(text)
    if not isinstance(schema, dict):
        return text
    composed = _composed(schema)
    for _, node in subschemas(schema):
        least = node.pop("minProperties", 0)
        if id(node) not in composed and _closable(node, least):
            node["additionalProperties"] = False
    return json.dumps(schema)


_COMBINATORS = ("allOf", "anyOf", "oneOf")


def _composed(schema: dict[str, Any]) -> set[int]:
    """The objects of `schema` that another part adds properties to, left open.

    The members of an `allOf` of two or more parts, and the parts combined with
    an object's own `properties`, describe one object together: each closed on
    its own would forbid the others' keys. What they combine, or refer to, is
    left open with them.
    """
    pending: list[Any] = []
    for _, node in subschemas(schema):
        mixed = "properties" in node and any(key in node for key in (*_COMBINATORS, "$ref"))
        if mixed:
            pending.append(node)
        parts = node.get("allOf")
        if isinstance(parts, list) and len(parts) > 1:
            pending.extend(parts)
    composed: set[int] = set()
    while pending:
        node = pending.pop()
        if not isinstance(node, dict) or id(node) in composed:
            continue
        composed.add(id(node))
        for key in _COMBINATORS:
            parts = node.get(key)
            if isinstance(parts, list):
                pending.extend(parts)
        pending.append(_target(schema, node.get("$ref")))
    return composed


def _target(schema: dict[str, Any], ref: Any) -> Any:
    """The part of `schema` a local `$ref` (`#/$defs/Name`) points at, or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = schema
    for step in ref[2:].split("/"):
        step = step.replace("~1", "/").replace("~0", "~")
        node = node.get(step) if isinstance(node, dict) else None
    return node


def _closable(node: dict[str, Any], least: Any) -> bool:
    """Whether `node` lists its properties, says nothing of others, and needs none."""
    listed = node.get("properties")
    if not isinstance(listed, dict) or _OPEN_KEYWORDS & node.keys():
        return False
    required = node.get("required")
    wanted = set(required) if isinstance(required, list) else set()
    enough = not isinstance(least, int) or least <= len(listed)
    return enough and all(isinstance(name, str) and name in listed for name in wanted)


@functools.lru_cache(maxsize=KEPT_GRAMMARS)
def _kept(text: str, loose: bool) -> str:
    return _compile(text, loose)


def _compile(text: str, loose: bool) -> str:
    from llguidance import LLMatcher

    options: Any = LOOSE if loose else COMPACT
    try:
        grammar = LLMatcher.grammar_from_json_schema(_prepared(text), defaults=options)
        failed, messages = LLMatcher.validate_grammar_with_warnings(grammar, None, limits=_limits())
    except ValueError as exc:
        raise _refusal(str(exc)) from exc
    except BaseException as exc:
        # llguidance 1.9 panics (a `BaseException`) while quoting some ill-typed
        # keywords that hold non-ASCII text; the schema is refused all the same.
        if type(exc).__name__ != "PanicException":
            raise
        raise _refusal("its keywords could not be read") from exc
    if failed:
        raise _refusal(messages[0] if messages else "unknown error")
    return grammar


def _refusal(message: str) -> GrammarError:
    detail = " ".join(message.split())
    return GrammarError(
        clip(f"the constrained decoder refuses this JSON schema: {detail}", MESSAGE_CHARS)
    )


def matcher_for(tokenizer: Any, grammar: str) -> Any:
    """A fresh matcher for one request, at the start of `grammar`.

    Raises:
        GrammarError: The grammar cannot be used with this vocabulary.
    """
    from llguidance import LLMatcher

    matcher = LLMatcher(tokenizer, grammar, log_level=0, limits=_limits())
    if matcher.is_error():
        raise _refusal(matcher.get_error())
    return matcher


class SchemaMask:
    """A llama-cpp-python logits processor that keeps the output in a grammar.

    llama-cpp-python calls it before each token is picked, with every token in the
    context (the prompt, then what was generated) and the scores of the next one.
    The first call marks where the prompt ends; each later call feeds the matcher
    only the tokens generated since, then masks the scores in place. Once the
    grammar is complete, the mask leaves only the end-of-sequence token.

    Args:
        matcher: An `llguidance.LLMatcher` at the start of its grammar.
        vocab_size: Tokens in the model's vocabulary.
    """

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        from llguidance.numpy import allocate_token_bitmask

        self._matcher = matcher
        self._bitmask = allocate_token_bitmask(1, vocab_size)
        self._size = vocab_size
        self._seen: int | None = None

    def __call__(self, input_ids: Sequence[int], scores: Any) -> Any:
        """Advance over the new tokens, then mask `scores` in place and return it."""
        import numpy as np
        from llguidance.numpy import fill_next_token_bitmask

        if self._seen is not None and len(input_ids) > self._seen:
            self._matcher.consume_tokens([int(token) for token in input_ids[self._seen :]])
        self._seen = len(input_ids)
        fill_next_token_bitmask(self._matcher, self._bitmask)
        # Token i is bit i % 32 of word i // 32. Unpacking the words' bytes low bit
        # first costs 0.15 ms on 151,936 tokens; llguidance's own numpy
        # `apply_token_bitmask_inplace` takes 3 ms, a tenth of a decode step.
        words = self._bitmask if sys.byteorder == "little" else self._bitmask.byteswap()
        allowed = np.unpackbits(words.view(np.uint8), count=self._size, bitorder="little")
        np.copyto(scores[: self._size], -np.inf, where=~allowed.view(bool))
        if len(scores) > self._size:
            scores[self._size :] = -np.inf  # padding past the vocabulary
        return scores
