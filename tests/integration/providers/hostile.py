"""Shared by the hostile-reply tests: a fake that writes raw text into its replies,
scripted models, and a hang guard.

Replies the `Reply` type cannot express (tool-call arguments that are not JSON,
nesting deeper than `json.dumps` goes, integers longer than Python prints) are
spliced into the HTTP body: the scripted reply carries `MARK` and the server
writes the raw text in its place.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from .clients import FAKES
from .wire import Ask, FakeProvider, Rendered, Reply

STRING_ARGS = ("openai", "openai_responses")  # tool arguments travel as a JSON string
HANG_SECONDS = 60.0
MARK = "@R@"  # short enough to stay in one streamed chunk of every fake


def raw_fake(provider: str, model: Callable[[Ask], Reply], raw: str | None = None) -> Any:
    """The provider's fake, writing `raw` where a reply carries `MARK`.

    A tool call whose arguments are `MARK` gets `raw` as its argument text (a JSON
    string on the wire for OpenAI, a JSON fragment inside the body for Anthropic
    and Gemini); a text reply of `MARK` gets `raw` as its text.
    """
    base = FAKES[provider]

    class Raw(base):  # type: ignore[valid-type,misc]
        def __init__(self, model: Callable[[Ask], Reply]) -> None:
            super().__init__(model)
            # A short poll, so that leaving the `with` block does not wait half a second.
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.02,), daemon=True
            )

        def _handler(self) -> Any:
            handler = super()._handler()

            class Handler(handler):  # type: ignore[valid-type,misc]
                def _encode(self, out: Rendered) -> tuple[bytes, str]:
                    payload, kind = super()._encode(out)
                    if raw is None:
                        return payload, kind
                    text = payload.decode()
                    # Arguments encoded as a string (twice-encoded marker) first.
                    text = text.replace(json.dumps(json.dumps(MARK)), json.dumps(raw))
                    if provider in STRING_ARGS:
                        text = text.replace(json.dumps(MARK), json.dumps(raw))
                    else:
                        text = text.replace(f'"args": {json.dumps(MARK)}', f'"args": {raw}')
                        text = text.replace(f'"input": {json.dumps(MARK)}', f'"input": {raw}')
                        text = text.replace(json.dumps(MARK), json.dumps(raw))
                    return text.encode("utf-8", "surrogatepass"), kind

            return Handler

    server: FakeProvider = Raw(model)
    return server


def script(*replies: Reply | Callable[[Ask], Reply]) -> Callable[[Ask], Reply]:
    """A model that gives `replies` in turn, repeating the last one."""
    seen = {"n": 0}

    def model(ask: Ask) -> Reply:
        reply = replies[min(seen["n"], len(replies) - 1)]
        seen["n"] += 1
        return reply(ask) if callable(reply) else reply

    return model


def call(args: Any, name: str | None = None, text: str = "", **kw: Any) -> Callable[[Ask], Reply]:
    """A reply that calls the forced (or first) tool, or `name`, with `args`."""

    def reply(ask: Ask) -> Reply:
        called = name if name is not None else (ask.forced or next(iter(ask.tools), "Parcel"))
        return Reply(text=text, calls=((called, args),), **kw)

    return reply


def answer(value: Any) -> Callable[[Ask], Reply]:
    """A well-behaved reply of `value` by whatever route the request offers."""

    def reply(ask: Ask) -> Reply:
        if ask.kind == "tool":
            return Reply(calls=((ask.forced or next(iter(ask.tools)), value),))
        return Reply(text=json.dumps(value))

    return reply


def within(fn: Callable[[], Any]) -> Any:
    """Run `fn`, failing the test if it does not return in `HANG_SECONDS` (a hang guard)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_SECONDS)
    if thread.is_alive():
        pytest.fail(f"no answer within {HANG_SECONDS} s: the run hangs")
    if "error" in box:
        raise box["error"]
    return box["value"]
