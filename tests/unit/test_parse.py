from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable

import pytest

from langchain_structx._parsing.parse import Parsed, Repair, parse_json
from langchain_structx.errors import JSONParseError, MalformedJSONError, TruncatedJSONError
from langchain_structx.limits import DEFAULT_LIMITS, Limits

MAX_DEPTH = DEFAULT_LIMITS.max_depth


def kinds(parsed: Parsed) -> list[str]:
    return [repair.kind for repair in parsed.repairs]


# --- fast path -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ['{"a": 1, "b": [true, false, null], "c": "x"}', "[]", "42", '"hi"', "-1.5e3", "null", " 7 "],
)
def test_valid_json_passes_through_without_repairs(text: str) -> None:
    assert parse_json(text) == Parsed(json.loads(text), ())


def test_valid_duplicate_keys_keep_json_semantics_on_the_fast_path() -> None:
    # Recording duplicates on valid JSON would cost the fast path its speed budget.
    assert parse_json('{"a": 1, "a": 2}') == Parsed({"a": 2}, ())


# --- every text repair kind -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}, ["fence"]),
        ("```\n[1, 2]\n```", [1, 2], ["fence"]),
        ("```json\n42\n```", 42, ["fence"]),
        ('The answer is {"a": 1}.', {"a": 1}, ["prose"]),
        ('{"a": 1}\nHope that helps!', {"a": 1}, ["prose"]),
        (
            'Sure! Here it is:\n```json\n{"a": 1}\n```\nHope that helps',
            {"a": 1},
            ["fence", "prose"],
        ),
        ('{"a": [1, 2,],}', {"a": [1, 2]}, ["trailing_comma"]),
        ("[1, // one\n]", [1], ["comment", "trailing_comma"]),
        ("{'a': 'b'}", {"a": "b"}, ["single_quotes"]),
        ("'hi'", "hi", ["single_quotes"]),
        ("{'q': 'say \"hi\"', 'r': 'it\\'s', 's': 'it's'}", None, ["single_quotes"]),
        (
            '{"a": True, "b": False, "c": None}',
            {"a": True, "b": False, "c": None},
            ["python_literal"],
        ),
        ("None", None, ["python_literal"]),
        ('{"a": 1, // note\n "b": 2 /* more */}', {"a": 1, "b": 2}, ["comment"]),
        ('{"a": 1 # python style\n}', {"a": 1}, ["comment"]),
        ('{a: 1, b_2: {$c: "d"}}', {"a": 1, "b_2": {"$c": "d"}}, ["unquoted_key"]),
        ("{\u201ca\u201d: \u201cb c\u201d}", {"a": "b c"}, ["smart_quotes"]),
        ("[\u2018x\u2019]", ["x"], ["smart_quotes"]),
        ('{"a": "line\nbreak"}', {"a": "line\nbreak"}, ["control_character"]),
        ('{"a": 1, "a": 2,}', {"a": 2}, ["trailing_comma", "duplicate_key"]),
        ('{"姓名"："李雷"，"年龄"：12}', {"姓名": "李雷", "年龄": 12}, ["fullwidth_punctuation"]),
        (
            "{\u201c\u540d\u201d\uff1a[1\uff0c2\uff0c]}",
            {"\u540d": [1, 2]},
            ["smart_quotes", "fullwidth_punctuation", "trailing_comma"],
        ),
    ],
)
def test_text_repairs(text: str, value: object, expected: list[str]) -> None:
    parsed = parse_json(text)
    if value is not None or text == "None":
        assert parsed.value == value
    assert kinds(parsed) == expected


def test_single_quoted_strings_keep_inner_quotes_and_apostrophes() -> None:
    parsed = parse_json("{'q': 'say \"hi\"', 'r': 'it\\'s', 's': 'it's'}")
    assert parsed.value == {"q": 'say "hi"', "r": "it's", "s": "it's"}


def test_all_repairs_at_once_are_each_recorded_once_with_counts() -> None:
    text = (
        "Here you go:\n```json\n{\n  'name': 'Ada', // the name\n  active: True,\n"
        "  'tags': ['x', 'y',],\n  'boss': None,\n}\n```\nAnything else?"
    )
    parsed = parse_json(text)
    assert parsed.value == {"name": "Ada", "active": True, "tags": ["x", "y"], "boss": None}
    assert kinds(parsed) == [
        "fence",
        "prose",
        "single_quotes",
        "comment",
        "unquoted_key",
        "python_literal",
        "trailing_comma",
    ]
    details = {repair.kind: repair.detail for repair in parsed.repairs}
    assert details["single_quotes"] == "replaced single quotes around 6 strings with double quotes"
    assert details["trailing_comma"] == "removed 2 trailing commas"
    assert all(repair.path == () for repair in parsed.repairs)


