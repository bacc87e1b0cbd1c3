"""OpenAI's Files and Batch APIs, simulated: ``/v1/files`` (upload, retrieve, content) and ``/v1/batches`` (create,
retrieve, cancel, list), in the documented shapes, for the real openai client's ``files`` and ``batches`` resources.

A `BatchService` keeps the files and batches; each request of a batch is answered by the function it is given (the
simulated fleet's own chat answer, or a test's script) with the labels its ``custom_id`` carries
(`gradebench._base.protocol.batch_labels`), so a batched request is answered as the same request sent alone would be.
A batch is ``validating`` until it is first looked at (a file that breaks the rules then ``failed``, with the line
and the reason in ``errors``), ``in_progress`` for `BatchOptions.polls` looks and at least `BatchOptions.delay_s`
simulated seconds (its ``request_counts`` growing), ``finalizing`` for one look — its requests are answered then —
and ``completed``: the answers in the output file, the failed requests in the error file, both in an order of their
own. With `BatchOptions.expire_after` the completion window closes first: the batch ends ``expired``, the requests
it did not reach in the error file as ``batch_expired``; a cancelled batch writes the ones it did not reach as
``batch_cancelled``.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2

from .._base.protocol import batch_labels
from ._perturb import rng_for, stable_hex

__all__ = ["BatchOptions", "BatchService", "SimBatch"]

Answerer = Callable[[dict[str, Any], dict[str, str]], Awaitable[tuple[int, dict[str, Any]]]]
"""How a batch's request is answered: ``(body, label headers) -> (HTTP status, JSON body)``."""

ENDPOINT = "/v1/chat/completions"
WINDOW_S = 24 * 3600


@dataclass(frozen=True, kw_only=True)
class BatchOptions:
    """How the simulated Batch API behaves."""

    polls: int = 3
    """Looks a batch stays ``in_progress`` for (after the one that ends ``validating``)."""
    delay_s: float = 2.0
    """Simulated seconds at least from creation to ``finalizing`` (wall seconds: times the fleet's latency scale)."""
    expire_after: int | None = None
    """Requests a batch answers before its completion window closes (the rest expire); None: it finishes."""
    error_rate: float = 0.0
    """The share of requests that fail inside a batch with a 500 (drawn per ``custom_id``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.polls, int) or self.polls < 0:
            raise ValueError(f"polls must be an integer >= 0, got {self.polls!r}")
        if not self.delay_s >= 0:
            raise ValueError(f"delay_s must be >= 0, got {self.delay_s!r}")
        if self.expire_after is not None and self.expire_after < 0:
            raise ValueError(f"expire_after must be >= 0 requests, got {self.expire_after!r}")
        if not 0 <= self.error_rate <= 1:
            raise ValueError(f"error_rate must be in 0..1, got {self.error_rate!r}")


@dataclass(kw_only=True)
class SimBatch:
    """One batch as the service keeps it."""

    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    metadata: dict[str, str] | None
    options: BatchOptions
    started: float = field(default_factory=time.monotonic)
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "validating"
    looks: int = 0
    stamps: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    answered: list[str] = field(default_factory=list)
    """The ``custom_id`` of each request answered, in the order they were (the output file's)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": ENDPOINT,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + WINDOW_S,
            **{f"{stage}_at": self.stamps.get(stage) for stage in _STAMPS},
            "request_counts": dict(self.counts),
            "metadata": self.metadata,
        }


_STAMPS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")


