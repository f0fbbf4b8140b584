"""The package's layout: folders are layers, and the module graph has no cycle.

`lint-imports` (run by `make lint`) checks the layer contracts in `pyproject.toml`;
these tests check what import-linter has no contract for.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp

import langchain_structx

PACKAGE = Path(langchain_structx.__file__).resolve().parent
STRATEGY_NAMES = ("tool", "provider", "prompted")


def _reachable(graph: grimp.ImportGraph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph.find_modules_directly_imported_by(todo.pop()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or not."""
    reach = {module: _reachable(graph, module) for module in graph.modules}
    groups = {
        tuple(sorted(m for m in reach[module] if module in reach[m]))
        for module in reach
        if module in reach[module]
    }
    return sorted(list(group) for group in groups if len(group) > 1)


def test_no_import_cycle_among_the_modules() -> None:
    graph = grimp.build_graph("langchain_structx", exclude_type_checking_imports=False)
    # A package imports its own submodules to re-export them; that is not a cycle of layers.
    for module in sorted(graph.modules):
        for child in graph.find_children(module):
            if graph.direct_import_exists(importer=module, imported=child):
                graph.remove_import(importer=module, imported=child)
    assert _cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_at_most_four_private_modules_at_the_top() -> None:
    private = sorted(p.name for p in PACKAGE.glob("_*.py") if p.name != "__init__.py")
    assert len(private) <= 4, private


def _compared_strategy_names(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                values = operand.elts if isinstance(operand, ast.Tuple | ast.Set) else [operand]
                if any(isinstance(v, ast.Constant) and v.value in STRATEGY_NAMES for v in values):
                    lines.append(node.lineno)
    return lines


def test_no_module_outside_the_strategies_compares_a_strategy_name() -> None:
    owners = {PACKAGE / "strategies.py"}
    # The embedded model reads OpenAI's `tool_choice` values, which share a word with a strategy.
    local = {p for p in (PACKAGE / "local").glob("*.py")}
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in owners | local and (lines := _compared_strategy_names(path))
    }
    assert found == {}


def test_the_strategy_name_finder_sees_a_comparison(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('def f(s):\n    return s == "tool" or s in ("prompted", "x")\n')
    assert _compared_strategy_names(source) == [2, 2]


def test_every_layer_folder_is_in_the_architecture_map() -> None:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    missing = [f for f in folders if not re.search(rf"^  {re.escape(f)}/ ", text, re.M)]
    assert missing == []
