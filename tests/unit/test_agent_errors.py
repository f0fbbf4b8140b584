"""handle_errors in every form, ErrorContext, bounded retries and StructuredOutputRetryError."""

import pytest
from langchain.agents.structured_output import (
    MultipleStructuredOutputsError,
    StructuredOutputError,
    StructuredOutputValidationError,
)
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx.errors import (
    AttemptError,
    InvalidOutputError,
    MissingOutputError,
    MultipleOutputsError,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    TruncatedOutputError,
)
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import ErrorContext, ProviderStrategy, ToolStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
USAGE = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}


class Contact(BaseModel):
    name: str
    age: int


class Event(BaseModel):
    title: str


ADA = Contact(name="Ada", age=36)
MISSING_AGE = (
    "Failed to parse structured output for tool 'Contact': 1 problem with Contact:\n"
    "- at $.age: required field is missing."
)
DEFAULT_FEEDBACK = f"Error: {MISSING_AGE}\n Please fix your mistakes."


def bad(id: str = "b1") -> AIMessage:
    return AIMessage(
        "", tool_calls=[tool_call("Contact", {"name": "Ada"}, id=id)], usage_metadata=USAGE
    )


def good(id: str = "g1") -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36}, id=id)],
        usage_metadata=USAGE,
    )


def both(id: str = "m1") -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            tool_call("Contact", {"name": "Ada", "age": 36}, id=f"{id}a"),
            tool_call("Event", {"title": "x"}, id=f"{id}b"),
        ],
    )


async def run(mode, agent, config=None):
    if mode == "sync":
        return agent.invoke(ASK, config)
    return await agent.ainvoke(ASK, config)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


def feedback_of(model, call_index):
    return model.calls[call_index].messages[-1]


@MODES
async def test_true_retries_with_langchains_default_feedback(mode):
    model = ScriptedChatModel(responses=[bad(), good()])

    result = await run(mode, create_agent(model, response_format=ToolStrategy(Contact)))

    assert len(model.calls) == 2
    reply = feedback_of(model, 1)
    assert reply.type == "tool"
    assert reply.tool_call_id == "b1"
    assert reply.content == DEFAULT_FEEDBACK
    assert result["structured_response"] == ADA


@MODES
async def test_false_raises_at_the_first_failure(mode):
    model = ScriptedChatModel(responses=[bad(), good()])
    agent = create_agent(model, response_format=ToolStrategy(Contact, handle_errors=False))

    with pytest.raises(InvalidOutputError) as info:
        await run(mode, agent)

    assert len(model.calls) == 1
    assert str(info.value) == MISSING_AGE
    assert info.value.attempt == 1
    assert info.value.tool_name == "Contact"


@MODES
async def test_string_is_sent_as_the_feedback(mode):
    model = ScriptedChatModel(responses=[bad(), good()])
    strategy = ToolStrategy(Contact, handle_errors="Include the age, please.")

    await run(mode, create_agent(model, response_format=strategy))

    assert feedback_of(model, 1).content == "Include the age, please."


@pytest.mark.parametrize(
    "handle_errors",
    [
        InvalidOutputError,
        AttemptError,
        StructuredOutputValidationError,
        (MultipleOutputsError, InvalidOutputError),
        (ValueError, StructuredOutputError),
    ],
    ids=["own-type", "base-type", "langchain-type", "tuple", "tuple-langchain-base"],
)
def test_matching_exception_types_retry_with_the_default_feedback(handle_errors):
    model = ScriptedChatModel(responses=[bad(), good()])

    result = create_agent(
        model, response_format=ToolStrategy(Contact, handle_errors=handle_errors)
    ).invoke(ASK)

    assert feedback_of(model, 1).content == DEFAULT_FEEDBACK
    assert result["structured_response"] == ADA


@pytest.mark.parametrize(
    "handle_errors",
    [MultipleOutputsError, MultipleStructuredOutputsError, (TruncatedOutputError, KeyError)],
    ids=["own-type", "langchain-type", "tuple"],
)
def test_other_exception_types_raise_the_attempt_error(handle_errors):
    model = ScriptedChatModel(responses=[bad(), good()])

    with pytest.raises(InvalidOutputError):
        create_agent(
            model, response_format=ToolStrategy(Contact, handle_errors=handle_errors)
        ).invoke(ASK)

    assert len(model.calls) == 1


def test_multiple_outputs_type_matches_multiple_calls():
    model = ScriptedChatModel(responses=[both(), good()])

    result = create_agent(
        model,
        response_format=ToolStrategy(Contact | Event, handle_errors=MultipleStructuredOutputsError),
    ).invoke(ASK)

    assert len(model.calls) == 2
    assert result["structured_response"] == ADA


