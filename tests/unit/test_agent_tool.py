"""ToolStrategy in agents: LangChain semantics, one tool per variant, final state."""

import asyncio
import dataclasses
from typing import Any

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel
from typing_extensions import TypedDict

from langchain_structx.errors import DialectError, StructuredOutputRetryError
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call


class Contact(BaseModel):
    """A person to reach."""

    name: str
    age: int


class Event(BaseModel):
    title: str


@dataclasses.dataclass
class ContactDC:
    name: str
    age: int


class ContactTD(TypedDict):
    name: str
    age: int


CONTACT_DICT = {
    "title": "ContactJS",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def call(name: str, args: dict[str, Any], id: str = "c1") -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, id=id)])


def build(factory: str, model, response_format, tools=None, **kwargs):
    if factory == "ours":
        return create_agent(model, tools, response_format=response_format, **kwargs)
    middleware = [StructuredOutputMiddleware(response_format)]
    return langchain_create_agent(model, tools, middleware=middleware, **kwargs)


FACTORIES = pytest.mark.parametrize("factory", ["ours", "middleware"])
ASK = {"messages": [HumanMessage("Who is Ada?")]}


@FACTORIES
def test_happy_path_final_state(factory):
    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada", "age": 36})])
    agent = build(factory, model, ToolStrategy(Contact))

    result = agent.invoke(ASK)

    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert result["structured_response_kind"] == "Contact"
    assert result["structured_output_report"] == {
        "strategy": "tool",
        "variant": "Contact",
        "attempts": 1,
        "repairs": [],
        "fallbacks": [],
        "errors": [],
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    }
    assert len(model.calls) == 1
    assert "structx_progress" not in result


@FACTORIES
def test_default_tool_message_repeats_the_value(factory):
    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada", "age": 36}, id="c9")])

    result = build(factory, model, ToolStrategy(Contact)).invoke(ASK)

    messages = result["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool"]
    reply = messages[-1]
    assert isinstance(reply, ToolMessage)
    assert reply.content == "Returning structured response: name='Ada' age=36"
    assert reply.tool_call_id == "c9"
    assert reply.name == "Contact"


def test_tool_message_matches_langchain_for_the_same_script():
    script = [call("Contact", {"name": "Ada", "age": 36})]
    ours = ScriptedChatModel(responses=script)
    theirs = ScriptedChatModel(responses=script)

    mine = create_agent(ours, response_format=ToolStrategy(Contact)).invoke(ASK)
    stock = langchain_create_agent(theirs, response_format=lc.ToolStrategy(Contact)).invoke(ASK)

    assert mine["structured_response"] == stock["structured_response"]
    assert [m.type for m in mine["messages"]] == [m.type for m in stock["messages"]]
    assert mine["messages"][-1].content == stock["messages"][-1].content
    # Deliberate: with one structured tool and none of the user's, we name it
    # (servers speaking OpenAI's protocol may ignore "any"/"required").
    assert ours.calls[0].tool_choice == "Contact"
    assert theirs.calls[0].tool_choice == "any"


def test_custom_tool_message_content():
    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada", "age": 36})])

    result = create_agent(
        model, response_format=ToolStrategy(Contact, tool_message_content="Saved.")
    ).invoke(ASK)

    assert result["messages"][-1].content == "Saved."


def test_one_tool_per_variant_with_forced_choice():
    model = ScriptedChatModel(responses=[call("Event", {"title": "Launch"})])

    result = create_agent(model, response_format=ToolStrategy(Contact | Event)).invoke(ASK)

    sent = model.calls[0]
    assert [t["function"]["name"] for t in sent.tools] == ["Contact", "Event"]
    assert sent.tool_choice == "any"
    assert sent.response_format is None
    assert result["structured_response"] == Event(title="Launch")
    assert result["structured_response_kind"] == "Event"
    assert result["structured_output_report"]["variant"] == "Event"


