"""The embedded model and the loopback server, on the real default weights.

Each generation is capped at a few dozen tokens: these tests check wiring and
constraints, not answer quality.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.output_parsers.openai_tools import PydanticToolsParser
from langchain_core.utils.function_calling import convert_to_openai_tool
from local_tasks import Address, Shipment
from pydantic import BaseModel, Field, RootModel

from langchain_structx import (
    AutoStrategy,
    ProviderStrategy,
    ToolStrategy,
    create_agent,
    with_structured_output,
)
from langchain_structx.local import LocalChatModel, WeightsError, _messages, load_default_model
from langchain_structx.local._weights import DEFAULT_WEIGHTS

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.integration

CONTACT_TEXT = "Reach Maria Lopez at maria.lopez@example.org; she is the CTO of Acme Robotics."


class Contact(BaseModel):
    """A person's contact details."""

    name: str = Field(max_length=40)
    email: str = Field(max_length=60)


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"18C and sunny in {city}"


CONTACT_SCHEMA = Contact.model_json_schema()


def test_default_weights_match_the_published_file(default_weights: Path) -> None:
    assert default_weights.stat().st_size == DEFAULT_WEIGHTS.size == 491_400_064
    digest = hashlib.sha256()
    with open(default_weights, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    assert digest.hexdigest() == DEFAULT_WEIGHTS.sha256
    assert default_weights.read_bytes()[:4] == b"GGUF"


def test_plain_chat_returns_text_and_usage(local_model: LocalChatModel) -> None:
    reply = local_model.invoke("Say hello in five words.", max_tokens=24)
    assert isinstance(reply, AIMessage)
    assert isinstance(reply.content, str) and reply.content.strip()
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["finish_reason"] in ("stop", "length")
    assert local_model.model_name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"


def test_profile_advertises_grammar_features(local_model: LocalChatModel) -> None:
    profile = local_model.profile
    assert profile is not None
    assert profile.get("structured_output") and profile.get("tool_calling")
    assert profile.get("tool_choice")


def test_streaming_yields_several_chunks(local_model: LocalChatModel) -> None:
    chunks = list(local_model.stream("Count from one to five in words.", max_tokens=24))
    texts = [c.content for c in chunks if c.content]
    assert len(texts) >= 3
    last = chunks[-1]
    assert isinstance(last, AIMessageChunk)
    assert last.usage_metadata is not None and last.usage_metadata["output_tokens"] >= 3
    assert last.response_metadata["finish_reason"] in ("stop", "length")


def test_forced_named_tool_returns_valid_arguments(local_model: LocalChatModel) -> None:
    reply = local_model.bind_tools([Contact], tool_choice="Contact").invoke(CONTACT_TEXT)
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert call["name"] == "Contact" and call["id"]
    contact = Contact.model_validate(call["args"])
    assert "@" in contact.email
    assert reply.response_metadata["finish_reason"] == "tool_calls"


def test_any_with_two_tools_returns_exactly_one_call(local_model: LocalChatModel) -> None:
    bound = local_model.bind_tools([Contact, get_weather], tool_choice="any")
    reply = bound.invoke("What is the weather in Paris?")
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert call["name"] in ("Contact", "get_weather")
    if call["name"] == "get_weather":
        assert isinstance(call["args"]["city"], str)
    else:
        Contact.model_validate(call["args"])


def test_tool_result_round_trip(local_model: LocalChatModel) -> None:
    bound = local_model.bind_tools([get_weather], tool_choice="get_weather")
    question = HumanMessage("What is the weather in Paris?")
    call = bound.invoke([question])
    result = ToolMessage(get_weather(**call.tool_calls[0]["args"]), tool_call_id="x")
    answer = local_model.bind_tools([get_weather]).invoke([question, call, result])
    # Best effort on a 0.5B model: the answer should at least be text, not a loop.
    assert isinstance(answer.content, str)


def test_json_object_with_schema_has_required_keys(local_model: LocalChatModel) -> None:
    fmt = {"type": "json_object", "schema": CONTACT_SCHEMA}
    reply = local_model.invoke(CONTACT_TEXT, response_format=fmt)
    data = json.loads(str(reply.content))
    assert set(CONTACT_SCHEMA["required"]) <= set(data)


def test_openai_json_schema_form_is_honoured(local_model: LocalChatModel) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "Contact", "schema": CONTACT_SCHEMA}}
    reply = local_model.invoke(CONTACT_TEXT, response_format=fmt)
    Contact.model_validate_json(str(reply.content))


class Topic(BaseModel):
    """A topic and its subtopics."""

    title: str = Field(max_length=30)
    subtopics: list[Topic] = Field(default_factory=list, max_length=3)


