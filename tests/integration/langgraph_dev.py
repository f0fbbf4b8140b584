"""Start and stop `langgraph dev` on loopback, for the tests and the scale benchmark.

The server runs the repository's `langgraph.json` on a free loopback port, with
analytics, version checks and tracing off, in a scratch working directory (where
`langgraph dev` keeps its `.langgraph_api` state) that links the folders the
graphs live in. It is always stopped, with everything it started, whatever the
outcome.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0
LINKED = ("examples", "langchain_structx")
"""Folders of the repository that langgraph.json's graph paths point into."""

# Everything that could make the server or the CLI talk to anything but loopback.
QUIET_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "OTEL_ENABLED": "false",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
DROPPED_ENV = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


class ServerStartError(RuntimeError):
    """`langgraph dev` exited or did not answer in time; the message ends with its log."""


@dataclass(frozen=True)
class Server:
    url: str
    log: Path


def quiet_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without keys or tracing, the repository first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV} | QUIET_ENV
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env | dict(extra or {})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll `/ok` until it answers (bounded by START_TIMEOUT)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerStartError(f"langgraph dev exited with {process.returncode}:\n{_tail(log)}")
        try:
            with opener.open(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise ServerStartError(
        f"langgraph dev did not answer within {START_TIMEOUT:.0f}s:\n{_tail(log)}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group (the CLI and anything it started)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


def _command(port: int, n_jobs_per_worker: int | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        "langgraph.json",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
        "--server-log-level",
        "WARNING",
    ]
    if n_jobs_per_worker is not None:
        # `langgraph dev` sets N_JOBS_PER_WORKER from this option, over the environment.
        command += ["--n-jobs-per-worker", str(n_jobs_per_worker)]
    return command


@contextmanager
def langgraph_dev(
    workdir: Path,
    *,
    n_jobs_per_worker: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    """Run `langgraph dev` on the repository's langgraph.json until the block ends.

    Args:
        workdir: An empty scratch folder for the server's state and log.
        n_jobs_per_worker: Runs the server's worker takes at once (its default if None).
        env: Extra environment variables for the server.

    Raises:
        ServerStartError: When the server exits or does not answer in time.
    """
    shutil.copy(ROOT / "langgraph.json", workdir / "langgraph.json")
    for name in LINKED:
        (workdir / name).symlink_to(ROOT / name, target_is_directory=True)
    port = free_port()
    log = workdir / "server.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            _command(port, n_jobs_per_worker),
            cwd=workdir,
            env=quiet_env(env),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_up(url, process, log)
        yield Server(url=url, log=log)
    finally:
        _stop(process)
