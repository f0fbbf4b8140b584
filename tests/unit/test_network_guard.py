"""No test reaches the network, and no schema makes the package reach for anything.

The first half checks the suite-wide guard in `tests/conftest.py` (the autouse
`network_guard` fixture): non-loopback addresses are refused, and recorded so that
a swallowed attempt still fails its test; loopback and unix sockets keep working.
The second half checks that a schema whose `$ref` points outside itself (a URL or
a file) is refused when the agent or node is built, for every strategy.
"""

from __future__ import annotations

import asyncio
import socket
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from langchain_structx import (
    AutoStrategy,
    PromptedStrategy,
    ProviderStrategy,
    ToolStrategy,
    create_agent,
    structured_output_node,
)
from langchain_structx.errors import SchemaError
from langchain_structx.testing import ScriptedChatModel

pytest_plugins = ("pytester",)

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
REFUSED = "tests may not reach the network"


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server socket on 127.0.0.1 with a free port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


# --- the guard refuses, and records, every way out -------------------------------------


def test_connect_to_a_public_address_is_refused_and_recorded(network_guard: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(RuntimeError, match=f"{REFUSED}: '192.0.2.10' port 80"):
            sock.connect(("192.0.2.10", 80))
    assert network_guard.take() == ["'192.0.2.10' port 80"]


def test_connect_ex_is_refused(network_guard: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(RuntimeError, match=REFUSED):
            sock.connect_ex(("198.51.100.7", 443))
    assert network_guard.take() == ["'198.51.100.7' port 443"]


def test_udp_sendto_is_refused(network_guard: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(RuntimeError, match=REFUSED):
            sock.sendto(b"query", ("203.0.113.53", 53))
        with pytest.raises(RuntimeError, match=REFUSED):
            sock.sendto(b"query", 0, ("203.0.113.53", 53))
    assert len(network_guard.take()) == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda: socket.create_connection(("example.invalid", 443), timeout=1),
        lambda: socket.getaddrinfo("example.invalid", 443),
        lambda: socket.getaddrinfo(b"example.invalid", 443),
    ],
    ids=["create_connection", "getaddrinfo", "getaddrinfo-bytes"],
)
def test_hostnames_are_refused_before_any_lookup(
    call: Callable[[], object], network_guard: Any
) -> None:
    # A real lookup of a `.invalid` name ends in socket.gaierror (an OSError); the
    # guard's RuntimeError shows that the decision came first, without DNS.
    with pytest.raises(RuntimeError, match=REFUSED):
        call()
    assert len(network_guard.take()) == 1


@pytest.mark.parametrize(
    ("family", "address"),
    [
        (socket.AF_INET6, ("2001:db8::1", 443, 0, 0)),
        (socket.AF_INET6, ("::ffff:192.0.2.1", 443, 0, 0)),
        (socket.AF_INET, ("0.0.0.0", 80)),
        (socket.AF_INET, ("127.0.0.1.example.org", 80)),
        (socket.AF_INET, ("localhost.example.org", 80)),
    ],
)
def test_addresses_that_only_look_local_are_refused(
    family: int, address: tuple[Any, ...], network_guard: Any
) -> None:
    with pytest.raises(RuntimeError, match=REFUSED):
        network_guard.check_address(family, address)
    assert len(network_guard.take()) == 1


def test_a_swallowed_attempt_still_fails_the_test(network_guard: Any) -> None:
    try:
        socket.create_connection(("192.0.2.20", 80), timeout=0.1)
    except Exception:  # noqa: BLE001, S110 - the code under test hides the error
        pass
    # `verify` is what the fixture runs at teardown; the test would fail there.
    with pytest.raises(pytest.fail.Exception, match="192.0.2.20"):
        network_guard.verify()
    network_guard.verify()  # verifying forgot the attempt, so this test passes


# --- loopback keeps working ---------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.1.2.3"])
def test_loopback_connections_are_allowed(
    host: str, listener: socket.socket, network_guard: Any
) -> None:
    port = listener.getsockname()[1]
    if host == "127.1.2.3":  # the whole of 127/8 is loopback, but nothing listens there
        network_guard.check_address(socket.AF_INET, (host, port))
    else:
        with socket.create_connection((host, port), timeout=5) as client:
            server_side, _ = listener.accept()
            with server_side:
                client.sendall(b"ping")
                assert server_side.recv(4) == b"ping"
    assert network_guard.take() == []


def test_ipv6_loopback_is_allowed(network_guard: Any) -> None:
    network_guard.check_address(socket.AF_INET6, ("::1", 8080, 0, 0))
    network_guard.check_address(socket.AF_INET6, ("::ffff:127.0.0.1", 8080, 0, 0))
    network_guard.check_host("[::1]", 8080)
    assert network_guard.take() == []


def test_unix_sockets_and_udp_to_loopback_are_allowed(tmp_path: Path, network_guard: Any) -> None:
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"hi", receiver.getsockname())
        assert receiver.recv(2) == b"hi"
    assert network_guard.take() == []


