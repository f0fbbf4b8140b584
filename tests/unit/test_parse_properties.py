from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from json_growth import values

from langchain_structx._parsing.parse import parse_json
from langchain_structx.errors import JSONParseError

dumps = st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}])


@settings(max_examples=200, deadline=None)
@given(values, dumps)
def test_valid_json_round_trips_without_repairs(value: Any, options: dict[str, Any]) -> None:
    text = json.dumps(value, **options)
    parsed = parse_json(text)
    assert parsed.value == json.loads(text)
    assert parsed.repairs == ()


@settings(max_examples=300, deadline=None)
@given(st.text() | st.binary().map(lambda raw: raw.decode("latin-1")))
def test_arbitrary_text_returns_or_raises_a_parse_error(text: str) -> None:
    try:
        parse_json(text)
    except JSONParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="{}[]\"':,0123456789.-+eEtrufalsnNTF \n/*#`\\xyz"))
def test_json_like_noise_returns_or_raises_a_parse_error(text: str) -> None:
    try:
        parse_json(text)
    except JSONParseError:
        pass


printable = st.text(st.characters(categories=["L", "N", "P", "S"]) | st.just(" "), max_size=12)
python_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | printable,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(printable, children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(python_values, min_size=1, max_size=4)
    | st.dictionaries(printable, python_values, min_size=1, max_size=4)
)
def test_python_repr_in_a_fence_parses_back(value: Any) -> None:
    text = f"Here you go:\n```python\n{value!r}\n```\nDone."
    parsed = parse_json(text)
    assert parsed.value == value
    kinds = [repair.kind for repair in parsed.repairs]
    assert kinds[:2] == ["fence", "prose"]
    assert set(kinds[2:]) <= {"single_quotes", "python_literal"}
