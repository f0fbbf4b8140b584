"""Output files that are replaced only once complete, for the `structx` command."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from langchain_structx.errors import UserError


class OutputFileError(UserError):
    """The output file's folder cannot be written to."""


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file, through any spelling, symlink or hard link."""
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist (yet): compare where they lead
        return Path(first).resolve() == Path(second).resolve()


@contextlib.contextmanager
def replace_when_done(path: str) -> Iterator[IO[str]]:
    """A file to write `path`'s new content to; it replaces `path` only when complete.

    The content goes to a temporary file in the same folder (so the final rename
    is atomic), is synced to disk, then moved over `path`. On any exception,
    Ctrl-C included, the temporary file is removed and `path` is left untouched.

    Raises:
        OutputFileError: When the folder cannot be written to.
    """
    target = Path(path).resolve()  # a symlinked output is written where it leads
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        out = open(temporary, "x", encoding="utf-8")
    except OSError as exc:
        raise OutputFileError(f"cannot write output file {path}: {exc}") from None
    try:
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
