"""Settling 1,000 records through a provider batch, beside stock LangChain's live `batch`.

Both runs talk to the same fake provider on loopback (the test suite's batch
fakes, which check every request against the provider's rules and answer with
a scripted model), so neither waits on a real model and the figures are the
client side's cost:

- structx provider batch: `langchain_structx.batch.submit(...).wait()` for the
  records: requests built by the chat model's payload builder, one file
  uploaded (OpenAI) or one inline batch (Anthropic), polled until it ends,
  every reply parsed, validated and written, the job kept on disk at each phase;
- stock LangChain: `model.with_structured_output(Person).batch(texts)` against
  the same fake's live endpoint, eight requests in flight.

The batch fake ends a batch on the first poll here, so the provider's own
turnaround (minutes to hours in real life) is left out. The fake's time to
answer (the same in both runs) is measured and taken off, which leaves the
engine overhead per record.

Run from the repository root, so that this checkout is the one imported:
PYTHONPATH=. python benchmarks/provider_batch.py [--records 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts

from langchain_structx.batch import BatchSettings, submit  # noqa: E402
from tests.integration.providers.batch_jobs import (  # noqa: E402
    SYSTEM,
    Person,
    Scripted,
    fake,
    texts,
)
from tests.integration.providers.clients import client  # noqa: E402

PROVIDERS = ("openai", "anthropic")


class Timed:
    """Wraps the fake's `answer` to add up the time the fake spends answering."""

    def __init__(self, server: Any) -> None:
        self.seconds = 0.0
        self._answer = server.answer
        server.answer = self

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            return self._answer(path, body)
        finally:
            self.seconds += time.perf_counter() - started


def provider_batch(provider: str, count: int) -> tuple[float, float]:
    """Seconds to settle `count` records as a provider batch, and the fake's share."""
    with fake(provider, Scripted(transient=False, faulty=False)) as server:
        chat = client(provider, server)
        server.expire = lambda key: False
        server.running_polls = 0
        timed = Timed(server)
        settings = BatchSettings(poll_every=0.0, poll_max=0.0)
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            job = submit(
                chat,
                Person,
                texts(count),
                folder=Path(folder) / "job",
                system_prompt=SYSTEM,
                settings=settings,
            )
            summary = job.wait(progress=False, sleep=lambda seconds: None)
            elapsed = time.perf_counter() - started
        assert summary.done == count and not server.violations, (summary, server.violations[:3])
        return elapsed, timed.seconds


def stock_batch(provider: str, count: int) -> tuple[float, float]:
    """Seconds for stock LangChain's live `batch` over the same records, and the fake's share."""
    with fake(provider, Scripted(transient=False, faulty=False)) as server:
        timed = Timed(server)
        model = client(provider, server).with_structured_output(Person)
        server.running_polls = 0
        prompts = [[("system", SYSTEM), ("user", text)] for text in texts(count)]
        started = time.perf_counter()
        answers = model.batch(prompts, config={"max_concurrency": 8})
        elapsed = time.perf_counter() - started
        assert all(isinstance(a, Person) for a in answers)
        return elapsed, timed.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1000)
    count = parser.parse_args().records
    rows: dict[str, dict[str, float]] = {}
    print(f"{count} records through the fake providers on loopback\n")
    head = f"{'provider':<10} {'structx batch rec/s':>20} {'stock live rec/s':>17} {'ratio':>7}"
    print(head + f" {'engine ms/record':>17}")
    for provider in PROVIDERS:
        provider_batch(provider, 20)  # warm up: imports, first-call caches
        stock_batch(provider, 20)
        ours, ours_fake = provider_batch(provider, count)
        stock, _ = stock_batch(provider, count)
        rows[provider] = {
            "structx_per_s": count / ours,
            "stock_per_s": count / stock,
            "ratio": stock / ours,
            "engine_ms_per_record": 1000 * (ours - ours_fake) / count,
        }
        r = rows[provider]
        print(
            f"{provider:<10} {r['structx_per_s']:>20.0f} {r['stock_per_s']:>17.0f} "
            f"{r['ratio']:>6.2f}x {r['engine_ms_per_record']:>17.2f}"
        )
    print("\nratio: structx provider batch throughput / stock LangChain live batch throughput")
    save_figures(
        "provider_batch",
        title=f"{count} records settled: provider batch beside stock live batch (fake provider)",
        unit="records/s",
        groups=list(PROVIDERS),
        series={
            "structx provider batch": [rows[p]["structx_per_s"] for p in PROVIDERS],
            "stock LangChain model.batch (live)": [rows[p]["stock_per_s"] for p in PROVIDERS],
        },
        extra={"records": count, "rows": rows},
    )


if __name__ == "__main__":
    main()
