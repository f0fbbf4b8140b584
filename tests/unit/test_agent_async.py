"""The same behaviours through ainvoke; sync and async runs give identical results."""

import asyncio

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_structx.errors import (
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    TruncatedOutputError,
)
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import (
    AutoStrategy,
    ErrorContext,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
)
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
NATIVE = {"structured_output": True, "tool_calling": True}
PLAIN = {"structured_output": False, "tool_calling": False}
USAGE = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}


class Contact(BaseModel):
    name: str
    age: int


class Event(BaseModel):
    title: str


class BadRequest(Exception):
    status_code = 400


searched: list[str] = []


@tool
def search(query: str) -> str:
    """Search the directory."""
    searched.append(query)
    return f"found {query}"


def call(name, args, id):
    return AIMessage("", tool_calls=[tool_call(name, args, id=id)], usage_metadata=USAGE)


def good(id="g1"):
    return call("Contact", {"name": "Ada", "age": 36}, id)


SCENARIOS = {
    "tool-happy": (ToolStrategy(Contact), None, lambda: [good()]),
    "tool-retry": (
        ToolStrategy(Contact),
        None,
        lambda: [call("Contact", {"name": "Ada"}, "b1"), good()],
    ),
    "tool-union": (
        ToolStrategy(Contact | Event),
        None,
        lambda: [call("Event", {"title": "T"}, "e")],
    ),
    "tool-prose": (ToolStrategy(Contact), None, lambda: ["prose", good()]),
    "tool-multiple": (
        ToolStrategy(Contact | Event),
        None,
        lambda: [
            AIMessage(
                "",
                tool_calls=[
                    tool_call("Contact", {"name": "A", "age": 1}, id="m1"),
                    tool_call("Event", {"title": "x"}, id="m2"),
                ],
            ),
            good(),
        ],
    ),
    "tool-mixed": (
        ToolStrategy(Contact),
        None,
        lambda: [
            AIMessage(
                "",
                tool_calls=[
                    tool_call("search", {"query": "ada"}, id="s1"),
                    tool_call("Contact", {"name": "Ada"}, id="c1"),
                ],
            ),
            good(),
        ],
    ),
    "provider-repair": (
        ProviderStrategy(Contact),
        NATIVE,
        lambda: ["```json\n{'name': 'Ada', 'age': '36',}\n```"],
    ),
    "provider-union": (
        ProviderStrategy(Contact | Event),
        NATIVE,
        lambda: ['{"kind": "Event", "data": {"title": "T"}}'],
    ),
    "prompted-retry": (PromptedStrategy(Contact), PLAIN, lambda: ["no", '{"name":"Ada","age":36}']),
    "auto-fallback": (
        AutoStrategy(Contact),
        NATIVE,
        lambda: [BadRequest("response_format unsupported"), good()],
    ),
}


def stable(result):
    """What must match between sync and async: everything but generated ids."""
    messages = [
        (m.type, m.content, [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])])
        for m in result["messages"]
    ]
    return (
        result["structured_response"],
        result["structured_response_kind"],
        result["structured_output_report"],
        messages,
    )


def sent(model):
    return [
        ([(m.type, m.content) for m in c.messages], c.tool_choice, c.response_format)
        for c in model.calls
    ]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("factory", ["ours", "middleware"])
async def test_sync_and_async_runs_are_identical(scenario, factory):
    strategy, profile, script = SCENARIOS[scenario]
    extra = {"profile": profile} if profile else {}
    sync_model = ScriptedChatModel(responses=script(), **extra)
    async_model = ScriptedChatModel(responses=script(), **extra)

    def build(model):
        if factory == "ours":
            return create_agent(model, [search], response_format=strategy)
        return langchain_create_agent(
            model, [search], middleware=[StructuredOutputMiddleware(strategy)]
        )

    sync_result = await asyncio.to_thread(build(sync_model).invoke, ASK)
    async_result = await build(async_model).ainvoke(ASK)

    assert stable(sync_result) == stable(async_result)
    assert sent(sync_model) == sent(async_model)
    assert async_result["structured_response"] is not None


