"""LangChain's standard chat-model integration tests, run on the real embedded model.

The capability properties say what `LocalChatModel` does and does not do: it reads
text only (no images, PDFs, audio or video, no Anthropic-style content blocks), runs
the one model it was built with (no per-call `model` override), and records no HTTP
(no VCR). The tests those properties switch off are listed in `allowed_skips`, so
that under `STRUCTX_NO_SKIP=1` any other skip still fails the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests

from langchain_structx.local import LocalChatModel

pytestmark = pytest.mark.integration


class TestLocalChatModelIntegration(ChatModelIntegrationTests):
    """The standard integration suite on the default weights, one thread."""

    allowed_skips = frozenset(
        {
            "test_invoke_with_model_override",
            "test_ainvoke_with_model_override",
            "test_stream_with_model_override",
            "test_astream_with_model_override",
            "test_pdf_inputs",
            "test_audio_inputs",
            "test_image_inputs",
            "test_image_tool_message",
            "test_pdf_tool_message",
            "test_anthropic_inputs",
            "test_stream_time",
        }
    )
    """Tests switched off by a capability the model lacks (see the properties)."""

    @pytest.fixture(autouse=True)
    def _weights(self, default_weights: Path) -> None:
        """Fail (under `STRUCTX_NO_SKIP=1`) rather than run without the weights."""
        pytest.importorskip("llama_cpp")

    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"seed": 0, "n_threads": 1}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False

    @property
    def supports_image_inputs(self) -> bool:
        return False

    @property
    def supports_image_urls(self) -> bool:
        return False

    @property
    def supports_pdf_inputs(self) -> bool:
        return False

    @property
    def supports_audio_inputs(self) -> bool:
        return False

    @property
    def supports_video_inputs(self) -> bool:
        return False

    @property
    def supports_anthropic_inputs(self) -> bool:
        return False

    @property
    def supports_image_tool_message(self) -> bool:
        return False

    @property
    def supports_pdf_tool_message(self) -> bool:
        return False
