"""Loopback Batch APIs in the documented shapes of OpenAI and Anthropic, written from their references (not from the
simulated fleet's, so the two check each other).

- `OpenAIBatchAPI`: ``POST /v1/files`` (multipart, ``purpose=batch``; https://platform.openai.com/docs/api-reference/
  files/create), ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window: "24h"``; https://
  platform.openai.com/docs/api-reference/batch/create), ``GET /v1/batches/{id}`` (the Batch object: ``status``,
  ``request_counts``, ``output_file_id``, ``error_file_id``; .../batch/object), ``GET /v1/files/{id}/content``; each
  input line ``{"custom_id", "method": "POST", "url", "body"}`` and each output line ``{"id", "custom_id",
  "response": {"status_code", "request_id", "body"}, "error"}`` (https://platform.openai.com/docs/guides/batch).
- `AnthropicBatchAPI`: ``POST /v1/messages/batches`` with ``requests: [{"custom_id", "params"}]`` and the headers
  ``x-api-key`` and ``anthropic-version`` (https://docs.anthropic.com/en/api/creating-message-batches), ``GET
  /v1/messages/batches/{id}`` (``processing_status``, ``request_counts``, ``results_url``; .../retrieving-message-
  batches), and the results as JSONL: ``{"custom_id", "result": {"type": "succeeded", "message"} | {"type":
  "errored", "error": {"type": "error", "error": {"type", "message"}}} | {"type": "canceled"} | {"type":
  "expired"}}`` (.../retrieving-message-batch-results).

Both write their results in the reverse of the order they were asked in (the references: "in any order"), and refuse
what their references refuse with a 400 in their own error shape. Every other request (the candidates' chat
completions) goes to the `tests.providers.Fleet` they are given.
"""

from __future__ import annotations

import datetime
import email.parser
import email.policy
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from .providers import Fleet, OpenAIEndpoint

__all__ = ["AnthropicBatchAPI", "OpenAIBatchAPI"]

Answer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
"""A batched request's answer: ``body -> (HTTP status, JSON body)``."""

_LINE_KEYS = {"custom_id", "method", "url", "body"}
_CREATE_KEYS = {"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"}


class OpenAIBatchAPI:
    """OpenAI's Files and Batch APIs over the chat completions of ``fleet`` (see the module). A batch completes on
    its ``polls``-th retrieve; ``answer`` answers its requests."""

    def __init__(self, fleet: Fleet, answer: Answer, *, polls: int = 2):
        self.fleet, self.answer, self.polls = fleet, answer, polls
        self.uploads: list[list[dict[str, Any]]] = []
        """Each uploaded file's lines."""
        self.creates: list[dict[str, Any]] = []
        """Each ``POST /v1/batches`` body."""
        self.purposes: list[str] = []
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._retrieves: dict[str, int] = {}

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/v1/files" and request.method == "POST":
            return self._upload(request)
        if path == "/v1/batches" and request.method == "POST":
            return self._create(json.loads(request.content))
        if path == "/v1/batches" and request.method == "GET":  # .../batch/list: newest first, one page
            listed = [_public(b) for b in reversed(self._batches.values())]
            ends = {"first_id": listed[0]["id"], "last_id": listed[-1]["id"]} if listed else {}
            return httpx2.Response(200, json={"object": "list", "data": listed, "has_more": False, **ends})
        found = re.fullmatch(r"/v1/batches/([\w-]+)", path)
        if found and request.method == "GET":
            return self._retrieve(found.group(1))
        found = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
        if found and request.method == "GET":
            return httpx2.Response(
                200, content=self._files[found.group(1)], headers={"content-type": "application/octet-stream"}
            )
        return await self.fleet.handle(request)

    def _upload(self, request: httpx2.Request) -> httpx2.Response:
        kind = request.headers["content-type"]
        assert kind.startswith("multipart/form-data; boundary="), kind
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"content-type: {kind}\r\n\r\n".encode() + request.content
        )
        parts = {p.get_param("name", header="content-disposition"): p for p in form.iter_parts()}
        purpose = parts["purpose"].get_payload(decode=True).decode()
        data = parts["file"].get_payload(decode=True)
        self.purposes.append(purpose)
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        self.uploads.append(lines)
        file_id = f"file-{len(self._files) + 1:024d}"
        self._files[file_id] = data
        return httpx2.Response(
            200,
            json={
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": 1715021646,
                "filename": parts["file"].get_filename(),
                "purpose": purpose,
                "status": "processed",
            },
        )

    def _create(self, body: dict[str, Any]) -> httpx2.Response:
        self.creates.append(body)
        if set(body) - _CREATE_KEYS or body.get("completion_window") != "24h":
            return OpenAIEndpoint.error(400, f"Invalid batch: {sorted(body)}")
        if body.get("endpoint") != "/v1/chat/completions":
            return OpenAIEndpoint.error(400, f"Invalid endpoint {body.get('endpoint')!r}", param="endpoint")
        data = self._files.get(body["input_file_id"])
        if data is None:
            return OpenAIEndpoint.error(404, f"No such File object: {body['input_file_id']}")
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        batch_id = f"batch_{len(self._batches) + 1:024d}"
        self._batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": 1714508499,
            "in_progress_at": None,
            "expires_at": 1714536634,
            "completed_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
            "_lines": lines,
        }
        self._retrieves[batch_id] = 0
        return httpx2.Response(200, json=_public(self._batches[batch_id]))

    def _retrieve(self, batch_id: str) -> httpx2.Response:
        batch = self._batches[batch_id]
        self._retrieves[batch_id] += 1
        if batch["status"] == "validating":
            batch["status"], batch["in_progress_at"] = "in_progress", 1714508500
        if self._retrieves[batch_id] >= self.polls and batch["status"] == "in_progress":
            self._complete(batch)
        return httpx2.Response(200, json=_public(batch))

    def _complete(self, batch: dict[str, Any]) -> None:
        lines = batch["_lines"]
        assert all(set(line) == _LINE_KEYS for line in lines), "a line has other keys than the reference's"
        assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
        assert len({line["custom_id"] for line in lines}) == len(lines), "custom_id must be unique in a batch"
        assert len({line["body"]["model"] for line in lines}) == 1, "one model a batch"
        ok, failed = [], []
        for n, line in enumerate(reversed(lines)):  # "in any order": here, backwards
            status, body = self.answer(line["body"])
            out = {
                "id": f"batch_req_{n:024d}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{n:032d}", "body": body},
                "error": None,
            }
            (ok if status == 200 else failed).append(out)
        for name, lines_of in (("output_file_id", ok), ("error_file_id", failed)):
            if lines_of:
                file_id = f"file-{len(self._files) + 1:024d}"
                self._files[file_id] = "".join(json.dumps(x) + "\n" for x in lines_of).encode()
                batch[name] = file_id
        batch.update(status="completed", completed_at=1714508600)
        batch["request_counts"] = {"total": len(lines), "completed": len(ok), "failed": len(failed)}