def test_tool_definitions_carry_descriptions_and_parameters():
    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada", "age": 1})])

    create_agent(model, response_format=ToolStrategy(Contact | Event)).invoke(ASK)

    contact, event = (t["function"] for t in model.calls[0].tools)
    assert contact["description"] == "A person to reach."
    assert event["description"] == "Return the answer as Event."
    assert contact["parameters"]["required"] == ["name", "age"]
    assert contact["parameters"]["properties"]["age"]["type"] == "integer"
    assert "title" not in contact["parameters"]


@pytest.mark.parametrize(
    ("schema", "name", "expected"),
    [
        (Contact, "Contact", Contact(name="Ada", age=3)),
        (ContactDC, "ContactDC", ContactDC(name="Ada", age=3)),
        (ContactTD, "ContactTD", {"name": "Ada", "age": 3}),
        (CONTACT_DICT, "ContactJS", {"name": "Ada", "age": 3}),
    ],
    ids=["pydantic", "dataclass", "typeddict", "dict"],
)
def test_structured_response_type_follows_the_schema_kind(schema, name, expected):
    model = ScriptedChatModel(responses=[call(name, {"name": "Ada", "age": 3})])

    result = create_agent(model, response_format=ToolStrategy(schema)).invoke(ASK)

    value = result["structured_response"]
    assert value == expected
    assert type(value) is type(expected)
    assert result["structured_response_kind"] == name


searched: list[str] = []


@tool
def search(query: str) -> str:
    """Search the directory."""
    searched.append(query)
    return f"found {query}"


@FACTORIES
def test_ordinary_tool_runs_before_the_structured_answer(factory):
    searched.clear()
    model = ScriptedChatModel(
        responses=[
            call("search", {"query": "ada"}, id="s1"),
            call("Contact", {"name": "Ada", "age": 36}, id="c1"),
        ]
    )

    result = build(factory, model, ToolStrategy(Contact), tools=[search]).invoke(ASK)

    assert searched == ["ada"]
    assert len(model.calls) == 2
    assert [t["function"]["name"] for t in model.calls[0].tools] == ["search", "Contact"]
    assert [m.type for m in model.calls[1].messages] == ["human", "ai", "tool"]
    assert model.calls[1].messages[-1].content == "found ada"
    assert result["structured_response"] == Contact(name="Ada", age=36)
    report = result["structured_output_report"]
    # A turn spent on ordinary tools is not a structured-output attempt.
    assert report["attempts"] == 1
    assert report["errors"] == []


def test_valid_structured_call_beside_an_ordinary_call_runs_the_tool_and_ends():
    searched.clear()
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    tool_call("search", {"query": "ada"}, id="s1"),
                    tool_call("Contact", {"name": "Ada", "age": 36}, id="c1"),
                ],
            )
        ]
    )

    result = create_agent(model, [search], response_format=ToolStrategy(Contact)).invoke(ASK)

    assert searched == ["ada"]
    assert len(model.calls) == 1
    assert result["structured_response"] == Contact(name="Ada", age=36)
    tool_replies = {m.tool_call_id: m.content for m in result["messages"] if m.type == "tool"}
    assert tool_replies == {
        "c1": "Returning structured response: name='Ada' age=36",
        "s1": "found ada",
    }


def test_langchain_tool_strategy_object_is_accepted():
    model = ScriptedChatModel(
        responses=[call("Contact", {"name": "Ada", "age": 36})],
    )

    result = create_agent(
        model, response_format=lc.ToolStrategy(Contact, tool_message_content="ok")
    ).invoke(ASK)

    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert result["messages"][-1].content == "ok"
    assert result["structured_output_report"]["strategy"] == "tool"


def test_langchain_tool_strategy_gets_a_retry_bound():
    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada"})] * 10)

    with pytest.raises(StructuredOutputRetryError):
        create_agent(model, response_format=lc.ToolStrategy(Contact)).invoke(ASK)

    assert len(model.calls) == 4