def test_a_forced_call_with_nested_models_answers_through_the_runnable(
    local_model: LocalChatModel,
) -> None:
    # The runnable binds the strategy's tools as they are, `$defs` and all (an
    # agent's tools go through LangChain's conversion, which inlines them).
    runnable = with_structured_output(local_model, ToolStrategy(Shipment), include_raw=True)
    out = runnable.invoke("Send it to Ana Silva, Rua Augusta 12, 1100-053 Lisbon.")
    assert isinstance(out["parsed"], Shipment)
    assert isinstance(out["parsed"].address, Address)
    assert out["raw"].tool_calls[0]["name"] == "Shipment"


def test_a_self_referring_model_gets_a_grammar(local_model: LocalChatModel) -> None:
    schema = Topic.model_json_schema()
    assert "$ref" in schema and "$defs" in schema  # the form the converter could not read
    fmt = {"type": "json_schema", "json_schema": {"name": "Topic", "schema": schema}}
    reply = local_model.invoke("Outline: cooking, with baking and frying.", response_format=fmt)
    assert isinstance(Topic.model_validate_json(str(reply.content)), Topic)


def test_a_self_referring_model_answers_a_forced_call_through_the_agent(
    local_model: LocalChatModel,
) -> None:
    # Held to compact JSON, the model nests its outline three levels deep, about
    # 80 tokens: more than the session model's 64, which cut every attempt short.
    roomy = local_model.model_copy(update={"max_tokens": 160})
    agent = create_agent(roomy, response_format=ToolStrategy(Topic))
    ask = {"messages": [("user", "Outline: cooking, with baking and frying.")]}
    state = agent.invoke(ask, {"recursion_limit": 12})
    assert isinstance(state["structured_response"], Topic)


def test_a_self_referring_pydantic_tool_bound_by_hand_answers_in_shape(
    local_model: LocalChatModel,
) -> None:
    # LangChain's own pattern: bind the model class as a tool, parse the call.
    chain = local_model.bind_tools([Topic], tool_choice="Topic") | PydanticToolsParser(
        tools=[Topic], first_tool_only=True
    )
    assert isinstance(chain.invoke("Outline: cooking, with baking and frying."), Topic)


class Note(BaseModel):
    """A person, and anything else worth keeping about them."""

    name: str = Field(max_length=40)
    extra: Any = None


@pytest.mark.parametrize("strategy", [AutoStrategy, ProviderStrategy, ToolStrategy])
def test_a_field_of_any_type_gets_a_grammar_on_every_route(
    local_model: LocalChatModel, strategy: Any
) -> None:
    # Pydantic writes `Any` as `{"title": "Extra"}`, which the converter refused.
    agent = create_agent(local_model, response_format=strategy(Note, max_retries=1))
    state = agent.invoke({"messages": [("user", "Ada Lovelace, mathematician.")]})
    assert isinstance(state["structured_response"], Note)


class Names(RootModel[list[str]]):
    """The people named in the text."""


def test_a_list_root_model_answers_through_a_tool(local_model: LocalChatModel) -> None:
    # Tool arguments are an object: the list travels as {"value": [...]}.
    names = with_structured_output(local_model, ToolStrategy(Names)).invoke("Ada met Alan.")
    assert isinstance(names, Names)
    assert all(isinstance(name, str) for name in names.root)


