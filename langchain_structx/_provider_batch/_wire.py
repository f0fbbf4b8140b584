"""What every batch API shares: the adapter's interface, its limits and what comes back.

A reply is kept on disk as plain JSON (the provider's own result body, or an
error with its status), so a job read back after a kill replays exactly what
the provider said.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from langchain_core.messages import AIMessage

from langchain_structx._exceptions import StructxError

BATCH_DISCOUNT = 0.5
"""What both providers take off the live price of a batched request."""

RETRIED_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses of a request that failed for a passing reason: sent again in the next round."""

LOST = "lost"
"""The error type of a request the batch never ran (it expired or was cancelled)."""

State = Literal["running", "ended", "cancelling"]


class ProviderBatchError(StructxError):
    """A provider batch job cannot go on: its state, its remote batch, or its settings."""


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """How much one batch may carry; a round larger than this is sent as several.

    Attributes:
        max_requests: Requests per batch.
        max_bytes: Bytes of the request file (or body) per batch.
    """

    max_requests: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class Status:
    """A remote batch as the provider reports it.

    Attributes:
        state: Running, ended (results ready, whatever the reason), or being cancelled.
        done: Requests finished so far.
        total: Requests in the batch.
        detail: The provider's own status word.
    """

    state: State
    done: int
    total: int
    detail: str


class Provider(Protocol):
    """One batch API, through its official SDK."""

    name: str
    limits: BatchLimits

    def body(self, model: Any, prompt: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The request body the chat model builds for `prompt` and its call arguments."""
        ...

    def line(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request as the batch carries it."""
        ...

    def upload(self, data: bytes) -> str | None:
        """Upload the request file; None for an API that takes requests inline."""
        ...

    def create(self, file_id: str | None, lines: Sequence[dict[str, Any]]) -> str:
        """Start a batch; its id."""
        ...

    def adopt(self, file_id: str | None, since: float, count: int, known: set[str]) -> str | None:
        """The id of a batch made by a process killed before it saved the id, if any."""
        ...

    def status(self, batch_id: str) -> Status:
        """The batch's state."""
        ...

    def replies(self, batch_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each finished request: its custom id and `{"body": ...}` or `{"error": ...}`."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch."""
        ...

    def message(self, model: Any, body: dict[str, Any]) -> AIMessage:
        """A result body read by the chat model's own parser."""
        ...

    def rejection(self, error: dict[str, Any]) -> Exception:
        """A refused request as the SDK raises it live."""
        ...


def error_reply(status: int, kind: str, message: str, body: Any = None) -> dict[str, Any]:
    """A failed request as kept on disk, with the provider's own error `body` if it sent one.

    Examples:
        >>> error_reply(500, "server_error", "boom")["error"]["status"]
        500
    """
    return {"error": {"status": status, "type": kind, "message": message, "body": body}}


def status_error(client: Any, url: str, error: dict[str, Any]) -> Exception:
    """The SDK's error for a failed request, made from its status and body as a live one is.

    The SDK is asked for the HTTP library it is built on (httpx, or its
    successor) through its own client, so the response is one it reads.
    """
    http = _http_library(client)
    body = error.get("body") or {
        "error": {"type": error.get("type"), "message": error.get("message")}
    }
    status = int(error.get("status") or 400)
    response = http.Response(status, json=body, request=http.Request("POST", url))
    made: Exception = client._make_status_error_from_response(response)
    return made


def _http_library(client: Any) -> Any:
    for base in type(client._client).__mro__:
        if base.__name__ == "Client":
            return importlib.import_module(base.__module__.partition(".")[0])
    raise ProviderBatchError("the SDK's HTTP client is not one this version knows")


def retried(reply: dict[str, Any]) -> bool:
    """Whether a failed request is sent again rather than reported.

    Examples:
        >>> retried(error_reply(429, "rate_limit", "slow down")), retried(error_reply(400, "x", ""))
        (True, False)
    """
    error = reply.get("error") or {}
    return error.get("type") == LOST or error.get("status") in RETRIED_STATUSES


def as_langchain_raises(made: Exception, classify: Callable[[Exception], None]) -> Exception:
    """`made` as the chat model's client raises it live: `classify` re-raises it, converted.

    Examples:
        >>> def classify(error: Exception) -> None:
        ...     raise KeyError(str(error)) from error
        >>> type(as_langchain_raises(ValueError("x"), classify)).__name__
        'KeyError'
    """
    try:
        raise made
    except Exception as error:  # noqa: BLE001 - classified, never lost
        try:
            classify(error)
        except Exception as converted:  # noqa: BLE001 - what a live call would raise
            return converted
    return made


def live_error(
    client: Any, url: str, error: dict[str, Any], classify: Callable[[Exception], None]
) -> Exception:
    """The error a live call to `url` would have raised for a row's `error`.

    The SDK's own error, converted by `classify` as the chat model converts it.
    """
    return as_langchain_raises(status_error(client, url, error), classify)


def first_message(result: Any) -> AIMessage:
    """The message of a chat model's first generation, as its own parser made it.

    Raises:
        ProviderBatchError: When the chat model made something else of the reply.
    """
    message = result.generations[0].message
    if not isinstance(message, AIMessage):
        raise ProviderBatchError(f"the chat model read a reply as {type(message).__name__}")
    return message


def split(lines: Sequence[dict[str, Any]], limits: BatchLimits) -> list[list[dict[str, Any]]]:
    """Requests cut into batches that keep within `limits`.

    Raises:
        ProviderBatchError: When one request alone is over the byte limit.

    Examples:
        >>> [len(p) for p in split([{"a": i} for i in range(5)], BatchLimits(2, 1000))]
        [2, 2, 1]
    """
    parts: list[list[dict[str, Any]]] = [[]]
    size = 0
    for line in lines:
        weight = len(json.dumps(line, ensure_ascii=False).encode()) + 1
        if weight > limits.max_bytes:
            raise ProviderBatchError(
                f"request {line.get('custom_id')} is {weight} bytes, over the batch limit "
                f"of {limits.max_bytes}"
            )
        if len(parts[-1]) >= limits.max_requests or size + weight > limits.max_bytes:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += weight
    return [p for p in parts if p]


def jsonl(lines: Sequence[dict[str, Any]]) -> bytes:
    """Requests as a JSONL file."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
