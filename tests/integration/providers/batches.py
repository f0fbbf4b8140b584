"""Fake OpenAI Batch server on loopback, and what the batch fakes share.

Each is the fake live provider of `fakes.py` (same request rules, same
scripted model, same reply rendering) with the batch API in front of it: the
batch's requests run through the live path when the batch finishes, and what
they answer becomes the batch's result file(s). Every rule checked here is
from the provider's batch guide or API reference, named beside it. A batch
moves one status per poll, so a test sees every status a client must handle.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from .fakes import FakeOpenAI, openai_error
from .wire import Rendered, _sse

Lost = Callable[[str], bool]
"""Whether the batch leaves a request (by custom id) unrun: it expires first."""


@dataclass
class Batch:
    """One remote batch and its requests."""

    id: str
    lines: list[dict[str, Any]]
    created: int
    polls: int = 0
    status: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class BatchPlumbing:
    """What both fakes share: routes, polls counted, the batches kept."""

    running_polls = 2
    """Polls a batch answers `in_progress` before it finishes."""

    def _setup(self) -> None:
        self.batches: dict[str, Batch] = {}
        self.created: list[str] = []
        self.polls = 0
        self.seen: Counter[str] = Counter()
        """Requests served, by method and path."""
        self.expire: Lost = lambda key: False
        self.batch_lock = threading.Lock()

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> Rendered:
        raise NotImplementedError

    def requests_by_record(self) -> list[int]:
        """The record each model request asked about (its text says `record n`)."""
        numbers = []
        for body in self.requests:  # type: ignore[attr-defined]
            found = re.search(r"record (\d+)", json.dumps(body.get("messages")))
            if found:
                numbers.append(int(found[1]))
        return numbers

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _serve(self, method: str) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                fake.seen[f"{method} {urlsplit(self.path).path}"] += 1
                out = fake.route(method, urlsplit(self.path).path, self.headers, raw)
                if out.events:
                    payload, kind = b"".join(_sse(e, d) for e, d in out.events), "text/event-stream"
                elif isinstance(out.body, bytes):
                    payload, kind = out.body, "application/octet-stream"
                else:
                    payload, kind = json.dumps(out.body).encode(), "application/json"
                self.send_response(out.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

        return Handler


def iso(seconds: float) -> str:
    """A time as the Message Batches API writes it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def json_body(raw: bytes) -> Any:
    """A request body as JSON, or None."""
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return None


# -- OpenAI Batch -----------------------------------------------------------------

OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions")
"""Batch API reference, "endpoint"."""
OPENAI_MAX_REQUESTS = 50_000
OPENAI_MAX_BYTES = 200 * 1024 * 1024
"""Batch guide, "Rate limits": 50,000 requests and 200 MB per input file."""
OPENAI_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
"""Files API reference, "purpose"."""