@MODES
async def test_one_argument_callable_returns_the_feedback(mode):
    seen: list[Exception] = []

    def handler(error: Exception) -> str:
        seen.append(error)
        return f"Fix: {type(error).__name__}"

    model = ScriptedChatModel(responses=[bad(), good()])

    await run(
        mode, create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))
    )

    assert feedback_of(model, 1).content == "Fix: InvalidOutputError"
    assert len(seen) == 1
    assert isinstance(seen[0], InvalidOutputError)


@MODES
async def test_two_argument_callable_gets_the_error_context(mode):
    contexts: list[ErrorContext] = []

    def handler(error: Exception, context: ErrorContext) -> str:
        contexts.append(context)
        return f"attempt {context.attempt} of {context.max_retries + 1}: {context.kind}"

    model = ScriptedChatModel(responses=[bad("b1"), both("m"), good()])
    strategy = ToolStrategy(Contact | Event, handle_errors=handler, max_retries=4)

    result = await run(mode, create_agent(model, response_format=strategy))

    assert result["structured_response"] == ADA
    assert feedback_of(model, 1).content == "attempt 1 of 5: validation"
    assert [m.content for m in model.calls[2].messages[-2:]] == [
        "attempt 2 of 5: multiple_outputs",
        "attempt 2 of 5: multiple_outputs",
    ]
    first, second = contexts
    assert first.attempt == 1
    assert first.max_retries == 4
    assert first.retries_left == 4  # calls still allowed: attempts 2 to 5
    assert first.kind == "validation"
    assert first.strategy == "tool"
    assert first.variant_names == ("Contact", "Event")
    assert isinstance(first.error, InvalidOutputError)
    assert first.ai_message.tool_calls[0]["id"] == "b1"
    assert first.previous_errors == ()
    assert [m.content for m in first.state["messages"]] == ["Who is Ada?"]
    assert second.attempt == 2
    assert second.retries_left == 3
    assert second.kind == "multiple_outputs"
    assert isinstance(second.error, MultipleOutputsError)
    assert second.previous_errors == (first.error,)
    assert [c["name"] for c in second.ai_message.tool_calls] == ["Contact", "Event"]


@MODES
async def test_async_handler_works_from_invoke_and_ainvoke(mode):
    async def handler(error: Exception, context: ErrorContext) -> str:
        return f"async feedback for attempt {context.attempt}"

    model = ScriptedChatModel(responses=[bad(), good()])

    result = await run(
        mode, create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))
    )

    assert feedback_of(model, 1).content == "async feedback for attempt 1"
    assert result["structured_response"] == ADA


class Stop(Exception):
    pass


@MODES
@pytest.mark.parametrize("is_async", [False, True], ids=["sync-handler", "async-handler"])
async def test_raising_handler_stops_the_run_with_its_exception(mode, is_async):
    def sync_handler(error: Exception) -> str:
        raise Stop("no more") from error

    async def async_handler(error: Exception, context: ErrorContext) -> str:
        raise Stop("no more")

    model = ScriptedChatModel(responses=[bad(), good()])
    handler = async_handler if is_async else sync_handler

    with pytest.raises(Stop, match="no more"):
        await run(
            mode, create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler))
        )

    assert len(model.calls) == 1


def test_handler_returning_a_non_string_is_a_type_error():
    model = ScriptedChatModel(responses=[bad(), good()])

    with pytest.raises(TypeError, match="handle_errors must return a str, got int"):
        create_agent(
            model, response_format=ToolStrategy(Contact, handle_errors=lambda e: 42)
        ).invoke(ASK)


@pytest.mark.parametrize("handle_errors", [True, "Please answer."], ids=["true", "str"])
def test_refusal_is_not_retried_by_default(handle_errors):
    model = ScriptedChatModel(
        responses=[AIMessage("", additional_kwargs={"refusal": "I can't share that."}), good()]
    )

    with pytest.raises(StructuredOutputRefusal) as info:
        create_agent(
            model, response_format=ToolStrategy(Contact, handle_errors=handle_errors)
        ).invoke(ASK)

    assert len(model.calls) == 1
    assert info.value.refusal == "I can't share that."


@pytest.mark.parametrize(
    "handle_errors",
    [StructuredOutputValidationError, Exception, (ValueError, StructuredOutputValidationError)],
    ids=["langchain-validation-type", "exception", "tuple"],
)
def test_a_broad_exception_type_does_not_retry_a_refusal(handle_errors):
    # A refusal is also a StructuredOutputValidationError, the type a handler
    # ported from LangChain names for wrong answers.
    model = ScriptedChatModel(
        responses=[AIMessage("", additional_kwargs={"refusal": "I can't share that."}), good()]
    )
    strategy = ToolStrategy(Contact, handle_errors=handle_errors)

    with pytest.raises(StructuredOutputRefusal):
        create_agent(model, response_format=strategy).invoke(ASK)

    assert len(model.calls) == 1


