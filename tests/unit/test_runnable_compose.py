"""with_structured_output: attempt labels in traces, LangChain's methods, composition."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import structured_output as lc
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel
from trace_recording import Recorder

from langchain_structx import with_structured_output
from langchain_structx.errors import (
    StructuredOutputFailure,
    StructuredOutputRetryError,
    UserError,
)
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

MODES = ["sync", "async"]
NATIVE = {"structured_output": True, "tool_calling": True}
CITY_JSON = '{"name": "Oslo"}'


class City(BaseModel):
    name: str


class Event(BaseModel):
    title: str


def city_call(name: Any = "Oslo", id: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("City", {"name": name}, id=id)])


async def invoke(mode: str, runnable: Any, value: Any, config: Any = None) -> Any:
    if mode == "sync":
        return runnable.invoke(value, config)
    return await runnable.ainvoke(value, config)


async def stream_last(mode: str, runnable: Any, value: Any, config: Any = None) -> Any:
    if mode == "sync":
        return list(runnable.stream(value, config))[-1]
    return [item async for item in runnable.astream(value, config)][-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["invoke", "stream"])
async def test_every_model_call_is_labelled_with_attempt_and_strategy(mode: str, how: str) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])
    recorder = Recorder()
    runner = invoke if how == "invoke" else stream_last
    result = await runner(
        mode, with_structured_output(model, City), "Norway?", {"callbacks": [recorder]}
    )
    assert result == City(name="Oslo")
    attempts = [meta["structx_attempt"] for _, meta in recorder.models]
    assert attempts == [1, 2]
    assert {meta["structx_strategy"] for _, meta in recorder.models} == {"tool"}
    assert {meta["structx_variant"] for _, meta in recorder.models} == {"City"}
    tags = recorder.models[1][0]
    assert "structx:attempt:2" in tags and "structx:strategy:tool" in tags
    assert "structx:attempt:1" not in tags
    # LangChain's own structured-output record, which LangSmith shows with the run.
    traced = recorder.options[0]["ls_structured_output_format"]
    assert traced["kwargs"] == {"method": "function_calling"}
    assert traced["schema"]["title"] == "City"


@pytest.mark.parametrize("mode", MODES)
async def test_a_union_run_leaves_the_variant_unlabelled(mode: str) -> None:
    event = AIMessage("", tool_calls=[tool_call("Event", {"title": "Launch"})])
    model = ScriptedChatModel(responses=[event])
    recorder = Recorder()
    runnable = with_structured_output(model, City | Event)
    await invoke(mode, runnable, "When?", {"callbacks": [recorder]})
    assert "structx_variant" not in recorder.models[0][1]
    assert recorder.models[0][1]["structx_attempt"] == 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_report_is_sent_as_a_custom_event(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])
    recorder = Recorder()
    await invoke(mode, with_structured_output(model, City), "Norway?", {"callbacks": [recorder]})
    [(name, report)] = recorder.custom
    assert name == "structured_output_report"
    assert report["attempts"] == 2 and len(report["errors"]) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_with_config_reaches_our_run_and_every_model_call(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])
    recorder = Recorder()
    runnable = with_structured_output(model, City).with_config(
        run_name="extract_city", tags=["mine"], metadata={"tenant": "t1"}, callbacks=[recorder]
    )
    assert await invoke(mode, runnable, "Norway?") == City(name="Oslo")
    assert recorder.chains[0] == "extract_city"
    assert len(recorder.models) == 2
    for tags, metadata in recorder.models:
        assert "mine" in tags and metadata["tenant"] == "t1"


@pytest.mark.parametrize("mode", MODES)
async def test_with_retry_runs_the_whole_structured_run_again(mode: str) -> None:
    model = ScriptedChatModel(responses=["prose", city_call()])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=0)).with_retry(
        retry_if_exception_type=(StructuredOutputRetryError,),
        stop_after_attempt=2,
        wait_exponential_jitter=False,
    )
    assert await invoke(mode, runnable, "Norway?") == City(name="Oslo")
    assert len(model.calls) == 2
    # The retry is a fresh run: it does not carry the failed attempt's feedback.
    assert len(model.calls[1].messages) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_with_fallbacks_moves_to_another_runnable_on_failure(mode: str) -> None:
    broken = ScriptedChatModel(responses=["prose"])
    backup = ScriptedChatModel(responses=[CITY_JSON])
    primary = with_structured_output(broken, ToolStrategy(City, max_retries=0))
    secondary = with_structured_output(backup, City, method="json_mode")
    runnable = primary.with_fallbacks([secondary], exceptions_to_handle=(StructuredOutputFailure,))
    assert await invoke(mode, runnable, "Norway?") == City(name="Oslo")
    assert len(broken.calls) == 1 and len(backup.calls) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_it_composes_in_a_chain(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(), city_call(id="c2")])
    prompt = ChatPromptTemplate.from_messages([("human", "Capital of {country}?")])
    chain = prompt | with_structured_output(model, City) | RunnableLambda(lambda c: c.name)
    assert await invoke(mode, chain, {"country": "Norway"}) == "Oslo"
    assert await stream_last(mode, chain, {"country": "Norway"}) == "Oslo"
    assert model.calls[0].messages[0].content == "Capital of Norway?"


@pytest.mark.parametrize("mode", MODES)
async def test_function_calling_binds_one_tool(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call()], profile=NATIVE)
    runnable = with_structured_output(model, City, method="function_calling")
    assert await invoke(mode, runnable, "Norway?") == City(name="Oslo")
    call = model.calls[0]
    assert [t["function"]["name"] for t in call.tools] == ["City"]
    assert call.response_format is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strict", [None, True])
async def test_json_schema_asks_for_native_output(mode: str, strict: bool | None) -> None:
    model = ScriptedChatModel(responses=[CITY_JSON])
    runnable = with_structured_output(model, City, method="json_schema", strict=strict)
    assert await invoke(mode, runnable, "Norway?") == City(name="Oslo")
    response_format = model.calls[0].response_format
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"].get("strict") is strict
    assert model.calls[0].tools == []


@pytest.mark.parametrize("mode", MODES)
async def test_json_mode_prompts_with_the_schema_in_one_system_message(mode: str) -> None:
    model = ScriptedChatModel(responses=[f"Here: {CITY_JSON}"])
    runnable = with_structured_output(model, City, method="json_mode")
    result = await invoke(mode, runnable, [("system", "Be brief."), ("human", "Norway?")])
    assert result == City(name="Oslo")
    call = model.calls[0]
    assert call.response_format == {"type": "json_object"}
    system = [m for m in call.messages if m.type == "system"]
    assert len(system) == 1 and call.messages[0] is system[0]
    assert str(system[0].content).startswith("Be brief.") and "name" in str(system[0].content)


@pytest.mark.parametrize("mode", MODES)
async def test_no_method_picks_like_auto_strategy(mode: str) -> None:
    native = ScriptedChatModel(responses=[CITY_JSON], profile=NATIVE)
    assert await invoke(mode, with_structured_output(native, City), "Norway?") == City(name="Oslo")
    assert native.calls[0].response_format["type"] == "json_schema"
    tools_only = ScriptedChatModel(responses=[city_call()])
    assert await invoke(mode, with_structured_output(tools_only, City), "x") == City(name="Oslo")
    assert tools_only.calls[0].tools


@pytest.mark.parametrize(
    "strategy",
    [
        ProviderStrategy(City),
        PromptedStrategy(City),
        lc.ProviderStrategy(City),
    ],
)
def test_a_strategy_object_is_used_as_it_is(strategy: Any) -> None:
    model = ScriptedChatModel(responses=[CITY_JSON], profile=NATIVE)
    assert with_structured_output(model, strategy).invoke("Norway?") == City(name="Oslo")
    call = model.calls[0]
    assert call.tools == []
    assert (call.response_format is not None) == (not isinstance(strategy, PromptedStrategy))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "xml"}, "Unknown method"),
        ({"method": "json_mode", "strict": True}, "strict=True"),
        ({"method": "function_calling", "strict": True}, "strict=True"),
    ],
)
def test_unusable_options_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        with_structured_output(ScriptedChatModel(), City, **kwargs)


def test_method_next_to_a_strategy_is_refused() -> None:
    with pytest.raises(UserError, match="strategy object"):
        with_structured_output(ScriptedChatModel(), ToolStrategy(City), method="json_schema")


def test_only_chat_models_are_accepted() -> None:
    with pytest.raises(UserError, match="chat model"):
        with_structured_output(RunnableLambda(lambda x: x), City)  # type: ignore[arg-type]


def test_the_runnable_declares_its_types() -> None:
    runnable: Any = with_structured_output(ScriptedChatModel(), City)
    assert runnable.OutputType is City
    assert runnable.get_name() == "StructuredOutput"
    raw: Any = with_structured_output(ScriptedChatModel(), City, include_raw=True)
    assert raw.OutputType is dict
    assert raw.InputType is LanguageModelInput


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        ({"type": "array", "items": {"type": "integer"}}, [1, 22, 333, 4444, 55555, 666666]),
        ({"type": "string"}, "hello world, a long string to stream in many pieces"),
    ],
    ids=["array", "string"],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_chain_after_a_streamed_non_object_answer_gets_the_answer(
    schema: dict[str, Any], answer: Any, mode: str
) -> None:
    # LangChain adds up streamed chunks with `+`: growing lists and strings were
    # joined end to end, and the next step got a value no attempt produced.
    seen: list[Any] = []
    # The tool strategy sends a non-object root wrapped in an object, and shows
    # partials of what it wraps.
    reply = AIMessage("", tool_calls=[tool_call("Out", {"value": answer}, id="c1")])
    model = ScriptedChatModel(responses=[reply])
    chain = with_structured_output(model, ToolStrategy({"title": "Out", **schema})) | (
        RunnableLambda(lambda value: seen.append(value) or value)
    )

    if mode == "sync":
        items = list(chain.stream("Go"))
    else:
        items = [item async for item in chain.astream("Go")]

    assert seen == [answer]
    assert items[-1] == answer


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_models_chained_with_fallbacks_are_each_asked_in_turn(mode: str) -> None:
    # LangChain's `model.with_fallbacks([...]).with_structured_output(...)` asks each
    # model in turn; ours refused the chain.
    from langchain_structx.errors import StructuredOutputRetryError

    failing = ScriptedChatModel(responses=["no idea", "still no idea"])
    backup = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("City", {"name": "Oslo"}, id="c1")])]
    )
    runnable = with_structured_output(
        failing.with_fallbacks([backup]), ToolStrategy(City, max_retries=1)
    )

    result = runnable.invoke("Oslo?") if mode == "sync" else await runnable.ainvoke("Oslo?")

    assert result == City(name="Oslo")
    assert len(failing.calls) == 2 and len(backup.calls) == 1
    assert backup.calls[0].tools[0]["function"]["name"] == "City"
    # Only the errors it names hand over to the next model.
    only_other = with_structured_output(
        ScriptedChatModel(responses=["no idea"]).with_fallbacks(
            [backup], exceptions_to_handle=(KeyError,)
        ),
        ToolStrategy(City, max_retries=0),
    )
    with pytest.raises(StructuredOutputRetryError):
        only_other.invoke("Oslo?")
