"""Provider batch jobs through the official SDKs, against fake batch servers on loopback.

A thousand records through each provider settle; a process killed at each
phase is taken up with no batch sent twice and no record lost or written
twice; re-asks stay within `max_retries`; no request breaks a rule.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from langchain_structx.batch import ProviderBatchError, resume
from langchain_structx.runnables import with_structured_output

from .batch_jobs import (
    MAX_RETRIES,
    SYSTEM,
    Scripted,
    check_lines,
    expected,
    fake,
    finish,
    start,
    strategy,
    take_up,
    texts,
)
from .clients import client

pytestmark = pytest.mark.integration

PROVIDERS = ("openai", "anthropic")
COUNT = 1000


def _batches_per_round(folder: Path) -> int:
    rounds = json.loads((folder / "job.json").read_text())["rounds"]
    return sum(len(parts) for parts in rounds)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_thousand_records_settle(provider: str, tmp_path: Path) -> None:
    with fake(provider) as server:
        job = start(provider, server.url, tmp_path / "job", COUNT)
        lines = finish(job)
        assert server.violations == []
        created = len(server.created)
        # The serving-engine probe of an OpenAI-compatible endpoint: once a job, not a row.
        assert server.seen["GET /v1/models"] == (1 if provider == "openai" else 0)
    check_lines(lines, COUNT)
    summary = job.summary
    assert (summary.done, summary.failed) == (990, 10)
    assert summary.input_tokens > 0 and summary.output_tokens > 0
    # Round 0, the re-asks, the passing errors and expiries resent, the last re-asks.
    assert created == _batches_per_round(tmp_path / "job") == summary.rounds
    assert summary.rounds <= MAX_RETRIES + 1 + 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_re_asks_never_exceed_max_retries(provider: str, tmp_path: Path) -> None:
    model = Scripted()
    with fake(provider, model) as server:
        finish(start(provider, server.url, tmp_path / "job", 200))
        asked = Counter(server.requests_by_record())
        rejected = server.rejected
    for n in range(200):
        # A passing error costs one more request, never an attempt (an expired
        # request never reached the model).
        attempts = asked[n] - (n % 50 == 11)
        if expected(n) is None:
            assert attempts == MAX_RETRIES + 1  # used up, never more
        elif n % 10 == 3:
            assert attempts == 2
        else:
            assert attempts == 1, n
    assert rejected == 4  # records 11, 61, 111, 161: once each


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_batch_gives_what_a_live_run_gives(provider: str, tmp_path: Path) -> None:
    with fake(provider, Scripted(transient=False)) as server:
        server.expire = lambda key: False
        batched = finish(start(provider, server.url, tmp_path / "job", 40))
        live = with_structured_output(client(provider, server), strategy())
        requests_before = len(server.requests)
        answers = []
        for text in texts(40):
            try:
                answers.append(live.invoke([("system", SYSTEM), ("user", text)]).model_dump())
            except Exception as exc:  # noqa: BLE001 - compared by type below
                answers.append(type(exc).__name__)
        live_bodies = server.requests[requests_before:]
        batch_bodies = server.requests[:requests_before]
    for line, answer in zip(batched, answers, strict=True):
        assert line.get("output", line.get("error", {}).get("type")) == answer
    # The very same request bodies, live and batched.
    assert sorted(map(_key, batch_bodies)) == sorted(map(_key, live_bodies))


def _key(body: dict) -> str:
    return json.dumps(body, sort_keys=True)


PHASES = [
    ("before-upload", 1),
    ("created", 1),
    ("after-submit", 1),
    ("polling", 2),
    ("collected", 1),
    ("writing", 2),
    ("before-upload", 2),
]


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("phase", "at"), PHASES, ids=[f"{p}-{n}" for p, n in PHASES])
def test_a_killed_job_resumes(provider: str, phase: str, at: int, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    with fake(provider) as server:
        code = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                provider,
                server.url,
                str(folder),
                str(COUNT),
                phase,
                str(at),
            ],  # fmt: skip
            cwd=Path(__file__).resolve().parents[3],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert code.returncode == -9, code.stderr[-2000:]
        if phase == "writing":
            written = (folder / "results.jsonl").read_text().splitlines()
            assert 0 < len(written) < COUNT
            # A write the kill cut in the middle: the resume cuts it off and writes it again.
            with open(folder / "results.jsonl", "a") as out:
                out.write(json.dumps({"id": len(written) + 1, "output": {"name": "P"}})[:20])
        lines = finish(take_up(provider, server.url, folder))
        assert server.violations == []
        created = len(server.created)
    check_lines(lines, COUNT)
    # Every batch made is one the job knows: none was sent twice.
    assert created == _batches_per_round(folder)


_CHILD = """
import sys
from tests.integration.providers.batch_jobs import child
provider, url, folder, count, phase, at = sys.argv[1:]
child(provider, url, folder, int(count), phase, int(at))
"""


def test_resume_refuses_another_format_or_a_missing_job(tmp_path: Path) -> None:
    with fake("openai") as server:
        start("openai", server.url, tmp_path / "job", 3)
        chat = client("openai", server)
        with pytest.raises(ProviderBatchError, match="another model"):
            resume(tmp_path / "job", chat, strategy(), system_prompt="Something else.")
        with pytest.raises(ProviderBatchError, match="holds no batch job"):
            resume(tmp_path / "none", chat, strategy())
