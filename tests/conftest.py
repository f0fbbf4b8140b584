"""Suite-wide settings and fixtures.

`make test` sets STRUCTX_NO_SKIP=1: it installs every extra the integration tests
need, so there a skipped integration test means something is missing from the
setup, and it fails instead of passing quietly.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    strict = os.environ.get("STRUCTX_NO_SKIP") == "1"
    if strict and report.skipped and item.get_closest_marker("integration") is not None:
        # A test class may name the tests it switches off by a stated capability
        # (LangChain's standard suites skip what a model declares it lacks).
        allowed = getattr(getattr(item, "cls", None), "allowed_skips", ())
        if not hasattr(report, "wasxfail") and getattr(item, "originalname", "") not in allowed:
            report.outcome = "failed"
            report.longrepr = f"integration test skipped under STRUCTX_NO_SKIP=1: {report.longrepr}"


# --- Network guard -----------------------------------------------------------------
# No test may reach beyond this machine. The guard is installed for the whole pytest
# process (collection, doctests and session fixtures included) and wraps the few
# functions every network client ends in: socket connect/connect_ex/sendto,
# create_connection and getaddrinfo. A non-loopback address raises
# NetworkAccessBlocked and is recorded; the autouse `network_guard` fixture fails
# the test at teardown if anything was recorded, so code that swallows the error
# (a retry loop, `except Exception`) cannot hide the attempt. Loopback and unix
# sockets stay open: the integration tests talk to servers they start on 127.0.0.1.
# The guard only watches this process; those servers run in subprocesses.
#
# An inner pytest session run in this process (pytester, `pytest.main`) normally gets
# a fresh copy of this module, stacks its own guard on this one and takes only its own
# off; one that shares this module (a conftest in a package is not imported afresh)
# leaves the guard to the session that installed it. Some pytest plugins save the
# socket functions they find at import (before this file runs) and put them back after
# every test; their saved copies are pointed at the guard, so what they put back is
# the guard. Anything else that replaces a guarded function is caught before and
# after each test: that test errors with NetworkGuardRemoved, and the guard is put
# back for the tests that follow.

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkAccessBlocked(RuntimeError):
    """A test tried to reach an address that is not on this machine."""


class NetworkGuardRemoved(RuntimeError):
    """Something replaced a guarded socket function while the suite was running."""


# (module, attribute, guarded function): copies of the socket functions that a plugin
# keeps from its import and writes back over `socket` after each test.
_PLUGIN_COPIES = (
    ("pytest_socket", "_true_connect", "socket.socket.connect"),
    ("pytest_socket", "_true_getaddrinfo", "socket.getaddrinfo"),
    ("pytest_recording.network", "_original_connect", "socket.socket.connect"),
    ("pytest_recording.network", "_original_connect_ex", "socket.socket.connect_ex"),
)


def _guarded_places() -> dict[str, tuple[object, str]]:
    """Each guarded function by its dotted name, as (owner, attribute), looked up now."""
    return {
        "socket.socket.connect": (socket.socket, "connect"),
        "socket.socket.connect_ex": (socket.socket, "connect_ex"),
        "socket.socket.sendto": (socket.socket, "sendto"),
        "socket.create_connection": (socket, "create_connection"),
        "socket.getaddrinfo": (socket, "getaddrinfo"),
    }


def _is_loopback_host(host: object) -> bool:
    """Whether `host` (a name or an IP literal) is this machine, decided without DNS."""
    if host is None:  # getaddrinfo(None, port) means the local host
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()  # IPv6 zone, root dot
    if name in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # any other hostname is refused before anyone looks it up
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


class NetworkGuard:
    """Refuses, and remembers, every attempt to reach a non-loopback address."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._guards: dict[str, Callable[..., Any]] = {}
        self._patch: pytest.MonkeyPatch | None = None

    def check_host(self, host: object, port: object = None) -> None:
        """Refuse `host` unless it is loopback (a name is never resolved)."""
        if not _is_loopback_host(host):
            self._refuse(f"{host!r} port {port!r}")

    def check_address(self, family: int, address: object) -> None:
        """Refuse a socket address unless it is loopback or a unix socket path."""
        if family == getattr(socket, "AF_UNIX", None):
            return
        if isinstance(address, tuple) and len(address) >= 2:
            self.check_host(address[0], address[1])
        else:
            self._refuse(repr(address))

    def take(self) -> list[str]:
        """The attempts recorded so far, forgetting them."""
        attempts, self.attempts = self.attempts, []
        return attempts

    def verify(self) -> None:
        """Fail the running test if it made any attempt, even a swallowed one."""
        attempts = self.take()
        if attempts:
            pytest.fail(f"test tried to reach the network: {'; '.join(attempts)}", pytrace=False)

    @property
    def installed(self) -> bool:
        """Whether `install` has run and its patch has not been undone by `uninstall`."""
        return self._patch is not None

    def install(self, patch: pytest.MonkeyPatch) -> None:
        """Wrap the socket functions with `patch` (undone with `uninstall`)."""
        wrappers = {
            "connect": self._wrap_method,
            "connect_ex": self._wrap_method,
            "sendto": self._wrap_sendto,
            "create_connection": self._wrap_host,
            "getaddrinfo": self._wrap_getaddrinfo,
        }
        originals: dict[str, object] = {}
        for path, (owner, name) in _guarded_places().items():
            originals[path] = getattr(owner, name)
            self._guards[path] = wrappers[name](originals[path])
            patch.setattr(owner, name, self._guards[path])
        for module_name, attribute, path in _PLUGIN_COPIES:
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, attribute, None) is originals[path]:
                patch.setattr(module, attribute, self._guards[path])
        self._patch = patch

    def uninstall(self) -> None:
        """Put back every function `install` replaced."""
        if self._patch is not None:
            self._patch.undo()
            self._patch = None

    def removed(self) -> dict[str, object]:
        """The guarded functions something has replaced since `install`, with their stand-in."""
        if self._patch is None:
            return {}
        found = {path: getattr(owner, name) for path, (owner, name) in _guarded_places().items()}
        return {path: now for path, now in found.items() if now is not self._guards[path]}

    def ensure_in_place(self, when: str) -> None:
        """Put back any guarded function that was replaced, and raise if there was one."""
        removed = self.removed()
        if not removed or self._patch is None:
            return
        places = _guarded_places()
        for path in removed:
            owner, name = places[path]
            self._patch.setattr(owner, name, self._guards[path])
        what = "; ".join(f"{path} was replaced by {now!r}" for path, now in removed.items())
        raise NetworkGuardRemoved(f"the network guard was removed {when}: {what}")

    def _refuse(self, what: str) -> NoReturn:
        self.attempts.append(what)
        raise NetworkAccessBlocked(f"tests may not reach the network: {what} is not loopback")

    def _wrap_method(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(sock: socket.socket, address: Any, *args: Any) -> Any:
            self.check_address(sock.family, address)
            return real(sock, address, *args)

        return guarded

    def _wrap_sendto(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(sock: socket.socket, data: Any, *args: Any) -> Any:
            if args:  # sendto(data[, flags], address)
                self.check_address(sock.family, args[-1])
            return real(sock, data, *args)

        return guarded

    def _wrap_host(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(address: Any, *args: Any, **kwargs: Any) -> Any:
            self.check_host(address[0], address[1])
            return real(address, *args, **kwargs)

        return guarded

    def _wrap_getaddrinfo(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            self.check_host(host, port)
            return real(host, port, *args, **kwargs)

        return guarded


_NETWORK_GUARD = NetworkGuard()
_NETWORK_PATCH = pytest.MonkeyPatch()


_GUARD_OWNERS: list[pytest.Config] = []  # the session that installed the guard, if any


class _GuardWatch:
    """Checks, around every test of a session (doctests too), that the guard is in place."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        _NETWORK_GUARD.ensure_in_place("before this test started")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:  # after every other plugin's teardown, which may be what removed it
            _NETWORK_GUARD.ensure_in_place("by this test or its teardown")


def pytest_configure(config: pytest.Config) -> None:
    if not _NETWORK_GUARD.installed:
        _NETWORK_GUARD.install(_NETWORK_PATCH)
        _GUARD_OWNERS.append(config)
    config.pluginmanager.register(_GuardWatch(), "structx-network-guard-watch")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _GUARD_OWNERS:  # an inner session leaves the outer session's guard
        _GUARD_OWNERS.remove(config)
        _NETWORK_GUARD.uninstall()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except NetworkAccessBlocked:
        _NETWORK_GUARD.take()  # the test already fails with the error; no second report
        raise


@pytest.fixture(autouse=True)
def network_guard() -> Iterator[NetworkGuard]:
    """Fails the test at teardown if it tried to reach a non-loopback address."""
    _NETWORK_GUARD.take()  # an attempt made outside any test is not this test's
    yield _NETWORK_GUARD
    _NETWORK_GUARD.verify()
