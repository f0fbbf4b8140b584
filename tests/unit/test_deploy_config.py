"""`langgraph dockerfile` on the repository's langgraph.json makes an image whose graphs run.

The command runs in this process (through click's test runner), so the suite's
network guard would fail the test if it tried to reach anything; it writes into
a temporary folder and needs no Docker.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.pregel import Pregel
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "langgraph.json"


def _local_extra() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["optional-dependencies"]["local"]]


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory: pytest.TempPathFactory) -> str:
    from click.testing import CliRunner
    from langgraph_cli.cli import cli

    target = tmp_path_factory.mktemp("docker") / "Dockerfile"
    result = CliRunner().invoke(
        cli,
        ["dockerfile", "--config", str(CONFIG), str(target)],
        env={"LANGGRAPH_CLI_NO_ANALYTICS": "1"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return target.read_text()


def _install_lines(dockerfile: str) -> list[list[str]]:
    """The words of each `RUN ... pip install NAME...` line, as the shell splits them.

    The loop that installs each local package (`for dep in /deps/*`) is left out.
    """
    lines = [
        line
        for line in dockerfile.splitlines()
        if re.match(r"RUN .*pip install", line) and "for dep in" not in line
    ]
    return [shlex.split(line) for line in lines]


def _graph_paths(dockerfile: str) -> dict[str, str]:
    (line,) = [line for line in dockerfile.splitlines() if line.startswith("ENV LANGSERVE_GRAPHS=")]
    paths: dict[str, str] = json.loads(shlex.split(line.removeprefix("ENV "))[0].split("=", 1)[1])
    return paths


def test_the_image_installs_every_requirement_of_the_local_extra(dockerfile: str) -> None:
    # What follows `-c /api/constraints.txt` is what the line installs (the other line
    # reinstalls the server itself).
    installed = {
        str(Requirement(word))
        for words in _install_lines(dockerfile)
        if "/api/constraints.txt" in words
        for word in words[words.index("/api/constraints.txt") + 1 :]
        if not word.startswith("-") and word != "."
    }

    # The shell must not see a `<` or `>` in these words: it would take them as redirections.
    assert {str(r) for r in _local_extra()} <= installed
    assert any(r.name == "llama-cpp-python" for r in _local_extra())


def test_the_image_installs_the_package_itself(dockerfile: str) -> None:
    config = json.loads(CONFIG.read_text())
    assert "." in config["dependencies"]
    assert f"ADD . /deps/{ROOT.name}" in dockerfile
    (loop,) = [line for line in dockerfile.splitlines() if "for dep in /deps/*" in line]
    assert re.search(r'cd "\$dep" && .*pip install .* -e \.\)', loop)


def test_every_graph_of_langgraph_json_is_in_the_image(dockerfile: str) -> None:
    graphs: dict[str, str] = json.loads(CONFIG.read_text())["graphs"]
    served = _graph_paths(dockerfile)

    assert set(served) == set(graphs) >= {"triage", "triage_offline", "extract", "extract_offline"}
    for name, spec in graphs.items():
        path, _, attr = spec.partition(":")
        relative = (ROOT / path).resolve().relative_to(ROOT).as_posix()
        assert served[name] == f"/deps/{ROOT.name}/{relative}:{attr}"


def _load(path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    name = f"_deployed_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as the server does, so Pydantic resolves its annotations.
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(json.loads(CONFIG.read_text())["graphs"]))
def test_every_graph_imports_and_builds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As the server does: import the file, and call a factory with a run's config.
    monkeypatch.delenv("STRUCTX_MODEL", raising=False)
    path, _, attr = json.loads(CONFIG.read_text())["graphs"][name].partition(":")
    target: Any = getattr(_load(ROOT / path, monkeypatch), attr)

    graph = target if isinstance(target, Pregel) else target({"configurable": {}})

    assert isinstance(graph, Pregel)
    assert graph.get_graph().nodes  # it compiles and has a drawable structure