def test_duplicate_key_detail_names_the_keys() -> None:
    parsed = parse_json("{'a': 1, 'a': 2, 'b': {'c': 1, 'c': 3}}")
    assert parsed.value == {"a": 2, "b": {"c": 3}}
    assert parsed.repairs[-1] == Repair(
        "duplicate_key", "kept the last values of 2 duplicate keys: 'c', 'a'"
    )


def test_strings_are_never_rewritten() -> None:
    text = "{'a': \"True, None, // not a comment, 'quoted', x: 1,]\"}"
    assert parse_json(text).value == {"a": "True, None, // not a comment, 'quoted', x: 1,]"}
    # Full-width punctuation is rewritten between values only, never inside a string.
    parsed = parse_json("{'注'\uff1a'甲\uff0c乙\uff1a丙'\uff0c\"b\"\uff1a\"x\uff0cy\"}")
    assert parsed.value == {"注": "甲\uff0c乙\uff1a丙", "b": "x\uff0cy"}
    assert parsed.repairs[-1].detail == (
        "replaced 3 full-width colons and commas between values with ASCII ones"
    )


# --- finding the JSON -------------------------------------------------------------


def test_first_complete_container_wins() -> None:
    parsed = parse_json('First {"a": 1} then {"b": 2}')
    assert parsed.value == {"a": 1}
    assert kinds(parsed) == ["prose"]


def test_container_is_preferred_over_a_scalar_in_prose() -> None:
    assert parse_json('42 is in {"answer": 42}').value == {"answer": 42}


def test_braces_in_prose_that_are_not_json_are_skipped() -> None:
    parsed = parse_json('Fill in {name} like this: {"name": "Ada"}')
    assert parsed.value == {"name": "Ada"}
    assert kinds(parsed) == ["prose"]


def test_byte_order_mark_is_ignored() -> None:
    assert parse_json('\ufeff{"a": 1}') == Parsed({"a": 1}, ())


@pytest.mark.parametrize("text", ["", "   \n\t", "I cannot help with that.", "OK", "```json\n```"])
def test_text_without_json_is_malformed(text: str) -> None:
    with pytest.raises(MalformedJSONError):
        parse_json(text)


# --- truncation versus malformed ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2',
        '{"a": "hello wor',
        '{"a": tr',
        '{"a": 1.',
        "[1, -",
        '{"a"',
        '{"a": "\\u12',
        "{'a': 'b",
        '```json\n{"a": [1',
        '```json\n{"a": [1\n```',
        "Sure:\n```json\n",
        '{"a": 1, /* note',
    ],
)
def test_valid_prefix_is_truncation(text: str) -> None:
    with pytest.raises(TruncatedJSONError) as info:
        parse_json(text)
    assert info.value.position == len(text)


@pytest.mark.parametrize(
    ("text", "position"),
    [('["a" "b"]', 5), ('{"a": 1 @}', 8), ("[1, 2]]", None), ('{"a": yes}', 6), ('{"a" 1}', 5)],
)
def test_broken_syntax_is_malformed(text: str, position: int | None) -> None:
    if position is None:
        assert parse_json(text).value == [1, 2]  # trailing junk is prose
        return
    with pytest.raises(MalformedJSONError) as info:
        parse_json(text)
    assert info.value.position == position
    assert "line 1" in str(info.value)


def test_truncation_after_an_earlier_syntax_error_is_malformed() -> None:
    with pytest.raises(MalformedJSONError):
        parse_json('{"a": 1 "b": [1, 2')


# --- bad input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["NaN", '{"a": NaN}', "[Infinity]", "[-Infinity]", '{"a": 1,} NaN']
)
def test_non_finite_numbers_are_rejected(text: str) -> None:
    if text.endswith("NaN") and text.startswith("{"):
        assert parse_json(text).value == {"a": 1}  # NaN in trailing prose is not read
        return
    with pytest.raises(MalformedJSONError, match="not valid JSON"):
        parse_json(text)


def test_non_finite_in_text_needing_repair_is_rejected() -> None:
    with pytest.raises(MalformedJSONError, match="NaN"):
        parse_json("{'a': NaN}")


@pytest.mark.parametrize("text", ["[" * 100_000, "[" * 100_000 + "]" * 100_000, "{'a': " * 5000])
def test_deep_nesting_is_malformed(text: str) -> None:
    with pytest.raises(MalformedJSONError, match=f"deeper than {MAX_DEPTH}"):
        parse_json(text)


def test_nesting_within_the_limit_parses_on_the_lenient_path() -> None:
    depth = 200
    deep = Limits(max_depth=256)
    assert parse_json("[" * depth + "1," + "]" * depth, limits=deep).value is not None


