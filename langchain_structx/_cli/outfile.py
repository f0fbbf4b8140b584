"""Output files that are replaced only once complete, for the `structx` command."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from langchain_structx.errors import UserError


class OutputFileError(UserError):
    """The output file cannot be written: its folder, its name, or a folder in its place."""


_TOKEN_BYTES = 6
TEMPORARY_EXTRA = len(f"..{'0' * 2 * _TOKEN_BYTES}.tmp")
"""How many characters the temporary file's name adds to the output file's name."""


def check_writable(path: str, *, replaced: bool) -> None:
    """Refuse an output file that could not be written, before any model call.

    Args:
        path: The `--output` value.
        replaced: Whether it is written whole through a temporary file
            (`replace_when_done`), whose longer name must fit too.

    Raises:
        OutputFileError: When its folder is missing or read-only, its name is
            too long for the file system, or it names a folder.
    """
    if is_special(path):  # a device, FIFO or pipe is written in place, whatever its folder
        if not os.access(path, os.W_OK):
            raise OutputFileError(f"cannot write output file {path}: it is not writable")
        return
    try:
        problem = _unwritable(Path(path).resolve(), replaced)  # resolved as the writers open it
    except OSError as exc:  # such as a folder in the path whose name is too long
        problem = exc.strerror or str(exc)
    if problem:
        raise OutputFileError(f"cannot write output file {path}: {problem}")


def _unwritable(target: Path, replaced: bool) -> str | None:
    folder = target.parent
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"folder {folder} is not writable"
    extra = TEMPORARY_EXTRA if replaced else 0
    if len(os.fsencode(target.name)) + extra > _name_max(folder):
        return "its name is too long"
    if target.is_dir():
        return "it is a folder"
    return None


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or no answer
        return 255


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file, through any spelling, symlink or hard link."""
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist (yet): compare where they lead
        return Path(first).resolve() == Path(second).resolve()


def is_special(path: str) -> bool:
    """Whether `path` exists and is not a regular file or a folder: a device, FIFO or pipe.

    Examples:
        >>> is_special("/dev/null"), is_special("/no/such/file")
        (True, False)
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, or a name the system refuses
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def replace_when_done(path: str) -> Iterator[IO[str]]:
    """A file to write `path`'s new content to; it replaces `path` only when complete.

    The content goes to a temporary file in the same folder (so the final rename
    is atomic), is synced to disk, then moved over `path`. On any exception,
    Ctrl-C included, the temporary file is removed and `path` is left untouched.
    A device, FIFO or pipe (`/dev/null`, `/dev/stdout`) is written in place:
    replacing it would put a regular file where the device node was.

    Raises:
        OutputFileError: When the folder cannot be written to, or the write fails.
    """
    if is_special(path):
        with _in_place(path) as out:
            yield out
        return
    target = Path(path).resolve()  # a symlinked output is written where it leads
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(_TOKEN_BYTES)}.tmp")
    try:
        out = open(temporary, "x", encoding="utf-8")
    except OSError as exc:
        raise OutputFileError(f"cannot write output file {path}: {exc}") from None
    try:
        with _write_errors(path), out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _in_place(path: str) -> Iterator[IO[str]]:
    # No sync: a device or a pipe may not support it (/dev/null refuses it).
    with _write_errors(path):
        with open(path, "w", encoding="utf-8") as out:
            yield out


@contextlib.contextmanager
def _write_errors(path: str) -> Iterator[None]:
    # A full disk or a closed FIFO shows when the text is written or flushed.
    try:
        yield
    except OSError as exc:
        raise OutputFileError(f"cannot write output file {path}: {exc.strerror or exc}") from None
