"""The `structx` command: structured extraction from the shell.

```
structx extract --schema contact.json "Reach Ada at ada@example.org"
structx extract --schema app.models:Contact --schema app.models:Event -   # text on stdin
structx extract --schema contact.json --batch inputs.jsonl --concurrency 4
structx extract --schema contact.json --batch inputs.jsonl --server http://127.0.0.1:2024
```

By default the model is the embedded local one (no API key, no network); any
`init_chat_model` string such as `openai:gpt-4.1-mini` works too. With `--server`,
each batch record is a run of a LangGraph Server's extraction graph (same lines).

Exit codes:
    0: every input produced a validated object.
    1: extraction failed (the model never produced a valid object).
    2: usage error (bad option, unreadable schema or input).
    3: the model could not be loaded (missing extra, weights or credentials), or
       the `--server` is unreachable or does not serve the `--graph`.
    4: batch mode finished, but some inputs failed (each has an error line).

Output safety: `--output` may not name the `--batch` file (through any path or
link); the results go to a temporary file in the same folder, which replaces the
output file only once every line is written and synced, so a crash or Ctrl-C
leaves the old file as it was and never a half-written record. Only strict JSON
is printed: a value holding NaN or an infinity is an extraction failure (code 1,
or an error line in a batch), never the non-standard `Infinity`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from langchain_structx._outfile import replace_when_done, same_file
from langchain_structx._remote import (
    RemoteExtractor,
    RemoteRunError,
    RemoteSettings,
    ServerUnavailableError,
)
from langchain_structx.errors import StructuredOutputFailure, StructxError, UserError
from langchain_structx.middleware import create_agent
from langchain_structx.strategies import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    Strategy,
    ToolStrategy,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_MODEL, EXIT_PARTIAL = 0, 1, 2, 3, 4
DEFAULT_SYSTEM_PROMPT = (
    "You extract information from the user's text. Use only facts stated in the text; "
    "copy names, numbers and addresses exactly as written."
)


class CliError(StructxError):
    """A problem with the command line, reported with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class NonFiniteValueError(CliError):
    """The extracted value holds NaN or an infinity, which JSON cannot represent."""

    def __init__(self) -> None:
        super().__init__(
            "the value holds NaN or Infinity, not valid JSON",
            EXIT_FAILED,
        )