def test_ten_megabyte_string() -> None:
    body = "x" * 10_000_000
    roomy = Limits(max_reply_chars=20_000_000)
    started = time.perf_counter()
    assert parse_json(f'{{"a": "{body}"}}', limits=roomy).value == {"a": body}
    assert parse_json(f"{{'a': '{body}'}}", limits=roomy).value == {"a": body}
    with pytest.raises(TruncatedJSONError):
        parse_json(f'{{"a": "{body}', limits=roomy)
    assert time.perf_counter() - started < 5


def test_huge_integer_is_malformed_not_value_error() -> None:
    with pytest.raises(MalformedJSONError, match="5000 digits, more than the limit"):
        parse_json("1" * 5000)
    with pytest.raises(MalformedJSONError, match="5000 digits, more than the limit"):
        parse_json("[" + "1" * 5000 + ",]")


def test_binary_garbage_gives_a_typed_error_quickly() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 4000
    started = time.perf_counter()
    with pytest.raises(JSONParseError):
        parse_json(garbage)
    assert time.perf_counter() - started < 2


def test_many_failed_candidates_stay_linear() -> None:
    text = "{x} " * 200_000 + '{"a": 1}'
    started = time.perf_counter()
    with pytest.raises(MalformedJSONError):
        parse_json(text)  # gives up after a bounded number of candidates
    assert time.perf_counter() - started < 2


def test_lone_surrogates_are_values() -> None:
    assert parse_json('"\\ud800"').value == "\ud800"
    assert parse_json("'\ud800'").value == "\ud800"


def test_non_string_input_is_malformed() -> None:
    with pytest.raises(MalformedJSONError, match="expected text"):
        parse_json(b"{}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ('{"a": "[not] {structure}",}', {"a": "[not] {structure}"}, ["trailing_comma"]),
        ("{'a': '[x]', 'b': 'y',}", {"a": "[x]", "b": "y"}, ["single_quotes", "trailing_comma"]),
        (
            '[{"a": [1, [2, {}]],}] then {"b": 2}',
            [{"a": [1, [2, {}]]}],
            ["prose", "trailing_comma"],
        ),
        ('{"a": 1} trailing, ]', {"a": 1}, ["prose"]),
        ("[1, /* c */ ]", [1], ["comment", "trailing_comma"]),
        ("[1, 2,\n  ]", [1, 2], ["trailing_comma"]),
        ('{"k": "it\'s"}, True', {"k": "it's"}, ["prose"]),
    ],
)
def test_brackets_in_strings_and_values_closing_mid_run(
    text: str, value: object, expected: list[str]
) -> None:
    parsed = parse_json(text)
    assert parsed.value == value
    assert kinds(parsed) == expected


def test_depth_error_points_at_the_offending_bracket() -> None:
    with pytest.raises(MalformedJSONError) as info:
        parse_json("{'a': " + "[" * 2000)
    assert info.value.position == 6 + MAX_DEPTH - 1


@pytest.mark.parametrize(
    "text",
    [
        "{a: 1, bb: 1 2}",
        "{a: 1, /* long comment */ 'b': 1 2}",
        "[1, // c\n 1 2]",
        "{'a': [1,], 'b': 1 2}",
    ],
)
def test_error_positions_refer_to_the_original_text(text: str) -> None:
    with pytest.raises(MalformedJSONError) as info:
        parse_json(text)
    assert info.value.position == text.index(" 2") + 1


def test_decoder_recursion_limit_is_a_depth_error() -> None:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        with pytest.raises(MalformedJSONError, match="nested deeper"):
            parse_json("[" * 500 + "1," + "]" * 500)
    finally:
        sys.setrecursionlimit(limit)


def test_python_literal_used_as_a_key_is_quoted() -> None:
    parsed = parse_json("{True: 1, None: 2}")
    assert parsed.value == {"True": 1, "None": 2}
    assert kinds(parsed) == ["unquoted_key"]


REPETITIVE: list[Callable[[int], str]] = [
    lambda n: "[" + "1," * n,
    lambda n: '{"a": "' + "\\n" * n + '",}',
    lambda n: "'" * 2 * n,
    lambda n: "['" + "a'b" * n,
    lambda n: "\u201c" * 2 * n,
]


def parse_quietly(text: str) -> None:
    try:
        parse_json(text)
    except JSONParseError:
        pass


@pytest.mark.parametrize("build", REPETITIVE)
def test_long_repetitive_input_stays_fast_and_small(build: Callable[[int], str]) -> None:
    # Regression: repeated regex groups used to keep per-repetition backtracking
    # state: superlinear time and hundreds of megabytes for inputs like these.
    started = time.perf_counter()
    parse_quietly(build(1_000_000))
    assert time.perf_counter() - started < 1.5
    text = build(100_000)
    tracemalloc.start()
    try:
        parse_quietly(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(text)
