"""Compiled schema patterns are kept within a memory budget, and still answer the same.

Schemas in multi-tenant apps are untrusted, so their patterns are too: each RE2
pattern is bounded by `RE2_MAX_MEM` (`RE2_LARGE_MAX_MEM` for the rare large one),
and the patterns kept for reuse weigh at most `PATTERN_CACHE_BYTES` together,
least recently used out first. The old caches counted entries (512 RE2 ones of up
to 8 MiB, 32 `regex` ones of any size), not bytes.
"""

from __future__ import annotations

import gc
import random
import re
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import re2
import regex

from langchain_structx._schemas.normalise import normalize
from langchain_structx._validation import regexes as _regexes
from langchain_structx._validation.regex_cost import compile_cost
from langchain_structx._validation.regexes import (
    MAX_PATTERN_COST,
    PATTERN_CACHE_BYTES,
    RE2_LARGE_MAX_MEM,
    RE2_MAX_MEM,
    WeightedCache,
    compiled,
    is_regex,
)
from langchain_structx.errors import OutputValidationError
from langchain_structx.limits import DEFAULT_LIMITS

LARGE_RE2 = r"^\pL{1,200}$"
"""Its program does not fit `RE2_MAX_MEM`, but does fit RE2's default 8 MiB."""

NEAR_COST_BOUND = r"(?:{letter}{{1000}}){{99}}(b)\1"
"""A back-reference (so `regex`) whose compile cost is just under `MAX_PATTERN_COST`."""


def _repeated_set(seed: int, members: int = 96) -> str:
    """A `regex` pattern whose set of `members` is written out 1,000 times when compiled."""
    chars = "".join(chr(0x4E00 + 2 * i + seed) for i in range(members))
    return f"[{chars}]{{1000}}(?=x)"


def _ordinary(i: int) -> str:
    return rf"^item{i}-[a-z]+\d*$"


def _kept() -> list[Any]:
    return list(_regexes._PATTERNS.keys())


def _entry_weights() -> int:
    cache = _regexes._PATTERNS
    return sum(weight for _, weight in cache._entries.values())


def _answer(found: Any) -> str | None:
    if found is None:
        return None
    text = found.group(0)
    return text.decode("utf-8") if isinstance(text, bytes) else str(text)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    _regexes._PATTERNS.clear()
    yield
    _regexes._PATTERNS.clear()


# --- the weighted cache itself --------------------------------------------------------


def test_the_least_recently_used_value_goes_first() -> None:
    cache = WeightedCache(budget=10)
    cache.put("a", "A", 4)
    cache.put("b", "B", 4)
    assert cache.get("a") == "A"  # now "b" is the least recently used
    cache.put("c", "C", 4)
    assert cache.keys() == ["a", "c"]
    assert cache.get("b") is None
    assert cache.weight == 8


def test_a_value_heavier_than_the_budget_is_not_kept_and_a_new_weight_replaces_the_old() -> None:
    cache = WeightedCache(budget=10)
    cache.put("huge", "H", 11)
    assert cache.get("huge") is None
    assert cache.weight == 0
    cache.put("a", "A", 6)
    cache.put("a", "A2", 3)
    assert (cache.get("a"), cache.weight) == ("A2", 3)
    cache.put("b", "B", 7)
    assert cache.keys() == ["a", "b"]
    assert cache.weight == 10


# --- the patterns' cache --------------------------------------------------------------


def test_the_cache_stays_within_its_budget_over_many_distinct_patterns() -> None:
    cache = _regexes._PATTERNS
    patterns = (
        [_ordinary(i) for i in range(150)]
        + [rf"^\pL{{1,{n}}}$" for n in range(150, 156)]
        + [NEAR_COST_BOUND.format(letter=letter) for letter in "acdefg"]
        + [_repeated_set(seed) for seed in range(12)]
    )
    for pattern in patterns:
        compiled(pattern)
        assert cache.weight <= PATTERN_CACHE_BYTES
        assert cache.weight == _entry_weights()
    assert len(_kept()) < len(patterns)


