"""AutoStrategy: ordering from the model profile, run-time fallback and its memory."""

import pytest
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langchain_structx import with_structured_output
from langchain_structx._models.capabilities import FallbackMemory, model_identity
from langchain_structx.errors import ProviderRejectedError
from langchain_structx.middleware import StructuredOutputMiddleware, create_agent
from langchain_structx.strategies import AutoStrategy, PromptedStrategy
from langchain_structx.testing import ScriptedChatModel, tool_call

ASK = {"messages": [HumanMessage("Who is Ada?")]}
NATIVE = {"structured_output": True, "tool_calling": True}
TOOLS_ONLY = {"structured_output": False, "tool_calling": True}
NEITHER = {"structured_output": False, "tool_calling": False}


class Contact(BaseModel):
    name: str
    age: int


JSON_ANSWER = '{"name": "Ada", "age": 36}'
TOOL_ANSWER = AIMessage("", tool_calls=[tool_call("Contact", {"name": "Ada", "age": 36})])
ADA = Contact(name="Ada", age=36)


class HTTPError(Exception):
    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class SDKError(Exception):
    """Carries the status on `.response`, as httpx-based SDKs do."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.response = _Response(status_code)


def strategy_of(call) -> str:
    if call.tools:
        return "tool"
    if call.response_format and call.response_format.get("type") == "json_schema":
        return "provider"
    return "prompted"


@pytest.mark.parametrize(
    ("profile", "answer", "expected"),
    [
        (NATIVE, JSON_ANSWER, "provider"),
        (TOOLS_ONLY, TOOL_ANSWER, "tool"),
        (NEITHER, JSON_ANSWER, "prompted"),
    ],
    ids=["native", "tools-only", "neither"],
)
def test_order_follows_the_profile(profile, answer, expected):
    model = ScriptedChatModel(responses=[answer], profile=profile)

    result = create_agent(model, response_format=AutoStrategy(Contact)).invoke(ASK)

    assert strategy_of(model.calls[0]) == expected
    assert result["structured_response"] == ADA
    assert result["structured_output_report"]["strategy"] == expected
    assert result["structured_output_report"]["fallbacks"] == []


def test_bare_schema_means_auto():
    model = ScriptedChatModel(responses=[JSON_ANSWER], profile=NATIVE)

    result = create_agent(model, response_format=Contact).invoke(ASK)

    assert strategy_of(model.calls[0]) == "provider"
    assert result["structured_response"] == ADA


def test_langchain_auto_strategy_object_is_accepted():
    model = ScriptedChatModel(responses=[TOOL_ANSWER], profile=TOOLS_ONLY)

    result = create_agent(model, response_format=lc.AutoStrategy(Contact)).invoke(ASK)

    assert result["structured_output_report"]["strategy"] == "tool"


def test_custom_order_is_respected():
    model = ScriptedChatModel(responses=[TOOL_ANSWER], profile=NATIVE)

    result = create_agent(
        model, response_format=AutoStrategy(Contact, order=("tool", "provider"))
    ).invoke(ASK)

    assert strategy_of(model.calls[0]) == "tool"
    assert result["structured_output_report"]["strategy"] == "tool"


def test_strategy_options_are_passed_on():
    model = ScriptedChatModel(responses=[TOOL_ANSWER], profile=TOOLS_ONLY)
    result = create_agent(
        model, response_format=AutoStrategy(Contact, tool_message_content="Saved.")
    ).invoke(ASK)
    assert result["messages"][-1].content == "Saved."

    model = ScriptedChatModel(responses=[JSON_ANSWER], profile=NATIVE)
    create_agent(model, response_format=AutoStrategy(Contact, strict=True)).invoke(ASK)
    assert model.calls[0].response_format["json_schema"]["strict"] is True

    model = ScriptedChatModel(responses=[JSON_ANSWER], profile=NEITHER)
    create_agent(model, response_format=AutoStrategy(Contact, json_mode=True)).invoke(ASK)
    assert model.calls[0].response_format == {"type": "json_object"}


REJECTIONS = [
    HTTPError("Invalid parameter: 'response_format' of type 'json_schema' is not supported", 400),
    SDKError("Error code: 400 - response_format is not supported with this model", 400),
    HTTPError("Unprocessable: json_schema is not allowed", 422),
    NotImplementedError("with_structured_output is not implemented for this model"),
    HTTPError("Internal Server Error", 500),
    RuntimeError("AiError: JSON Mode couldn't be met (code 5025)"),
]
REJECTION_IDS = ["400", "400-on-response", "422", "not-implemented", "500", "json-mode"]


@pytest.mark.parametrize("error", REJECTIONS, ids=REJECTION_IDS)
@pytest.mark.parametrize("factory", ["ours", "middleware"])
def test_provider_rejection_falls_back_to_tools_in_the_same_run(error, factory):
    model = ScriptedChatModel(responses=[error, TOOL_ANSWER], profile=NATIVE)
    if factory == "ours":
        agent = create_agent(model, response_format=AutoStrategy(Contact))
    else:
        agent = langchain_create_agent(
            model, middleware=[StructuredOutputMiddleware(AutoStrategy(Contact))]
        )

    result = agent.invoke(ASK)

    assert [strategy_of(c) for c in model.calls] == ["provider", "tool"]
    assert [m.type for m in model.calls[1].messages] == ["human"]
    assert result["structured_response"] == ADA
    report = result["structured_output_report"]
    assert report["strategy"] == "tool"
    assert report["attempts"] == 1
    assert report["fallbacks"] == [
        {
            "from_strategy": "provider",
            "to_strategy": "tool",
            "reason": f"{type(error).__name__}: {error}",
        }
    ]


def agent_with(model, strategy, memory):
    middleware = StructuredOutputMiddleware(strategy, fallback_memory=memory)
    return langchain_create_agent(model, middleware=[middleware])


def test_rejection_is_remembered_per_model_identity():
    memory = FallbackMemory()
    model = ScriptedChatModel(
        responses=[HTTPError("response_format not supported", 400), TOOL_ANSWER], profile=NATIVE
    )
    agent = agent_with(model, AutoStrategy(Contact), memory)
    agent.invoke(ASK)
    assert len(model.calls) == 2
    assert memory.rejected(model_identity(model)) == frozenset({"provider"})

    model.reset([TOOL_ANSWER])
    again = agent.invoke(ASK)

    assert len(model.calls) == 1
    assert strategy_of(model.calls[0]) == "tool"
    assert again["structured_output_report"]["fallbacks"] == []

    # An agent sharing the memory, around an equal model (same class, name and
    # endpoint), skips it too.
    twin = ScriptedChatModel(responses=[TOOL_ANSWER], profile=NATIVE)
    agent_with(twin, AutoStrategy(Contact), memory).invoke(ASK)
    assert [strategy_of(c) for c in twin.calls] == ["tool"]


class Tenant(BaseModel):
    """Another tenant's schema, on the same model and memory."""

    name: str
    age: int
    city: str = ""


