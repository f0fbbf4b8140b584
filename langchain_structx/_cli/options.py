"""The options of the `structx` command, each described with its default."""

from __future__ import annotations

import argparse

from langchain_structx._cli.eval import add_eval_parser
from langchain_structx._cli.exits import DEFAULT_SYSTEM_PROMPT, EXIT_CODES
from langchain_structx._cli.model import add_model_options
from langchain_structx._cli.records import INPUT_FORMATS
from langchain_structx._version import __version__
from langchain_structx.strategies import STRATEGIES

DESCRIPTION = "The `structx` command: structured extraction from the shell."


def parser() -> argparse.ArgumentParser:
    """The command line parser of `structx` and its commands."""
    root = argparse.ArgumentParser(prog="structx", description=DESCRIPTION)
    root.add_argument("--version", action="version", version=f"structx {__version__}")
    commands = root.add_subparsers(dest="command", required=True)
    extract = commands.add_parser(
        "extract",
        help="extract a validated object from text",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = extract.add_argument
    add("text", nargs="?", help="the text, or - for stdin (default: none; give it or --batch)")
    add(
        "--schema",
        action="append",
        required=True,
        help="a JSON-schema file, JSON text, module:Class, or fields such as 'name, age int'; "
        "repeat it to allow several shapes (a union) (required; no default)",
    )
    add_model_options(extract)
    add(
        "--strategy",
        choices=tuple(STRATEGIES),
        default="auto",
        help="how the answer is asked for: provider (native structured output), tool "
        "(a forced tool call), prompted (JSON in the reply) or auto (the best the model "
        "supports) (default: auto)",
    )
    add(
        "--profile",
        help="a strategy profile written by `structx eval --save-profile`: auto with the "
        "measured order (default: none; the model's profile decides)",
    )
    add(
        "--max-retries",
        type=int,
        default=3,
        help="model calls allowed after the first when an answer fails (default: 3)",
    )
    add(
        "--many",
        action="store_true",
        help="extract every item of the kind, as a list (default: off)",
    )
    add(
        "--system",
        default=DEFAULT_SYSTEM_PROMPT,
        help="the system prompt (default: one that asks for facts from the text only)",
    )
    add(
        "--stream",
        action="store_true",
        help="show the object as it grows, on stderr (one text only) (default: off)",
    )
    add("--report", action="store_true", help="also print how it was obtained (default: off)")
    add("--batch", help="a file (or - for stdin) of records, one per line (default: none)")
    add(
        "--input-format",
        choices=INPUT_FORMATS,
        default="auto",
        help="jsonl: each line a JSON text or {'id', 'text'} object, a line that does not "
        "parse is an error record; text: each line is a text; auto: text for a .txt "
        "file, else jsonl (default: auto)",
    )
    add("--output", help="write the result(s) here instead of stdout (default: stdout)")
    add(
        "--resume",
        action="store_true",
        help="continue a batch --output: skip ids it holds (default: off)",
    )
    add(
        "--overwrite",
        action="store_true",
        help="start a batch --output that holds results (default: off)",
    )
    add(
        "--concurrency",
        type=int,
        default=1,
        help="batch records (or server runs) in flight (default: 1)",
    )
    add("--server", help="a LangGraph Server URL: batch records become its runs (default: none)")
    add("--graph", default="extract", help="the server's extraction graph (default: extract)")
    add(
        "--via",
        choices=("agent", "provider-batch"),
        default="agent",
        help="provider-batch: send --batch through the provider's batch API (OpenAI, "
        "Anthropic): half the price, results within a day; the job is kept beside --output "
        "(default: agent)",
    )
    add_eval_parser(commands)
    return root