def test_usage_is_summed_over_attempts():
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[tool_call("Contact", {"name": "A"})], usage_metadata=usage),
            AIMessage(
                "", tool_calls=[tool_call("Contact", {"name": "A", "age": 1})], usage_metadata=usage
            ),
        ]
    )

    result = create_agent(model, response_format=ToolStrategy(Contact)).invoke(ASK)

    assert result["structured_output_report"]["usage"] == {
        "input_tokens": 20,
        "output_tokens": 10,
        "total_tokens": 30,
    }


@FACTORIES
def test_earlier_structured_response_does_not_leak_into_a_later_turn(factory):
    model = ScriptedChatModel(
        responses=[
            call("Contact", {"name": "Ada", "age": 36}, id="c1"),
            call("Contact", {"name": "Bob"}, id="c2"),
        ]
    )
    agent = build(
        factory, model, ToolStrategy(Contact, max_retries=0), checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t1"}}

    first = agent.invoke(ASK, config)
    assert first["structured_response"] == Contact(name="Ada", age=36)

    with pytest.raises(StructuredOutputRetryError):
        agent.invoke({"messages": [HumanMessage("And Bob?")]}, config)

    state = agent.get_state(config).values
    assert state.get("structured_response") is None
    assert state.get("structured_response_kind") is None
    assert state.get("structured_output_report") is None


def test_second_turn_gets_its_own_response_and_report():
    model = ScriptedChatModel(
        responses=[
            call("Contact", {"name": "Ada", "age": 36}, id="c1"),
            call("Event", {"title": "Launch"}, id="e1"),
        ]
    )
    agent = create_agent(
        model, response_format=ToolStrategy(Contact | Event), checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t2"}}

    agent.invoke(ASK, config)
    second = agent.invoke({"messages": [HumanMessage("Any events?")]}, config)

    assert second["structured_response"] == Event(title="Launch")
    assert second["structured_response_kind"] == "Event"
    assert second["structured_output_report"]["attempts"] == 1
    # The second call sees the whole conversation of the first turn.
    assert [m.type for m in model.calls[1].messages] == ["human", "ai", "tool", "human"]


@pytest.mark.parametrize("schema", [Contact, ContactTD, CONTACT_DICT], ids=["model", "td", "dict"])
def test_the_tool_bound_is_the_one_langchain_binds(schema: Any) -> None:
    name = schema["title"] if isinstance(schema, dict) else schema.__name__
    args = {"name": "Ada", "age": 36}
    ours = ScriptedChatModel(responses=[call(name, args)])
    stock = ScriptedChatModel(responses=[call(name, args)])

    create_agent(ours, response_format=ToolStrategy(schema)).invoke(ASK)
    langchain_create_agent(stock, response_format=lc.ToolStrategy(schema)).invoke(ASK)

    ((mine,), (theirs,)) = ours.calls[0].tools, stock.calls[0].tools
    assert mine["function"]["parameters"] == theirs["function"]["parameters"]
    assert mine["function"]["name"] == theirs["function"]["name"] == name
    # Only Contact has a description; for the others ours is a default, LangChain's empty.
    if schema is Contact:
        assert mine == theirs


def _answers(beside_a_tool: bool) -> list[AIMessage]:
    first = call("Contact", {"name": "Ada", "age": 36}, id="c1")
    if beside_a_tool:
        first.tool_calls.append(tool_call("search", {"query": "ada"}, id="s1"))
    return [first, call("Contact", {"name": "Bob", "age": 41}, id="c2")]


def _on_a_thread(factory: str, model: ScriptedChatModel) -> Any:
    options: dict[str, Any] = {"tools": [search], "checkpointer": InMemorySaver()}
    if factory == "langchain":
        return langchain_create_agent(model, response_format=lc.ToolStrategy(Contact), **options)
    if factory == "router":
        ours = StructuredOutputMiddleware(ToolStrategy(Contact))
        return langchain_create_agent(model, middleware=[ours.retry_router(), ours], **options)
    return build(factory, model, ToolStrategy(Contact), **options)


@pytest.mark.parametrize("factory", ["langchain", "ours", "middleware", "router"])
@pytest.mark.parametrize("beside_a_tool", [False, True], ids=["alone", "beside-a-tool"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_invoking_a_finished_thread_with_no_new_message_asks_the_model_again(
    factory: str, beside_a_tool: bool, mode: str
) -> None:
    model = ScriptedChatModel(responses=_answers(beside_a_tool))
    agent = _on_a_thread(factory, model)
    config = {"configurable": {"thread_id": "t3"}}

    def invoke(payload: dict[str, Any]) -> dict[str, Any]:
        if mode == "async":
            return asyncio.run(agent.ainvoke(payload, config))
        return agent.invoke(payload, config)

    first = invoke(ASK)
    again = invoke({"messages": []})

    assert first["structured_response"] == Contact(name="Ada", age=36)
    # LangChain's agent calls its model again on the same conversation; so does ours.
    assert again["structured_response"] == Contact(name="Bob", age=41)
    assert len(model.calls) == 2
    assert [m.type for m in again["messages"]][-2:] == ["ai", "tool"]
    if factory != "langchain":  # a new run, with its own report
        assert again["structured_output_report"]["attempts"] == 1


class 联系人(BaseModel):  # noqa: N801 - a class named in another script
    """一个人的联系方式。"""

    姓名: str


def test_a_class_named_in_another_script_gets_a_tool_name_providers_take():
    model = ScriptedChatModel(responses=[call("response_format", {"姓名": "李雷"})])

    result = create_agent(model, response_format=ToolStrategy(联系人)).invoke(ASK)

    assert result["structured_response"] == 联系人(姓名="李雷")
    assert result["structured_response_kind"] == "response_format"
    [tool] = model.calls[0].tools
    assert tool["function"]["name"] == "response_format"
    assert tool["function"]["description"] == "一个人的联系方式。"


def _referring(ref: str, **defs: Any) -> dict[str, Any]:
    return {
        "title": "Tagged",
        "type": "object",
        "properties": {"tag": {"$ref": ref}},
        "required": ["tag"],
        **defs,
    }


REFERENCE_FORMS = {
    "an anchor": _referring("#word", **{"$defs": {"w": {"$anchor": "word", "type": "string"}}}),
    "a draft-7 id": _referring("#word", definitions={"w": {"$id": "#word", "type": "string"}}),
    "an escaped pointer": _referring("#/$defs/a~1b", **{"$defs": {"a/b": {"type": "string"}}}),
    "an encoded pointer": _referring("#/$defs/a%20b", **{"$defs": {"a b": {"type": "string"}}}),
}


@pytest.mark.parametrize("form", list(REFERENCE_FORMS))
def test_a_reference_langchain_cannot_follow_reaches_the_model_as_a_pointer(form: str) -> None:
    # LangChain's tool conversion raised ValueError or KeyError on these when it
    # bound the tool, before any model call.
    schema = REFERENCE_FORMS[form]
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("Tagged", {"tag": "x"})])]
    )
    agent = create_agent(model, response_format=ToolStrategy(schema))

    state = agent.invoke({"messages": [HumanMessage("Tag it.")]})

    assert state["structured_response"] == {"tag": "x"}
    sent = model.calls[0].tools[0]["function"]["parameters"]
    assert sent["properties"]["tag"] == {"type": "string"}


def test_a_reference_to_another_resource_is_a_dialect_error_on_the_tool_route() -> None:
    schema = _referring(
        "https://example.com/word",
        **{"$defs": {"w": {"$id": "https://example.com/word", "type": "string"}}},
    )
    model = ScriptedChatModel(responses=[])
    agent = create_agent(model, response_format=ToolStrategy(schema))

    with pytest.raises(DialectError, match="example.com/word"):
        agent.invoke({"messages": [HumanMessage("Tag it.")]})
    assert model.calls == []