class FakeOpenAIBatch(BatchPlumbing, FakeOpenAI):
    """`/v1/files`, `/v1/batches` and the live `/v1/chat/completions` they run on."""

    def __init__(self, model: Any, *, max_requests: int = OPENAI_MAX_REQUESTS) -> None:
        super().__init__(model)
        self._setup()
        self.files: dict[str, dict[str, Any]] = {}
        self.max_requests = max_requests

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> Rendered:
        if method == "POST" and path == "/v1/chat/completions":
            body = json_body(raw)
            if not isinstance(body, dict):
                return Rendered(400, openai_error("request body is not JSON"))
            return self.answer(path, body)
        if method == "POST" and path == "/v1/files":
            return self._upload(headers.get("Content-Type", ""), raw)
        if method == "GET" and (found := re.fullmatch(r"/v1/files/([^/]+)/content", path)):
            known = self.files.get(found[1])
            return Rendered(200, known["data"]) if known else self._missing("file", found[1])
        if method == "POST" and path == "/v1/batches":
            return self._create(json_body(raw))
        if method == "GET" and path == "/v1/batches":
            data = [self._object(self.batches[i]) for i in reversed(self.created)]
            return Rendered(200, {"object": "list", "data": data, "has_more": False})
        if found := re.fullmatch(r"/v1/batches/([^/]+)(/cancel)?", path):
            batch = self.batches.get(found[1])
            if batch is None:
                return self._missing("batch", found[1])
            return Rendered(200, self._cancel(batch) if found[2] else self._poll(batch))
        return Rendered(404, openai_error(f"no route {method} {path}"))

    def _missing(self, kind: str, key: str) -> Rendered:
        return Rendered(404, openai_error(f"No such {kind}: {key}"))

    def _refuse(self, message: str) -> Rendered:
        self.violations.append(message)
        return Rendered(400, openai_error(message))

    def _upload(self, kind: str, raw: bytes) -> Rendered:
        form = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {kind}\r\n\r\n".encode() + raw)
        fields = {
            part.get_param("name", header="content-disposition"): part for part in form.iter_parts()
        }
        purpose = fields["purpose"].get_content().strip() if "purpose" in fields else None
        if purpose not in OPENAI_PURPOSES:
            return self._refuse(f"purpose {purpose!r} is not one of {OPENAI_PURPOSES}")
        upload = fields.get("file")
        if upload is None:
            return self._refuse("file is required")
        data = upload.get_payload(decode=True)
        name = upload.get_filename() or ""
        # Batch guide: the input is a .jsonl file, of at most 200 MB.
        if purpose == "batch" and not name.endswith(".jsonl"):
            return self._refuse(f"a batch input file must be .jsonl, got {name!r}")
        if len(data) > OPENAI_MAX_BYTES:
            return self._refuse("file is over 200 MB")
        key = f"file-{len(self.files) + 1}"
        self.files[key] = {"data": data, "purpose": purpose, "name": name}
        obj = {"id": key, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": name, "purpose": purpose, "status": "processed"}  # fmt: skip
        return Rendered(200, obj)

    def _create(self, body: Any) -> Rendered:
        if not isinstance(body, dict):
            return self._refuse("request body is not JSON")
        # Batch API reference: input_file_id (purpose batch), endpoint, completion_window "24h".
        known = self.files.get(str(body.get("input_file_id")))
        if known is None or known["purpose"] != "batch":
            return self._refuse(f"input_file_id {body.get('input_file_id')!r} is no batch file")
        if body.get("endpoint") not in OPENAI_ENDPOINTS:
            return self._refuse(f"endpoint {body.get('endpoint')!r} is not supported")
        if body.get("completion_window") != "24h":
            return self._refuse("completion_window must be 24h")
        metadata = body.get("metadata") or {}
        if len(metadata) > 16 or any(len(str(v)) > 512 for v in metadata.values()):
            return self._refuse("metadata: at most 16 pairs, values of at most 512 characters")
        with self.batch_lock:
            key = f"batch_{len(self.batches) + 1}"
            batch = Batch(key, [], int(time.time()), status="validating")
            batch.extra = {"input_file_id": body["input_file_id"], "endpoint": body["endpoint"],
                           "metadata": metadata}  # fmt: skip
            self.batches[key] = batch
            self.created.append(key)
        return Rendered(200, self._object(batch))

    def _poll(self, batch: Batch) -> dict[str, Any]:
        with self.batch_lock:
            self.polls += 1
            batch.polls += 1
            if batch.status == "validating":
                self._validate(batch)
            elif batch.status == "in_progress" and batch.polls > self.running_polls:
                batch.status = "finalizing"
            elif batch.status == "finalizing":
                self._finish(batch)
            elif batch.status == "cancelling":
                self._finish(batch, cancelled=True)
            return self._object(batch)

    def _validate(self, batch: Batch) -> None:
        """Batch guide: the file is checked line by line before the batch runs."""
        data = self.files[batch.extra["input_file_id"]]["data"]
        problems: list[tuple[int, str]] = []
        ids: set[str] = set()
        models: set[str] = set()
        lines = data.decode().splitlines()
        if len(lines) > self.max_requests:
            problems.append((0, f"the file has {len(lines)} requests, over {self.max_requests}"))
        for number, text in enumerate(lines, 1):
            line = json_body(text.encode())
            problem = self._line_problem(line, batch.extra["endpoint"], ids)
            if problem:
                problems.append((number, problem))
                continue
            models.add(str(line["body"].get("model")))
            batch.lines.append(line)
        if len(models) > 1:  # Batch guide: one model per input file
            problems.append((0, f"the file mixes models {sorted(models)}"))
        if problems:
            self.violations.extend(p for _, p in problems)
            batch.status = "failed"
            batch.extra["errors"] = [{"code": "invalid_request", "line": n or None, "message": p,
                                      "param": None} for n, p in problems]  # fmt: skip
            return
        batch.status = "in_progress"

    def _line_problem(self, line: Any, endpoint: str, ids: set[str]) -> str | None:
        # Batch guide, "Preparing your batch file": custom_id (unique), method, url, body.
        if not isinstance(line, dict) or set(line) != {"custom_id", "method", "url", "body"}:
            return "each line is {custom_id, method, url, body}"
        key = line["custom_id"]
        if not isinstance(key, str) or not key or key in ids:
            return f"custom_id {key!r} is missing or not unique"
        ids.add(key)
        if line["method"] != "POST" or line["url"] != endpoint:
            return f"{line['method']} {line['url']} does not match the batch endpoint {endpoint}"
        if not isinstance(line["body"], dict) or line["body"].get("stream"):
            return "body must be a JSON object, not streamed"
        return None

    def _finish(self, batch: Batch, *, cancelled: bool = False) -> None:
        for line in batch.lines:
            key = line["custom_id"]
            if cancelled or self.expire(key):
                code = "batch_cancelled" if cancelled else "batch_expired"
                message = f"This request could not be executed before the batch was {code[6:]}."
                batch.errors.append({"id": f"batch_req_{key}", "custom_id": key, "response": None,
                                     "error": {"code": code, "message": message}})  # fmt: skip
                continue
            out = self.answer(line["url"], line["body"])
            row = {"id": f"batch_req_{key}", "custom_id": key, "error": None,
                   "response": {"status_code": out.status, "request_id": f"req_{key}",
                                "body": out.body}}  # fmt: skip
            (batch.results if out.status == 200 else batch.errors).append(row)
        expired = any(e["error"] for e in batch.errors)
        batch.status = "cancelled" if cancelled else "expired" if expired else "completed"
        for kind, rows in (("output", batch.results), ("error", batch.errors)):
            if rows:
                key = f"file-{len(self.files) + 1}"
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                self.files[key] = {"data": data, "purpose": "batch_output", "name": f"{kind}.jsonl"}
                batch.extra[f"{kind}_file_id"] = key

    def _cancel(self, batch: Batch) -> dict[str, Any]:
        with self.batch_lock:
            if batch.status in ("validating", "in_progress", "finalizing"):
                batch.status = "cancelling"
            return self._object(batch)

    def _object(self, batch: Batch) -> dict[str, Any]:
        done = len(batch.results)
        failed = len(batch.errors)
        extra = batch.extra
        errors = extra.get("errors")
        return {
            "id": batch.id, "object": "batch", "endpoint": extra["endpoint"],
            "errors": {"object": "list", "data": errors} if errors else None,
            "input_file_id": extra["input_file_id"], "completion_window": "24h",
            "status": batch.status, "output_file_id": extra.get("output_file_id"),
            "error_file_id": extra.get("error_file_id"), "created_at": batch.created,
            "request_counts": {"total": len(batch.lines), "completed": done, "failed": failed},
            "metadata": extra.get("metadata"),
        }  # fmt: skip