def test_a_rejection_of_one_schema_does_not_move_another_schemas_route():
    # A 400 about one tenant's schema says nothing of another's: through one
    # shared memory, the other tenant still asks the provider first.
    memory = FallbackMemory()
    refused = HTTPError("Invalid schema for response_format 'Contact': 'age' is bad", 400)
    first = ScriptedChatModel(responses=[refused, TOOL_ANSWER], profile=NATIVE)
    agent_with(first, AutoStrategy(Contact), memory).invoke(ASK)
    assert [strategy_of(c) for c in first.calls] == ["provider", "tool"]

    other = ScriptedChatModel(responses=['{"name": "Ada", "age": 36}'], profile=NATIVE)
    result = agent_with(other, AutoStrategy(Tenant), memory).invoke(ASK)

    assert [strategy_of(c) for c in other.calls] == ["provider"]
    assert result["structured_response"] == Tenant(name="Ada", age=36)
    # The schema that was refused still skips the provider.
    again = ScriptedChatModel(responses=[TOOL_ANSWER], profile=NATIVE)
    agent_with(again, AutoStrategy(Contact), memory).invoke(ASK)
    assert [strategy_of(c) for c in again.calls] == ["tool"]


def test_a_model_that_lacks_the_feature_is_skipped_for_every_schema():
    memory = FallbackMemory()
    first = ScriptedChatModel(
        responses=[NotImplementedError("no structured output"), TOOL_ANSWER], profile=NATIVE
    )
    agent_with(first, AutoStrategy(Contact), memory).invoke(ASK)

    tenant_answer = AIMessage("", tool_calls=[tool_call("Tenant", {"name": "Ada", "age": 36})])
    other = ScriptedChatModel(responses=[tenant_answer], profile=NATIVE)
    agent_with(other, AutoStrategy(Tenant), memory).invoke(ASK)

    assert [strategy_of(c) for c in other.calls] == ["tool"]


