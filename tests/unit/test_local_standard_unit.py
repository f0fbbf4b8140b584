"""LangChain's standard chat-model unit tests, run against `LocalChatModel`.

None of these load the weights: they build the model, bind tools and ask for
structured output, and read the tracing parameters.
"""

from __future__ import annotations

from typing import Any

from langchain_tests.unit_tests import ChatModelUnitTests

from langchain_structx.local import LocalChatModel


class TestLocalChatModelUnit(ChatModelUnitTests):
    """The standard unit suite; capabilities are stated in the integration suite."""

    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"seed": 0, "n_threads": 1}

    @property
    def model_override_value(self) -> str:
        return "local:another-model"
