"""Batch throughput on the embedded model: prefix reuse against a cold prompt each time.

Fifty short texts go one after another through `create_agent` on `LocalChatModel`
with the CLI's system prompt and `AutoStrategy` (grammar-constrained JSON), as
`structx extract --batch` runs them. The system prompt and the rendered schema come
first in every prompt, so consecutive items share a long prefix; llama.cpp keeps the
evaluated tokens of the previous request and evaluates only what differs.

Two runs over the same texts, interleaved in blocks so that machine noise hits both:

- with reuse: what the package does;
- without reuse: the model's token state is reset before each item, so the whole
  prompt is evaluated again (what a fresh context per item would cost).

Beside them, the decode-bound limit measured in the same run: the output tokens an
item needs, divided by the model's measured decode speed (plain generation, timed
from the first token to the last). No batch can beat it on one sequence, since every
output token costs one decode step.

The package keeps per-item costs near that floor: the schema is compiled once
(llguidance), the tokenizer the decoder needs is built once per loaded model, and
masking the vocabulary costs well under a millisecond a token
(see `langchain_structx/local/_guidance.py`). Goal: with reuse, >= 90% of the limit.

Run from the repository root, so that this checkout is the one imported:
PYTHONPATH=. python benchmarks/batch.py [--items 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from pydantic import BaseModel, Field

from langchain_structx import AutoStrategy, create_agent
from langchain_structx.local import LocalChatModel
from langchain_structx.local._weights import DEFAULT_WEIGHTS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from local_tasks import SYSTEM_PROMPT  # noqa: E402

GOAL = 0.9
FIRST = ("Maria", "Tom", "Priya", "Sam", "Lena", "Jonas", "Ana", "Ben", "Claire", "Wei")
LAST = ("Lopez", "Baker", "Shah", "Lee", "Fischer")


class Contact(BaseModel):
    """A person's contact details."""

    name: str = Field(max_length=60)
    email: str = Field(max_length=80)
    phone: str = Field(max_length=30)


def texts(count: int) -> list[str]:
    """`count` short, distinct contact texts."""
    out = []
    for i in range(count):
        first, last = FIRST[i % len(FIRST)], LAST[(i // len(FIRST)) % len(LAST)]
        email = f"{first.lower()}.{last.lower()}{i}@example.org"
        out.append(f"Reach {first} {last} at {email} or call 555-{1000 + i:04d}.")
    return out


class Tokens(BaseCallbackHandler):
    """Sums the output tokens the model reports."""

    def __init__(self) -> None:
        self.prompt = 0
        self.output = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.prompt += usage.get("input_tokens", 0)
                    self.output += usage.get("output_tokens", 0)


def decode_speed(llama: Any, tokens: int = 64, rounds: int = 3) -> float:
    """Median decode speed in tokens per second, prompt evaluation excluded."""
    speeds = []
    for _ in range(rounds):
        llama.reset()
        stream = llama.create_completion(
            "List the numbers from 1 to 100, separated by commas:",
            max_tokens=tokens,
            temperature=0.0,
            stream=True,
        )
        stamps = [time.perf_counter() for _ in stream]
        if len(stamps) > 1:
            speeds.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return statistics.median(speeds)


def run_item(agent: Any, llama: Any, text: str, reuse: bool, meter: Tokens) -> float:
    if not reuse:
        llama.reset()  # Forget the evaluated tokens: the whole prompt is evaluated again.
    started = time.perf_counter()
    state = agent.invoke({"messages": [("user", text)]}, {"callbacks": [meter]})
    assert state["structured_response"] is not None
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    parser.add_argument("--block", type=int, default=5, help="items per interleaved block")
    args = parser.parse_args()

    model = LocalChatModel(max_tokens=96, seed=0, n_threads=args.threads)
    llama = model.load()
    agent = create_agent(
        model, response_format=AutoStrategy(Contact, max_retries=1), system_prompt=SYSTEM_PROMPT
    )
    items = texts(args.items)
    run_item(agent, llama, "Reach Ada Byron at ada@example.org or call 555-0000.", True, Tokens())

    seconds = {True: 0.0, False: 0.0}
    meters = {True: Tokens(), False: Tokens()}
    speeds = [decode_speed(llama)]
    for start in range(0, len(items), args.block):
        block = items[start : start + args.block]
        for reuse in (True, False):
            # The first item of a block follows the other mode's last one: warm it up
            # on the same prefix so that each mode is measured in its own state.
            run_item(agent, llama, block[0], reuse, Tokens())
            for text in block:
                seconds[reuse] += run_item(agent, llama, text, reuse, meters[reuse])
        speeds.append(decode_speed(llama))
    speed = statistics.median(speeds)

    count = len(items)
    per_minute = {reuse: 60 * count / seconds[reuse] for reuse in (True, False)}
    output_per_item = meters[True].output / count
    limit = 60 * speed / output_per_item
    share = per_minute[True] / limit
    print(
        f"{DEFAULT_WEIGHTS.model_id}, {count} items, {args.threads} thread(s), "
        f"AutoStrategy (constrained JSON, llguidance)\n"
    )
    print(f"  decode speed (median of {len(speeds)})    {speed:8.1f} tokens/s")
    print(f"  output tokens per item              {output_per_item:8.1f}")
    print(f"  prompt tokens per item              {meters[True].prompt / count:8.1f}")
    print(f"  decode-bound limit                  {limit:8.1f} items/min")
    print(f"  with prefix reuse                   {per_minute[True]:8.1f} items/min")
    print(f"  without reuse                       {per_minute[False]:8.1f} items/min")
    print(f"  reuse / no reuse                    {per_minute[True] / per_minute[False]:8.2f}x")
    print(f"  reuse / decode-bound limit          {share:8.0%}")
    ok = share >= GOAL
    print(f"\nGoal: {'PASS' if ok else 'MISS'}  with reuse >= {GOAL:.0%} of the decode-bound limit")
    save_figures(
        "batch",
        title=f"{count} short texts through the embedded model, one after another",
        unit="items/min",
        groups=["with prefix reuse", "without reuse", "decode-bound limit"],
        series={"items per minute": [per_minute[True], per_minute[False], limit]},
        extra={
            "decode_tokens_per_s": speed,
            "output_tokens_per_item": output_per_item,
            "prompt_tokens_per_item": meters[True].prompt / count,
            "threads": args.threads,
            "goals": [
                {
                    "goal": f"with reuse >= {GOAL:.0%} of the decode-bound limit",
                    "ok": ok,
                    "detail": f"{share:.0%}",
                }
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