def test_one_models_entries_are_bounded_however_many_schemas_it_refuses():
    memory = FallbackMemory()
    memory.remember("m", "provider")
    for number in range(300):
        memory.remember("m", "tool", schema=f"s{number}")

    assert memory.rejected("m", "s0") == frozenset()  # the oldest went first
    assert memory.rejected("m", "s299") == frozenset({"tool"})


@pytest.mark.parametrize(
    "refusal",
    [
        "registry.ollama.ai/library/llama2:latest does not support tools",
        "AiError: this model does not support 'tools' (@cf/example/small)",
        "Tools are not supported by this model",
    ],
)
def test_a_model_that_takes_no_tools_is_remembered_for_the_tool_route(refusal):
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[HTTPError(refusal, 400), JSON_ANSWER], profile=TOOLS_ONLY)
    agent = agent_with(model, AutoStrategy(Contact), memory)

    first = agent.invoke(ASK)
    model.reset([JSON_ANSWER])
    second = agent.invoke(ASK)

    assert first["structured_response"] == second["structured_response"] == ADA
    assert memory.rejected(model_identity(model)) == frozenset({"tool"})
    assert [strategy_of(c) for c in model.calls] == ["prompted"]
    assert second["structured_output_report"]["fallbacks"] == []


@pytest.mark.parametrize(
    "refusal",
    [
        "this model does not support tools with streaming",
        "Invalid 'tools[0]': a description is required",
        "Function tools with reasoning_effort are not supported",
    ],
)
def test_a_refusal_of_tools_under_some_condition_falls_back_but_is_not_remembered(refusal):
    memory = FallbackMemory()
    model = ScriptedChatModel(responses=[HTTPError(refusal, 400), JSON_ANSWER], profile=TOOLS_ONLY)
    agent = agent_with(model, AutoStrategy(Contact), memory)

    assert agent.invoke(ASK)["structured_output_report"]["strategy"] == "prompted"

    assert memory.rejected(model_identity(model)) == frozenset()
    model.reset([TOOL_ANSWER])
    assert agent.invoke(ASK)["structured_output_report"]["strategy"] == "tool"


def test_each_agent_has_its_own_memory_by_default():
    rejected = ScriptedChatModel(
        responses=[HTTPError("response_format not supported", 400), TOOL_ANSWER], profile=NATIVE
    )
    create_agent(rejected, response_format=AutoStrategy(Contact)).invoke(ASK)

    other = ScriptedChatModel(responses=[JSON_ANSWER], profile=NATIVE)
    create_agent(other, response_format=AutoStrategy(Contact)).invoke(ASK)

    assert [strategy_of(c) for c in other.calls] == ["provider"]


def test_memory_does_not_spill_onto_other_models():
    memory = FallbackMemory()
    first = ScriptedChatModel(
        responses=[HTTPError("response_format not supported", 400), TOOL_ANSWER],
        profile=NATIVE,
        model_name="small",
    )
    agent_with(first, AutoStrategy(Contact), memory).invoke(ASK)

    other = ScriptedChatModel(responses=[JSON_ANSWER], profile=NATIVE, model_name="large")
    agent_with(other, AutoStrategy(Contact), memory).invoke(ASK)

    assert [strategy_of(c) for c in other.calls] == ["provider"]


def test_forget_restores_the_preferred_strategy():
    memory = FallbackMemory()
    model = ScriptedChatModel(
        responses=[HTTPError("response_format not supported", 400), TOOL_ANSWER, JSON_ANSWER],
        profile=NATIVE,
    )
    agent = agent_with(model, AutoStrategy(Contact), memory)
    agent.invoke(ASK)

    memory.forget(model_identity(model))
    agent.invoke(ASK)

    assert [strategy_of(c) for c in model.calls] == ["provider", "tool", "provider"]


