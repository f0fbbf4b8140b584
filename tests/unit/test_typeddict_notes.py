"""LangChain's TypedDict field notes: `Annotated[T, default, "description"]`.

LangChain's `with_structured_output` reads such a field as optional when its
default is not `...`, and sends the description; Pydantic ignores both, so the
field was required and undescribed here, and an answer that left it out failed.
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, NotRequired, Optional

import pytest
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from langchain_structx._schemas.normalise import normalize
from langchain_structx.errors import OutputValidationError
from langchain_structx.runnables import with_structured_output
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call


class Joke(TypedDict):
    """Joke to tell user."""

    setup: Annotated[str, ..., "The setup of the joke"]
    punchline: Annotated[str, ..., "The punchline of the joke"]
    rating: Annotated[Optional[int], None, "How funny the joke is, from 1 to 10"]  # noqa: UP045


class Show(TypedDict):
    """A plain TypedDict that holds a noted one."""

    title: str
    jokes: list[Joke]


class Other(TypedDict):
    """Metadata of other kinds stays Pydantic's."""

    count: Annotated[int, Field(ge=0)]
    lone: Annotated[str, "a lone value: LangChain reads it as a default"]
    later: NotRequired[Annotated[str, ..., "NotRequired wins over ..."]]


def _properties(schema: dict) -> dict:
    return {k: v.get("description") for k, v in schema["properties"].items()}


def test_the_schema_has_langchains_required_keys_and_descriptions():
    ours = normalize(Joke).variants[0].json_schema
    stock = convert_to_openai_tool(Joke)["function"]["parameters"]

    assert sorted(ours["required"]) == sorted(stock["required"]) == ["punchline", "setup"]
    assert _properties(ours) == _properties(stock)
    assert ours["description"] == "Joke to tell user."


class Order(TypedDict):
    """An order."""

    item: Annotated[str, ..., "What to buy"]
    count: Annotated[int, 7, "How many"]
    tags: Annotated[list[str], ["new"], "Labels"]
    odd: Annotated[float, float("nan"), "No JSON default: none is sent"]


def test_the_defaults_are_sent_as_langchain_sends_them():
    ours = normalize(Order).variants[0].json_schema["properties"]
    stock = convert_to_openai_tool(Order)["function"]["parameters"]["properties"]

    assert (
        {k: v.get("default") for k, v in ours.items() if k != "odd"}
        == {k: v.get("default") for k, v in stock.items() if k != "odd"}
        == {"item": None, "count": 7, "tags": ["new"]}
    )
    assert "default" not in ours["odd"]
    assert _properties({"properties": ours}) == _properties({"properties": stock})
    # The answer is taken as written: a TypedDict has no defaults to fill in.
    assert normalize(Order).variants[0].validate({"item": "tea"}) == {"item": "tea"}


def test_a_noted_optional_field_may_be_left_out_and_a_required_one_may_not():
    variant = normalize(Joke).variants[0]

    assert variant.validate({"setup": "Why?", "punchline": "Because."}) == {
        "setup": "Why?",
        "punchline": "Because.",
    }
    assert variant.validate({"setup": "a", "punchline": "b", "rating": 7})["rating"] == 7
    with pytest.raises(OutputValidationError, match="punchline"):
        variant.validate({"setup": "Why?"})


def test_a_noted_typeddict_inside_a_plain_one_is_read_too():
    variant = normalize(Show).variants[0]
    jokes = variant.json_schema["$defs"]["Joke"]

    assert sorted(jokes["required"]) == ["punchline", "setup"]
    value = {"title": "Late", "jokes": [{"setup": "a", "punchline": "b"}]}
    assert variant.validate(value) == value


def test_other_metadata_keeps_its_meaning():
    variant = normalize(Other).variants[0]
    schema = variant.json_schema

    assert schema["properties"]["count"]["minimum"] == 0
    assert sorted(schema["required"]) == ["count", "lone"]
    assert schema["properties"]["later"]["description"] == "NotRequired wins over ..."
    with pytest.raises(OutputValidationError, match="count"):
        variant.validate({"count": -1, "lone": "x"})


def test_the_runnable_takes_an_answer_without_the_optional_field_in_one_call():
    answer = {"setup": "Why?", "punchline": "Because."}
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("Joke", answer, id="c1")])]
    )

    result = with_structured_output(model, ToolStrategy(Joke), include_raw=True).invoke("A joke")

    assert result["parsed"] == answer and result["parsing_error"] is None
    assert len(model.calls) == 1
    sent = model.calls[0].tools[0]["function"]["parameters"]
    assert sorted(sent["required"]) == ["punchline", "setup"]
    assert json.dumps(sent).count("The setup of the joke") == 1


class StdlibNote(typing.TypedDict):
    """A stdlib TypedDict, its annotations strings under `from __future__ import annotations`."""

    name: str
    nick: NotRequired[str]


def test_a_stdlib_typeddict_keeps_its_not_required_keys():
    # Python 3.11 rebuilds it for Pydantic; its `__required_keys__` counted the
    # string `NotRequired[str]` as required, so the rebuild required `nick`.
    variant = normalize(StdlibNote).variants[0]

    assert variant.json_schema["required"] == ["name"]
    assert variant.validate({"name": "Ada"}) == {"name": "Ada"}


@with_config(ConfigDict(extra="forbid", str_strip_whitespace=True))
class Configured(typing.TypedDict):
    """A TypedDict with Pydantic settings, rebuilt (stdlib on 3.11, and noted)."""

    name: str
    email: Annotated[str, ..., "The e-mail address"]


def test_a_rebuilt_typeddict_keeps_its_pydantic_settings():
    # The rebuild dropped `@with_config`: extra keys went through unnoticed and
    # whitespace stayed, where Pydantic itself refuses and strips.
    variant = normalize(Configured).variants[0]

    assert variant.json_schema["additionalProperties"] is False
    assert variant.validate({"name": "  Ada  ", "email": "a@x.org"})["name"] == "Ada"
    with pytest.raises(OutputValidationError, match="phone"):
        variant.validate({"name": "Ada", "email": "a@x.org", "phone": "123"})


class Closed(TypedDict, closed=True):  # type: ignore[call-arg]
    """No keys but its own."""

    name: Annotated[str, ..., "The name"]


class Counted(TypedDict, extra_items=int):  # type: ignore[call-arg]
    """Extra keys hold counts."""

    name: Annotated[str, ..., "The name"]


@pytest.mark.parametrize(("schema", "extra"), [(Closed, False), (Counted, {"type": "integer"})])
def test_a_noted_typeddict_keeps_what_it_says_of_extra_keys(schema: type, extra: object) -> None:
    # PEP 728: the notes rebuild the class, which dropped `closed` and `extra_items`,
    # and an extra key was taken and silently left out of the answer.
    variant = normalize(schema).variants[0]
    assert variant.json_schema["additionalProperties"] == extra
    assert variant.json_schema["properties"]["name"]["description"] == "The name"
    with pytest.raises(OutputValidationError, match=r"\$\.other"):
        variant.validate({"name": "Ada", "other": "x"})
    assert variant.validate({"name": "Ada"}) == {"name": "Ada"}
