"""The documentation: every public name is documented, and every snippet runs.

Snippet convention, for every page under `docs/`:

- A fenced block whose info string is exactly `python` is run, unless its first
  line starts with `# not-run` (say why after it: `# not-run: needs an API key`).
- A runnable block must run alone, as a reader would paste it: it imports what it
  uses and needs no network, no API key and no local model (use
  `langchain_structx.testing.ScriptedChatModel`).
- Unless the page says otherwise: a block right after the line
  `*Continues the block above.*` runs in the namespace the blocks before it left,
  like the next cell of a notebook; the reader sees the same line on the page.
- Blocks tagged otherwise (`bash`, `text`, `json`, `pycon`, ...) are not run.

Tracebacks name the page and the line where the failing block starts.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import langchain_structx

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOT_RUN = "# not-run"
CONTINUES = "*Continues the block above.*"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    info: str
    code: str
    continues: bool = False

    @property
    def runnable(self) -> bool:
        first = self.code.lstrip("\n").split("\n", 1)[0].strip()
        return self.info == "python" and not first.startswith(NOT_RUN)


def blocks(path: Path) -> Iterator[Block]:
    """Fenced code blocks of a Markdown page, dedented to their fence."""
    lines = path.read_text(encoding="utf-8").split("\n")
    page = path.relative_to(DOCS).as_posix()
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        indent, fence = opened["indent"], opened["fence"]
        info = opened["info"].strip().split(" ")[0].lstrip(".").lower()
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = _FENCE.match(lines[end])
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        before = [line.strip() for line in lines[:index] if line.strip()]
        marked = bool(before) and before[-1] == CONTINUES
        yield Block(page, index + 1, info, "\n".join(body) + "\n", marked)
        index = end + 1


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def runnable_pages() -> list[Path]:
    return [p for p in pages() if any(b.runnable for b in blocks(p))]


def test_the_block_parser() -> None:
    text = (
        "# T\n\n```python\na = 1\n```\n\n  ```bash\n  make\n  ```\n\n```python\n# not-run\nx\n```\n"
        f"\n{CONTINUES}\n\n```python\nb = a\n```\n"
    )
    path = DOCS / "virtual.md"
    found = list(_blocks_of(text, path))
    assert [(b.line, b.info, b.runnable, b.continues) for b in found] == [
        (3, "python", True, False),
        (7, "bash", False, False),
        (11, "python", False, False),
        (18, "python", True, True),
    ]
    assert found[0].code == "a = 1\n"
    assert found[1].code == "make\n"


def _blocks_of(text: str, path: Path) -> Iterator[Block]:
    original = Path.read_text
    try:
        Path.read_text = lambda self, *a, **k: text  # type: ignore[method-assign]
        yield from list(blocks(path))
    finally:
        Path.read_text = original  # type: ignore[method-assign]


@pytest.mark.parametrize("path", runnable_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_snippets_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    name = "docs_page_" + re.sub(r"\W", "_", path.relative_to(DOCS).as_posix())
    try:
        module = None
        for block in blocks(path):
            if not block.runnable:
                continue
            if module is None or not block.continues:
                # A block not marked as a continuation starts afresh: it must run alone.
                module = types.ModuleType(name)
                sys.modules[name] = module  # classes defined in a snippet need a real module
            # Pad with newlines so line numbers in tracebacks match the page.
            source = "\n" * block.line + block.code
            exec(compile(source, f"docs/{block.page}", "exec"), module.__dict__)
    finally:
        sys.modules.pop(name, None)


def test_a_continuation_follows_a_runnable_block() -> None:
    for path in pages():
        runnable_before = False
        for block in blocks(path):
            if block.continues:
                assert block.runnable, f"docs/{block.page}:{block.line} continues but is not run"
                assert runnable_before, f"docs/{block.page}:{block.line} has no block above"
            runnable_before = runnable_before or block.runnable


def _documented_modules() -> list[types.ModuleType]:
    import importlib

    names = set()
    for page in (DOCS / "api").glob("*.md"):
        names.update(re.findall(r"^:::\s+([\w.]+)", page.read_text(encoding="utf-8"), re.M))
    modules = []
    for name in sorted(names):
        try:
            modules.append(importlib.import_module(name))
        except ImportError:  # a `:::` target may be a class or function, not a module
            continue
    return modules


def test_every_public_name_is_documented() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages())
    rendered = {n for m in _documented_modules() for n in getattr(m, "__all__", ())}
    missing = [
        name
        for name in langchain_structx.__all__
        if name not in rendered and not re.search(rf"(?<![\w.]){re.escape(name)}\b", text)
    ]
    assert not missing, f"public names missing from docs/: {missing}"


def test_the_final_public_names_are_exported() -> None:
    expected = {
        "create_agent",
        "ToolStrategy",
        "ProviderStrategy",
        "PromptedStrategy",
        "AutoStrategy",
        "StructuredOutputMiddleware",
        "ErrorContext",
        "StructuredOutputRetryError",
    }
    assert expected <= set(langchain_structx.__all__)


def test_the_build_fetches_nothing() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s+font: false$", config, re.M), "theme.font must be false"
    assert "inventories:" not in config
    assert "social" not in config
    assert "extra_javascript" not in config and "extra_css" not in config
    assert not re.search(r"https?://", config)