def test_digit_pattern_is_sanitised_not_fatal(local_model: LocalChatModel) -> None:
    schema = {
        "type": "object",
        "properties": {"phone": {"type": "string", "pattern": r"^\d{3}-\d{4}$"}},
        "required": ["phone"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_object", "schema": schema}
    reply = local_model.invoke("My number is 555-1234. Extract it.", response_format=fmt)
    phone = json.loads(str(reply.content))["phone"]
    assert len(phone) == 8 and phone[3] == "-" and phone.replace("-", "").isdigit()


def test_server_answers_plain_chat(server_chat_model: ChatOpenAI) -> None:
    reply = server_chat_model.invoke("Say hello in five words.")
    assert isinstance(reply.content, str) and reply.content.strip()


def test_server_rejects_openai_json_schema(server_chat_model: ChatOpenAI) -> None:
    """The fact the engine's fallback relies on.

    llama-cpp-python's server does not implement `response_format` of type
    `json_schema` and answers HTTP 500; `AutoStrategy` must treat that as a
    rejection and fall back to another strategy.
    """
    import openai

    fmt = {"type": "json_schema", "json_schema": {"name": "Contact", "schema": CONTACT_SCHEMA}}
    with pytest.raises(openai.APIStatusError) as info:
        server_chat_model.invoke(CONTACT_TEXT, response_format=fmt)
    assert info.value.status_code == 500
    # The server survives the error and keeps answering.
    assert server_chat_model.invoke("Say hi.").content


def test_forced_tool_call_streams_as_one_chunk(local_model: LocalChatModel) -> None:
    bound = local_model.bind_tools([get_weather], tool_choice="any")
    chunks = list(bound.stream("What is the weather in Rome?"))
    assert len(chunks) == 1
    merged = chunks[0]
    assert isinstance(merged, AIMessageChunk)
    assert [call["name"] for call in merged.tool_calls] == ["get_weather"]


def test_load_default_model_reuses_the_loaded_weights(local_model: LocalChatModel) -> None:
    model = load_default_model(max_tokens=8)
    assert model.load() is local_model.load()


def test_explicit_model_path(default_weights: Path, tmp_path: Path) -> None:
    named = LocalChatModel(model_path=default_weights)
    assert named.model_name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"
    bogus = tmp_path / "weights.gguf"
    bogus.write_bytes(b"not gguf")
    with pytest.raises(WeightsError, match="not a GGUF file"):
        LocalChatModel(model_path=bogus).invoke("hi")


# The rest check prompt rendering and output parsing without generating.


def test_history_renders_tool_calls_and_merged_results() -> None:
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}
    history = [
        HumanMessage(content=[{"type": "text", "text": "Weather in "}, "Paris?"]),
        AIMessage(content="", tool_calls=[call, {**call, "id": "c2"}]),
        ToolMessage("18C", tool_call_id="c1"),
        ToolMessage("sunny", tool_call_id="c2"),
    ]
    rendered = _messages.to_llama_messages(history)
    assert [m["role"] for m in rendered] == ["user", "assistant", "user"]
    assert rendered[0]["content"] == "Weather in Paris?"
    assert rendered[1]["content"].count("<tool_call>") == 2
    assert rendered[2]["content"].count("<tool_response>") == 2
    assert rendered[2]["content"].endswith(_messages.ANSWER_FROM_RESULTS)


def test_auto_mode_detects_written_calls() -> None:
    tools = [convert_to_openai_tool(get_weather)]
    arguments = json.dumps(json.dumps({"city": "Oslo"}))  # arguments as a JSON string
    block = f'<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call>'
    fenced = '```json\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n```'
    for text in (block, fenced):
        [call] = _messages.detect_calls(text, tools)
        assert call["args"] == {"city": "Oslo"}
    assert _messages.detect_calls('{"name": "unknown", "arguments": {}}', tools) == []
    assert _messages.detect_calls("It is sunny.", tools) == []


def test_truncated_forced_call_becomes_invalid_tool_call() -> None:
    message = _messages.forced_message('{"name": "get_weather", "argu', "length")
    assert not message.tool_calls
    assert message.invalid_tool_calls[0]["error"] == "output truncated at max_tokens"
    chunk = LocalChatModel._tool_chunk(message)
    assert isinstance(chunk, AIMessageChunk) and chunk.invalid_tool_calls


def test_the_decoder_stops_at_the_end_of_the_answer(local_model: LocalChatModel) -> None:
    # Asked in prose, the model's favourite first token is not JSON: the mask
    # refuses it; once the object closes, only the end of the sequence is left.
    fmt = {"type": "json_schema", "json_schema": {"name": "Contact", "schema": CONTACT_SCHEMA}}
    reply = local_model.invoke(f"Who is this? {CONTACT_TEXT}", response_format=fmt)
    text = str(reply.content)
    assert text == json.dumps(json.loads(text), separators=(", ", ": "), ensure_ascii=False)
    assert reply.response_metadata["finish_reason"] == "stop"


def test_the_vocabulary_is_read_from_disk_the_second_time(
    local_model: LocalChatModel, tmp_path: Path
) -> None:
    from langchain_structx.local._vocab import tokenizer_for

    llama = local_model.load()
    built = tokenizer_for(llama, tmp_path)
    (cached,) = tmp_path.glob("vocab-*.bin")
    read = tokenizer_for(llama, tmp_path)
    sample = list(range(0, llama.n_vocab(), 997))
    assert read.decode_bytes(sample) == built.decode_bytes(sample)
    assert read.vocab_size == built.vocab_size == llama.n_vocab()
    cached.write_bytes(cached.read_bytes()[:1000])  # a cut file is rebuilt, not trusted
    assert tokenizer_for(llama, tmp_path).decode_bytes(sample) == built.decode_bytes(sample)
