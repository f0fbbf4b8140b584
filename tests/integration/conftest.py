"""Session fixtures for the real local model and a loopback llama.cpp server.

Both are session-scoped: loading the weights once and starting the server once keeps
the suite to a few seconds of setup on a small machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic import SecretStr

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

    from langchain_structx.local import LocalChatModel

_SERVER_START_TIMEOUT = 120.0
_GENERATION_TOKENS = 64


def _require_llama_cpp() -> None:
    pytest.importorskip(
        "llama_cpp",
        reason="llama-cpp-python is not installed; install langchain-structx[local]",
    )


@pytest.fixture(scope="session")
def default_weights() -> Path:
    """The assembled default GGUF file (skips when the weight packages are missing)."""
    from langchain_structx.local import WeightsError, default_model_path

    try:
        return default_model_path()
    except WeightsError as exc:
        pytest.skip(f"default weights unavailable: {exc}")


@pytest.fixture(scope="session")
def local_model(default_weights: Path) -> LocalChatModel:
    """One `LocalChatModel` on the default weights, loaded once for the session."""
    _require_llama_cpp()
    from langchain_structx.local import LocalChatModel

    model = LocalChatModel(max_tokens=_GENERATION_TOKENS, seed=0)
    model.load()
    return model


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class LlamaServer:
    """A running `llama_cpp.server` on the loopback interface.

    Attributes:
        base_url: OpenAI-compatible root, ending in `/v1`.
        model_id: The id the server lists under `/v1/models`.
        log: File receiving the server's stdout and stderr.
    """

    base_url: str
    model_id: str
    log: Path


def _wait_for_models(url: str, process: subprocess.Popen[bytes], log: Path) -> str:
    """Poll `/v1/models` until it answers; return the first model id."""
    deadline = time.monotonic() + _SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                listing = json.load(response)
            return str(listing["data"][0]["id"])
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.25)
    pytest.fail(f"llama.cpp server did not answer within {_SERVER_START_TIMEOUT:.0f}s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _serve(
    module: str, weights: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """Run `python -m module` (llama_cpp.server's options) on 127.0.0.1 until closed."""
    _require_llama_cpp()
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python lacks [server] extras")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        module,
        "--model",
        str(weights),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(os.cpu_count() or 1),
        "--n_ctx",
        "4096",
    ]
    with open(log, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    # try/finally rather than relying on fixture teardown alone: a failure while
    # waiting must not leave the server running.
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        model_id = _wait_for_models(base_url, process, log)
        yield LlamaServer(base_url=base_url, model_id=model_id, log=log)
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def llama_server(
    default_weights: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """A llama.cpp OpenAI-protocol server on 127.0.0.1, stopped at session end."""
    yield from _serve("llama_cpp.server", default_weights, tmp_path_factory)


@pytest.fixture(scope="session")
def decoder_server(
    default_weights: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """The same server with the embedded model's constrained decoder (`local_server`)."""
    yield from _serve("langchain_structx.local_server", default_weights, tmp_path_factory)


@pytest.fixture(scope="session")
def server_chat_model(llama_server: LlamaServer) -> ChatOpenAI:
    """`ChatOpenAI` pointed at the loopback server."""
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=llama_server.base_url,
        api_key=SecretStr("not-needed"),
        model=llama_server.model_id,
        temperature=0,
        max_retries=0,
        timeout=120,
        # langchain-openai sends max_tokens as max_completion_tokens, which the
        # llama.cpp server ignores; the plain field keeps generations short.
        extra_body={"max_tokens": _GENERATION_TOKENS},
    )
