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
