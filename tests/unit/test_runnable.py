"""with_structured_output: every mode of the runnable, sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel

from langchain_structx import with_structured_output
from langchain_structx.errors import (
    MissingOutputError,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    UserError,
)
from langchain_structx.strategies import ToolStrategy
from langchain_structx.testing import RecordedCall, ScriptedChatModel, tool_call

MODES = ["sync", "async"]
LONG = "a note long enough to be streamed in many small pieces, one after another"


class City(BaseModel):
    name: str
    note: str = ""


class Event(BaseModel):
    title: str


def city_call(name: str = "Oslo", note: str = "", id: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("City", {"name": name, "note": note}, id=id)])


async def invoke(mode: str, runnable: Any, value: Any, config: Any = None) -> Any:
    if mode == "sync":
        return runnable.invoke(value, config)
    return await runnable.ainvoke(value, config)


async def stream(mode: str, runnable: Any, value: Any, config: Any = None) -> list[Any]:
    if mode == "sync":
        return list(runnable.stream(value, config))
    return [item async for item in runnable.astream(value, config)]


async def batch(mode: str, runnable: Any, values: list[Any]) -> list[Any]:
    if mode == "sync":
        return runnable.batch(values)  # type: ignore[no-any-return]
    return await runnable.abatch(values)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", MODES)
async def test_invoke_returns_the_validated_object(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call()])
    result = await invoke(mode, with_structured_output(model, City), "Capital of Norway?")
    assert result == City(name="Oslo")
    call = model.calls[0]
    assert [t["function"]["name"] for t in call.tools] == ["City"]
    assert call.tool_choice is not None
    assert call.messages == [HumanMessage("Capital of Norway?")]


@pytest.mark.parametrize("mode", MODES)
async def test_input_may_be_messages_or_a_prompt_value(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(), city_call()])
    runnable = with_structured_output(model, City)
    await invoke(mode, runnable, [("system", "Be brief."), ("human", "Norway?")])
    prompt = ChatPromptTemplate.from_messages([("system", "Be brief."), ("human", "{q}")])
    await invoke(mode, runnable, prompt.invoke({"q": "Norway?"}))
    for call in model.calls:
        assert [(m.type, m.content) for m in call.messages] == [
            ("system", "Be brief."),
            ("human", "Norway?"),
        ]


@pytest.mark.parametrize("mode", MODES)
async def test_an_invalid_answer_is_retried_with_feedback(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])  # type: ignore[arg-type]
    result = await invoke(mode, with_structured_output(model, City), "Norway?")
    assert result == City(name="Oslo")
    retry = model.calls[1].messages
    assert isinstance(retry[-1], ToolMessage)
    assert "name" in str(retry[-1].content)


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_that_never_validates_raises(mode: str) -> None:
    model = ScriptedChatModel(responses=["no JSON here"] * 2)
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=1))
    with pytest.raises(StructuredOutputRetryError) as caught:
        await invoke(mode, runnable, "Norway?")
    assert caught.value.n_attempts == 2
    assert model.remaining == 0


@pytest.mark.parametrize("mode", MODES)
async def test_stream_yields_growing_partials_then_the_object(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(note=LONG)])
    items = await stream(mode, with_structured_output(model, City), "Norway?")
    *partials, last = items
    assert last == City(name="Oslo", note=LONG)
    assert len(partials) >= 3
    assert all(isinstance(p, dict) for p in partials)
    notes = [p.get("note", "") for p in partials]
    for before, after in zip(notes, notes[1:], strict=False):
        assert after.startswith(before) and len(after) > len(before)
    assert model.calls[0].messages == [HumanMessage("Norway?")]


@pytest.mark.parametrize("mode", MODES)
async def test_stream_starts_over_on_a_retry(mode: str) -> None:
    model = ScriptedChatModel(
        responses=[city_call(name=None, note=LONG), city_call(note=LONG, id="c2")]  # type: ignore[arg-type]
    )
    items = await stream(mode, with_structured_output(model, City), "Norway?")
    assert items[-1] == City(name="Oslo", note=LONG)
    notes = [p.get("note", "") for p in items[:-1]]
    shrinks = [i for i in range(1, len(notes)) if len(notes[i]) < len(notes[i - 1])]
    assert len(shrinks) == 1  # the second attempt streams from the start again


@pytest.mark.parametrize("mode", MODES)
async def test_stream_raises_when_every_attempt_fails(mode: str) -> None:
    model = ScriptedChatModel(responses=["prose", "prose"])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=1))
    with pytest.raises(StructuredOutputRetryError):
        await stream(mode, runnable, "Norway?")


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_success_has_langchains_keys_and_the_report(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])  # type: ignore[arg-type]
    result = await invoke(mode, with_structured_output(model, City, include_raw=True), "Norway?")
    assert set(result) == {"raw", "parsed", "parsing_error"}
    assert result["parsed"] == City(name="Oslo")
    assert result["parsing_error"] is None
    raw = result["raw"]
    assert isinstance(raw, AIMessage) and raw.tool_calls[0]["id"] == "c2"
    report = raw.response_metadata["structured_output_report"]
    assert report["attempts"] == 2 and report["strategy"] == "tool"
    assert report["variant"] == "City"


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_returns_the_failure_instead_of_raising(mode: str) -> None:
    model = ScriptedChatModel(responses=["prose one", "prose two"])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=1), include_raw=True)
    result = await invoke(mode, runnable, "Norway?")
    assert result["parsed"] is None
    assert isinstance(result["parsing_error"], StructuredOutputRetryError)
    assert result["raw"].content == "prose two"


@pytest.mark.parametrize("mode", MODES)
async def test_a_refusal_is_raised_or_returned_like_langchain(mode: str) -> None:
    refusal = AIMessage("", additional_kwargs={"refusal": "I can't help with that."})
    model = ScriptedChatModel(responses=[refusal, refusal])
    with pytest.raises(StructuredOutputRefusal):
        await invoke(mode, with_structured_output(model, City), "Norway?")
    raw = with_structured_output(model, City, include_raw=True)
    result = await invoke(mode, raw, "Norway?")
    assert isinstance(result["parsing_error"], StructuredOutputRefusal)
    assert result["raw"].additional_kwargs["refusal"] == "I can't help with that."


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_streams_raw_dicts_and_ends_with_the_result(mode: str) -> None:
    model = ScriptedChatModel(responses=[city_call(note=LONG)])
    runnable = with_structured_output(model, City, include_raw=True)
    *partials, last = await stream(mode, runnable, "Norway?")
    assert last["parsed"] == City(name="Oslo", note=LONG)
    assert last["parsing_error"] is None
    assert partials and all(isinstance(p["raw"], AIMessage) for p in partials)
    assert all(isinstance(p["parsed"], dict) for p in partials)


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_partials_join_the_reply_only_as_it_grows_by_half(mode: str) -> None:
    # Each raw partial joins the whole reply so far; a reply of many tool calls
    # would cost a join per call. The joins (and items) grow with its log instead,
    # and only the first structured call shows partial values.
    first = tool_call("City", {"name": "Oslo", "note": LONG * 20}, id="c0")
    calls = [tool_call("City", {"name": "Oslo", "note": f"n{i}"}, id=f"c{i}") for i in range(300)]
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[first, *calls])], chunk_size=8)
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=0), include_raw=True)
    *partials, last = await stream(mode, runnable, "Norway?")
    assert isinstance(last["parsing_error"], StructuredOutputRetryError)  # 301 answers
    assert 3 <= len(partials) <= 40
    notes = [p["parsed"].get("note", "") for p in partials]
    assert all(LONG.startswith(n[: len(LONG)]) for n in notes) and notes == sorted(notes, key=len)


@pytest.mark.parametrize("mode", MODES)
async def test_include_raw_stream_ends_with_the_failure(mode: str) -> None:
    model = ScriptedChatModel(responses=["prose"])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=0), include_raw=True)
    items = await stream(mode, runnable, "Norway?")
    assert items[-1]["parsed"] is None
    assert isinstance(items[-1]["parsing_error"], StructuredOutputRetryError)


def _answer(messages: list[BaseMessage], call: RecordedCall) -> AIMessage:
    # Answers from the question, so concurrent batch calls cannot swap answers.
    return city_call(name=str(messages[-1].content), id=f"c-{messages[-1].content}")


@pytest.mark.parametrize("mode", MODES)
async def test_batch_keeps_input_order(mode: str) -> None:
    model = ScriptedChatModel(responses=[_answer] * 3)
    results = await batch(mode, with_structured_output(model, City), ["Oslo", "Bergen", "Molde"])
    assert [r.name for r in results] == ["Oslo", "Bergen", "Molde"]
    assert len(model.calls) == 3


@pytest.mark.parametrize("mode", MODES)
async def test_a_union_answers_with_the_variant(mode: str) -> None:
    event = AIMessage("", tool_calls=[tool_call("Event", {"title": "Launch"})])
    model = ScriptedChatModel(responses=[event])
    result = await invoke(mode, with_structured_output(model, City | Event), "When?")
    assert result == Event(title="Launch")


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_to_an_unknown_tool_is_answered_and_retried(mode: str) -> None:
    lookup = AIMessage("", tool_calls=[tool_call("lookup", {"q": "Oslo"}, id="l1")])
    model = ScriptedChatModel(responses=[lookup, city_call(id="c2")])
    result = await invoke(mode, with_structured_output(model, City, include_raw=True), "Norway?")
    assert result["parsed"] == City(name="Oslo")
    retry = model.calls[1].messages
    assert [m.type for m in retry] == ["human", "ai", "tool"]
    assert isinstance(retry[-1], ToolMessage) and retry[-1].tool_call_id == "l1"
    assert "not a valid tool" in str(retry[-1].content) and "City" in str(retry[-1].content)
    report = result["raw"].response_metadata["structured_output_report"]
    assert report["attempts"] == 2 and report["errors"][0].startswith("no_output")


@pytest.mark.parametrize("mode", MODES)
async def test_a_bad_answer_beside_an_unknown_tool_counts_once(mode: str) -> None:
    both = AIMessage(
        "",
        tool_calls=[
            tool_call("lookup", {"q": "Oslo"}, id="l1"),
            tool_call("City", {"name": None}, id="c1"),
        ],
    )
    model = ScriptedChatModel(responses=[both, city_call(id="c2")])
    result = await invoke(mode, with_structured_output(model, City, include_raw=True), "Norway?")
    assert result["parsed"] == City(name="Oslo")
    replies = {
        m.tool_call_id: m.content for m in model.calls[1].messages if isinstance(m, ToolMessage)
    }
    assert sorted(replies) == ["c1", "l1"]
    assert "name" in replies["c1"] and "lookup is not a valid tool here" in replies["l1"]
    report = result["raw"].response_metadata["structured_output_report"]
    assert report["attempts"] == 2 and len(report["errors"]) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tools_use_up_the_retry_budget(mode: str) -> None:
    lookup = AIMessage("", tool_calls=[tool_call("lookup", {"q": "Oslo"})])
    model = ScriptedChatModel(responses=[lookup, lookup, lookup, lookup])
    runnable = with_structured_output(model, ToolStrategy(City, max_retries=1))
    with pytest.raises(StructuredOutputRetryError) as caught:
        await invoke(mode, runnable, "Norway?")
    errors = caught.value.errors
    assert [type(e) for e in errors] == [MissingOutputError, MissingOutputError]
    assert [e.attempt for e in errors] == [1, 2] and caught.value.n_attempts == 2
    assert all(e.ai_message is not None and e.usage is not None for e in errors)
    assert len(model.calls) == 2
    raw = with_structured_output(model, ToolStrategy(City, max_retries=1), include_raw=True)
    result = await invoke(mode, raw, "Norway?")
    assert isinstance(result["parsing_error"], StructuredOutputRetryError)
    assert result["raw"].tool_calls[0]["name"] == "lookup"


@pytest.mark.parametrize("mode", MODES)
async def test_bad_input_and_extra_arguments_are_refused(mode: str) -> None:
    runnable = with_structured_output(ScriptedChatModel(responses=[]), City)
    with pytest.raises(UserError, match="PromptValue"):
        await invoke(mode, runnable, 42)
    with pytest.raises(UserError, match="stop"):
        if mode == "sync":
            runnable.invoke("hi", stop=["!"])
        else:
            await runnable.ainvoke("hi", stop=["!"])


async def test_astream_events_show_model_events_partials_and_the_report() -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(note=LONG, id="c2")])  # type: ignore[arg-type]
    runnable = with_structured_output(model, City)
    events = [e async for e in runnable.astream_events("Norway?", version="v2")]
    kinds = [e["event"] for e in events]
    assert kinds.count("on_chat_model_start") == 2
    assert "on_chat_model_stream" in kinds
    chunks = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream"]
    assert isinstance(chunks[0], dict) and chunks[-1] == City(name="Oslo", note=LONG)
    report = next(e for e in events if e["event"] == "on_custom_event")
    assert report["name"] == "structured_output_report"
    assert report["data"]["attempts"] == 2
    end = events[-1]
    assert end["event"] == "on_chain_end" and end["data"]["output"] == City(name="Oslo", note=LONG)
    starts = [e for e in events if e["event"] == "on_chat_model_start"]
    assert [s["metadata"]["structx_attempt"] for s in starts] == [1, 2]


async def _async_feedback(error: Exception, context: Any) -> str:
    return f"Attempt {context.attempt} failed; send name as a string."


def _feedback(error: Exception) -> str:
    return "Send name as a string."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["invoke", "stream"])
@pytest.mark.parametrize("handler", [_feedback, _async_feedback])
async def test_handle_errors_callables_write_the_feedback(
    mode: str, how: str, handler: Any
) -> None:
    model = ScriptedChatModel(responses=[city_call(name=None), city_call(id="c2")])  # type: ignore[arg-type]
    runnable = with_structured_output(model, ToolStrategy(City, handle_errors=handler))
    if how == "invoke":
        result = await invoke(mode, runnable, "Norway?")
    else:
        result = (await stream(mode, runnable, "Norway?"))[-1]
    assert result == City(name="Oslo")
    feedback = str(model.calls[1].messages[-1].content)
    assert "send name as a string" in feedback.lower()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["invoke", "stream"])
async def test_a_rejected_strategy_falls_back_in_every_mode(mode: str, how: str) -> None:
    rejected = NotImplementedError("this model has no native structured output")
    model = ScriptedChatModel(
        responses=[rejected, city_call()],
        profile={"structured_output": True, "tool_calling": True},
    )
    runnable = with_structured_output(model, City, include_raw=True)
    if how == "invoke":
        result = await invoke(mode, runnable, "Norway?")
    else:
        result = (await stream(mode, runnable, "Norway?"))[-1]
    assert result["parsed"] == City(name="Oslo")
    report = result["raw"].response_metadata["structured_output_report"]
    assert report["strategy"] == "tool"
    assert report["fallbacks"][0]["from_strategy"] == "provider"
    assert model.calls[0].response_format is not None and model.calls[1].tools


@pytest.mark.parametrize("mode", MODES)
async def test_a_provider_error_is_raised_even_with_include_raw(mode: str) -> None:
    model = ScriptedChatModel(responses=[ConnectionError("network down")])
    runnable = with_structured_output(model, City, method="function_calling", include_raw=True)
    with pytest.raises(ConnectionError):
        await stream(mode, runnable, "Norway?")


async def test_astream_reads_a_large_reply_off_the_event_loop() -> None:
    from langchain_structx.limits import Limits

    model = ScriptedChatModel(responses=[city_call(note=LONG)], chunk_size=64)
    runnable = with_structured_output(model, ToolStrategy(City, limits=Limits(offload_chars=10)))
    items = [item async for item in runnable.astream("Norway?")]
    assert items[-1] == City(name="Oslo", note=LONG)
