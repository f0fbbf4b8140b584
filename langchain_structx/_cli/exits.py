"""What every part of the `structx` command shares: exit codes, its error, strict JSON."""

from __future__ import annotations

import json
from typing import Any

from langchain_structx.errors import StructxError

DEFAULT_SYSTEM_PROMPT = (
    "You extract information from the user's text. Use only facts stated in the text; "
    "copy names, numbers and addresses exactly as written."
)
"""The system prompt of `structx extract` and `structx eval`."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_MODEL, EXIT_PARTIAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE, as a shell tool that a closed pipe stops
EXIT_CODES = """exit codes:
  0    every input produced a validated object
  1    extraction failed: no valid object after the retries, or the model call failed
  2    usage error: a bad option, schema, text or batch file; a text longer than
       the model's context window; an --output that already holds results, or
       that cannot be written (a full disk: the lines written stay)
  3    the model could not be loaded (missing extra, weights, file or credentials),
       or the --server is unreachable or does not serve the --graph
  4    batch finished, but some records failed (each has an error line)
  130  interrupted (Ctrl-C or SIGTERM); a batch --output keeps every finished
       line: --resume continues it
  141  stdout was closed early (as by `| head -1`); nothing more is printed"""


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
        >>> to_json({"x": float("inf")})  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        ...
        NonFiniteValueError: the value holds NaN or Infinity, not valid JSON
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError:
        raise NonFiniteValueError() from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate such as "\ud800": only an escape is UTF-8
        return json.dumps(value, ensure_ascii=True, allow_nan=False, indent=indent)
    return text
