"""The real embedded model on a prompt that leaves no room for an answer.

A 512-token context window is loaded once for the module; a few thousand words of
input, or an enum of a thousand values shown in the prompt, overflow it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_structx.local import ContextWindowError, LocalChatModel

pytestmark = pytest.mark.integration

WINDOW = 512
LONG_TEXT = "Ada Lovelace was a mathematician. " * 400  # about 2,800 tokens


@pytest.fixture(scope="module")
def small_model(default_weights: Path) -> LocalChatModel:
    pytest.importorskip("llama_cpp", reason="install langchain-structx[local]")
    model = LocalChatModel(n_ctx=WINDOW, max_tokens=8, seed=0)
    model.load()
    return model


def test_a_long_input_is_a_typed_error_with_llama_cpps_count(small_model: LocalChatModel) -> None:
    with pytest.raises(ContextWindowError) as caught:
        small_model.invoke(LONG_TEXT)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.window == WINDOW
    text_tokens = len(small_model.load().tokenize(LONG_TEXT.encode(), add_bos=False))
    assert error.needed is not None and text_tokens < error.needed < text_tokens + 64


def test_a_stream_raises_before_its_first_chunk(small_model: LocalChatModel) -> None:
    chunks = iter(small_model.stream(LONG_TEXT))
    with pytest.raises(ContextWindowError) as caught:
        next(chunks)
    assert caught.value.window == WINDOW


def test_a_schema_too_large_for_the_prompt_is_a_typed_error(small_model: LocalChatModel) -> None:
    schema = {
        "title": "Pick",
        "type": "object",
        "properties": {"code": {"enum": [f"code-{i:04d}" for i in range(1_000)]}},
        "required": ["code"],
    }
    with pytest.raises(ContextWindowError) as caught:
        small_model.with_structured_output(schema).invoke("Pick one.")
    assert caught.value.needed is not None and caught.value.needed > WINDOW


def test_the_model_still_answers_after_the_error(small_model: LocalChatModel) -> None:
    with pytest.raises(ContextWindowError):
        small_model.invoke(LONG_TEXT)
    reply = small_model.invoke("Say hi.", max_tokens=2)
    assert isinstance(reply.content, str) and reply.content.strip()