def test_fallback_chain_reaches_the_prompted_strategy():
    model = ScriptedChatModel(
        responses=[
            HTTPError("response_format not supported", 400),
            NotImplementedError("bind_tools is not supported"),
            JSON_ANSWER,
        ],
        profile=NATIVE,
    )

    memory = FallbackMemory()
    result = agent_with(model, AutoStrategy(Contact), memory).invoke(ASK)

    assert [strategy_of(c) for c in model.calls] == ["provider", "tool", "prompted"]
    report = result["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert [(f["from_strategy"], f["to_strategy"]) for f in report["fallbacks"]] == [
        ("provider", "tool"),
        ("tool", "prompted"),
    ]
    assert memory.rejected(model_identity(model)) == frozenset({"provider", "tool"})


@pytest.mark.parametrize(
    ("profile", "error"),
    [
        (NATIVE, HTTPError("Invalid API key", 401)),
        (NATIVE, HTTPError("Bad request: messages must not be empty", 400)),
        (NATIVE, RuntimeError("connection reset")),
        (TOOLS_ONLY, HTTPError("Internal Server Error", 500)),
    ],
    ids=["401", "400-unrelated", "other-error", "500-on-tool"],
)
def test_other_errors_propagate_without_fallback(profile, error):
    model = ScriptedChatModel(responses=[error, TOOL_ANSWER, JSON_ANSWER], profile=profile)
    memory = FallbackMemory()

    with pytest.raises(type(error)):
        agent_with(model, AutoStrategy(Contact), memory).invoke(ASK)

    assert len(model.calls) == 1
    assert memory.rejected(model_identity(model)) == frozenset()


def test_last_strategy_rejection_propagates():
    model = ScriptedChatModel(
        responses=[NotImplementedError("no JSON"), JSON_ANSWER], profile=NEITHER
    )

    with pytest.raises(ProviderRejectedError) as caught:
        create_agent(model, response_format=AutoStrategy(Contact)).invoke(ASK)

    assert isinstance(caught.value.__cause__, NotImplementedError)
    assert caught.value.strategy == "prompted"
    assert len(model.calls) == 1


def test_explicit_strategy_never_falls_back():
    from langchain_structx.strategies import ProviderStrategy

    model = ScriptedChatModel(
        responses=[HTTPError("response_format not supported", 400), TOOL_ANSWER], profile=NATIVE
    )

    memory = FallbackMemory()

    with pytest.raises(HTTPError):
        agent_with(model, ProviderStrategy(Contact), memory).invoke(ASK)

    assert len(model.calls) == 1
    assert memory.rejected(model_identity(model)) == frozenset()


# --- AutoStrategy(json_mode=True): a refused JSON mode is dropped ----------------------

JSON_OBJECT = {"type": "json_object"}
JSON_MODE_REFUSED = HTTPError("response_format json_object is not supported by this model", 400)


