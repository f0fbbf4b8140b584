"""A loopback HTTP server that plays a provider, and what its scripted model says.

Each fake provider (see `fakes.py`) reads a request, checks it against the
provider's documented rules, turns it into a provider-neutral `Ask`, lets the
test's `Model` answer it with a `Reply`, and writes the reply in the provider's
exact JSON or server-sent-events form. A request that breaks a rule gets the
provider's own 400 and is counted in `violations`, unless the test scripted
that rejection itself (`Reply.reject`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Kind = Literal["format", "tool", "text"]
Stop = Literal["stop", "length", "refusal"]


@dataclass(frozen=True)
class Ask:
    """What the request asks of the model, whatever the provider.

    Attributes:
        kind: A native response format, a forced (or offered) tool, or free text.
        schema: The response format's schema, or None.
        tools: Tool name -> parameter schema, as the provider received them.
        forced: The tool the request forces, if any.
        turns: The conversation as (role, text) pairs, tool results included.
        body: The raw request body.
    """

    kind: Kind
    schema: dict[str, Any] | None
    tools: dict[str, dict[str, Any]]
    forced: str | None
    turns: list[tuple[str, str]]
    body: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What the scripted model answers.

    Attributes:
        text: Text content.
        calls: Tool calls as (name, arguments).
        stop: Why it stopped: finished, out of tokens, or refused.
        reject: A (status, message) error the server answers instead, or
            (status, message, code) where the provider's body has a code field.
        reason: The provider's own stop reason, when not the one `stop` implies.
    """

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    stop: Stop = "stop"
    reject: tuple[int, str] | tuple[int, str, str] | None = None
    reason: str | None = None


Model = Callable[[Ask], Reply]


@dataclass
class Rendered:
    """An HTTP answer: status, JSON body or server-sent events."""

    status: int
    body: Any = None
    events: list[tuple[str | None, Any]] = field(default_factory=list)


class FakeProvider:
    """Base of the fake providers: the HTTP plumbing and the bookkeeping."""

    name = "fake"

    def __init__(self, model: Model) -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.rejected = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # -- what each provider states ------------------------------------------------

    def rules(self, path: str, body: dict[str, Any]) -> list[str]:
        """The documented rules this request breaks."""
        raise NotImplementedError

    def ask(self, path: str, body: dict[str, Any]) -> Ask:
        """The request as an `Ask`."""
        raise NotImplementedError

    def streams(self, path: str, body: dict[str, Any]) -> bool:
        """Whether the client asked for server-sent events."""
        raise NotImplementedError

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        """The provider's error body; `code` is for providers whose body has one."""
        raise NotImplementedError

    def render(self, reply: Reply, ask: Ask, stream: bool) -> Rendered:
        """The reply in the provider's form."""
        raise NotImplementedError

    # -- plumbing -----------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any]) -> Rendered:
        """Check, ask the model, and render."""
        with self._lock:
            self.requests.append(body)
        broken = self.rules(path, body)
        if broken:
            with self._lock:
                self.violations.extend(broken)
            return Rendered(400, self.error(400, "; ".join(broken)))
        ask = self.ask(path, body)
        reply = self.model(ask)
        if reply.reject is not None:
            with self._lock:
                self.rejected += 1
            return Rendered(reply.reject[0], self.error(*reply.reject))
        return self.render(reply, ask, self.streams(path, body))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                size = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict):
                    self._send(Rendered(400, fake.error(400, "request body is not JSON")))
                    return
                self._send(fake.answer(self.path, body))

            def _encode(self, out: Rendered) -> tuple[bytes, str]:
                """The body's bytes and content type."""
                if out.status == 200 and out.events:
                    payload = b"".join(_sse(event, data) for event, data in out.events)
                    return payload, "text/event-stream"
                return json.dumps(out.body).encode(), "application/json"

            def _send(self, out: Rendered) -> None:
                payload, kind = self._encode(out)
                self.send_response(out.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                # One request per connection: no pooled client socket outlives a test
                # to be reported unclosed in another.
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _sse(event: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def chunks(text: str, size: int = 7) -> Iterator[str]:
    """A text cut into small pieces, as a stream delivers it."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


def answering(value: dict[str, Any]) -> Model:
    """A model that answers `value` by whatever route the request offers."""

    def model(ask: Ask) -> Reply:
        if ask.kind == "tool":
            return Reply(calls=((ask.forced or next(iter(ask.tools)), value),))
        return Reply(text=json.dumps(value))

    return model
