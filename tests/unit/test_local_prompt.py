"""What the embedded model sees: the enforced shape and the choice among tools."""

from __future__ import annotations

from langchain_structx.local._messages import detect_calls, forced_message, with_shape, with_tools

CONTACT = {
    "title": "Contact",
    "description": "A person's contact details.",
    "type": "object",
    "properties": {"name": {"type": "string"}, "born": {"type": "string", "format": "date"}},
    "required": ["name", "born"],
}


def test_the_enforced_shape_ends_the_system_message() -> None:
    messages = [{"role": "system", "content": "Extract."}, {"role": "user", "content": "Ann"}]
    response_format = {"type": "json_schema", "json_schema": {"name": "Person", "schema": CONTACT}}

    with_shape(messages, response_format, CONTACT)

    assert messages[0]["content"] == (
        "Extract.\n\nAnswer with a JSON object of this shape:\n\n"
        "// A person's contact details.\n"
        'Person {\n  "name": string,\n'
        '  "born": "YYYY-MM-DD"  // a date written YYYY-MM-DD, e.g. 2024-01-31\n}'
    )
    assert messages[1] == {"role": "user", "content": "Ann"}


def test_a_shape_without_system_message_gets_one_named_by_the_title() -> None:
    messages = [{"role": "user", "content": "Ann"}]

    with_shape(messages, {"type": "json_object", "schema": CONTACT}, CONTACT)

    assert messages[0]["role"] == "system"
    assert "\nContact {\n" in messages[0]["content"]
    assert messages[1]["role"] == "user"


def test_plain_json_mode_shows_no_shape() -> None:
    messages = [{"role": "system", "content": "Extract."}]

    with_shape(messages, {"type": "json_object"}, {"type": "object"})

    assert messages == [{"role": "system", "content": "Extract."}]


def _tool(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_a_forced_choice_among_tools_asks_to_choose_by_description() -> None:
    forced = [{"role": "system", "content": "S"}]
    single = [{"role": "system", "content": "S"}]
    optional = [{"role": "system", "content": "S"}]

    with_tools(forced, [_tool("A"), _tool("B")], forced=True)
    with_tools(single, [_tool("A")], forced=True)
    with_tools(optional, [_tool("A"), _tool("B")])

    assert "first decide which description fits" in forced[0]["content"]
    assert "decide" not in single[0]["content"]
    assert "decide" not in optional[0]["content"]


DEEP = "[" * 5000 + "]" * 5000
TOOLS = [{"type": "function", "function": {"name": "City", "parameters": {"type": "object"}}}]


def test_model_text_naming_a_tool_with_no_string_is_no_tool_call() -> None:
    assert detect_calls('{"name": ["City"], "arguments": {}}', TOOLS) == []
    assert detect_calls('{"name": {"City": 1}, "arguments": {}}', TOOLS) == []
    assert [c["name"] for c in detect_calls('{"name": "City", "arguments": {}}', TOOLS)] == ["City"]


def test_model_text_nested_too_deeply_to_read_is_no_tool_call() -> None:
    wrapped = '{"name": "City", "arguments": "' + DEEP + '"}'
    assert detect_calls(DEEP, TOOLS) == []
    assert detect_calls(wrapped, TOOLS) == []
    forced = forced_message(DEEP, "stop")
    assert forced.tool_calls == []
    assert [c["error"] for c in forced.invalid_tool_calls] == ["output is not JSON"]
