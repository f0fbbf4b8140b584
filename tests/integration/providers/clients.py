"""The official LangChain clients, pointed at a fake provider on loopback."""

from __future__ import annotations

from typing import Any

from .fakes import FakeAnthropic, FakeGemini, FakeOpenAI
from .responses import FakeOpenAIResponses
from .wire import FakeProvider, Model

PROVIDERS = ("openai", "openai_responses", "anthropic", "gemini")
FAKES: dict[str, type[FakeProvider]] = {
    "openai": FakeOpenAI,
    "openai_responses": FakeOpenAIResponses,
    "anthropic": FakeAnthropic,
    "gemini": FakeGemini,
}


def fake(provider: str, model: Model) -> FakeProvider:
    """A fake server for `provider`, not started yet."""
    return FAKES[provider](model)


def client(provider: str, server: FakeProvider, **options: Any) -> Any:
    """The provider's official chat model, talking to `server` only."""
    if provider in ("openai", "openai_responses"):
        from langchain_openai import ChatOpenAI

        if provider == "openai_responses":
            options = {"use_responses_api": True, **options}
        return ChatOpenAI(
            model="gpt-4o", base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0, **options
        )
    if provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(
            model=options.pop("model", "claude-sonnet-4-6"),
            base_url=server.url,
            api_key="sk-ant-test",
            max_retries=0,
            **options,
        )
    from langchain_google_genai import ChatGoogleGenerativeAI

    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash",
        base_url=server.url,
        google_api_key="test-key",
        max_retries=0,
        **options,
    )
