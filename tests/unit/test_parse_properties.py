from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_structx._parse import PartialJSONParser, parse_json, parse_partial
from langchain_structx.errors import JSONParseError

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=20,
)
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
    parse_partial(text)


class Layout:
    """Serialises like `json.dumps` and records where each element starts and key ends."""

    def __init__(self, value: Any, options: dict[str, Any]) -> None:
        self.indent: int | None = options.get("indent")
        self.ascii: bool = options.get("ensure_ascii", True)
        default = (",", ": ") if self.indent is not None else (", ", ": ")
        self.item_sep, self.key_sep = options.get("separators", default)
        self.parts: list[str] = []
        self.size = 0
        self.starts: dict[tuple[Any, ...], int] = {}
        self.key_ends: dict[tuple[Any, ...], int] = {}
        self.emit(value, (), 1)
        self.text = "".join(self.parts)

    def put(self, piece: str) -> None:
        self.parts.append(piece)
        self.size += len(piece)

    def newline(self, level: int) -> None:
        if self.indent is not None:
            self.put("\n" + " " * (self.indent * level))

    def emit(self, value: Any, path: tuple[Any, ...], level: int) -> None:
        self.starts[path] = self.size
        if not isinstance(value, dict | list) or not value:
            self.put(json.dumps(value, ensure_ascii=self.ascii))
            return
        self.put("{" if isinstance(value, dict) else "[")
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for number, (key, item) in enumerate(pairs):
            self.put(self.item_sep if number else "")
            self.newline(level)
            if isinstance(value, dict):
                self.put(json.dumps(key, ensure_ascii=self.ascii))
                self.key_ends[(*path, key)] = self.size
                self.put(self.key_sep)
            self.emit(item, (*path, key), level + 1)
        self.newline(level - 1)
        self.put("}" if isinstance(value, dict) else "]")


def within(partial: Any, final: Any, layout: Layout, cut: int, path: tuple[Any, ...]) -> bool:
    """`partial` shows only what `text[:cut]` holds: no key unfinished, no element unstarted."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final
            and layout.key_ends[(*path, key)] <= cut
            and within(item, final[key], layout, cut, (*path, key))
            for key, item in partial.items()
        )
    if isinstance(partial, list):
        started = sum(1 for i in range(len(final)) if layout.starts[(*path, i)] < cut)
        return len(partial) <= started and all(
            within(a, b, layout, cut, (*path, i))
            for i, (a, b) in enumerate(zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return partial == final and type(partial) is type(final)


@settings(max_examples=200, deadline=None)
@given(values, dumps, st.data())
def test_partial_prefixes_never_invent_content(
    value: Any, options: dict[str, Any], data: Any
) -> None:
    layout = Layout(value, options)
    text = json.dumps(value, **options)
    assert layout.text == text
    final = json.loads(text)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    partial = parse_partial(text[:cut])
    if isinstance(final, dict | list):
        assert partial is None or within(partial, final, layout, cut, ())
    elif isinstance(final, str):
        assert partial is None or final.startswith(partial)


@settings(max_examples=200, deadline=None)
@given(values, dumps, st.integers(min_value=1, max_value=7))
def test_streaming_ends_equal_to_json_loads(value: Any, options: dict[str, Any], size: int) -> None:
    text = json.dumps(value, **options)
    parser = PartialJSONParser()
    for i in range(0, len(text), 4):
        parser.feed(text[i : i + 4])
    assert parser.value == json.loads(text)
    other = PartialJSONParser()
    for i in range(0, len(text), size):
        other.feed(text[i : i + size])
    assert other.value == json.loads(text)


def grows(before: Any, after: Any) -> bool:
    """`after` extends `before`: keys added, lists appended, strings extended."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and grows(item, after[key]) for key, item in before.items()
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(before) <= len(after)
            and all(grows(a, b) for a, b in zip(before, after, strict=False))
        )
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return before is None or (before == after and type(before) is type(after))


containers = st.one_of(
    st.lists(values, min_size=1, max_size=5),
    st.dictionaries(st.text(), values, min_size=1, max_size=5),
)


@settings(max_examples=100, deadline=None)
@given(containers, dumps, st.integers(min_value=1, max_value=9))
def test_streamed_values_only_grow(value: Any, options: dict[str, Any], size: int) -> None:
    text = json.dumps(value, **options)
    parser = PartialJSONParser()
    previous: Any = None
    for i in range(0, len(text), size):
        current = copy.deepcopy(parser.feed(text[i : i + size]))
        assert grows(previous, current)
        previous = current


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
