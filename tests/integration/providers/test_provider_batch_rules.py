"""The fake batch servers enforce the providers' batch rules, through the official SDKs;
the job keeps to them (sizes, ids), and handles cancelled and refused requests."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest

from langchain_structx.batch import BatchLimits, ProviderBatchError, submit
from langchain_structx.errors import UserError

from .batch_jobs import SETTINGS, SYSTEM, Scripted, fake, finish, start, strategy, texts
from .clients import client

pytestmark = pytest.mark.integration


def _openai(server: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)  # type: ignore[attr-defined]


def _line(key: str, **body: object) -> bytes:
    line = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "record 1"}],
                     **body}}  # fmt: skip
    return (json.dumps(line) + "\n").encode()


def _poll(sdk: openai.OpenAI, batch_id: str) -> openai.types.Batch:
    for _ in range(10):
        batch = sdk.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
    raise AssertionError("the batch never ended")


def test_openai_file_rules() -> None:
    with fake("openai") as server:
        sdk = _openai(server)
        with pytest.raises(openai.BadRequestError, match="purpose"):
            sdk.files.create(file=("x.jsonl", _line("a")), purpose="nonsense")  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError, match=r"\.jsonl"):
            sdk.files.create(file=("x.txt", _line("a")), purpose="batch")
        twice = sdk.files.create(file=("x.jsonl", _line("a") + _line("a")), purpose="batch")
        streamed = sdk.files.create(file=("y.jsonl", _line("b", stream=True)), purpose="batch")
        for file, said in ((twice, "not unique"), (streamed, "not streamed")):
            made = sdk.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")  # fmt: skip
            batch = _poll(sdk, made.id)
            assert batch.status == "failed"
            assert said in batch.errors.data[0].message  # type: ignore[union-attr]
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            sdk.batches.create(input_file_id=twice.id, endpoint="/v1/chat/completions",
                               completion_window="1h")  # type: ignore[arg-type]  # fmt: skip


def test_openai_results_and_error_files() -> None:
    model = Scripted()
    with fake("openai", model) as server:
        server.expire = lambda key: key == "c"
        sdk = _openai(server)
        lines = _line("a") + _line("b", tool_choice="required") + _line("c")
        file = sdk.files.create(file=("in.jsonl", lines), purpose="batch")
        made = sdk.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")  # fmt: skip
        statuses = [sdk.batches.retrieve(made.id).status for _ in range(5)]
        batch = sdk.batches.retrieve(made.id)
        output = sdk.files.content(batch.output_file_id).text.splitlines()  # type: ignore[arg-type]
        errors = sdk.files.content(batch.error_file_id).text.splitlines()  # type: ignore[arg-type]
    assert statuses[:4] == ["in_progress", "in_progress", "finalizing", "expired"]
    assert [json.loads(x)["custom_id"] for x in output] == ["a"]
    failed = {json.loads(x)["custom_id"]: json.loads(x) for x in errors}
    assert failed["b"]["response"]["status_code"] == 400  # tool_choice without tools
    assert failed["c"]["error"]["code"] == "batch_expired"


def test_anthropic_batch_rules() -> None:
    with fake("anthropic") as server:
        sdk = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
        params = {"model": "claude-sonnet-4-6", "max_tokens": 10,
                  "messages": [{"role": "user", "content": "record 1"}]}  # fmt: skip
        with pytest.raises(anthropic.BadRequestError, match="custom_id"):
            sdk.messages.batches.create(requests=[{"custom_id": "a b", "params": params}])  # type: ignore[list-item]
        with pytest.raises(anthropic.BadRequestError, match="repeated"):
            sdk.messages.batches.create(requests=[{"custom_id": "a", "params": params}] * 2)  # type: ignore[list-item]
        made = sdk.messages.batches.create(
            requests=[
                {"custom_id": "a", "params": params},  # type: ignore[list-item]
                {"custom_id": "b", "params": {**params, "max_tokens": None}},
            ]  # fmt: skip
        )
        with pytest.raises(anthropic.AnthropicError, match="results_url"):
            sdk.messages.batches.results(made.id)
        states = [sdk.messages.batches.retrieve(made.id).processing_status for _ in range(3)]
        results = {r.custom_id: r.result for r in sdk.messages.batches.results(made.id)}
    # The refused results() call polled once too (the SDK reads the batch first).
    assert states == ["in_progress", "ended", "ended"]
    assert results["a"].type == "succeeded"
    assert results["b"].type == "errored"  # max_tokens is required: a per-request error


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_big_rounds_are_split_within_the_limits(provider: str, tmp_path: Path) -> None:
    with fake(provider, max_requests=300) as server:
        limits = BatchLimits(max_requests=300, max_bytes=10 * 1024 * 1024)
        lines = finish(start(provider, server.url, tmp_path / "job", 1000, limits=limits))
        assert server.violations == []
        first = json.loads((tmp_path / "job" / "job.json").read_text())["rounds"][0]
    assert [len(part["rows"]) for part in first] == [300, 300, 300, 100]
    assert len(lines) == 1000


def test_a_batch_over_the_limit_is_refused_and_reported(tmp_path: Path) -> None:
    with fake("openai", max_requests=10) as server:
        job = start("openai", server.url, tmp_path / "job", 20)
        with pytest.raises(ProviderBatchError, match="over 10"):
            finish(job)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancel_fails_the_unanswered_records(provider: str, tmp_path: Path) -> None:
    with fake(provider) as server:
        job = start(provider, server.url, tmp_path / "job", 30)
        job.step()  # sent and polled once: still running
        job.cancel()
        lines = finish(job)
        assert server.violations == []
    assert len(lines) == 30
    assert {line["error"]["type"] for line in lines} == {"ProviderBatchError"}
    assert "cancelled" in lines[0]["error"]["message"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_refused_requests_end_as_a_live_call_ends(provider: str, tmp_path: Path) -> None:
    from langchain_structx.runnables import with_structured_output

    from .wire import Reply

    def refusing(ask: object) -> Reply:
        return Reply(reject=(400, "Invalid parameter: messages"))

    with fake(provider, refusing) as server:
        lines = finish(start(provider, server.url, tmp_path / "job", 2))
        live = with_structured_output(client(provider, server), strategy())
        with pytest.raises(Exception) as raised:  # noqa: PT011 - compared with the batch's
            live.invoke([("system", SYSTEM), ("user", texts(1)[0])])
    assert lines[0]["error"]["type"] == type(raised.value).__name__
    assert str(raised.value) == lines[0]["error"]["message"]


def test_models_without_a_batch_api_here_are_refused(tmp_path: Path) -> None:
    from langchain_structx.testing import ScriptedChatModel

    with pytest.raises(UserError, match="ChatOpenAI and ChatAnthropic"):
        submit(ScriptedChatModel(responses=[]), strategy(), ["x"], folder=tmp_path / "a")
    with fake("anthropic") as server:
        chat = client("anthropic", server, betas=["context-management-2025-06-27"])
        with pytest.raises(UserError, match="beta features"):
            submit(chat, strategy(), ["record 1"], folder=tmp_path / "c", settings=SETTINGS)
    with fake("openai") as server:
        chat = client("openai", server, use_responses_api=True)
        with pytest.raises(UserError, match="use_responses_api"):
            submit(chat, strategy(), ["record 1"], folder=tmp_path / "b", settings=SETTINGS)


def test_requests_lost_again_and_again_are_reported(tmp_path: Path) -> None:
    with fake("anthropic") as server:
        server.expire = lambda key: True  # every request expires, every round
        lines = finish(start("anthropic", server.url, tmp_path / "job", 3, error_retries=1))
        created = len(server.created)
    assert created == 2  # the first ask and one resend
    assert [line["error"]["type"] for line in lines] == ["ProviderBatchError"] * 3
    assert "failed the request 2 times" in lines[0]["error"]["message"]


def test_the_wait_between_polls_grows_while_nothing_changes(tmp_path: Path) -> None:
    waits: list[float] = []
    with fake("openai") as server:
        server.running_polls = 5
        job = start("openai", server.url, tmp_path / "job", 2, poll_every=1.0, poll_max=4.0)
        job.wait(progress=False, sleep=waits.append)
    assert waits[:4] == [1.0, 2.0, 4.0, 4.0]
    assert max(waits) == 4.0
