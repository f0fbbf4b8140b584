"""`structx extract --output FILE`: the file is replaced only by a complete result."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from langchain_structx._cli.outfile import OutputFileError, replace_when_done, same_file
from langchain_structx.errors import UserError


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_the_new_content_replaces_the_file_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    with replace_when_done(str(target)) as out:
        out.write("new\n")
        assert target.read_text() == "old\n"  # not yet: the block is still writing
    assert target.read_text() == "new\n"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("stop", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_write_cut_short_leaves_the_file_as_it_was(tmp_path: Path, stop: BaseException) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"earlier result\n")
    with pytest.raises(type(stop)), replace_when_done(str(target)) as out:
        out.write("half of a new res")
        raise stop
    assert target.read_bytes() == b"earlier result\n"
    assert _leftovers(tmp_path) == []


def test_a_new_file_appears_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "fresh.json"
    with pytest.raises(RuntimeError), replace_when_done(str(target)) as out:
        out.write("{")
        raise RuntimeError("stopped")
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_a_symlinked_output_is_written_where_it_leads(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with replace_when_done(str(link)) as out:
        out.write("new\n")
    assert link.is_symlink()
    assert real.read_text() == "new\n"


def test_an_unwritable_folder_is_a_typed_error(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "out.json"
    with pytest.raises(OutputFileError, match="cannot write output file") as info:
        with replace_when_done(str(missing)):
            pytest.fail("the block must not run")
    assert isinstance(info.value, UserError)


def test_same_file_sees_through_spellings_and_links(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    first.write_text("x\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(first)
    hard = tmp_path / "hard.jsonl"
    os.link(first, hard)
    spelled = tmp_path / "sub" / ".." / "a.jsonl"
    (tmp_path / "sub").mkdir()
    assert same_file(str(first), str(link))
    assert same_file(str(first), str(hard))
    assert same_file(str(first), str(spelled))
    assert not same_file(str(first), str(tmp_path / "b.jsonl"))
    # A path that does not exist yet is compared by where it leads.
    assert same_file(str(tmp_path / "new.jsonl"), str(tmp_path / "sub" / ".." / "new.jsonl"))