def _public(batch: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


class AnthropicBatchAPI:
    """Anthropic's Message Batches API over the chat completions of ``fleet`` (see the module). ``answer`` answers
    each request's params with a Message (a text and its usage) or an error; a batch ends on its ``polls``-th
    retrieve."""

    CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

    def __init__(self, fleet: Fleet, answer: Callable[[dict[str, Any]], dict[str, Any]], *, key: str, polls: int = 2):
        self.fleet, self.answer, self.key, self.polls = fleet, answer, key, polls
        self.creates: list[dict[str, Any]] = []
        """Each ``POST /v1/messages/batches`` body."""
        self.headers: list[dict[str, str]] = []
        self._batches: dict[str, dict[str, Any]] = {}

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if not path.startswith("/v1/messages/batches"):
            return await self.fleet.handle(request)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if request.headers.get("x-api-key") != self.key:
            return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        if request.headers.get("anthropic-version") != "2023-06-01":
            return _anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
        if path == "/v1/messages/batches" and request.method == "POST":
            return self._create(json.loads(request.content), request)
        if path == "/v1/messages/batches" and request.method == "GET":  # .../listing-message-batches: newest first
            listed = [_public(b) for b in reversed(self._batches.values())]
            ends = {"first_id": listed[0]["id"], "last_id": listed[-1]["id"]} if listed else {}
            return httpx2.Response(200, json={"data": listed, "has_more": False, **ends})
        found = re.fullmatch(r"/v1/messages/batches/(\w+)(/results)?", path)
        assert found is not None and request.method == "GET", path
        batch = self._batches[found.group(1)]
        if found.group(2):
            return httpx2.Response(200, content=batch["_results"], headers={"content-type": "application/binary"})
        batch["_retrieves"] += 1
        if batch["_retrieves"] >= self.polls and batch["processing_status"] == "in_progress":
            self._end(batch, request)
        return httpx2.Response(200, json=_public(batch))

    def _create(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
        self.creates.append(body)
        for item in body["requests"]:
            if set(item) != {"custom_id", "params"} or not self.CUSTOM_ID.match(item["custom_id"]):
                return _anthropic_error(400, "invalid_request_error", f"requests: bad item {sorted(item)}")
            params = item["params"]
            if not isinstance(params.get("max_tokens"), int) or "model" not in params:
                return _anthropic_error(400, "invalid_request_error", "params: model and max_tokens are required")
            if any(m["role"] not in ("user", "assistant") for m in params["messages"]):
                return _anthropic_error(400, "invalid_request_error", "messages: roles are user and assistant")
        batch_id = f"msgbatch_{len(self._batches) + 1:022d}"
        n = len(body["requests"])
        self._batches[batch_id] = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": None,
            "created_at": _rfc3339(time.time()),
            "expires_at": _rfc3339(time.time() + 86400),
            "cancel_initiated_at": None,
            "results_url": None,
            "_requests": body["requests"],
            "_retrieves": 0,
        }
        return httpx2.Response(200, json=_public(self._batches[batch_id]))

    def _end(self, batch: dict[str, Any], request: httpx2.Request) -> None:
        lines, counts = [], {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for item in reversed(batch["_requests"]):
            result = self.answer(item["params"])
            lines.append({"custom_id": item["custom_id"], "result": result})
            counts[result["type"]] += 1
        batch["_results"] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        batch.update(processing_status="ended", ended_at="2024-09-24T19:37:24.100435Z", request_counts=counts)
        batch["results_url"] = f"http://{request.url.netloc.decode()}/v1/messages/batches/{batch['id']}/results"

    @staticmethod
    def message(
        text: str, *, model: str, input_tokens: int = 900, output_tokens: int = 40, cache_read: int = 0
    ) -> dict[str, Any]:
        """A succeeded result: https://docs.anthropic.com/en/api/messages (the Message object)."""
        return {
            "type": "succeeded",
            "message": {
                "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cache_read,
                },
            },
        }

    @staticmethod
    def errored(kind: str, message: str) -> dict[str, Any]:
        """An errored result: https://docs.anthropic.com/en/api/errors (the error object)."""
        return {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}}


def _rfc3339(epoch_s: float) -> str:
    """A time as Anthropic writes one: ``2024-09-24T18:37:24.100435Z``."""
    return datetime.datetime.fromtimestamp(epoch_s, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _anthropic_error(status: int, kind: str, message: str) -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": message}})
