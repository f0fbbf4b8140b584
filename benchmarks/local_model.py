"""Extraction quality and cost on the embedded model: our strategies against stock LangChain.

The task set is the one the integration tests use (`tests/integration/local_tasks.py`):
short texts, each with a schema and the exact expected object. Every configuration
runs every task once, greedy decoding, same weights (Qwen2.5-Coder-0.5B-Instruct
Q4_K_M), same thread count and token cap:

- ours, in-process: `langchain_structx.create_agent` on `LocalChatModel` with each
  of our strategies (provider, tool, prompted, prompted + JSON mode);
- ours, over HTTP: `AutoStrategy` on `ChatOpenAI` against `python -m llama_cpp.server`
  on 127.0.0.1, with the profile a user would give that server;
- stock, over HTTP: `langchain.agents.create_agent` with LangChain's `ToolStrategy`
  and `ProviderStrategy` on the same `ChatOpenAI`, as the issue asks;
- stock, in-process: the same two on `LocalChatModel`, so that the comparison does
  not rest on the server's limits alone.

Beside them, two raw completions of the provider route's prompt with no strategy
around them: unconstrained decoding, and the same request held to the schema by
the constrained decoder (llguidance). They give the decode speed of constrained
against unconstrained decoding (tokens per second from the median gap between
tokens, median of the per-task ratios) and the latency of a record with no
structured output at all. Every configuration runs task by task, interleaved, so
that the load of a shared machine falls on all of them alike; the two raw runs
of a task are kept apart by a strategy's call, their order swapped on every other
task, so that neither finds the other's prompt already evaluated.

Stock exceptions (HTTP 500, unsupported unions, parse errors) count as failures;
stock runs are bounded by a recursion limit. Per configuration it prints the
schema-valid rate (checked independently of the agent), exact-field accuracy,
model calls, prompt and completion tokens per valid result, and p50 latency; then
ratios against the best stock configuration, the cost of our prompted schema
rendering against pasting the JSON schema (counted with the model's tokenizer),
and the goals as PASS/MISS. Results also go to `benchmarks/results/local_model_detail.json`.

Run: python benchmarks/local_model.py [--tasks N] [--no-server]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import operator
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from langchain.agents import create_agent as langchain_create_agent
from langchain.agents import structured_output as lc
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.outputs import LLMResult
from pydantic import TypeAdapter

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
    create_agent,
)
from langchain_structx._request import prompt as _prompt
from langchain_structx._request.plan import build_plan
from langchain_structx.local import LocalChatModel, default_model_path
from langchain_structx.local._weights import DEFAULT_WEIGHTS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from local_tasks import ALL_TASKS, SYSTEM_PROMPT, Task, as_data, normalise  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "local_model_detail.json"
RECURSION_LIMIT = 6
PROMPT_GOAL = 0.5


class Meter(BaseCallbackHandler):
    """Counts model calls and sums the tokens they report."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.prompt_tokens += usage.get("input_tokens", 0)
                    self.completion_tokens += usage.get("output_tokens", 0)


@dataclass
class Outcome:
    """One task run by one configuration."""

    task: str
    valid: bool
    right_fields: int
    fields: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    error: str | None = None
    answer: Any = None
    decode_tps: float | None = None


@dataclass
class Config:
    """A way of running the tasks, and what it scored."""

    name: str
    side: str  # "ours" or "stock"
    build: Callable[[Task], Any]
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        runs = self.outcomes
        valid = sum(o.valid for o in runs)
        per = max(valid, 1)
        return {
            "name": self.name,
            "side": self.side,
            "tasks": len(runs),
            "valid": valid,
            "valid_rate": valid / len(runs) if runs else 0.0,
            "field_accuracy": sum(o.right_fields for o in runs)
            / max(sum(o.fields for o in runs), 1),
            "exact_tasks": sum(o.valid and o.right_fields == o.fields > 0 for o in runs),
            "calls": sum(o.calls for o in runs),
            "calls_per_result": sum(o.calls for o in runs) / per if valid else None,
            "prompt_tokens_per_result": sum(o.prompt_tokens for o in runs) / per if valid else None,
            "completion_tokens_per_result": (
                sum(o.completion_tokens for o in runs) / per if valid else None
            ),
            "p50_latency_s": statistics.median(o.seconds for o in runs) if runs else None,
            "decode_tps": _median([o.decode_tps for o in runs if o.decode_tps]),
            "failures": {o.task: o.error for o in runs if o.error},
        }


