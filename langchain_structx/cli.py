"""The `structx` command: structured extraction from the shell.

```
structx extract --schema contact.json "Reach Ada at ada@example.org"
structx extract --schema 'name, age int' -                     # text on stdin
structx extract --schema app.models:Contact --schema app.models:Event "..."
structx extract --schema contact.json --batch inputs.jsonl --output out.jsonl --resume
structx extract --schema contact.json --batch inputs.jsonl --server http://127.0.0.1:2024
```

By default the model is the embedded local one (no API key, no network); any
`init_chat_model` string such as `openai:gpt-4.1-mini` works too (with
`--base-url` for an OpenAI-compatible server). With `--server`, each batch
record is a run of a LangGraph Server's extraction graph (same lines).

Every failure is one line on stderr, starting `structx: `, and one exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import IO, Any

from pydantic_core import to_jsonable_python

from langchain_structx._cli import batch_run as _cli_run
from langchain_structx._cli.eval import run_eval
from langchain_structx._cli.exits import (
    DEFAULT_SYSTEM_PROMPT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_MODEL,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_PIPE,
    EXIT_USAGE,
    CliError,
    NonFiniteValueError,
    to_json,
)
from langchain_structx._cli.model import (
    check_model_args,
    load_model,
    model_spec,
)
from langchain_structx._cli.options import parser
from langchain_structx._cli.outfile import check_writable, replace_when_done, same_file
from langchain_structx._cli.records import BatchInputError, OutputWriteError, stdin_bytes
from langchain_structx._cli.remote import RemoteExtractor, RemoteSettings
from langchain_structx._cli.schema_input import MANY_KEY, SchemaSpecError, load_schema, many
from langchain_structx._cli.schema_input import variant_count as _variant_count
from langchain_structx.errors import StructuredOutputFailure, UserError
from langchain_structx.middleware import create_agent
from langchain_structx.report import KIND_KEY, REPORT_KEY, RESPONSE_KEY
from langchain_structx.strategies import STRATEGIES, AutoStrategy, Strategy

__all__ = (
    "DEFAULT_SYSTEM_PROMPT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_MODEL",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "CliError",
    "Extractor",
    "NonFiniteValueError",
    "load_model",
    "load_schema",
    "main",
    "to_json",
    "to_jsonable",
)


_parser = parser


def build_strategy(schemas: Sequence[Any], name: str, max_retries: int) -> Strategy:
    """The strategy object for `--strategy`."""
    schema: Any = schemas[0] if len(schemas) == 1 else list(schemas)
    try:
        return STRATEGIES[name](schema, max_retries=max_retries)  # type: ignore[no-any-return]
    except UserError as exc:
        raise CliError(str(exc)) from None


def profiled_strategy(schemas: Sequence[Any], path: str, max_retries: int) -> Strategy:
    """`AutoStrategy` with the order and JSON mode a `structx eval` profile measured."""
    schema: Any = schemas[0] if len(schemas) == 1 else list(schemas)
    try:
        return AutoStrategy.from_profile(schema, path, max_retries=max_retries)
    except UserError as exc:
        raise CliError(str(exc)) from None


def to_jsonable(value: Any) -> Any:
    """Turn a structured response (models, dataclasses, nested) into plain JSON data."""
    return to_jsonable_python(value, fallback=str)


def _schemas(args: argparse.Namespace) -> tuple[list[Any], bool]:
    """The loaded schemas, wrapped for `--many`, and whether they form a union."""
    try:
        schemas = [load_schema(spec, position=i) for i, spec in enumerate(args.schema, 1)]
        union = _variant_count(schemas) > 1
    except SchemaSpecError as exc:
        raise CliError(str(exc)) from None
    if args.many and union:
        raise CliError("--many takes a single shape; give one --schema without oneOf")
    return ([many(schemas[0])] if args.many else schemas), union


class Extractor:
    """One configured agent (or server graph), run on many texts."""

    def __init__(self, args: argparse.Namespace, *, agent: bool = True) -> None:
        schemas, self.union = _schemas(args)
        self.report = bool(args.report)
        self.many = bool(args.many)
        self.strategy = (
            build_strategy(schemas, args.strategy, args.max_retries)
            if args.profile is None
            else profiled_strategy(schemas, args.profile, args.max_retries)
        )
        self.remote = _remote_extractor(args, schemas) if args.server else None
        if self.remote is not None:
            return
        self.model = load_model(model_spec(args))
        if agent:  # a provider batch sends the requests itself
            self.agent: Any = create_agent(
                self.model, response_format=self.strategy, system_prompt=args.system
            )

    def result(self, state: dict[str, Any]) -> Any:
        """What to print for a final state."""
        value = to_jsonable(state[RESPONSE_KEY])
        if self.many:
            value = value[MANY_KEY]
        if not self.union and not self.report:
            return value
        out: dict[str, Any] = {"kind": state.get(KIND_KEY), "value": value}
        if self.report:
            out["report"] = state.get(REPORT_KEY)
        return out

    def run(self, text: str, *, stream: IO[str] | None = None) -> Any:
        """Extract from one text; partial objects go to `stream` when given."""
        inputs = {"messages": [{"role": "user", "content": text}]}
        if stream is None:
            return self.result(self.agent.invoke(inputs))
        state: dict[str, Any] = {}
        for mode, chunk in self.agent.stream(inputs, stream_mode=["custom", "values"]):
            if mode == "custom" and chunk.get("phase") == "partial":
                self._show(chunk["value"], stream)
            elif mode == "values":
                state = chunk
        return self.result(state)

    def _show(self, partial: Any, stream: IO[str]) -> None:
        value = to_jsonable(partial)
        if self.many:  # the bare list, as the final value is printed
            if not isinstance(value, dict) or MANY_KEY not in value:
                return
            value = value[MANY_KEY]
        # A partial that JSON cannot represent is not shown; the final value decides.
        with contextlib.suppress(NonFiniteValueError):
            print(to_json(value), file=stream, flush=True)

    async def arun(self, text: str) -> dict[str, Any]:
        """Async form of `run`, for batches: the final state."""
        if self.remote is not None:
            return await self.remote.ainvoke(text)
        state: dict[str, Any] = await self.agent.ainvoke(
            {"messages": [{"role": "user", "content": text}]}
        )
        return state


def _remote_extractor(args: argparse.Namespace, schemas: list[Any]) -> RemoteExtractor:
    names = ("strategy", "max_retries", "system", "graph")
    settings = RemoteSettings(url=args.server, **{name: getattr(args, name) for name in names})
    try:
        return RemoteExtractor(settings, schemas)
    except ImportError as exc:
        raise CliError(f"--server needs langgraph-sdk: {exc}", EXIT_MODEL) from None


def _read_text(args: argparse.Namespace) -> str:
    if args.text is not None and args.text != "-":
        text = str(args.text)
    else:
        data = stdin_bytes().read()
        if b"\0" in data:
            raise CliError("stdin is not text (it holds NUL bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CliError("stdin is not UTF-8 text") from None
    if not text.strip():
        raise CliError("no text given: pass TEXT or - to read stdin")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # argv bytes that are not UTF-8 arrive as surrogate escapes
        raise CliError("TEXT is not UTF-8 text") from None
    return text


_NAMED = (
    "model",
    "schema",
    "model_path",
    "base_url",
    "batch",
    "output",
    "server",
    "graph",
    "profile",
)
"""Options whose value names something, so an empty value is a mistake."""


def _check_args(args: argparse.Namespace) -> None:
    for option in _NAMED:
        value = getattr(args, option)
        for one in value if isinstance(value, list) else [value]:
            if one is not None and not one.strip():
                raise CliError(f"--{option.replace('_', '-')} is empty")
    numbers = (args.concurrency, 1 if args.threads is None else args.threads)
    if min(numbers) < 1 or args.max_retries < 0:
        msg = "--concurrency and --threads must be >= 1, --max-retries >= 0"
        raise CliError(msg)
    check_model_args(args)
    if args.profile is not None and STRATEGIES[args.strategy] is not AutoStrategy:
        raise CliError("--profile sets the auto strategy's order; it does not work with --strategy")
    _check_batch_args(args)
    if args.output:
        check_writable(args.output, replaced=not args.batch)


def _check_batch_args(args: argparse.Namespace) -> None:
    if not args.batch:
        wrong = [f for f in ("server", "resume", "overwrite") if getattr(args, f)]
        if args.input_format != "auto":
            wrong.append("input-format")
        if wrong:
            raise CliError(f"--{wrong[0]} works with --batch")
        return
    if args.stream:
        raise CliError("--stream shows one text as it grows; it does not work with --batch")
    if args.text is not None:
        raise CliError("give either TEXT or --batch, not both")
    if (args.resume or args.overwrite) and not args.output:
        raise CliError("--resume and --overwrite need --output FILE")
    if args.resume and args.overwrite:
        raise CliError("choose --resume (continue) or --overwrite (start again), not both")
    if args.output and same_file(args.batch, args.output):
        raise CliError(f"--output {args.output} is the --batch file; choose another output file")


def _extract(args: argparse.Namespace) -> int:
    _check_args(args)
    if args.via == "provider-batch":
        from langchain_structx._cli import provider_batch

        return provider_batch.run(args, lambda: Extractor(args, agent=False))
    if args.batch:
        return _cli_run.run_batch(args, Extractor)
    text = _read_text(args)
    extractor = Extractor(args)
    if args.stream:
        with _cli_run.interrupt_at_once():
            result = extractor.run(text, stream=sys.stderr)
    else:
        result = extractor.run(text)
    if not args.output:
        try:
            print(to_json(result, indent=2), flush=True)
        except BrokenPipeError:
            raise OutputWriteError("stdout is closed", closed_pipe=True) from None
        except OSError as exc:  # such as `> /dev/full`
            raise OutputWriteError(f"cannot write stdout: {exc.strerror or exc}") from None
        return EXIT_OK
    with replace_when_done(args.output) as out:
        print(to_json(result, indent=2), file=out)
    return EXIT_OK


def _fail(message: str, code: int) -> int:
    # One line, however many lines the underlying error had.
    print("structx: " + " ".join(message.split()), file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `structx` command; returns the exit code.

    Examples:
        >>> main(["extract", "--schema", "missing.json", "text"])
        2
    """
    args = _parser().parse_args(argv)
    _cli_run.forget_batch()
    try:
        with _cli_run.terminate_as_interrupt():
            return run_eval(args) if args.command == "eval" else _extract(args)
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except BatchInputError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except StructuredOutputFailure as exc:
        return _fail(f"extraction failed: {exc}", EXIT_FAILED)
    except UserError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail(_cli_run.interrupted_message(), EXIT_INTERRUPTED)
    except OutputWriteError as exc:
        if not exc.closed_pipe:
            return _fail(str(exc), EXIT_USAGE)
        _cli_run.stdout_to_devnull()  # stdout closed early, as by `| head -1`: a quiet end
        return EXIT_PIPE
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        kind, message = _cli_run.describe(exc)
        code = EXIT_USAGE if kind == _cli_run.CONTEXT_ERROR else EXIT_FAILED
        return _fail(f"{kind}: {message}", code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