async def _serve_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()
    await writer.wait_closed()


async def test_asyncio_and_httpx_reach_a_loopback_server(network_guard: Any) -> None:
    server = await asyncio.start_server(_serve_ok, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        async with httpx.AsyncClient(trust_env=False) as client:
            reply = await client.get(f"http://localhost:{port}/")
    assert reply.text == "ok"
    assert network_guard.take() == []


# --- the fixture itself, end to end in a separate pytest run ------------------------------


def test_the_fixture_fails_tests_that_reach_out_even_when_they_swallow_the_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        textwrap.dedent(
            """
            import socket

            def test_raises():
                socket.create_connection(("192.0.2.30", 80), timeout=0.1)

            def test_swallows():
                try:
                    socket.create_connection(("192.0.2.31", 80), timeout=0.1)
                except Exception:
                    pass

            def test_loopback():
                with socket.create_server(("127.0.0.1", 0)) as server:
                    socket.create_connection(server.getsockname(), timeout=5).close()
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallows*",
            "*test tried to reach the network: '192.0.2.31' port 80*",
            "*NetworkAccessBlocked: tests may not reach the network: '192.0.2.30' port 80*",
            "*FAILED*::test_raises*",
        ]
    )


# --- nothing takes the guard away: plugins, imports, inner sessions ------------------------

# An inner-run helper: whether `socket.socket.connect` is still the guard, asked of a
# closed socket, which cannot reach anything whether the guard is there or not.
INNER_PROBE = """
import socket

import pytest


def connect_is_refused(network_guard):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.close()
    with pytest.raises(RuntimeError, match="tests may not reach the network"):
        sock.connect(("192.0.2.40", 9))
    network_guard.take()
"""


def _assert_connect_is_refused(network_guard: Any) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.close()  # unguarded, connecting it fails with EBADF and sends nothing
    with pytest.raises(RuntimeError, match=f"{REFUSED}: '192.0.2.40' port 9"):
        sock.connect(("192.0.2.40", 9))
    assert network_guard.take() == ["'192.0.2.40' port 9"]


def test_the_guard_outlives_pytest_socket_restoring_sockets_after_each_test(
    pytester: pytest.Pytester,
) -> None:
    # pytest-socket (a dependency of langchain-tests) puts back, after every test, the
    # `connect` it found at import, before the guard existed; the guard used to be gone
    # from the second test of a session on.
    pytest.importorskip("pytest_socket")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        INNER_PROBE
        + textwrap.dedent(
            """
            def test_pytest_socket_is_loaded(pytestconfig):
                assert pytestconfig.pluginmanager.has_plugin("socket")

            def test_first(network_guard):
                connect_is_refused(network_guard)

            def test_second(network_guard):
                connect_is_refused(network_guard)
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)


def test_a_plugin_that_puts_back_a_socket_function_errors_that_test_and_the_guard_returns(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        restorer="""
        import socket

        FOUND_AT_IMPORT = socket.socket.connect

        def pytest_runtest_teardown(item):
            if item.name == "test_first":
                socket.socket.connect = FOUND_AT_IMPORT
        """,
        test_probe=INNER_PROBE
        + textwrap.dedent(
            """
            def test_first(network_guard):
                connect_is_refused(network_guard)

            def test_second(network_guard):
                connect_is_refused(network_guard)
            """
        ),
    )
    result = pytester.runpytest_subprocess("-p", "restorer", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_first*",
            "*NetworkGuardRemoved: the network guard was removed by this test or its teardown: "
            "socket.socket.connect was replaced by <method 'connect' *",
        ]
    )