def stock_schema(task: Task) -> Any:
    """The task's schema as LangChain takes it: a list becomes a Union type."""
    if isinstance(task.schema, list):
        return functools.reduce(operator.or_, task.schema)
    return task.schema


def schema_valid(task: Task, data: Any) -> bool:
    """Check an answer against the task's schema, independently of any agent."""
    if isinstance(task.schema, dict):
        checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
        return bool(
            jsonschema.Draft202012Validator(task.schema, format_checker=checker).is_valid(data)
        )
    try:
        TypeAdapter(stock_schema(task)).validate_python(data)
    except ValueError:
        return False
    return True


def kind_of(task: Task, value: Any) -> str:
    """The variant name of a stock answer (stock agents do not report it)."""
    if isinstance(value, dict):
        return task.kind  # A dict schema or TypedDict; single-variant tasks only.
    return type(value).__name__


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def raw_completion(local: Any, task: Task, constrained: bool) -> Outcome:
    """One streamed completion of the provider route's prompt."""
    plan = build_plan(ProviderStrategy(task.schema))
    schema = {"name": plan.output_name(), "schema": plan.output_schema()}
    messages = [SystemMessage(SYSTEM_PROMPT), HumanMessage(task.text)]
    fmt = {"type": "json_schema", "json_schema": schema}
    _, request = local._request(messages, None, {"response_format": fmt})
    if not constrained:
        del request["json_grammar"]
    loaded = local._loaded()
    with loaded.lock:
        started = time.perf_counter()
        stamps, text = [], ""
        for part in local._complete(loaded, request, stream=True):
            piece = part["choices"][0]["delta"].get("content")
            if piece:
                stamps.append(time.perf_counter())
                text += piece
    seconds = (stamps[-1] if stamps else time.perf_counter()) - started
    # The median gap between tokens: on a shared machine, a stall of the whole
    # process (another job's burst) lands in a few gaps and would swamp a mean.
    gaps = [later - earlier for earlier, later in zip(stamps, stamps[1:], strict=False)]
    speed = 1 / statistics.median(gaps) if len(gaps) > 1 else None
    valid = False
    try:
        data = json.loads(text)
        valid = jsonschema.Draft202012Validator(plan.output_schema()).is_valid(data)
    except ValueError:
        pass
    error = None if valid or not constrained else "answer does not validate against the schema"
    return Outcome(task.id, valid, 0, 0, 1, 0, len(stamps), seconds, error, text, speed)


def run_one(config: Config, task: Task) -> Outcome:
    if config.side == "raw":
        return config.build(task)  # type: ignore[no-any-return]
    meter = Meter()
    started = time.perf_counter()
    error = None
    state: dict[str, Any] = {}
    try:
        agent = config.build(task)  # Stock strategies reject some schemas (unions) here.
        run_config: dict[str, Any] = {"callbacks": [meter]}
        if config.side == "stock":
            # Stock structured output retries without bound; ours stops at max_retries,
            # and each of its attempts is two graph steps (model, retry router).
            run_config["recursion_limit"] = RECURSION_LIMIT
        state = agent.invoke({"messages": [("user", task.text)]}, run_config)
    except Exception as exc:  # noqa: BLE001 - every failure is a data point
        error = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    seconds = time.perf_counter() - started
    value = state.get("structured_response")
    fields = len(task.expected)
    right = 0
    valid = False
    answer = None
    if error is None and value is None:
        error = "no structured_response"
    elif error is None:
        data = normalise(as_data(value))
        answer = data
        valid = schema_valid(task, data)
        kind = state.get("structured_response_kind") or kind_of(task, value)
        if valid and kind == task.kind and isinstance(data, dict):
            right = sum(data.get(k) == v for k, v in task.expected.items())
        elif not valid:
            error = "answer does not validate against the schema"
    return Outcome(
        task.id,
        valid,
        right,
        fields,
        meter.calls,
        meter.prompt_tokens,
        meter.completion_tokens,
        seconds,
        error,
        answer,
    )