def to_json(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON text for `value`.

    Raises:
        NonFiniteValueError: When `value` holds NaN or an infinity, which
            `json.dumps` would otherwise print as the non-standard `NaN`/`Infinity`.

    Examples:
        >>> to_json({"x": 1.5})
        '{"x": 1.5}'
        >>> to_json({"x": float("inf")})
        Traceback (most recent call last):
        ...
        langchain_structx.cli.NonFiniteValueError: the value holds NaN or Infinity, not valid JSON
    """
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError:
        raise NonFiniteValueError() from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="structx", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    extract = commands.add_parser("extract", help="extract a validated object from text")
    extract.add_argument("text", nargs="?", help="the text, or - for stdin")
    extract.add_argument(
        "--schema",
        action="append",
        required=True,
        help="a JSON-schema file or module:Class; repeat to allow several shapes (a union)",
    )
    extract.add_argument("--model", default="local", help="'local' or an init_chat_model string")
    extract.add_argument("--model-path", help="a GGUF file for the local model")
    extract.add_argument(
        "--strategy", choices=("auto", "provider", "tool", "prompted"), default="auto"
    )
    extract.add_argument("--max-retries", type=int, default=3)
    extract.add_argument("--system", default=DEFAULT_SYSTEM_PROMPT, help="system prompt")
    extract.add_argument("--stream", action="store_true", help="show the object as it grows")
    extract.add_argument("--report", action="store_true", help="also print how it was obtained")
    extract.add_argument("--batch", help="a JSONL file: one text (or {'text': ...}) per line")
    extract.add_argument("--output", help="write batch results here instead of stdout")
    extract.add_argument("--concurrency", type=int, default=1, help="inputs (or runs) in flight")
    extract.add_argument("--server", help="a LangGraph Server URL: batch records become its runs")
    extract.add_argument("--graph", default="extract", help="the server's extraction graph")
    return parser


def load_schema(spec: str) -> Any:
    """Load one `--schema`: a JSON file, or `module:Class`.

    Raises:
        CliError: When the file or attribute cannot be loaded.
    """
    path = Path(spec)
    if path.suffix == ".json" or path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CliError(f"cannot read schema file {spec}: {exc}") from None
        if not isinstance(loaded, dict):
            raise CliError(f"schema file {spec} must hold a JSON object")
        return loaded
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise CliError(f"--schema {spec!r} is neither a .json file nor module:Class")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"cannot import {spec}: {exc}") from None


def build_strategy(schemas: Sequence[Any], name: str, max_retries: int) -> Strategy:
    """The strategy object for `--strategy`."""
    schema: Any = schemas[0] if len(schemas) == 1 else list(schemas)
    kinds = {
        "auto": AutoStrategy,
        "provider": ProviderStrategy,
        "tool": ToolStrategy,
        "prompted": PromptedStrategy,
    }
    try:
        return kinds[name](schema, max_retries=max_retries)  # type: ignore[no-any-return]
    except UserError as exc:
        raise CliError(str(exc)) from None


def load_model(name: str, model_path: str | None) -> Any:
    """The chat model for `--model`.

    Raises:
        CliError: With exit code 3 when the model cannot be loaded.
    """
    try:
        if name == "local":
            from langchain_structx.local import LocalChatModel

            return LocalChatModel(model_path=model_path)
        from langchain.chat_models import init_chat_model

        return init_chat_model(name)
    except ImportError as exc:
        hint = " (install langchain-structx[local])" if name == "local" else ""
        raise CliError(f"cannot load model {name!r}: {exc}{hint}", EXIT_MODEL) from None
    except (StructxError, ValueError, OSError) as exc:
        raise CliError(f"cannot load model {name!r}: {exc}", EXIT_MODEL) from None


def to_jsonable(value: Any) -> Any:
    """Turn a structured response into plain JSON data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json.loads(json.dumps(dataclasses.asdict(value), default=str))
    return value


def _result(state: dict[str, Any], *, union: bool, report: bool) -> Any:
    value = to_jsonable(state["structured_response"])
    if not union and not report:
        return value
    out: dict[str, Any] = {"kind": state.get("structured_response_kind"), "value": value}
    if report:
        out["report"] = state.get("structured_output_report")
    return out


class Extractor:
    """One configured agent (or server graph), run on many texts."""

    def __init__(self, args: argparse.Namespace) -> None:
        schemas = [load_schema(s) for s in args.schema]
        self.union = len(schemas) > 1
        self.report = bool(args.report)
        strategy = build_strategy(schemas, args.strategy, args.max_retries)
        self.remote = _remote_extractor(args, schemas) if args.server else None
        if self.remote is not None:
            return
        self.agent = create_agent(
            load_model(args.model, args.model_path),
            response_format=strategy,
            system_prompt=args.system,
        )

    def run(self, text: str, *, stream: IO[str] | None = None) -> Any:
        """Extract from one text; partial objects go to `stream` when given."""
        inputs = {"messages": [{"role": "user", "content": text}]}
        if stream is None:
            return _result(self.agent.invoke(inputs), union=self.union, report=self.report)
        state: dict[str, Any] = {}
        for mode, chunk in self.agent.stream(inputs, stream_mode=["custom", "values"]):
            if mode == "custom" and chunk.get("phase") == "partial":
                # A partial that JSON cannot represent is not shown; the final value decides.
                with contextlib.suppress(NonFiniteValueError):
                    print(to_json(chunk["value"]), file=stream, flush=True)
            elif mode == "values":
                state = chunk
        return _result(state, union=self.union, report=self.report)

    async def arun(self, text: str) -> Any:
        """Async form of `run`, for batches."""
        if self.remote is not None:
            state = await self.remote.ainvoke(text)
        else:
            state = await self.agent.ainvoke({"messages": [{"role": "user", "content": text}]})
        return _result(state, union=self.union, report=self.report)


def _remote_extractor(args: argparse.Namespace, schemas: list[Any]) -> RemoteExtractor:
    names = ("strategy", "max_retries", "system", "graph")
    settings = RemoteSettings(url=args.server, **{name: getattr(args, name) for name in names})
    try:
        return RemoteExtractor(settings, schemas)
    except ImportError as exc:
        raise CliError(f"--server needs langgraph-sdk: {exc}", EXIT_MODEL) from None


def _read_text(args: argparse.Namespace) -> str:
    if args.text is None or args.text == "-":
        text = sys.stdin.read()
    else:
        text = args.text
    if not text.strip():
        raise CliError("no text given: pass TEXT or - to read stdin")
    return str(text)


def _error_record(exc: BaseException) -> dict[str, Any]:
    # A run that failed on a server reports the exception the server raised.
    name = exc.error_type if isinstance(exc, RemoteRunError) else type(exc).__name__
    return {"type": name, "message": str(exc)}


def _batch_items(path: str) -> list[tuple[Any, str]]:
    items: list[tuple[Any, str]] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CliError(f"cannot read batch file {path}: {exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = line
        if isinstance(record, dict):
            items.append((record.get("id", number), str(record.get("text", ""))))
        else:
            items.append((number, str(record)))
    return items


async def _run_batch(extractor: Extractor, args: argparse.Namespace, out: IO[str]) -> int:
    items = _batch_items(args.batch)
    if extractor.remote is None:
        return await _write_batch(extractor, items, args.concurrency, out)
    try:
        await extractor.remote.check()
        return await _write_batch(extractor, items, args.concurrency, out)
    except ServerUnavailableError as exc:
        raise CliError(str(exc), EXIT_MODEL) from None
    finally:
        await extractor.remote.aclose()


async def _write_batch(
    extractor: Extractor, items: list[tuple[Any, str]], concurrency: int, out: IO[str]
) -> int:
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0
    failures = 0

    async def one(item_id: Any, text: str) -> dict[str, Any]:
        async with gate:
            try:
                output = await extractor.arun(text)
                to_json(output)  # an unprintable value is this input's failure
                return {"id": item_id, "output": output}
            except Exception as exc:  # noqa: BLE001 - every failure becomes a line, never a crash
                return {"id": item_id, "error": _error_record(exc)}

    # Lines are written in input order, as soon as each one and those before it finish.
    tasks = [asyncio.ensure_future(one(i, t)) for i, t in items]
    for task in tasks:
        record = await task
        done += 1
        failures += "error" in record
        print(to_json(record), file=out, flush=True)
        _progress(done, len(items), failures)
    return EXIT_PARTIAL if failures else EXIT_OK


def _progress(done: int, total: int, failures: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    bar = "#" * filled + "-" * (width - filled)
    end = "\n" if done == total else "\r"
    sys.stderr.write(f"[{bar}] {done}/{total} done, {failures} failed{end}")
    sys.stderr.flush()


def _check_args(args: argparse.Namespace) -> None:
    if args.concurrency < 1 or args.max_retries < 0:
        raise CliError("--concurrency must be >= 1 and --max-retries >= 0")
    if args.server and not args.batch:
        raise CliError("--server works with --batch")
    if args.batch and args.output and same_file(args.batch, args.output):
        raise CliError(f"--output {args.output} is the --batch file; choose another output file")


def _extract(args: argparse.Namespace) -> int:
    _check_args(args)
    extractor = Extractor(args)
    if args.batch:
        if args.output:
            with replace_when_done(args.output) as out:
                return asyncio.run(_run_batch(extractor, args, out))
        return asyncio.run(_run_batch(extractor, args, sys.stdout))
    text = _read_text(args)
    result = extractor.run(text, stream=sys.stderr if args.stream else None)
    print(to_json(result, indent=2))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `structx` command; returns the exit code.

    Examples:
        >>> main(["extract", "--schema", "missing.json", "text"])
        2
    """
    args = _parser().parse_args(argv)
    try:
        return _extract(args)
    except CliError as exc:
        print(f"structx: {exc}", file=sys.stderr)
        return exc.code
    except StructuredOutputFailure as exc:
        print(f"structx: extraction failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except UserError as exc:
        print(f"structx: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
