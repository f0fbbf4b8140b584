"""Provider batch parts that need no server: the job folder, records, lines, and a
record's loop moved by replies (the fake batch servers are in tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from langchain_structx import ToolStrategy
from langchain_structx._cli.records import BatchInputError, Record
from langchain_structx._provider_batch._job import Outcome
from langchain_structx._provider_batch._rows import Asker, Settled
from langchain_structx._provider_batch._state import JobFile, JobFolder, Part
from langchain_structx._provider_batch._wire import (
    BatchLimits,
    ProviderBatchError,
    as_langchain_raises,
    error_reply,
    retried,
    split,
)
from langchain_structx._request.plan import build_plan
from langchain_structx.batch import BatchSummary, as_records, default_line
from langchain_structx.errors import StructuredOutputRetryError
from langchain_structx.testing import ScriptedChatModel, tool_call

SCHEMA = {"title": "Tag", "type": "object", "properties": {"n": {"type": "integer"}},
          "required": ["n"]}  # fmt: skip


def test_the_job_folder_keeps_what_it_is_given(tmp_path: Path) -> None:
    folder = JobFolder(tmp_path / "job")
    assert not folder.exists
    job = JobFile(provider="openai", fingerprint="f", name="n", rounds=[[Part(rows=[0, 1])]])
    folder.create(job, [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}])
    job.rounds[0][0].batch_id = "batch_1"
    folder.save(job)
    folder.save_replies(0, 0, [{"custom_id": "row-0-r0", "body": {"x": 1}}])
    again = folder.load()
    assert again.rounds[0][0].batch_id == "batch_1"
    assert folder.records() == [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]
    assert list(folder.replies(0, 0)) == [{"custom_id": "row-0-r0", "body": {"x": 1}}]
    assert [p.name for p in (tmp_path / "job").iterdir() if p.name.startswith(".")] == []


def test_a_broken_or_foreign_job_folder_is_refused(tmp_path: Path) -> None:
    folder = JobFolder(tmp_path)
    (tmp_path / "job.json").write_text("{not json")
    with pytest.raises(ProviderBatchError, match="cannot read the batch job"):
        folder.load()
    foreign = {"provider": "openai", "fingerprint": "f", "name": "n", "rounds": [], "version": 99}
    (tmp_path / "job.json").write_text(json.dumps(foreign))
    with pytest.raises(ProviderBatchError, match="version 99"):
        folder.load()
    with pytest.raises(ProviderBatchError, match="cannot read"):
        list(folder.replies(3, 0))


def test_split_keeps_each_batch_within_both_limits() -> None:
    lines = [{"custom_id": str(i), "pad": "x" * 40} for i in range(10)]
    parts = split(lines, BatchLimits(max_requests=4, max_bytes=200))
    assert all(len(p) <= 4 for p in parts)
    assert sum(len(p) for p in parts) == 10
    assert all(sum(len(json.dumps(x)) + 1 for x in p) <= 200 for p in parts)
    with pytest.raises(ProviderBatchError, match="over the batch limit"):
        split([{"custom_id": "big", "pad": "x" * 500}], BatchLimits(10, 200))


def test_which_failures_are_sent_again() -> None:
    assert retried(error_reply(0, "lost", "expired"))
    assert retried(error_reply(529, "overloaded_error", ""))
    assert not retried(error_reply(400, "invalid_request_error", ""))


def test_an_error_the_client_does_not_convert_is_kept() -> None:
    made = ValueError("x")
    assert as_langchain_raises(made, lambda error: None) is made


def test_records_from_texts_dicts_and_records() -> None:
    records = as_records(["a", {"id": "b", "text": "B"}, Record("c", 3, "C")])
    assert [(r.id, r.text) for r in records] == [(1, "a"), ("b", "B"), ("c", "C")]
    with pytest.raises(BatchInputError, match="given twice"):
        as_records(["a", {"id": 1, "text": "b"}])


def _asker(**options: object) -> Asker:
    model = ScriptedChatModel(responses=[])
    return Asker(model, build_plan(ToolStrategy(SCHEMA, **options)), "Extract.")  # type: ignore[arg-type]


def _call(args: dict[str, object]) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("Tag", args, id="c1")])


def test_a_row_asks_as_the_lcel_face_and_settles_on_a_valid_reply() -> None:
    asker = _asker()
    row = asker.row(0, "n is 4")
    prompt, kwargs = asker.request(row)
    assert [m.type for m in prompt] == ["system", "human"]
    assert "ls_structured_output_format" not in kwargs
    assert "Tag" in str(kwargs["tool_choice"])
    row.answer(_call({"n": 4}))
    assert row.step is None and row.settled is not None
    assert row.settled.result is not None and row.settled.result.value == {"n": 4}


def test_a_row_is_re_asked_with_feedback_then_gives_up_after_max_retries() -> None:
    asker = _asker(max_retries=1)
    row = asker.row(0, "n is 4")
    row.answer(_call({"n": "four"}))
    prompt, _ = asker.request(row)
    assert [m.type for m in prompt] == ["system", "human", "ai", "tool"]
    assert "Please fix your mistakes" in str(prompt[-1].content)
    row.answer(_call({"n": "four"}))
    assert row.settled is not None
    assert isinstance(row.settled.error, StructuredOutputRetryError)
    assert row.replies == 2


def test_a_handler_is_called_between_replies_and_its_failure_ends_the_row() -> None:
    seen: list[str] = []

    def handler(error: Exception) -> str:
        seen.append(type(error).__name__)
        return "Give n as a number."

    asker = _asker(handle_errors=handler)
    row = asker.row(0, "n is 4")
    row.answer(_call({"n": "four"}))
    assert seen and "Give n as a number." in str(asker.request(row)[0][-1].content)

    def broken(error: Exception) -> str:
        raise RuntimeError("handler broke")

    row = _asker(handle_errors=broken).row(1, "n is 4")
    row.answer(_call({"n": "four"}))
    assert row.settled is not None and "handler broke" in str(row.settled.error)


def test_a_row_failed_by_the_job_closes_its_loop() -> None:
    row = _asker().row(0, "n")
    row.fail(ProviderBatchError("cancelled"))
    assert row.step is None and row.settled is not None
    assert isinstance(row.settled.error, ProviderBatchError)


def test_lines_as_a_local_batch_writes_them() -> None:
    missing = Outcome(0, {"id": "a", "problem": "the record's text is empty"}, None)
    assert default_line(missing, union=False)["error"]["type"] == "MissingTextError"
    failed = Outcome(1, {"id": "b"}, Settled(error=ProviderBatchError("lost")))
    assert default_line(failed, union=False)["error"] == {
        "type": "ProviderBatchError", "message": "lost"}  # fmt: skip
    row = _asker().row(2, "n is 4")
    row.answer(_call({"n": 4}))
    done = Outcome(2, {"id": "c"}, row.settled)
    assert default_line(done, union=False) == {"id": "c", "output": {"n": 4}}
    assert default_line(done, union=True)["output"] == {"kind": "Tag", "value": {"n": 4}}


def test_the_summary_counts_tokens_at_the_batch_price() -> None:
    summary = BatchSummary(input_tokens=10, output_tokens=5, rounds=1)
    assert summary.tokens == 15
    assert "billed at 50% of the live price" in summary.report()