def ours(model: Any, make: Callable[[Any], Any]) -> Callable[[Task], Any]:
    def build(task: Task) -> Any:
        return create_agent(model, response_format=make(task.schema), system_prompt=SYSTEM_PROMPT)

    return build


def stock(model: Any, make: Callable[[Any], Any]) -> Callable[[Task], Any]:
    def build(task: Task) -> Any:
        return langchain_create_agent(
            model, response_format=make(stock_schema(task)), system_prompt=SYSTEM_PROMPT
        )

    return build


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(weights: Path, threads: int) -> Iterator[tuple[str, str]]:
    """Run `python -m llama_cpp.server` on 127.0.0.1; yield (base_url, model id)."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(weights),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", str(threads), "--n_ctx", "4096",
    ]  # fmt: skip
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    tail = log.read()[-1500:].decode(errors="replace")
                    raise RuntimeError(f"llama.cpp server exited:\n{tail}")
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                        model_id = str(json.load(response)["data"][0]["id"])
                    break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    if time.monotonic() > deadline:
                        raise RuntimeError("llama.cpp server did not start") from None
                    time.sleep(0.25)
            yield base_url, model_id
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


OPENAI_PROFILE = {"structured_output": True, "tool_calling": False}
"""What a user says of an OpenAI-compatible llama.cpp server: it advertises
json_schema output, and its chat template makes no forced tool calls."""


def openai_model(
    base_url: str, model_id: str, max_tokens: int, profile: dict[str, Any] | None = OPENAI_PROFILE
) -> Any:
    """`ChatOpenAI` on llama.cpp's server; `profile=None` is a user's first attempt."""
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    return ChatOpenAI(
        base_url=base_url,
        api_key=SecretStr("not-needed"),
        model=model_id,
        temperature=0,
        max_retries=0,
        timeout=120,
        # Sent as max_completion_tokens by langchain-openai, which the server ignores.
        # The server's default repeat_penalty is 1.1, in-process it is 1.0: match them.
        extra_body={"max_tokens": max_tokens, "repeat_penalty": 1.0},
        profile=profile,
    )


def prompt_rendering(llama: Any, tasks: tuple[Task, ...]) -> list[dict[str, Any]]:
    """Tokens of our rendering of each schema against its pasted JSON schema.

    `schema` rows compare one variant's rendering (as the prompted strategy writes
    it) with `json.dumps` of the same JSON schema; `whole` compares the complete
    instruction text with the same text carrying the pasted schema of the answer
    (the union envelope for unions) instead, shared sentence included.
    """

    def count(text: str) -> int:
        return len(llama.tokenize(text.encode(), add_bos=False, special=False))

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for task in tasks:
        plan = build_plan(PromptedStrategy(task.schema))
        for variant in plan.schemas.variants:
            if variant.name in seen:
                continue
            seen.add(variant.name)
            rendered = _prompt.render_schema(variant.name, variant.json_schema, variant.description)
            mine, pasted = count(rendered), count(json.dumps(variant.json_schema))
            rows.append(_row("schema", variant.name, mine, pasted))
        name = plan.output_name()
        if f"whole:{name}" not in seen:
            seen.add(f"whole:{name}")
            ours_text = plan.instructions()
            header = ours_text.split("\n\n", 1)[0]
            pasted_text = f"{header}\n\n{json.dumps(plan.output_schema())}"
            rows.append(_row("whole", name, count(ours_text), count(pasted_text)))
    return rows


def _row(scope: str, name: str, mine: int, pasted: int) -> dict[str, Any]:
    return {"scope": scope, "schema": name, "ours": mine, "pasted": pasted, "ratio": mine / pasted}


def _fmt(value: Any, spec: str) -> str:
    if value is None:
        width = spec.split(".")[0]
        return format("-", f">{width}" if width else "")
    return format(value, spec)


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'configuration':34} {'valid':>7} {'fields':>7} {'exact':>6} {'calls/r':>8} "
        f"{'prompt/r':>9} {'compl/r':>8} {'p50 s':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['side'] + ' ' + r['name']:34} {r['valid_rate']:>7.0%} {r['field_accuracy']:>7.0%} "
            f"{r['exact_tasks']:>3}/{r['tasks']:<2} {_fmt(r['calls_per_result'], '8.2f')} "
            f"{_fmt(r['prompt_tokens_per_result'], '9.0f')} "
            f"{_fmt(r['completion_tokens_per_result'], '8.1f')} {_fmt(r['p50_latency_s'], '7.2f')}"
        )


def decoding(rows: list[dict[str, Any]], configs: list[Config]) -> dict[str, Any] | None:
    """Constrained against unconstrained decoding, and each route's p50 beside them."""
    raw = {c.name: c for c in configs if c.side == "raw"}
    if len(raw) != 2:
        return None
    free, held = raw["unconstrained decoding"], raw["constrained decoding"]
    pairs = [
        h.decode_tps / f.decode_tps
        for f, h in zip(free.outcomes, held.outcomes, strict=True)
        if f.decode_tps and h.decode_tps
    ]
    by_name = {r["name"]: r for r in rows}
    base = by_name["unconstrained decoding"]["p50_latency_s"]
    out = {
        "decode_tps_unconstrained": by_name["unconstrained decoding"]["decode_tps"],
        "decode_tps_constrained": by_name["constrained decoding"]["decode_tps"],
        "decode_ratio": _median(pairs),
        "p50_latency_s": {r["name"]: r["p50_latency_s"] for r in rows},
        "p50_vs_unconstrained": {r["name"]: _ratio(r["p50_latency_s"], base) for r in rows},
    }
    print("\nDecoding, same prompt (the provider route's):")
    print(f"  unconstrained          {_fmt(out['decode_tps_unconstrained'], '6.1f')} tokens/s")
    print(f"  constrained            {_fmt(out['decode_tps_constrained'], '6.1f')} tokens/s")
    print(f"  constrained / unconstrained, median per task  x{_fmt(out['decode_ratio'], '.3f')}")
    print("\np50 latency per record, beside unconstrained decoding:")
    for r in rows:
        shown = _fmt(out["p50_vs_unconstrained"][r["name"]], ".2f")
        print(f"  {r['side'] + ' ' + r['name']:34} {_fmt(r['p50_latency_s'], '6.2f')} s  x{shown}")
    return out


