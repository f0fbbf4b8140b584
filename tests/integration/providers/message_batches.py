"""Fake Anthropic Message Batches server on loopback (see `batches.py` for the plan)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from .batches import Batch, BatchPlumbing, iso, json_body
from .fakes import FakeAnthropic
from .wire import Rendered

ANTHROPIC_MAX_REQUESTS = 100_000
ANTHROPIC_MAX_BYTES = 256 * 1024 * 1024
"""Message Batches guide, "Batch limitations": 100,000 requests or 256 MB."""
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Message Batches API reference, `requests[].custom_id`."""


class FakeAnthropicBatch(BatchPlumbing, FakeAnthropic):
    """`/v1/messages/batches` and the live `/v1/messages` its requests run on."""

    def __init__(self, model: Any, *, max_requests: int = ANTHROPIC_MAX_REQUESTS) -> None:
        super().__init__(model)
        self._setup()
        self.max_requests = max_requests

    def error(self, status: int, message: str, code: str | None = None) -> Any:
        kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
                404: "not_found_error"}.get(status, "invalid_request_error")  # fmt: skip
        return {"type": "error", "error": {"type": kind, "message": message}}

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> Rendered:
        if method == "POST" and path == "/v1/messages":
            body = json_body(raw)
            if not isinstance(body, dict):
                return Rendered(400, self.error(400, "request body is not JSON"))
            return self.answer(path, body)
        if method == "POST" and path == "/v1/messages/batches":
            return self._create(raw)
        if method == "GET" and path == "/v1/messages/batches":
            data = [self._object(self.batches[i]) for i in reversed(self.created)]
            return Rendered(200, {"data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})  # fmt: skip
        found = re.fullmatch(r"/v1/messages/batches/([^/]+)(/cancel|/results)?", path)
        batch = self.batches.get(found[1]) if found else None
        if found is None or batch is None:
            return Rendered(404, self.error(404, f"no such batch: {path}"))
        if found[2] == "/cancel":
            return Rendered(200, self._cancel(batch))
        if found[2] == "/results":
            if batch.status != "ended":  # reference: results only once processing ended
                return self._refuse("results are not available until the batch has ended")
            return Rendered(200, "".join(json.dumps(r) + "\n" for r in batch.results).encode())
        return Rendered(200, self._poll(batch))

    def _refuse(self, message: str) -> Rendered:
        self.violations.append(message)
        return Rendered(400, self.error(400, message))

    def _create(self, raw: bytes) -> Rendered:
        if len(raw) > ANTHROPIC_MAX_BYTES:
            return Rendered(413, self.error(413, "request_too_large"))
        body = json_body(raw)
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return self._refuse("requests: a non-empty list is required")
        if len(requests) > self.max_requests:
            return self._refuse(f"requests: at most {self.max_requests}, got {len(requests)}")
        ids: set[str] = set()
        for n, item in enumerate(requests):
            if not isinstance(item, dict) or set(item) != {"custom_id", "params"}:
                return self._refuse(f"requests.{n}: each request is {{custom_id, params}}")
            key = item["custom_id"]
            if not isinstance(key, str) or not CUSTOM_ID.match(key) or key in ids:
                return self._refuse(f"requests.{n}.custom_id {key!r} is invalid or repeated")
            ids.add(key)
            if not isinstance(item["params"], dict) or item["params"].get("stream"):
                return self._refuse(f"requests.{n}.params: streaming is not supported in batches")
        with self.batch_lock:
            key = f"msgbatch_{len(self.batches) + 1:04d}"
            batch = Batch(key, requests, int(time.time()), status="in_progress")
            self.batches[key] = batch
            self.created.append(key)
        return Rendered(200, self._object(batch))

    def _poll(self, batch: Batch) -> dict[str, Any]:
        with self.batch_lock:
            self.polls += 1
            batch.polls += 1
            if batch.status == "in_progress" and batch.polls > self.running_polls:
                self._finish(batch)
            elif batch.status == "canceling":
                self._finish(batch, cancelled=True)
            return self._object(batch)

    def _finish(self, batch: Batch, *, cancelled: bool = False) -> None:
        for item in batch.lines:
            key = item["custom_id"]
            if cancelled or self.expire(key):
                result: dict[str, Any] = {"type": "canceled" if cancelled else "expired"}
            else:
                out = self.answer("/v1/messages", item["params"])
                if out.status == 200:
                    result = {"type": "succeeded", "message": out.body}
                else:  # the reference's "errored": the error body as the live API sends it
                    result = {"type": "errored", "error": out.body}
            batch.results.append({"custom_id": key, "result": result})
        batch.status = "ended"

    def _cancel(self, batch: Batch) -> dict[str, Any]:
        with self.batch_lock:
            if batch.status == "in_progress":
                batch.status = "canceling"
                batch.extra["cancel"] = iso(time.time())
            return self._object(batch)

    def _object(self, batch: Batch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.status != "ended":
            counts["processing"] = len(batch.lines)
        for row in batch.results:
            counts[row["result"]["type"]] += 1
        ended = batch.status == "ended"
        return {
            "id": batch.id, "type": "message_batch", "processing_status": batch.status,
            "request_counts": counts, "created_at": iso(batch.created),
            "expires_at": iso(batch.created + 86400), "archived_at": None,
            "cancel_initiated_at": batch.extra.get("cancel"),
            "ended_at": iso(time.time()) if ended else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }  # fmt: skip
