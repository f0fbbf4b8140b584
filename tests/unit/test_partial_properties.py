"""Properties of the partial-JSON reader behind streamed partial objects.

For every prefix of a JSON document, `partial_value` shows only what the prefix
already holds (never a key, element, character or number the final document does
not have at that place), later prefixes only add to what earlier ones showed, and
the whole text reads exactly as `json.loads` reads it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from json_growth import grows, values

from langchain_structx._parsing.partial_json import Buffer, partial_value

# Streamed structured output is always an object or an array.
containers = st.one_of(
    st.lists(values, max_size=5),
    st.dictionaries(st.text(), values, max_size=5),
)
dumps = st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}])
wrappers = st.sampled_from(["{}", "```json\n{}\n```", "Sure! Here it is:\n```\n{}\n```\nDone."])


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
    """`partial` shows only what `text[:cut]` holds: no key unfinished, no element unstarted.

    Strings may be shorter than the final string; every other leaf is equal to the
    final one, of the same type, and only once the text holds all of it.
    """
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final
            and layout.key_ends[(*path, key)] <= cut
            and within(item, final[key], layout, cut, (*path, key))
            for key, item in partial.items()
        )
    if isinstance(partial, list):
        started = sum(1 for i in range(len(final)) if layout.starts[(*path, i)] < cut)
        return (
            isinstance(final, list)
            and len(partial) <= started
            and all(
                within(a, b, layout, cut, (*path, i))
                for i, (a, b) in enumerate(zip(partial, final, strict=False))
            )
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    complete = layout.starts[path] + len(json.dumps(final)) <= cut
    return partial == final and type(partial) is type(final) and complete


def assert_grows_as_read(text: str, size: int) -> None:
    """Read `text` `size` characters more at a time: each value only adds to the last."""
    previous: Any = None
    for end in range(size, len(text) + size, size):
        current = partial_value(text[:end])
        if previous is not None:
            assert current is not None
            assert grows(previous, current)
        previous = current


@settings(max_examples=300, deadline=None)
@given(containers, dumps, st.data())
def test_a_prefix_never_shows_content_the_document_lacks(
    value: Any, options: dict[str, Any], data: Any
) -> None:
    layout = Layout(value, options)
    text = json.dumps(value, **options)
    assert layout.text == text
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    partial = partial_value(text[:cut])
    assert partial is None or within(partial, json.loads(text), layout, cut, ())


@settings(max_examples=200, deadline=None)
@given(containers, dumps, st.integers(min_value=1, max_value=9))
def test_values_only_grow_as_the_text_grows(value: Any, options: dict[str, Any], size: int) -> None:
    assert_grows_as_read(json.dumps(value, **options), size)


@settings(max_examples=200, deadline=None)
@given(containers, dumps, wrappers)
def test_the_whole_text_reads_as_json_loads(
    value: Any, options: dict[str, Any], wrapper: str
) -> None:
    body = json.dumps(value, **options)
    assert partial_value(wrapper.replace("{}", body, 1)) == json.loads(body)


@settings(max_examples=100, deadline=None)
@given(containers, dumps, st.integers(min_value=1, max_value=9))
def test_the_stream_buffer_ends_on_the_whole_value(
    value: Any, options: dict[str, Any], size: int
) -> None:
    text = json.dumps(value, **options)
    buffer, seen = Buffer(), []
    for start in range(0, len(text), size):
        if buffer.add(text[start : start + size]):
            seen.append(buffer.read())
    seen.append(buffer.read())
    assert seen[-1] == json.loads(text)
    shown = [item for item in seen if item is not None]
    assert all(grows(a, b) for a, b in zip(shown, shown[1:], strict=False))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}[]\"':,0123456789.-+eEtrufalsnNTF \n/*#`\\xyz") | st.text())
def test_any_text_gives_a_value_or_none_without_raising(text: str) -> None:
    result = partial_value(text)
    assert result is None or isinstance(result, dict | list)


_CONTROLS = "".join(map(chr, range(0x20)))
_raw_strings = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\\")
    | st.sampled_from(_CONTROLS)
)


def _written_raw(value: Any) -> str:
    """`value` as JSON with its control characters unescaped in strings, as models write them."""
    text = json.dumps(value, ensure_ascii=False)
    for char in _CONTROLS:
        text = text.replace(json.dumps(char)[1:-1], char)
    return text


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_raw_strings, _raw_strings, min_size=1, max_size=4), st.integers(1, 9))
def test_raw_control_characters_in_strings_do_not_stop_the_partials(
    value: dict[str, str], size: int
) -> None:
    text = _written_raw(value)
    assert json.loads(text, strict=False) == value  # what the answer's own parse reads
    assert_grows_as_read(text, size)
    assert partial_value(text) == value