def ratios(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    stock_rows = [r for r in rows if r["side"] == "stock"]
    if not stock_rows:
        return None
    best = max(stock_rows, key=lambda r: (r["field_accuracy"], -(r["p50_latency_s"] or 0)))
    print(f"\nRatios against the best stock configuration ({best['name']}):")
    out: dict[str, Any] = {"best_stock": best["name"], "ours": {}}
    for r in rows:
        if r["side"] != "ours":
            continue
        entry = {
            "accuracy": _ratio(r["field_accuracy"], best["field_accuracy"]),
            "prompt_tokens": _ratio(
                r["prompt_tokens_per_result"], best["prompt_tokens_per_result"]
            ),
            "p50_latency": _ratio(r["p50_latency_s"], best["p50_latency_s"]),
        }
        out["ours"][r["name"]] = entry
        shown = "  ".join(f"{k} x{_fmt(v, '.2f')}" for k, v in entry.items())
        print(f"  {r['name']:30} {shown}")
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


DECODE_GOAL = 0.95


def goals(
    rows: list[dict[str, Any]], rendering: list[dict[str, Any]], speed: dict[str, Any] | None
) -> list[dict[str, Any]]:
    found = []
    for r in rows:
        if r["side"] == "raw" and r["name"] == "constrained decoding":
            found.append(
                {
                    "goal": "constrained decoding: 100% schema-valid",
                    "ok": r["valid_rate"] == 1.0,
                    "detail": f"{r['valid']}/{r['tasks']}",
                }  # fmt: skip
            )
        if r["side"] == "ours":
            found.append(
                {
                    "goal": f"{r['name']}: 100% schema-valid",
                    "ok": r["valid_rate"] == 1.0,
                    "detail": f"{r['valid']}/{r['tasks']}",
                }  # fmt: skip
            )
    stock_best = max((r["field_accuracy"] for r in rows if r["side"] == "stock"), default=None)
    if stock_best is not None:
        for r in rows:
            if r["side"] == "ours":
                found.append(
                    {
                        "goal": f"{r['name']}: accuracy >= best stock ({stock_best:.0%})",
                        "ok": r["field_accuracy"] >= stock_best,
                        "detail": f"{r['field_accuracy']:.0%}",
                    }  # fmt: skip
                )
    if speed is not None and speed["decode_ratio"] is not None:
        found.append(
            {
                "goal": f"constrained decode tokens/s >= {DECODE_GOAL:.2f}x unconstrained",
                "ok": speed["decode_ratio"] >= DECODE_GOAL,
                "detail": f"x{speed['decode_ratio']:.3f}",
            }  # fmt: skip
        )
    worst = max((r for r in rendering if r["scope"] == "schema"), key=lambda row: row["ratio"])
    found.append(
        {
            "goal": f"prompted schema rendering <= {PROMPT_GOAL:.0%} of pasted JSON schema tokens",
            "ok": worst["ratio"] <= PROMPT_GOAL,
            "detail": f"worst {worst['schema']} {worst['ratio']:.0%}",
        }  # fmt: skip
    )
    print("\nGoals:")
    for goal in found:
        print(f"  {'PASS' if goal['ok'] else 'MISS'}  {goal['goal']}  ({goal['detail']})")
    return found


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=len(ALL_TASKS), help="run the first N tasks")
    parser.add_argument("--task", action="append", default=[], help="run only this task id")
    parser.add_argument(
        "--strategy", action="append", default=[], help="run only this configuration of ours"
    )
    parser.add_argument("--ours-only", action="store_true", help="skip stock configurations")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-retries", type=int, default=1, help="our strategies' retries")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (both sides)")
    parser.add_argument("--no-server", action="store_true", help="skip the HTTP configurations")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds after which no task starts"
    )
    parser.add_argument("--verbose", action="store_true", help="print each outcome as it comes")
    args = parser.parse_args()
    if args.ours_only or args.strategy:
        args.no_server = True
    return args