def test_a_module_that_swaps_a_socket_function_at_import_errors_the_next_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        """
        import _socket
        import socket

        socket.getaddrinfo = _socket.getaddrinfo

        def test_first():
            pass

        def test_second():
            assert socket.getaddrinfo is not _socket.getaddrinfo
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_first*",
            "*NetworkGuardRemoved: the network guard was removed before this test started: "
            "socket.getaddrinfo was replaced by <built-in function getaddrinfo>*",
        ]
    )


def test_an_inner_session_in_this_process_leaves_the_guard_in_place(
    pytester: pytest.Pytester, network_guard: Any
) -> None:
    # The inner session loads its own copy of the conftest, stacks a second guard on
    # this one and takes only that one off when it ends.
    this_test = "test_connect_to_a_public_address_is_refused_and_recorded"
    result = pytester.runpytest_inprocess(
        str(Path(__file__).resolve()), "-p", "no:cacheprovider", "-q", "-k", this_test
    )
    result.assert_outcomes(passed=1)
    _assert_connect_is_refused(network_guard)


def test_a_second_session_sharing_the_conftest_module_leaves_the_guard_in_place(
    pytester: pytest.Pytester, pytestconfig: pytest.Config, network_guard: Any
) -> None:
    # A conftest inside a package is not imported afresh, so a second session in this
    # process would run these very hooks; its unconfigure used to undo the guard.
    conftest = pytestconfig.pluginmanager.get_plugin(str(CONFTEST))
    assert conftest is not None and conftest.NetworkGuard is type(network_guard)
    inner = pytester.parseconfig()
    conftest.pytest_configure(inner)
    conftest.pytest_unconfigure(inner)
    _assert_connect_is_refused(network_guard)


# --- schemas never make the package fetch anything ----------------------------------------

STRATEGIES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tool": ToolStrategy,
    "provider": ProviderStrategy,
    "prompted": PromptedStrategy,
    "auto": AutoStrategy,
    "bare schema": lambda schema: schema,
}


def _schema_with_ref(ref: str) -> dict[str, Any]:
    return {
        "title": "Contact",
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": ref}},
        "required": ["name"],
    }


def _remote_ref(kind: str, tmp_path: Path) -> str:
    if kind == "readable file":
        # A real, readable schema file: had it been opened, the schema would have been
        # accepted, so refusing it shows that nothing was read.
        readable = tmp_path / "address.json"
        readable.write_text('{"type": "object", "properties": {"city": {"type": "string"}}}')
        return readable.as_uri()
    return REMOTE_REFS[kind]


REMOTE_REFS = {
    "http": "http://schemas.example.org/address.json",
    "https": "https://schemas.example.org/address.json#/$defs/Address",
    "file": "file:///etc/passwd",
}


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=['{"name": "Ada"}'], profile={"structured_output": True})


@pytest.mark.parametrize("kind", [*REMOTE_REFS, "readable file"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_remote_refs_are_refused_when_an_agent_is_built(
    strategy: str, kind: str, tmp_path: Path, network_guard: Any
) -> None:
    schema = _schema_with_ref(_remote_ref(kind, tmp_path))
    with pytest.raises(SchemaError):
        create_agent(_model(), response_format=STRATEGIES[strategy](schema))
    assert network_guard.take() == []


@pytest.mark.parametrize("kind", [*REMOTE_REFS, "readable file"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_remote_refs_are_refused_when_a_node_is_built(
    strategy: str, kind: str, tmp_path: Path, network_guard: Any
) -> None:
    schema = _schema_with_ref(_remote_ref(kind, tmp_path))
    with pytest.raises(SchemaError):
        structured_output_node(_model(), STRATEGIES[strategy](schema))
    assert network_guard.take() == []


def test_a_local_ref_is_still_followed() -> None:
    schema = _schema_with_ref("#/$defs/Address")
    schema["$defs"] = {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}}
    model = ScriptedChatModel(responses=['{"name": "Ada", "address": {"city": "Paris"}}'])
    agent = create_agent(model, response_format=PromptedStrategy(schema))
    state = agent.invoke({"messages": [("user", "Ada lives in Paris")]})
    assert state["structured_response"] == {"name": "Ada", "address": {"city": "Paris"}}
