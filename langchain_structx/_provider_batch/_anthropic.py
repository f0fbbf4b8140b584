"""Anthropic's Message Batches API through the `anthropic` SDK (`messages.batches`).

Requests travel inline, each `{"custom_id", "params"}` with the Messages body;
results come back as one JSONL stream, each request `succeeded`, `errored`,
`canceled` or `expired`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from langchain_structx._provider_batch._wire import (
    LOST,
    BatchLimits,
    Status,
    error_reply,
    first_message,
    live_error,
)
from langchain_structx.errors import UserError

LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024)
"""The Message Batches guide's limits on one batch."""

STATUS_OF = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""The HTTP status of each error type, as the Errors reference pairs them."""

_SLACK = 60.0
"""Seconds of clock difference allowed when looking for a batch a killed process made."""


class AnthropicBatches:
    """The Message Batches API of the client a `ChatAnthropic` model was built with."""

    name = "anthropic"

    def __init__(self, model: Any, job: str, limits: BatchLimits = LIMITS) -> None:
        self.client = model._client
        self.job = job
        self.limits = limits

    def body(self, model: Any, prompt: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The Messages body `ChatAnthropic` builds, never streamed.

        Raises:
            UserError: For a request that needs beta features (`betas`), which
                go through the beta batch API, not supported here yet.
        """
        payload: dict[str, Any] = model._get_request_payload(prompt, **kwargs)
        if payload.get("betas"):
            raise UserError(
                "provider batches do not send Anthropic beta features yet; build the "
                f"ChatAnthropic model without betas ({', '.join(payload['betas'])})"
            )
        payload.pop("stream", None)
        return payload

    def line(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request of the batch."""
        return {"custom_id": custom_id, "params": body}

    def upload(self, data: bytes) -> str | None:
        """Nothing to upload: requests travel in the create call."""
        return None

    def create(self, file_id: str | None, lines: Sequence[dict[str, Any]]) -> str:
        """Start a batch of `lines`."""
        batch = self.client.messages.batches.create(requests=list(lines))
        return str(batch.id)

    def adopt(self, file_id: str | None, since: float, count: int, known: set[str]) -> str | None:
        """A batch of `count` requests made since `since` that the job does not know.

        Message batches carry no metadata, so the one a killed process made is
        known by its time and size.
        """
        for batch in self.client.messages.batches.list(limit=100):
            made = batch.created_at.timestamp()
            if made < since - _SLACK:
                return None  # listed newest first
            if batch.id not in known and _total(batch) == count:
                return str(batch.id)
        return None

    def status(self, batch_id: str) -> Status:
        """The batch's state and counts."""
        batch = self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = _total(batch)
        state = {"in_progress": "running", "canceling": "cancelling"}.get(
            batch.processing_status, "ended"
        )
        return Status(state, total - counts.processing, total, batch.processing_status)  # type: ignore[arg-type]

    def replies(self, batch_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each request's result."""
        for item in self.client.messages.batches.results(batch_id):
            yield item.custom_id, _reply(item.result)

    def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to cancel the batch."""
        self.client.messages.batches.cancel(batch_id)

    def message(self, model: Any, body: dict[str, Any]) -> AIMessage:
        """A message read as `ChatAnthropic` reads one."""
        from anthropic.types import Message

        return first_message(model._format_output(Message.model_validate(body)))

    def rejection(self, error: dict[str, Any]) -> Exception:
        """The error a live call would have raised: the SDK's, as `ChatAnthropic` converts it."""
        return live_error(self.client, f"{self.client.base_url}/v1/messages", error, _classify)


def _classify(error: Exception) -> None:
    """Raise `error` as `ChatAnthropic` raises it."""
    import anthropic
    from langchain_anthropic import chat_models

    if isinstance(error, anthropic.BadRequestError):
        chat_models._handle_anthropic_bad_request(error)
    chat_models._handle_anthropic_api_error(error)  # type: ignore[arg-type]


def _total(batch: Any) -> int:
    c = batch.request_counts
    return int(c.processing + c.succeeded + c.errored + c.canceled + c.expired)


def _reply(result: Any) -> dict[str, Any]:
    if result.type == "succeeded":
        return {"body": result.message.model_dump(mode="json")}
    if result.type == "errored":
        error = result.error.error
        kind = str(error.type)
        body = result.error.model_dump(mode="json")
        return error_reply(STATUS_OF.get(kind, 500), kind, str(error.message), body)
    return error_reply(0, LOST, f"the request was {result.type} before it ran")
