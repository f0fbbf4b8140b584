"""A prompt too long for the context window is a `ContextWindowError`, on every path.

llama-cpp-python refuses such a prompt with a plain `ValueError`, from the call when
not streaming and from the first chunk when streaming. A stand-in for the loaded
`Llama` raises it the same way, so no weights are needed; the real model is in
`tests/integration/test_local_model_context.py`.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from langchain_structx import cli
from langchain_structx._cli.batch_run import CONTEXT_ERROR, describe
from langchain_structx._cli.remote import RemoteRunError
from langchain_structx.local import ContextWindowError, LocalChatModel, LocalModelError, _model

OVERFLOW = "Requested tokens (9000) exceed context window of 4096"


class _Llama:
    """Stands in for a loaded `llama_cpp.Llama` whose context every prompt overflows."""

    def __init__(self, error: str = OVERFLOW) -> None:
        self.error = error
        self.requests: list[dict[str, Any]] = []
        self.lock_held: list[bool] = []

    def create_chat_completion(self, *, stream: bool = False, **request: Any) -> Any:
        self.requests.append(request)
        self.lock_held.append(LocalChatModel()._loaded().lock.locked())
        if stream:
            return self._chunks()  # llama-cpp-python's stream is a generator
        raise ValueError(self.error)

    def _chunks(self) -> Iterator[dict[str, Any]]:
        raise ValueError(self.error)
        yield {}  # pragma: no cover - makes this a generator, as llama-cpp-python's is


class Person(BaseModel):
    """A person."""

    name: str


@pytest.fixture
def llama(monkeypatch: pytest.MonkeyPatch) -> _Llama:
    fake = _Llama()
    loaded = _model._Loaded(fake)
    monkeypatch.setattr(LocalChatModel, "_loaded", lambda self: loaded)
    # The decoder needs the model's vocabulary: the stand-in has none.
    monkeypatch.setattr(_model, "_constraint", lambda loaded, grammar: [f"<mask of {grammar}>"])
    return fake


def _check(error: ContextWindowError) -> None:
    assert isinstance(error, LocalModelError) and isinstance(error, ValueError)
    assert (error.needed, error.window) == (9000, 4096)
    assert str(error) == (
        "the prompt needs 9000 tokens, which leaves no room for an answer in the model's "
        "context window of 4096; raise n_ctx or shorten the input"
    )
    assert isinstance(error.__cause__, ValueError) and str(error.__cause__) == OVERFLOW


def test_invoke_raises_a_typed_error(llama: _Llama) -> None:
    with pytest.raises(ContextWindowError) as caught:
        LocalChatModel().invoke("a long text")
    _check(caught.value)
    assert len(llama.requests) == 1


def test_the_error_survives_a_pickle_with_its_counts() -> None:
    for error in (ContextWindowError(9000, 4096), ContextWindowError(None, 512)):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is ContextWindowError
        assert (copy.needed, copy.window, str(copy)) == (error.needed, error.window, str(error))


def test_code_that_caught_the_value_error_still_catches_it(llama: _Llama) -> None:
    with pytest.raises(ValueError, match="leaves no room for an answer"):
        LocalChatModel().invoke("a long text")


def test_ainvoke_raises_a_typed_error(llama: _Llama) -> None:
    with pytest.raises(ContextWindowError) as caught:
        asyncio.run(LocalChatModel().ainvoke("a long text"))
    _check(caught.value)


def test_a_stream_raises_it_before_its_first_chunk(llama: _Llama) -> None:
    chunks = LocalChatModel().stream("a long text")
    with pytest.raises(ContextWindowError) as caught:
        next(iter(chunks))
    _check(caught.value)


def test_the_model_is_free_again_after_the_error(llama: _Llama) -> None:
    model = LocalChatModel()
    for call in (model.invoke, lambda text: list(model.stream(text))):
        with pytest.raises(ContextWindowError):
            call("a long text")
        assert not model._loaded().lock.locked()
    assert llama.lock_held == [True, True]


def test_an_async_stream_raises_it_before_its_first_chunk(llama: _Llama) -> None:
    async def first() -> Any:
        async for chunk in LocalChatModel().astream("a long text"):
            return chunk
        return None

    with pytest.raises(ContextWindowError) as caught:
        asyncio.run(first())
    _check(caught.value)


def test_structured_output_and_forced_tools_raise_it_too(llama: _Llama) -> None:
    model = LocalChatModel()
    with pytest.raises(ContextWindowError):
        model.with_structured_output(Person).invoke("a long text")
    with pytest.raises(ContextWindowError):
        list(model.bind_tools([Person], tool_choice="Person").stream("a long text"))
    assert all("logits_processor" in request for request in llama.requests)
    assert len(llama.requests) == 2


def test_a_count_llama_cpp_does_not_give_is_none(llama: _Llama) -> None:
    llama.error = "Prompt exceed context window of 512"
    with pytest.raises(ContextWindowError) as caught:
        LocalChatModel().invoke("a long text")
    assert (caught.value.needed, caught.value.window) == (None, 512)
    assert str(caught.value).startswith("the prompt leaves no room for an answer")


def test_other_value_errors_pass_through_untouched(llama: _Llama) -> None:
    llama.error = "logprobs is not supported for models created with logits_all=False"
    with pytest.raises(ValueError) as caught:
        LocalChatModel().invoke("hi")
    assert type(caught.value) is ValueError and str(caught.value) == llama.error
    with pytest.raises(ValueError) as streamed:
        list(LocalChatModel().stream("hi"))
    assert type(streamed.value) is ValueError


def test_the_command_line_reports_the_typed_error_with_its_hint() -> None:
    kind, message = describe(ContextWindowError(None, 512))
    assert (kind, message) == (
        CONTEXT_ERROR,
        "the text needs more tokens but the model's context window holds 512; "
        "raise --n-ctx or shorten the text",
    )
    assert describe(ContextWindowError(700, 512))[1].startswith("the text needs 700 tokens")


def test_the_untyped_message_from_other_llama_cpp_models_is_still_recognised() -> None:
    kind, message = describe(ValueError(OVERFLOW))
    assert kind == CONTEXT_ERROR and message.startswith("the text needs 9000 tokens")
    remote = RemoteRunError("ValueError", OVERFLOW)
    assert describe(remote)[0] == CONTEXT_ERROR
    assert describe(ValueError("something else")) == ("ValueError", "something else")


def test_extract_on_an_overflowing_prompt_is_a_usage_error(
    llama: _Llama, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "load_model", lambda spec: LocalChatModel())
    code = cli.main(["extract", "--schema", "name", "--max-retries", "0", "a long text"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert err == (
        "structx: ContextWindowError: the text needs 9000 tokens but the model's context "
        "window holds 4096; raise --n-ctx or shorten the text\n"
    )


def test_a_batch_record_that_overflows_is_one_error_line(
    llama: _Llama, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "load_model", lambda spec: LocalChatModel())
    batch, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    batch.write_text('{"id": "a", "text": "a long text"}\n')
    argv = ["extract", "--schema", "name", "--batch", str(batch), "--output", str(out)]
    assert cli.main(argv) == cli.EXIT_PARTIAL
    line = json.loads(out.read_text())
    assert line["id"] == "a"
    assert line["error"]["type"] == CONTEXT_ERROR
    assert "context window holds 4096" in line["error"]["message"]