def chosen(configs: list[Config], args: argparse.Namespace) -> list[Config]:
    """The configurations the command line asks for."""
    if args.ours_only or args.strategy:
        configs = [c for c in configs if c.side != "stock"]
    if args.strategy:
        configs = [c for c in configs if c.name in args.strategy or c.side == "raw"]
    return configs


def selected_tasks(args: argparse.Namespace) -> tuple[Task, ...]:
    if args.task:
        return tuple(t for t in ALL_TASKS if t.id in args.task)
    return ALL_TASKS[: max(1, args.tasks)]


def run_all(
    configs: list[Config], tasks: tuple[Task, ...], verbose: bool, budget: float | None = None
) -> tuple[Task, ...]:
    """Task by task, every configuration in turn: machine load hits them alike.

    With a `budget` in seconds, no task starts once it is spent; returns the tasks run.
    """
    started = time.perf_counter()
    done: list[Task] = []
    raw = [c for c in configs if c.side == "raw"]
    # Calls with the same prompt are kept apart, or the second would find it evaluated:
    # the provider route's prompt is the raw runs' and auto's (provider on this model).
    rank = {"tool": 0, "auto": 1, "prompted": 2, "provider": 3}
    others = sorted((c for c in configs if c.side != "raw"), key=lambda c: rank.get(c.name, 4))
    for number, task in enumerate(tasks):
        if budget is not None and time.perf_counter() - started > budget:
            break
        done.append(task)
        first, second = raw if number % 2 == 0 else raw[::-1]
        order = [first, *others[:1], second, *others[1:]] if len(raw) == 2 else configs
        for config in order:
            config.outcomes.append(run_one(config, task))
            if verbose:
                outcome = vars(config.outcomes[-1])
                print(config.name, {k: v for k, v in outcome.items() if k != "answer"}, flush=True)
    return tuple(done)