def test_naming_the_refusal_type_retries_a_refusal():
    model = ScriptedChatModel(
        responses=[AIMessage("", additional_kwargs={"refusal": "No."}), good()]
    )
    strategy = ToolStrategy(Contact, handle_errors=(StructuredOutputRefusal, ValueError))

    result = create_agent(model, response_format=strategy).invoke(ASK)

    assert result["structured_response"] == ADA
    assert len(model.calls) == 2


def test_callable_may_choose_to_retry_a_refusal():
    model = ScriptedChatModel(
        responses=[AIMessage("", additional_kwargs={"refusal": "No."}), good()]
    )

    result = create_agent(
        model, response_format=ToolStrategy(Contact, handle_errors=lambda e: "It is public data.")
    ).invoke(ASK)

    assert len(model.calls) == 2
    assert feedback_of(model, 1).content == "It is public data."
    assert feedback_of(model, 1).type == "human"
    assert result["structured_response"] == ADA


@MODES
@pytest.mark.parametrize("max_retries", [0, 1, 3])
async def test_retry_error_after_max_retries_with_every_attempt(mode, max_retries):
    model = ScriptedChatModel(responses=[bad(f"b{i}") for i in range(10)])
    agent = create_agent(model, response_format=ToolStrategy(Contact, max_retries=max_retries))

    with pytest.raises(StructuredOutputRetryError) as info:
        await run(mode, agent, {"recursion_limit": 100})

    calls = max_retries + 1
    assert len(model.calls) == calls
    error = info.value
    assert error.n_attempts == calls
    assert error.attempt == calls
    assert [type(e) for e in error.errors] == [InvalidOutputError] * calls
    assert [e.attempt for e in error.errors] == list(range(1, calls + 1))
    assert error.ai_message.tool_calls[0]["id"] == f"b{max_retries}"
    assert error.usage == {
        "input_tokens": 10 * calls,
        "output_tokens": 4 * calls,
        "total_tokens": 14 * calls,
    }
    assert str(error) == (
        f"Structured output failed after {calls} attempt(s); last error: "
        f"InvalidOutputError: {MISSING_AGE}"
    )
    assert isinstance(error, StructuredOutputError)


def test_attempt_errors_carry_the_usage_summed_so_far():
    model = ScriptedChatModel(responses=[bad("b0"), bad("b1"), bad("b2")])

    with pytest.raises(StructuredOutputRetryError) as info:
        create_agent(model, response_format=ToolStrategy(Contact, max_retries=2)).invoke(ASK)

    assert [e.usage["total_tokens"] for e in info.value.errors] == [14, 28, 42]
    assert [e.ai_message.tool_calls[0]["id"] for e in info.value.errors] == ["b0", "b1", "b2"]


@pytest.mark.parametrize(
    "responses",
    [
        ["just prose"] * 20,
        [both(f"m{i}") for i in range(20)],
        [AIMessage("", tool_calls=[tool_call("Contact", {"name": 1})])] * 20,
    ],
    ids=["prose", "multiple", "invalid"],
)
def test_never_loops_until_the_recursion_limit(responses):
    model = ScriptedChatModel(responses=responses)
    strategy = ToolStrategy(Contact | Event, handle_errors=lambda e: "again", max_retries=3)

    with pytest.raises(StructuredOutputRetryError):
        create_agent(model, response_format=strategy).invoke(ASK, {"recursion_limit": 1000})

    assert len(model.calls) == 4


def test_provider_retry_feedback_is_a_human_message():
    model = ScriptedChatModel(
        responses=['{"name": "Ada"}', '{"name": "Ada", "age": 36}'],
        profile={"structured_output": True, "tool_calling": True},
    )

    result = create_agent(
        model, response_format=ProviderStrategy(Contact, handle_errors=lambda e: "add age")
    ).invoke(ASK)

    assert feedback_of(model, 1).type == "human"
    assert feedback_of(model, 1).content == "add age"
    as_text = MISSING_AGE.replace(
        "Failed to parse structured output for tool 'Contact': ",
        "The answer does not match Contact: ",
    )
    assert result["structured_output_report"]["errors"] == [f"validation: {as_text}"]


def test_missing_output_error_is_reported_with_its_kind():
    model = ScriptedChatModel(responses=["prose", good()])
    kinds: list[str] = []

    def handler(error: Exception, context: ErrorContext) -> str:
        kinds.append(context.kind)
        assert isinstance(error, MissingOutputError)
        return "use the tool"

    create_agent(model, response_format=ToolStrategy(Contact, handle_errors=handler)).invoke(ASK)

    assert kinds == ["no_output"]
