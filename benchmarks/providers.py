"""Benchmark: the provider matrix through stock LangChain's `create_agent` beside ours.

The same cases as `tests/integration/providers/test_matrix.py` (OpenAI Chat
Completions and Responses, Anthropic and Gemini through their official LangChain
clients, against fake servers on loopback that check each provider's documented
rules) and as `test_workers_ai.py` (every strategy through `ChatCloudflareWorkersAI`
on both routes and `ChatOpenAI` on the compatible one, invoked and streamed), run
once with
`langchain.agents.create_agent` and LangChain's own strategies, once with
`langchain_structx.create_agent`. Per provider: the share of cases with the
expected typed outcome, and the number of requests that broke a documented rule
(deliberately rejected requests aside). LangChain has no prompted strategy: those
cases run with a bare schema there.

Run: `python benchmarks/providers.py` (about 10 minutes).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from langchain.agents import create_agent as langchain_agent  # noqa: E402
from langchain.agents import structured_output as lc  # noqa: E402

from langchain_structx import create_agent as structx_agent  # noqa: E402
from tests.integration.providers.clients import PROVIDERS  # noqa: E402
from tests.integration.providers.matrix import cases, run, verdict  # noqa: E402
from tests.integration.providers.workers import (  # noqa: E402
    ROUTES,
    FakeWorkersAI,
    Parcel,
    answer,
    client,
    drive,
    strategies,
)

GROUPS = (*PROVIDERS, "workers_ai")


def langchain_format(strategy: str, schema: Any) -> Any:
    if strategy == "tool":
        return lc.ToolStrategy(schema)
    if strategy == "provider":
        return lc.ProviderStrategy(schema)
    if strategy == "provider_strict":
        return lc.ProviderStrategy(schema, strict=True)
    return schema  # auto, and prompted (which LangChain does not have)


def workers_ai(label: str, factory: Any, fmt: Any) -> tuple[int, int, int]:
    """(cases, passed, rule-breaking requests) of the Workers AI cases."""
    total = passed = broken = 0
    for via in ROUTES:
        for name in strategies(Parcel):
            for stream in (False, True):
                strategy = fmt(name, Parcel) if fmt else strategies(Parcel)[name]
                with FakeWorkersAI(answer) as server:
                    try:
                        state = drive(client(server, via), strategy, stream=stream, factory=factory)
                        ok = state.get("structured_response") == Parcel(label="box")
                    except Exception:  # noqa: BLE001 - a failed case is counted, not raised
                        ok = False
                total, passed = total + 1, passed + ok
                broken += len(server.violations)
                mode = "stream" if stream else "invoke"
                print(f"  {label:<9} workers_ai-{via}-{name}-{mode:<34} {'ok' if ok else '--'}")
    return total, passed, broken


def main() -> int:
    started = time.perf_counter()
    passed: Counter[tuple[str, str]] = Counter()
    total: Counter[str] = Counter()
    broken: Counter[tuple[str, str]] = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases():
            total[case.provider] += 1
            for label, factory, fmt in (
                ("structx", structx_agent, None),
                ("langchain", langchain_agent, langchain_format),
            ):
                began = time.perf_counter()
                outcome = run(case, factory, fmt) if fmt else run(case, factory)
                ok = verdict(case, outcome) is None
                passed[(label, case.provider)] += ok
                broken[(label, case.provider)] += len(outcome.violations)
                spent = time.perf_counter() - began
                print(
                    f"  {label:<9} {case.id:<55} {'ok' if ok else '--'} {spent:5.1f} s", flush=True
                )
        for label, factory, fmt in (
            ("structx", structx_agent, None),
            ("langchain", langchain_agent, langchain_format),
        ):
            n, ok, bad = workers_ai(label, factory, fmt)
            total["workers_ai"] = n
            passed[(label, "workers_ai")] += ok
            broken[(label, "workers_ai")] += bad
    header = f"{'provider':<17}{'cases':>6}{'structx pass':>14}{'langchain pass':>16}"
    header += f"{'structx bad req':>17}{'langchain bad req':>19}"
    print(header)
    print("-" * len(header))
    for provider in GROUPS:
        n = total[provider]
        ours, theirs = passed[("structx", provider)] / n, passed[("langchain", provider)] / n
        line = f"{provider:<17}{n:>6}{ours:>13.1%}{theirs:>16.1%}"
        line += f"{broken[('structx', provider)]:>17}{broken[('langchain', provider)]:>19}"
        print(line)
    print(f"\n{sum(total.values())} cases in {time.perf_counter() - started:.0f} s")
    share = {k: 100 * passed[k] / total[k[1]] for k in passed}
    save_figures(
        "providers",
        title="Provider matrix through the official clients: expected outcome",
        unit="%",
        groups=list(GROUPS),
        series={
            "structx": [share.get(("structx", p), 0.0) for p in GROUPS],
            "langchain": [share.get(("langchain", p), 0.0) for p in GROUPS],
        },
        extra={
            "cases_per_provider": {p: total[p] for p in GROUPS},
            "rule_breaking_requests": {f"{k[0]} {k[1]}": v for k, v in broken.items()},
        },
    )
    return 0 if all(broken[("structx", p)] == 0 for p in GROUPS) else 1


if __name__ == "__main__":
    raise SystemExit(main())
