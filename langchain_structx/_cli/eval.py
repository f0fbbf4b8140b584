"""`structx eval`: run each strategy on a model and a set of inputs, and compare them.

```
structx eval --schema contact.json --inputs tasks.jsonl
structx eval --schema contact.json --inputs tasks.jsonl --plot eval.png --save-profile local.json
structx extract --schema contact.json --profile local.json "Reach Ada at ada@example.org"
```

Each input line is `{"text": ..., "expected": {...}}` (`id` and `expected` are
optional). Every input runs once through each strategy (provider, tool,
prompted, and prompted with JSON mode), on the same agent the `extract` command
builds; the table shows, per strategy, the share of valid answers, the share of
expected fields got exactly right, the model calls and tokens per answer, and
the median and 95th-percentile seconds per answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from pydantic_core import to_jsonable_python

from langchain_structx._cli.eval_plot import draw, pyplot
from langchain_structx._cli.eval_table import (
    EVAL_STRATEGIES,
    Answer,
    Row,
    compare_fields,
    profile_order,
    recommendation,
    table,
)
from langchain_structx._cli.exits import DEFAULT_SYSTEM_PROMPT, EXIT_FAILED, EXIT_OK, CliError
from langchain_structx._cli.model import add_model_options, check_model_args, load_model, model_spec
from langchain_structx._cli.records import Progress
from langchain_structx._cli.schema_input import SchemaSpecError, load_schema
from langchain_structx._clip import read_capped
from langchain_structx._models.profile import StrategyProfile, write_profile
from langchain_structx.errors import UserError
from langchain_structx.report import RESPONSE_KEY
from langchain_structx.strategies import PromptedStrategy, ProviderStrategy, Strategy, ToolStrategy

MAX_INPUT_BYTES = 16 << 20
"""The largest inputs file read (16 MiB): an eval is a sample, not a batch."""


EVAL_EXIT_CODES = """exit codes:
  0    the table is printed; some strategy produced a valid answer
  1    the table is printed; no strategy produced a valid answer
  2    usage error: a bad option, schema or --inputs file
  3    the model could not be loaded, or --plot has no matplotlib
  130  interrupted (Ctrl-C or SIGTERM)"""


class EvalInputError(CliError):
    """The `--inputs` file cannot be read as eval inputs."""


@dataclass(frozen=True, slots=True)
class EvalInput:
    """One text to extract from, with the output expected, if known."""

    line: int
    text: str
    expected: Any = None


def add_eval_parser(commands: Any) -> None:
    """The `eval` subcommand and its options."""
    parser = commands.add_parser(
        "eval",
        help="compare the strategies on a model and a set of inputs",
        description=__doc__.split("\n")[0],
        epilog=EVAL_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--schema", action="append", required=True, help="as for extract (required; no default)")
    add(
        "--inputs",
        required=True,
        help="a JSONL file: {'text', 'expected'?, 'id'?} per line (required; no default)",
    )
    add_model_options(parser)
    add(
        "--strategies",
        default=",".join(EVAL_STRATEGIES),
        help="the strategies to compare, comma-separated; json is prompted with the "
        f"provider's JSON mode (default: {','.join(EVAL_STRATEGIES)})",
    )
    add("--max-retries", type=int, default=3, help="retries per answer (default: 3)")
    add("--limit", type=int, help="use only the first N inputs (default: every input)")
    add("--system", default=DEFAULT_SYSTEM_PROMPT, help="the system prompt (default: extract's)")
    add("--plot", help="also draw the table as a chart, to this PNG file (default: no chart)")
    add(
        "--save-profile",
        help="write the measured order to this file, for extract --profile and "
        "AutoStrategy.from_profile (default: not written)",
    )


def run_eval(args: argparse.Namespace) -> int:
    """Run `structx eval`; returns the exit code."""
    names = _strategy_names(args.strategies)
    check_model_args(args)
    if args.max_retries < 0 or (args.limit is not None and args.limit < 1):
        raise CliError("--max-retries must be >= 0 and --limit >= 1")
    if args.plot:
        pyplot()  # a missing matplotlib fails now, not after the whole run
    schema = _schema(args.schema)
    inputs = read_inputs(args.inputs)[: args.limit]
    model = load_model(model_spec(args))
    rows = measure(model, schema, inputs, names, args)
    print(table(rows))
    for row in rows:
        if row.first_error:
            print(f"{row.strategy}: first failure: {' '.join(row.first_error.split())[:300]}")
    print(recommendation(rows))
    if args.plot:
        draw(rows, args.plot, title=f"structx eval: {args.model}, {len(inputs)} inputs")
    if args.save_profile:
        _save(args, rows)
    return EXIT_OK if any(row.valid_pct for row in rows) else EXIT_FAILED


def _strategy_names(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in EVAL_STRATEGIES]
    if not names or unknown or len(set(names)) < len(names):
        raise CliError(
            f"--strategies must list some of {', '.join(EVAL_STRATEGIES)}, each once; got {value!r}"
        )
    return names


def _schema(specs: Sequence[str]) -> Any:
    try:
        schemas = [load_schema(spec, position=i) for i, spec in enumerate(specs, 1)]
    except SchemaSpecError as exc:
        raise CliError(str(exc)) from None
    return schemas[0] if len(schemas) == 1 else schemas


def read_inputs(path: str) -> list[EvalInput]:
    """The inputs of an eval file.

    Raises:
        EvalInputError: When it cannot be read, or a line is not an input.
    """
    try:
        text = read_capped(path, MAX_INPUT_BYTES, f"--inputs {path}")
    except ValueError as exc:
        raise EvalInputError(str(exc)) from None
    inputs = [
        _input(line, number, path)
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip()
    ]
    if not inputs:
        raise EvalInputError(f"--inputs {path} holds no inputs")
    return inputs


def _input(line: str, number: int, path: str) -> EvalInput:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise EvalInputError(f"line {number} of {path} is not valid JSON: {exc}") from None
    if isinstance(value, str):
        value = {"text": value}
    if not isinstance(value, dict):
        raise EvalInputError(f"line {number} of {path} is not a JSON object or string")
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise EvalInputError(f"line {number} of {path} has no text (a non-empty string)")
    return EvalInput(number, text, value.get("expected"))


_ROWS: dict[str, tuple[type[Any], dict[str, Any]]] = {
    "provider": (ProviderStrategy, {}),
    "tool": (ToolStrategy, {}),
    "prompted": (PromptedStrategy, {"json_mode": False}),
    "json": (PromptedStrategy, {"json_mode": True}),
}
"""Each row of the table: the strategy it runs, and its options."""


def strategy_for(name: str, schema: Any, max_retries: int) -> Strategy:
    """The strategy object of a table row's name.

    Raises:
        CliError: When the schema does not suit the strategy.
    """
    kind, options = _ROWS[name]
    try:
        return cast("Strategy", kind(schema, max_retries=max_retries, **options))
    except UserError as exc:
        raise CliError(str(exc)) from None


def measure(
    model: Any,
    schema: Any,
    inputs: Sequence[EvalInput],
    names: Sequence[str],
    args: argparse.Namespace,
) -> list[Row]:
    """Run every input through every strategy; one row per strategy."""
    from langchain_structx.middleware import create_agent

    progress = Progress(total=len(inputs) * len(names), initial=0, unit="answer")
    rows = []
    try:
        for name in names:
            strategy = strategy_for(name, schema, args.max_retries)
            agent = create_agent(model, response_format=strategy, system_prompt=args.system)
            row = Row(name)
            for item in inputs:
                row.answers.append(_answer(agent, item))
                progress.update(sum(not a.valid for a in row.answers))
            rows.append(row)
    finally:
        progress.close()
    return rows


class _Meter(BaseCallbackHandler):
    """Counts the model calls LangChain sees, and the tokens they report."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls += 1

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.tokens += int(usage.get("total_tokens", 0))


def _answer(agent: Any, item: EvalInput) -> Answer:
    meter = _Meter()
    started = time.perf_counter()
    inputs = {"messages": [{"role": "user", "content": item.text}]}
    value: Any = None
    error = ""
    try:
        state = agent.invoke(inputs, config={"callbacks": [meter]})
        value = to_jsonable_python(state[RESPONSE_KEY], fallback=str)
    except Exception as exc:  # noqa: BLE001 - a failed answer is a measurement, not a crash
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    matched, expected = 0, 0
    if item.expected is not None:
        matched, expected = compare_fields(value, item.expected)
    return Answer(
        valid=not error,
        calls=meter.calls,
        tokens=meter.tokens,
        seconds=seconds,
        matched=matched,
        expected=expected,
        error=error,
    )


def _save(args: argparse.Namespace, rows: Sequence[Row]) -> None:
    order, json_mode = profile_order(rows)
    profile = StrategyProfile(
        order=order,
        json_mode=json_mode,
        model=args.model,
        measured=tuple(row.as_json() for row in rows),
    )
    try:
        write_profile(args.save_profile, profile)
    except UserError as exc:
        raise CliError(str(exc)) from None
    print(f"structx: profile written to {args.save_profile}", file=sys.stderr)