def main() -> int:
    args = parse_args()
    tasks = selected_tasks(args)
    retries = args.max_retries

    started = time.perf_counter()
    local = LocalChatModel(max_tokens=args.max_tokens, seed=0, n_threads=args.threads)
    llama = local.load()
    configs = [
        Config("unconstrained decoding", "raw", lambda t: raw_completion(local, t, False)),
        Config("constrained decoding", "raw", lambda t: raw_completion(local, t, True)),
        Config("auto", "ours", ours(local, lambda s: AutoStrategy(s, max_retries=retries))),
        Config("provider", "ours", ours(local, lambda s: ProviderStrategy(s, max_retries=retries))),
        Config("tool", "ours", ours(local, lambda s: ToolStrategy(s, max_retries=retries))),
        Config("prompted", "ours", ours(local, lambda s: PromptedStrategy(s, max_retries=retries))),
        Config(
            "prompted+json_mode",
            "ours",
            ours(local, lambda s: PromptedStrategy(s, json_mode=True, max_retries=retries)),
        ),
        Config("ToolStrategy (in-process)", "stock", stock(local, lc.ToolStrategy)),
        Config("ProviderStrategy (in-process)", "stock", stock(local, lc.ProviderStrategy)),
    ]
    configs = chosen(configs, args)
    tasks = run_all(configs, tasks, args.verbose, args.budget)

    server_ok = importlib.util.find_spec("uvicorn") is not None
    if not args.no_server and not server_ok:
        print("llama-cpp-python lacks its [server] extras: skipping the HTTP configurations")
    if not args.no_server and server_ok:
        with llama_server(default_model_path(), args.threads) as (base_url, model_id):
            remote = openai_model(base_url, model_id, args.max_tokens)
            http = [
                Config(
                    "auto (HTTP)",
                    "ours",
                    ours(remote, lambda s: AutoStrategy(s, max_retries=retries)),
                ),
                Config("ToolStrategy (HTTP)", "stock", stock(remote, lc.ToolStrategy)),
                Config("ProviderStrategy (HTTP)", "stock", stock(remote, lc.ProviderStrategy)),
            ]
            for config in http:
                for task in tasks:
                    config.outcomes.append(run_one(config, task))
            configs[7:7] = http[:1]
            configs.extend(http[1:])
    elapsed = time.perf_counter() - started

    rows = [c.summary() for c in configs]
    print(
        f"{DEFAULT_WEIGHTS.model_id}, {len(tasks)} tasks, max_tokens {args.max_tokens}, "
        f"{args.threads} thread(s), our retries {retries}; per r = per valid result\n"
    )
    print_table(rows)
    speed = decoding(rows, configs)
    against = ratios(rows)
    rendering = prompt_rendering(llama, tasks)
    print("\nPrompted schema rendering, model tokenizer: ours / pasted JSON schema")
    for row in rendering:
        label = f"{row['schema']} ({row['scope']})"
        print(f"  {label:32} {row['ours']:>5} / {row['pasted']:<5} = {row['ratio']:.0%}")
    reached = goals(rows, rendering, speed)
    failures = [(r["side"] + " " + r["name"], t, e) for r in rows for t, e in r["failures"].items()]
    if failures:
        print("\nFailures:")
        for name, task, error in failures:
            print(f"  {name}, {task}: {error}")
    print(f"\nTotal time {elapsed:.0f}s")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "model": DEFAULT_WEIGHTS.model_id,
        "settings": {
            "tasks": len(tasks),
            "max_tokens": args.max_tokens,
            "threads": args.threads,
            "our_max_retries": retries,
            "cpu_count": os.cpu_count(),
        },
        "configurations": rows,
        "ratios": against,
        "decoding": speed,
        "prompt_rendering": rendering,
        "goals": reached,
        "seconds": round(elapsed, 1),
    }
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    shown = args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output
    print(f"Wrote {shown}")
    names = [row["name"] if row["side"] != "stock" else f"stock {row['name']}" for row in rows]
    save_figures(
        "local_model",
        title=f"{len(tasks)} extraction tasks on the embedded model",
        unit="%",
        groups=names,
        series={
            "schema-valid": [100 * row["valid_rate"] for row in rows],
            "exact fields": [100 * (row["field_accuracy"] or 0) for row in rows],
        },
        extra={
            "p50_latency_s": {n: r["p50_latency_s"] for n, r in zip(names, rows, strict=True)},
            "prompt_tokens_per_result": {
                n: r["prompt_tokens_per_result"] for n, r in zip(names, rows, strict=True)
            },
            "decoding": speed,
            "goals": reached,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