def _error(status: int, message: str, *, code: str | None = None) -> httpx2.Response:
    return httpx2.Response(
        status, json={"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    )


class BatchService:
    """The simulated Files and Batch APIs (see the module)."""

    def __init__(self, answer: Answerer, options: BatchOptions | None = None, *, scale: float = 0.0, seed: int = 0):
        self.answer = answer
        self.options = options or BatchOptions()
        """How new batches behave (a batch keeps the options it was created under)."""
        self.scale = scale
        self.seed = seed
        self.files: dict[str, dict[str, Any]] = {}
        self._content: dict[str, bytes] = {}
        self.batches: dict[str, SimBatch] = {}
        """Every batch created, by id, oldest first."""

    @staticmethod
    def serves(path: str) -> bool:
        """Whether a request path is one of the Files or Batch API's."""
        return "/files" in path or "/batches" in path

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path.rstrip("/")
        parts = path.split("/")
        try:
            where = parts.index("files") if "files" in parts else parts.index("batches")
        except ValueError:
            return _error(404, f"no such endpoint: {request.method} {path}")
        kind, rest = parts[where], parts[where + 1 :]
        if kind == "files":
            return self._files(request, rest)
        return await self._batches(request, rest)

    # ------------------------------------------------------------------------------------------------------ files

    def _files(self, request: httpx2.Request, rest: list[str]) -> httpx2.Response:
        if not rest and request.method == "POST":
            return self._upload(request)
        if len(rest) in (1, 2) and request.method == "GET":
            found = self.files.get(rest[0])
            if found is None:
                return _error(404, f"No such File object: {rest[0]}")
            if len(rest) == 1:
                return httpx2.Response(200, json=found)
            if rest[1] == "content":
                return httpx2.Response(
                    200, content=self._content[rest[0]], headers={"content-type": "application/jsonl"}
                )
        return _error(404, f"no such endpoint: {request.method} {request.url.path}")

    def _upload(self, request: httpx2.Request) -> httpx2.Response:
        fields = _form(request)
        if fields is None:
            return _error(400, "a file upload is multipart/form-data with fields 'file' and 'purpose'")
        purpose, upload = fields.get("purpose"), fields.get("file")
        if not isinstance(purpose, str) or upload is None or isinstance(upload, str):
            return _error(400, "a file upload needs a 'purpose' and a 'file'", code="missing_required_parameter")
        name, data = upload
        return httpx2.Response(200, json=self._store(name, purpose, data))

    def _store(self, name: str, purpose: str, data: bytes) -> dict[str, Any]:
        file_id = f"file-{stable_hex(self.seed, 'file', len(self.files), hashlib.sha256(data).hexdigest(), n=24)}"
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }
        self._content[file_id] = data
        return self.files[file_id]

    # ---------------------------------------------------------------------------------------------------- batches

    async def _batches(self, request: httpx2.Request, rest: list[str]) -> httpx2.Response:
        if not rest and request.method == "POST":
            return self._create(request)
        if not rest and request.method == "GET":
            return self._list(request)
        batch = self.batches.get(rest[0]) if rest else None
        if batch is None:
            return _error(404, f"No batch found with id '{rest[0] if rest else ''}'.")
        if len(rest) == 1 and request.method == "GET":
            await self._look(batch)
            return httpx2.Response(200, json=batch.as_json())
        if rest[1:] == ["cancel"] and request.method == "POST":
            if batch.status in ("validating", "in_progress", "finalizing"):
                batch.status = "cancelling"
                batch.stamps["cancelling"] = int(time.time())
            return httpx2.Response(200, json=batch.as_json())
        return _error(404, f"no such endpoint: {request.method} {request.url.path}")

    def _create(self, request: httpx2.Request) -> httpx2.Response:
        try:
            body = json.loads(request.content)
        except ValueError:
            return _error(400, "request body is not valid JSON")
        file_id = body.get("input_file_id")
        if body.get("endpoint") != ENDPOINT:
            return _error(400, f"the simulated Batch API serves endpoint {ENDPOINT}, not {body.get('endpoint')!r}")
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be '24h'")
        found = self.files.get(str(file_id))
        if found is None:
            return _error(404, f"No such File object: {file_id}")
        if found["purpose"] != "batch":
            return _error(400, f"file {file_id} has purpose {found['purpose']!r}, not 'batch'")
        batch_id = f"batch_{stable_hex(self.seed, 'batch', len(self.batches), file_id, n=24)}"
        lines, errors = _lines(self._content[str(file_id)])
        batch = SimBatch(
            id=batch_id, input_file_id=str(file_id), lines=lines, metadata=body.get("metadata"), options=self.options
        )
        batch.errors = errors
        batch.counts["total"] = len(lines)
        self.batches[batch_id] = batch
        return httpx2.Response(200, json=batch.as_json())

    def _list(self, request: httpx2.Request) -> httpx2.Response:
        limit = int(request.url.params.get("limit", "20"))
        after = request.url.params.get("after")
        newest = list(reversed(self.batches.values()))
        if after in self.batches:
            newest = newest[[b.id for b in newest].index(after) + 1 :]
        page = newest[:limit]
        return httpx2.Response(
            200,
            json={
                "object": "list",
                "data": [b.as_json() for b in page],
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(newest) > limit,
            },
        )

    async def _look(self, batch: SimBatch) -> None:
        """One look at a batch moves it along (see the module)."""
        batch.looks += 1
        now = int(time.time())
        if batch.status == "validating":
            problem = batch.errors or _one_model(batch.lines)
            batch.errors = problem
            batch.status = "failed" if problem else "in_progress"
            batch.stamps["failed" if problem else "in_progress"] = now
        elif batch.status == "in_progress":
            done = self._progress(batch)
            batch.counts["completed"] = math.floor(done * batch.counts["total"])
            if done >= 1 and batch.options.expire_after is not None:
                await self._finish(batch, "expired", batch.options.expire_after)
            elif done >= 1:
                batch.status = "finalizing"
                batch.stamps["finalizing"] = now
        elif batch.status == "finalizing":
            await self._finish(batch, "completed", len(batch.lines))
        elif batch.status == "cancelling":
            await self._finish(batch, "cancelled", math.floor(self._progress(batch) * len(batch.lines)))

    def _progress(self, batch: SimBatch) -> float:
        """How far a batch in progress is: the smaller of its looks and its simulated time, as a share."""
        looks = 1.0 if batch.options.polls == 0 else (batch.looks - 1) / batch.options.polls
        wall = batch.options.delay_s * self.scale
        elapsed = 1.0 if wall <= 0 else (time.monotonic() - batch.started) / wall
        return max(0.0, min(1.0, looks, elapsed))

    async def _finish(self, batch: SimBatch, status: str, reached: int) -> None:
        """Answer the first ``reached`` requests (in the batch's own order), write both files, end as ``status``."""
        order = sorted(batch.lines, key=lambda line: stable_hex(self.seed, batch.id, line["custom_id"], n=16))
        output: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for index, line in enumerate(order):
            custom_id = line["custom_id"]
            request_id = f"req_{stable_hex(batch.id, custom_id, n=24)}"
            out = {"id": f"batch_req_{stable_hex(batch.id, custom_id, 'line', n=24)}", "custom_id": custom_id}
            if index >= reached:
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                message = f"This request could not be executed before the batch was {status}."
                failed.append({**out, "response": None, "error": {"code": code, "message": message}})
                continue
            status_code, payload = await self._answer(batch, line)
            response = {"status_code": status_code, "request_id": request_id, "body": payload}
            (output if status_code == 200 else failed).append({**out, "response": response, "error": None})
            if status_code == 200:
                batch.answered.append(custom_id)
        batch.counts.update(completed=len(output), failed=len(failed))
        if output:
            batch.output_file_id = self._store(f"{batch.id}_output.jsonl", "batch_output", _jsonl(output))["id"]
        if failed:
            batch.error_file_id = self._store(f"{batch.id}_error.jsonl", "batch_output", _jsonl(failed))["id"]
        batch.status = status
        batch.stamps[status] = int(time.time())

    async def _answer(self, batch: SimBatch, line: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        custom_id = line["custom_id"]
        if (
            batch.options.error_rate
            and rng_for(self.seed, custom_id, "batch-error").random() < batch.options.error_rate
        ):
            return 500, {"error": {"message": "simulated server error inside the batch", "type": "server_error"}}
        labels = batch_labels(custom_id) or {}
        return await self.answer(line["body"], labels)

    def with_options(self, **changes: Any) -> BatchOptions:
        """Change how new batches behave (e.g. ``expire_after=2``); the options now in force."""
        self.options = replace(self.options, **changes)
        return self.options


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def _form(request: httpx2.Request) -> dict[str, str | tuple[str, bytes]] | None:
    """The fields of a multipart/form-data body: text, or ``(filename, bytes)`` for a file."""
    kind = request.headers.get("content-type", "")
    if not kind.startswith("multipart/form-data"):
        return None
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"content-type: {kind}\r\n\r\n".encode() + request.content
    )
    fields: dict[str, str | tuple[str, bytes]] = {}
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        fields[str(name)] = (filename, data) if filename else data.decode()
    return fields


def _lines(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A batch input file's requests, and what breaks the rules (each with its line number)."""
    lines: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, text in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            errors.append(
                {"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.", "line": number}
            )
            continue
        problem = _line_problem(line, seen)
        if problem:
            errors.append({"code": problem[0], "message": problem[1], "line": number, "param": None})
            continue
        seen.add(line["custom_id"])
        lines.append(line)
    if not lines and not errors:
        errors.append({"code": "empty_file", "message": "The batch input file is empty.", "line": None})
    return lines, errors


def _line_problem(line: Any, seen: set[str]) -> tuple[str, str] | None:
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return "missing_required_parameter", "Each line needs a custom_id."
    if line["custom_id"] in seen:
        return "duplicate_custom_id", f"The custom_id {line['custom_id']!r} is not unique in the file."
    if line.get("method") != "POST" or line.get("url") != ENDPOINT:
        return "invalid_url", f"Each line must POST to {ENDPOINT}, the batch's endpoint."
    if not isinstance(line.get("body"), dict):
        return "missing_required_parameter", "Each line needs a body."
    return None


def _one_model(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI takes one model a batch: every line after the first that names another is an error."""
    first = lines[0]["body"].get("model") if lines else None
    return [
        {"code": "mismatched_model", "message": f"Every request of a batch must use model {first!r}.", "line": n}
        for n, line in enumerate(lines, start=1)
        if line["body"].get("model") != first
    ]
