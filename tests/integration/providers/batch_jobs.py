"""What the provider batch tests share: the scripted model, the clients, a job run.

The scripted model answers record `n` (its text says `record n`) as `{"name":
"P<n>", "age": n}`, except: every tenth record from 3 first answers without its
age (a re-ask fixes it); records 7, 107, ... never answer validly (they use up
their retries); records 11, 61, ... get a passing server error the first time
they are asked; and the batch lets records 5, 102, ... expire in round 0.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from langchain_structx import AutoStrategy
from langchain_structx.batch import BatchJob, BatchSettings, resume, submit

from .batches import FakeOpenAIBatch
from .clients import client
from .message_batches import FakeAnthropicBatch
from .wire import Ask, Reply

MAX_RETRIES = 2
SYSTEM = "Extract the person."


class Person(BaseModel):
    name: str
    age: int


def strategy() -> AutoStrategy:
    return AutoStrategy(Person, max_retries=MAX_RETRIES)


def number(ask: Ask) -> int:
    """The record a request asks about."""
    first = next(text for role, text in ask.turns if role == "user")
    found = re.search(r"record (\d+)", first)
    assert found, first
    return int(found[1])


def feedback_turns(ask: Ask) -> int:
    """Re-asks in the conversation: user or tool turns after the first question."""
    return sum(1 for role, _ in ask.turns if role in ("user", "tool")) - 1


def expected(n: int) -> dict[str, Any] | None:
    """What record `n` settles to: its value, or None when it fails."""
    return None if n % 100 == 7 else {"name": f"P{n}", "age": n}


class Scripted:
    """The deterministic model behind both fakes (thread-safe: the fakes serve on threads)."""

    def __init__(self, *, transient: bool = True, faulty: bool = True) -> None:
        self.transient = transient
        self.faulty = faulty
        self.asked: Counter[int] = Counter()
        self._lock = threading.Lock()

    def __call__(self, ask: Ask) -> Reply:
        n = number(ask)
        with self._lock:
            self.asked[n] += 1
            first = self.asked[n] == 1
        if self.transient and n % 50 == 11 and first:
            return Reply(reject=(500, "The server had an error while processing your request."))
        value: dict[str, Any] = {"name": f"P{n}", "age": n}
        if self.faulty and n % 10 == 3 and feedback_turns(ask) == 0:
            value = {"name": f"P{n}"}
        if self.faulty and n % 100 == 7:
            value = {"name": f"P{n}", "age": "unknown"}
        if ask.kind == "tool":
            return Reply(calls=((ask.forced or next(iter(ask.tools)), value),))
        return Reply(text=json.dumps(value))


def expire_some(key: str) -> bool:
    """Round-0 requests of records 5, 102, 199, ... expire before they run."""
    found = re.fullmatch(r"row-(\d+)-r0", key)
    return found is not None and int(found[1]) % 97 == 5


FAKES = {"openai": FakeOpenAIBatch, "anthropic": FakeAnthropicBatch}


def fake(provider: str, model: Any = None, **options: Any) -> Any:
    server = FAKES[provider](model or Scripted(), **options)
    server.expire = expire_some
    return server


def texts(count: int) -> list[str]:
    return [f"record {n}: someone of some age" for n in range(count)]


SETTINGS = BatchSettings(poll_every=0.0, poll_max=0.0)


def start(provider: str, url: str, folder: Path, count: int, **settings: Any) -> BatchJob:
    chat = client(provider, _Server(url))
    made = BatchSettings(**{"poll_every": 0.0, "poll_max": 0.0, **settings})
    return submit(
        chat, strategy(), texts(count), folder=folder, system_prompt=SYSTEM, settings=made
    )


def take_up(provider: str, url: str, folder: Path, **settings: Any) -> BatchJob:
    chat = client(provider, _Server(url))
    made = BatchSettings(**{"poll_every": 0.0, "poll_max": 0.0, **settings})
    return resume(folder, chat, strategy(), system_prompt=SYSTEM, settings=made)


class _Server:
    """Just the address of a fake, as `clients.client` reads it."""

    def __init__(self, url: str) -> None:
        self.url = url


def finish(job: BatchJob) -> list[dict[str, Any]]:
    job.wait(progress=False, sleep=lambda seconds: None)
    return list(job.results())


def check_lines(lines: list[dict[str, Any]], count: int) -> None:
    """Every record once, in input order, each with the outcome the script gives it."""
    assert [line["id"] for line in lines] == list(range(1, count + 1))
    for n, line in enumerate(lines):
        want = expected(n)
        if want is None:
            assert line["error"]["type"] == "StructuredOutputRetryError", line
        else:
            assert line.get("output") == want, line


def child(provider: str, url: str, folder: str, count: int, phase: str, at: int) -> None:
    """Run (or take up) a job in this process, killing it at the `at`-th `phase`."""
    import os
    import signal

    path = Path(folder)
    job = (
        take_up(provider, url, path)
        if (path / "job.json").exists()
        else start(provider, url, path, count)
    )
    seen = Counter[str]()

    def hook(name: str) -> None:
        seen[name] += 1
        if name == phase and seen[name] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    job._job.hook = hook
    finish(job)
