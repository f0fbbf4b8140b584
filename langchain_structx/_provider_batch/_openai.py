"""OpenAI's Batch API through the `openai` SDK: Files (purpose "batch") and Batches.

Each request is one line `{"custom_id", "method": "POST", "url", "body"}` of a
JSONL file uploaded for the batch; results come back as an output file (the
requests that ran) and an error file (those that failed or never ran).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from langchain_structx._provider_batch._wire import (
    LOST,
    BatchLimits,
    ProviderBatchError,
    Status,
    error_reply,
    first_message,
    live_error,
)
from langchain_structx.errors import UserError

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
"""The only completion window the Batch API offers."""
LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
"""The Batch guide's limits on one input file."""
MARK = "structx_job"
"""The metadata key that names the job a batch belongs to."""

_RUNNING = {"validating", "in_progress", "finalizing"}
_ENDED = {"completed", "expired", "cancelled"}
_NEVER_RAN = {"batch_expired", "batch_cancelled"}


class OpenAIBatches:
    """The Batch API of the client a `ChatOpenAI` model was built with."""

    name = "openai"

    def __init__(self, model: Any, job: str, limits: BatchLimits = LIMITS) -> None:
        self.client = model.root_client
        self.job = job
        self.limits = limits

    def body(self, model: Any, prompt: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions body `ChatOpenAI` builds (`stream` false, as a batch needs).

        Raises:
            UserError: For a model set to use the Responses API.
        """
        payload: dict[str, Any] = model._get_request_payload(prompt, **kwargs)
        if "messages" not in payload:
            raise UserError(
                "provider batches send Chat Completions requests; build the ChatOpenAI "
                "model without use_responses_api"
            )
        if payload.get("stream"):  # a model set to stream: a batch answers whole
            payload["stream"] = False
            payload.pop("stream_options", None)
        return payload

    def line(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """One line of the request file."""
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def upload(self, data: bytes) -> str | None:
        """Upload the request file for a batch."""
        found = self.client.files.create(file=("requests.jsonl", data), purpose="batch")
        return str(found.id)

    def create(self, file_id: str | None, lines: Sequence[dict[str, Any]]) -> str:
        """Start a batch on an uploaded file, marked with the job's name."""
        batch = self.client.batches.create(
            input_file_id=file_id,
            endpoint=ENDPOINT,
            completion_window=WINDOW,
            metadata={MARK: self.job},
        )
        return str(batch.id)

    def adopt(self, file_id: str | None, since: float, count: int, known: set[str]) -> str | None:
        """The batch already made on `file_id`, if a killed process made it."""
        for batch in self.client.batches.list(limit=100):
            if batch.input_file_id == file_id and batch.id not in known:
                return str(batch.id)
            if batch.created_at < since - 60:
                return None  # listed newest first: older ones cannot be ours
        return None

    def status(self, batch_id: str) -> Status:
        """The batch's state and counts.

        Raises:
            ProviderBatchError: When the batch failed its validation.
        """
        batch = self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        total = counts.total if counts else 0
        if batch.status == "failed":
            errors = batch.errors.data if batch.errors and batch.errors.data else []
            said = "; ".join(f"line {e.line}: {e.message}" for e in errors[:5])
            raise ProviderBatchError(f"OpenAI refused batch {batch_id}: {said or 'failed'}")
        state = "running" if batch.status in _RUNNING else "cancelling"
        if batch.status in _ENDED:
            state = "ended"
        return Status(state, done, total, str(batch.status))  # type: ignore[arg-type]

    def replies(self, batch_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The output file's results, then the error file's failures."""
        batch = self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self.client.files.content(file_id).text
            for raw in text.splitlines():
                if raw.strip():
                    yield _reply(json.loads(raw))

    def cancel(self, batch_id: str) -> None:
        """Ask OpenAI to cancel the batch."""
        self.client.batches.cancel(batch_id)

    def message(self, model: Any, body: dict[str, Any]) -> AIMessage:
        """A chat completion read as `ChatOpenAI` reads one."""
        return first_message(model._create_chat_result(body))

    def rejection(self, error: dict[str, Any]) -> Exception:
        """The error a live call would have raised: the SDK's, as `ChatOpenAI` converts it."""
        return live_error(self.client, f"{self.client.base_url}chat/completions", error, _classify)


def _classify(error: Exception) -> None:
    """Raise `error` as `ChatOpenAI` raises it (its own classes for a refusal, an overflow)."""
    import openai
    from langchain_openai.chat_models import base

    if isinstance(error, openai.BadRequestError):
        base._handle_openai_bad_request(error)
    base._handle_openai_api_error(error)  # type: ignore[arg-type]


def _reply(line: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    custom_id = str(line.get("custom_id"))
    response = line.get("response")
    if isinstance(response, dict) and response.get("status_code") == 200:
        return custom_id, {"body": response.get("body")}
    if isinstance(response, dict):
        error = (response.get("body") or {}).get("error") or {}
        message = str(error.get("message") or "the request failed")
        status = int(response.get("status_code") or 500)
        return custom_id, error_reply(status, str(error.get("type")), message, response.get("body"))
    error = line.get("error") or {}
    code = str(error.get("code") or "")
    kind = LOST if code in _NEVER_RAN else code or "error"
    return custom_id, error_reply(0, kind, str(error.get("message") or code))
