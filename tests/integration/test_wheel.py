"""The built wheel and sdist install into a fresh virtualenv and work there."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

SMOKE = """
from pydantic import BaseModel
from langchain_core.messages import AIMessage
import langchain_structx
from langchain_structx import create_agent, ToolStrategy
from langchain_structx.testing import ScriptedChatModel

class Contact(BaseModel):
    name: str

model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[
    {"name": "Contact", "args": {"name": "Ada"}, "id": "c1"}])])
state = create_agent(model, response_format=ToolStrategy(Contact)).invoke(
    {"messages": [("user", "Ada")]})
assert state["structured_response"] == Contact(name="Ada"), state
print("ok", langchain_structx.__version__)
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return out


def test_build_makes_a_wheel_and_an_sdist(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert any(n.endswith("-py3-none-any.whl") for n in names), names
    assert any(n.endswith(".tar.gz") for n in names), names


def test_wheel_installs_and_works_in_a_fresh_venv(dist: Path, tmp_path: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
    )
    smoke = subprocess.run([str(python), "-c", SMOKE], capture_output=True, text=True)
    assert smoke.returncode == 0, smoke.stderr
    assert smoke.stdout.startswith("ok ")
    cli = subprocess.run(
        [str(env_dir / "bin" / "structx"), "extract", "--help"], capture_output=True, text=True
    )
    assert cli.returncode == 0
    assert "--schema" in cli.stdout
    typed = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.resources as r; "
            "print(r.files('langchain_structx').joinpath('py.typed').is_file())",
        ],
        capture_output=True,
        text=True,
    )
    assert typed.stdout.strip() == "True"