def test_regex_patterns_kept_alive_hold_no_more_than_the_budget() -> None:
    refs = [weakref.ref(compiled(_repeated_set(seed))) for seed in range(40)]
    gc.collect()
    alive = [ref() for ref in refs if ref() is not None]
    weight = _regexes._PATTERNS.weight
    assert sys.getsizeof(alive[-1]) > 256 * 1024  # each one holds a large part of a MiB
    assert len(alive) == len(_kept()) and weight <= PATTERN_CACHE_BYTES
    # Each weighs what its compile cost allows it to hold: a few fit the budget, not 40.
    assert len(alive) * (weight // len(alive)) <= PATTERN_CACHE_BYTES < 40 * (weight // len(alive))


def test_a_regex_pattern_weighs_at_least_what_it_holds() -> None:
    pattern = _repeated_set(0)
    found = compiled(pattern)
    assert _regexes._PATTERNS.weight >= sys.getsizeof(found) > 256 * 1024


def test_patterns_are_evicted_least_recently_used_first() -> None:
    per_entry = PATTERN_CACHE_BYTES // RE2_MAX_MEM
    for i in range(per_entry):
        compiled(_ordinary(i))
    assert _regexes._PATTERNS.weight == PATTERN_CACHE_BYTES
    compiled(_ordinary(0))  # used again: now the most recent
    compiled(_ordinary(per_entry))
    kept = _kept()
    assert _ordinary(1) not in kept
    assert _ordinary(0) in kept
    assert kept[-2:] == [_ordinary(0), _ordinary(per_entry)]


@pytest.mark.parametrize("pattern", [r"^[A-Z]{2}\d{4}$", r"^(ab)\1$"])
def test_an_evicted_pattern_compiles_again_with_the_same_answers(pattern: str) -> None:
    texts = ["AB1234", "ab1234", "AB12345", "abab", "abba", ""]
    first = compiled(pattern)
    before = [_answer(first.search(text)) for text in texts]
    for i in range(PATTERN_CACHE_BYTES // RE2_MAX_MEM + 1):
        compiled(_ordinary(i))
    assert pattern not in _kept()
    again = compiled(pattern)
    assert again is not first
    assert [_answer(again.search(text)) for text in texts] == before
    assert before == [_answer(re.search(pattern, text)) for text in texts]


def test_threads_sharing_a_small_cache_get_correct_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = WeightedCache(budget=3 * RE2_MAX_MEM)  # room for three: evictions all the time
    monkeypatch.setattr(_regexes, "_PATTERNS", small)
    patterns = [_ordinary(i) for i in range(8)] + [r"^(\w)\1", r"x(?=y)", r"^[a-z]+$"]
    texts = ["item3-abc", "item3-abc42", "item7-", "aab", "xy", "xz", "plain", "ab\ud800"]
    expected = {(p, t): re.search(p, t) is not None for p in patterns for t in texts}
    failures: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        order = [(p, t) for p in patterns for t in texts]
        random.Random(seed).shuffle(order)
        try:
            for _ in range(20):
                for pattern, text in order:
                    if (compiled(pattern).search(text) is not None) != expected[(pattern, text)]:
                        failures.append((pattern, text))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert failures == []
    assert small.weight <= small.budget
    assert small.weight == sum(weight for _, weight in small._entries.values())


def test_compiling_leaves_nothing_in_the_engines_own_caches() -> None:
    before = re2._Regexp._make.cache_info().currsize
    ours = [_ordinary(i) for i in range(10)] + [rf"^(x{i})\1$" for i in range(10)]
    for pattern in ours:
        compiled(pattern)
    texts = [rf"(?:y{i})+\d" for i in range(10)]
    assert all(is_regex(text) for text in texts)
    assert re2._Regexp._make.cache_info().currsize == before
    remembered = _regexes._REGEX_SEEN
    assert isinstance(remembered, dict)  # where `regex` keeps the text it has seen
    assert not any((str, pattern) in remembered for pattern in ours + texts)


# --- RE2's memory bound -------------------------------------------------------------------


def test_re2_is_given_an_explicit_memory_bound() -> None:
    assert _regexes._RE2_OPTIONS.max_mem == RE2_MAX_MEM
    assert _regexes._RE2_LARGE_OPTIONS.max_mem == RE2_LARGE_MAX_MEM
    assert RE2_MAX_MEM < RE2_LARGE_MAX_MEM <= PATTERN_CACHE_BYTES // 4


def test_an_ordinary_pattern_weighs_the_small_bound() -> None:
    compiled(r"^[a-z]+$")
    assert _regexes._PATTERNS.weight == RE2_MAX_MEM


def test_a_large_re2_pattern_stays_in_re2_and_validates() -> None:
    found = compiled(LARGE_RE2)
    assert type(found).__name__ == "_Linear"
    assert _regexes._PATTERNS.weight == RE2_LARGE_MAX_MEM
    assert found.search("é" * 200) is not None
    assert found.search("é" * 201) is None
    assert found.search("é" * 3 + "\n") is None  # RE2's `$`; `regex` would match here
    schema = {"title": "T", "type": "object", "properties": {"s": {"pattern": LARGE_RE2}}}
    variant = normalize(schema).variants[0]
    variant.validate({"s": "ü" * 200}, DEFAULT_LIMITS)
    with pytest.raises(OutputValidationError):
        variant.validate({"s": "ü" * 201}, DEFAULT_LIMITS)


def test_a_long_program_within_the_small_bound_still_answers_right() -> None:
    found = compiled(r"^.{0,1000}$")
    assert _regexes._PATTERNS.weight == RE2_MAX_MEM
    assert found.search("é" * 1000) is not None
    assert found.search("é" * 1001) is None


def test_a_pattern_whose_dfa_outgrows_the_bound_still_answers_right() -> None:
    # Its DFA has 2**16 states; within 1 MiB RE2 runs out of room and uses its NFA.
    found = compiled(r"(a|b)*a(a|b){15}c")
    noise = "".join(random.Random(7).choice("ab") for _ in range(50_000))
    assert found.search(noise) is None
    assert found.search(noise + "a" + "b" * 15 + "c") is not None
    assert found.search(noise + "b" * 16 + "c") is None


def test_text_re2_cannot_read_takes_a_regex_pattern_kept_in_the_same_budget() -> None:
    found = compiled(r"^[a-z]+$")
    assert found.search("ab\ud800") is None
    assert found.search("ab") is not None
    assert ("regex", r"^[a-z]+$") in _kept()
    assert _regexes._PATTERNS.weight == _entry_weights() > RE2_MAX_MEM


ORDINARY = [
    r"^[a-z]+$",
    r"\d{3}-\d{4}",
    r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$",
    r"colou?r",
    r"^(?:[01]\d|2[0-3]):[0-5]\d$",
    r"\bword\b",
    r"^\S+$",
    r"[^aeiou ]{3}",
    r"(?i)hello",
    r"^.{2,5}$",
    r"x*",
    r"^(a)\1$",
    r"foo(?=bar)",
    r"(?<!un)happy",
]
TEXTS = [
    "",
    "abc",
    "Abc",
    "555-1234",
    "call 555-12345 now",
    "jane.doe@example.org",
    "not an email@",
    "color",
    "colour",
    "23:59",
    "24:00",
    "a word here",
    "swordfish",
    "no-spaces",
    "two words",
    "HeLLo there",
    "éèà",
    "aa",
    "foobar",
    "foobaz",
    "unhappy",
    "happy",
]


@pytest.mark.parametrize("pattern", ORDINARY)
def test_search_answers_as_python_re_does(pattern: str) -> None:
    found = compiled(pattern)
    for text in TEXTS:
        assert _answer(found.search(text)) == _answer(re.search(pattern, text)), text


@pytest.mark.parametrize("members", [1, 8, 96, 500, 2_000])
@pytest.mark.parametrize("count", [10, 250, 1000])
def test_a_repeated_set_costs_what_it_holds(members: int, count: int) -> None:
    # `regex` writes a repeated set out with all its members each time: the cost
    # counts them, so whatever it lets through holds no more than its weight says.
    chars = "".join(chr(0x4E00 + 2 * i) for i in range(members))
    pattern = f"[{chars}]{{{count}}}(?=x)"
    cost = compile_cost(pattern)
    assert cost >= min(members * count, MAX_PATTERN_COST + 1)
    if cost > MAX_PATTERN_COST:
        with pytest.raises(regex.error):
            compiled(pattern)
        assert not is_regex(pattern)  # a reply's `format: regex` value is never compiled
        return
    found = compiled(pattern)
    assert sys.getsizeof(found) <= cost * _regexes._REGEX_BYTES_PER_COST