def test_a_refused_json_mode_is_asked_again_without_it():
    model = ScriptedChatModel(responses=[JSON_MODE_REFUSED, JSON_ANSWER], profile=NEITHER)
    memory = FallbackMemory()
    middleware = StructuredOutputMiddleware(
        AutoStrategy(Contact, json_mode=True), fallback_memory=memory
    )

    result = langchain_create_agent(model, middleware=[middleware]).invoke(ASK)

    assert result["structured_response"] == ADA
    assert [call.response_format for call in model.calls] == [JSON_OBJECT, None]
    # The same messages both times: only JSON mode is dropped.
    assert model.calls[0].messages == model.calls[1].messages
    report = result["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert report["attempts"] == 1
    assert report["fallbacks"] == [
        {
            "from_strategy": "prompted",
            "to_strategy": "prompted",
            "reason": f"HTTPError: {JSON_MODE_REFUSED}",
        }
    ]
    # The route works without JSON mode, so it is not remembered as rejected.
    assert memory.rejected(model_identity(model)) == frozenset()


def test_later_attempts_of_the_run_stay_without_json_mode():
    # The second attempt is a later graph step of the agent: the choice is kept
    # in the run's progress, so JSON mode is not refused a second time.
    model = ScriptedChatModel(
        responses=[JSON_MODE_REFUSED, '{"name": "Ada"}', JSON_ANSWER], profile=NEITHER
    )
    agent = create_agent(model, response_format=AutoStrategy(Contact, json_mode=True))

    result = agent.invoke(ASK)

    assert result["structured_response"] == ADA
    assert [call.response_format for call in model.calls] == [JSON_OBJECT, None, None]
    assert result["structured_output_report"]["attempts"] == 2


def test_a_refusal_without_json_mode_ends_the_run():
    refused_again = HTTPError("response_format is not supported", 400)
    model = ScriptedChatModel(
        responses=[JSON_MODE_REFUSED, refused_again, JSON_ANSWER], profile=NEITHER
    )
    agent = create_agent(model, response_format=AutoStrategy(Contact, json_mode=True))

    with pytest.raises(ProviderRejectedError) as caught:
        agent.invoke(ASK)

    assert caught.value.strategy == "prompted"
    assert caught.value.__cause__ is refused_again
    assert len(model.calls) == 2


def test_an_explicit_json_mode_is_never_dropped():
    # PromptedStrategy(json_mode=True) (and method="json_mode") asks for JSON
    # mode by name: a provider that refuses it fails the run as it refused.
    model = ScriptedChatModel(responses=[JSON_MODE_REFUSED, JSON_ANSWER], profile=NEITHER)
    agent = create_agent(model, response_format=PromptedStrategy(Contact, json_mode=True))

    with pytest.raises(HTTPError):
        agent.invoke(ASK)

    assert len(model.calls) == 1


def test_an_explicit_json_mode_is_asked_for_even_when_remembered_as_refused():
    # JSON mode asked for by name: a refusal an AutoStrategy run remembered does
    # not drop it silently from an explicit PromptedStrategy sharing the memory.
    memory = FallbackMemory()
    model = ScriptedChatModel(
        responses=[JSON_MODE_REFUSED, JSON_ANSWER, JSON_ANSWER], profile=NEITHER
    )
    with_structured_output(
        model, AutoStrategy(Contact, json_mode=True), fallback_memory=memory
    ).invoke("Who is Ada?")
    explicit = with_structured_output(
        model, PromptedStrategy(Contact, json_mode=True), fallback_memory=memory
    )

    assert explicit.invoke("Who is Ada?") == ADA
    assert [call.response_format for call in model.calls] == [JSON_OBJECT, None, JSON_OBJECT]


async def test_the_runnable_drops_a_refused_json_mode_too_and_remembers_it():
    model = ScriptedChatModel(
        responses=[JSON_MODE_REFUSED, JSON_ANSWER, JSON_ANSWER], profile=NEITHER
    )
    runnable = with_structured_output(model, AutoStrategy(Contact, json_mode=True))

    assert runnable.invoke("Who is Ada?") == ADA
    # The next run asks without JSON mode from its first request.
    assert await runnable.ainvoke("Who is Ada?") == ADA
    assert [call.response_format for call in model.calls] == [JSON_OBJECT, None, None]


@pytest.mark.parametrize("factory", ["create_agent", "middleware"])
def test_a_route_left_behind_keeps_the_turn_that_called_the_callers_tool(factory):
    # The tool route answered twice in prose, so AutoStrategy leaves it; the turn
    # that called `lookup` before it was hidden with the route's attempts, but not
    # the tool's result, which providers refuse (a result answering no call).
    from langchain_core.tools import tool

    @tool
    def lookup(name: str) -> str:
        """Look a person up."""
        return "Ada, 36"

    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[tool_call("lookup", {"name": "Ada"}, id="u1")]),
            "Ada is 36.",
            "She is Ada, 36.",
            JSON_ANSWER,
        ],
        profile=TOOLS_ONLY,
    )
    strategy = AutoStrategy(Contact, order=("tool", "prompted"))
    if factory == "create_agent":
        agent = create_agent(model, [lookup], response_format=strategy)
    else:
        ours = StructuredOutputMiddleware(strategy)
        agent = langchain_create_agent(model, [lookup], middleware=[ours.retry_router(), ours])

    result = agent.invoke(ASK)

    assert result["structured_response"] == ADA
    last = model.calls[-1].messages
    assert [t["function"]["name"] for t in model.calls[-1].tools] == ["lookup"]  # prompted
    calls = [c["id"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in last if m.type == "tool"]
    assert results == ["u1"] and "u1" in calls