async def test_async_mixed_call_runs_the_ordinary_tool():
    searched.clear()
    _, _, script = SCENARIOS["tool-mixed"]
    model = ScriptedChatModel(responses=script())

    result = await create_agent(model, [search], response_format=ToolStrategy(Contact)).ainvoke(ASK)

    assert searched == ["ada"]
    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert len(model.calls) == 2


async def test_async_retry_error_matches_sync():
    def script():
        return [call("Contact", {"name": "Ada"}, f"b{i}") for i in range(5)]

    errors = []
    for runner in ("sync", "async"):
        model = ScriptedChatModel(responses=script())
        agent = create_agent(model, response_format=ToolStrategy(Contact, max_retries=2))
        with pytest.raises(StructuredOutputRetryError) as info:
            if runner == "sync":
                await asyncio.to_thread(agent.invoke, ASK)
            else:
                await agent.ainvoke(ASK)
        assert len(model.calls) == 3
        errors.append(info.value)

    sync_error, async_error = errors
    assert str(sync_error) == str(async_error)
    assert (
        sync_error.usage
        == async_error.usage
        == {
            "input_tokens": 9,
            "output_tokens": 6,
            "total_tokens": 15,
        }
    )
    assert [str(e) for e in sync_error.errors] == [str(e) for e in async_error.errors]


@pytest.mark.parametrize(
    ("script", "error"),
    [
        (
            [AIMessage("", additional_kwargs={"refusal": "No."}), "unused"],
            StructuredOutputRefusal,
        ),
        (
            [
                AIMessage(
                    "",
                    invalid_tool_calls=[
                        {"type": "invalid_tool_call", "name": "Contact", "args": '{"n', "id": i}
                    ],
                    response_metadata={"finish_reason": "length"},
                )
                for i in ("t1", "t2")
            ],
            TruncatedOutputError,
        ),
    ],
    ids=["refusal", "truncation"],
)
async def test_async_typed_errors(script, error):
    model = ScriptedChatModel(responses=script)

    with pytest.raises(error):
        await create_agent(model, response_format=ToolStrategy(Contact)).ainvoke(ASK)

    assert len(model.calls) == (1 if error is StructuredOutputRefusal else 2)


async def test_async_handler_is_awaited_in_async_runs():
    loops = []

    async def handler(error: Exception, context: ErrorContext) -> str:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return "retry please"

    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada"}, "b"), good()])

    await create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler)).ainvoke(
        ASK
    )

    assert loops == [asyncio.get_running_loop()]
    assert model.calls[1].messages[-1].content == "retry please"


def test_async_handler_from_sync_invoke_inside_a_running_loop():
    async def handler(error: Exception) -> str:
        await asyncio.sleep(0)
        return "from a coroutine"

    model = ScriptedChatModel(responses=[call("Contact", {"name": "Ada"}, "b"), good()])
    agent = create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))

    async def main():
        # A sync invoke from code that already runs an event loop.
        return agent.invoke(ASK)

    result = asyncio.run(main())

    assert result["structured_response"] == Contact(name="Ada", age=36)
    assert model.calls[1].messages[-1].content == "from a coroutine"


async def test_concurrent_ainvokes_keep_their_own_reports():
    def reply(messages, recorded):
        name = messages[-1].content
        return call("Contact", {"name": name, "age": len(name)}, f"id-{name}")

    model = ScriptedChatModel(responses=[reply] * 20)
    agent = create_agent(model, response_format=ToolStrategy(Contact))

    names = [f"person{i}" for i in range(20)]
    results = await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage(n)]}) for n in names))

    assert [r["structured_response"].name for r in results] == names
    assert all(r["structured_output_report"]["attempts"] == 1 for r in results)
