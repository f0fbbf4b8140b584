"""A throwaway PostgreSQL server for the tests, from the binaries `pgserver` ships.

`pgserver` bundles a complete PostgreSQL build in its wheel. We run those
binaries ourselves rather than through its `get_server()`:

- PostgreSQL refuses to run as root. When it is, `get_server()` adds a system
  user with `useradd` and widens the permissions of every directory above the
  data directory and above the installed binaries. A test suite should not edit
  `/etc/passwd` or the permissions of the virtualenv. Here, under root, the
  server runs as the existing unprivileged `nobody` account instead, in a data
  directory that is the only thing handed over to it (`chown`). The binaries
  are installed world-readable by pip, so nothing else needs to change (a
  virtualenv inside a private home directory is the exception: `initdb` then
  fails with "permission denied"; run the tests as an ordinary user instead).
- `get_server()` stops the server in an `atexit` hook shared by every process
  that opened it; the fixture here stops it explicitly and removes the data.
- Importing `pgserver` sets up a lock file in the user's runtime directory and
  warns when `XDG_RUNTIME_DIR` is unset; the binaries are found without it.

The server listens on a unix socket in its own temporary directory and on no
TCP address at all (`listen_addresses=''`), so it cannot be reached from
outside the machine and never collides with another server's port.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

# Under root, PostgreSQL must run as someone else; `nobody` exists on every
# mainstream Linux and owns nothing, which is exactly what a scratch server needs.
UNPRIVILEGED_USER = "nobody"
START_TIMEOUT = 60
SERVER_OPTIONS = "-c listen_addresses='' -c max_connections=200"
# The tests kill clients, never the server, so skipping fsync loses nothing they
# check and keeps hundreds of checkpoint commits cheap on a small machine.
# A benchmark that means to price a durable commit asks for fsync.
NO_FSYNC = " -c fsync=off"


@dataclass(frozen=True, kw_only=True)
class EmbeddedPostgres:
    """A running server.

    Attributes:
        root: Temporary directory holding the data directory and the socket.
        user: The system user the server runs as (None: the current one).
    """

    root: Path
    user: str | None

    def uri(self, database: str = "postgres") -> str:
        """The libpq URI of `database`, over the unix socket."""
        return f"postgresql://postgres@/{database}?host={self.root}&port=5432"


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    pwd.getpwnam(UNPRIVILEGED_USER)  # KeyError names the missing account
    return UNPRIVILEGED_USER


def _binaries() -> Path:
    spec = find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pgserver is not installed: pip install 'langchain-structx[dev]'")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def _run(tool: str, args: list[str], pgdata: Path, user: str | None) -> None:
    command = [str(_binaries() / tool), "-D", str(pgdata), *args]
    # cwd: the server user may not be allowed into the directory pytest runs from.
    # Output goes to a file, not a pipe: the server pg_ctl leaves running would
    # hold a pipe open and make the call wait for it.
    with tempfile.TemporaryFile() as output:
        done = subprocess.run(
            command,
            user=user,
            cwd=pgdata.parent,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=START_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            output.seek(0)
            text = output.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{tool} failed with {done.returncode}:\n{text}")


def start_postgres(*, durable: bool = False) -> EmbeddedPostgres:
    """Initialise a data directory in a fresh temporary directory and start a server.

    Args:
        durable: Flush every commit to disk (fsync), as a production server does.
    """
    user = _server_user()
    # Not pytest's tmp_path: its parents are private to root, which `nobody` cannot
    # cross, and a unix socket path must stay under ~100 characters.
    root = Path(tempfile.mkdtemp(prefix="structx-pg-"))
    try:
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        pgdata = root / "data"
        initdb = ["--auth=trust", "--encoding=utf8", "-U", "postgres", "--no-instructions"]
        _run("initdb", initdb, pgdata, user)
        options = f"{SERVER_OPTIONS}{'' if durable else NO_FSYNC} -k {root}"
        start = ["-w", "-o", options, "-l", str(root / "server.log"), "start"]
        _run("pg_ctl", start, pgdata, user)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return EmbeddedPostgres(root=root, user=user)


def stop_postgres(server: EmbeddedPostgres) -> None:
    """Stop the server (fast shutdown: clients are cut off) and delete its files."""
    try:
        _run("pg_ctl", ["-w", "-m", "fast", "stop"], server.root / "data", server.user)
    finally:
        shutil.rmtree(server.root, ignore_errors=True)


def log_tail(server: EmbeddedPostgres, size: int = 3000) -> str:
    """The end of the server log, for failure messages."""
    log = server.root / "server.log"
    return log.read_text(errors="replace")[-size:] if log.exists() else "(no log)"
