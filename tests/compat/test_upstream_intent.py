"""The intent of upstream tests whose own assertions our drop-in cannot meet or skips.

`test_wrap_model_call_narrows_response_format_tools` upstream counts only BaseTool
objects; here the same scenario also counts tool dicts, so the narrowing is checked
whatever form the tools take. `TestSupportsProviderStrategy` upstream
checks LangChain's helper directly; here the same rule is checked on our
AutoStrategy, which chooses the strategy itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware.types import (
    AgentMiddleware,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.structured_output import ToolStrategy
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel, Field
from tests.unit_tests.agents.model import FakeToolCallingModel

WEATHER = {"temperature": 75.0, "condition": "sunny"}


class WeatherBaseModel(BaseModel):
    """Weather response."""

    temperature: float
    condition: str


class LocationResponse(BaseModel):
    city: str
    country: str


@tool
def get_weather() -> str:
    """Get the weather."""
    return "The weather is sunny and 75°F."


def _tool_name(spec: Any) -> str:
    if isinstance(spec, BaseTool):
        return spec.name
    return str(spec.get("function", spec).get("name"))


def test_wrap_model_call_narrowing_binds_only_the_narrowed_tool() -> None:
    class RecordingModel(GenericFakeChatModel):
        bound_tool_names: list[list[str]] = Field(default_factory=list)

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            self.bound_tool_names.append(sorted(_tool_name(t) for t in tools))
            return self

    call = {"name": "WeatherBaseModel", "id": "1", "args": WEATHER}
    model = RecordingModel(messages=iter([AIMessage(content="", tool_calls=[call])]))

    class NarrowToWeatherMiddleware(AgentMiddleware):
        def wrap_model_call(
            self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
        ) -> ModelCallResult:
            return handler(request.override(response_format=ToolStrategy(WeatherBaseModel)))

    agent = create_agent(
        model=model,
        tools=[],
        response_format=ToolStrategy(WeatherBaseModel | LocationResponse),
        middleware=[NarrowToWeatherMiddleware()],
    )
    response = agent.invoke({"messages": [HumanMessage("What's the weather?")]})

    assert response["structured_response"] == WeatherBaseModel(**WEATHER)
    assert model.bound_tool_names == [["WeatherBaseModel"]]


def test_auto_strategy_avoids_provider_output_for_gemini_2_with_tools() -> None:
    class Gemini2(FakeToolCallingModel):
        model_name: str = "gemini-2.5-flash"
        native: list[bool] = Field(default_factory=list)

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            self.native.append(bool(kw.get("response_format")))
            return super()._generate(messages, stop, run_manager, **kw)

    model = Gemini2(
        tool_calls=[[{"name": "WeatherBaseModel", "id": "1", "args": WEATHER}]],
        profile={"structured_output": True, "tool_calling": True},
    )
    agent = create_agent(model, [get_weather], response_format=WeatherBaseModel)
    state = agent.invoke({"messages": [HumanMessage("weather?")]}, {"recursion_limit": 8})

    assert model.native == [False]
    assert state["structured_output_report"]["strategy"] == "tool"
    assert state["structured_response"] == WeatherBaseModel(**WEATHER)
