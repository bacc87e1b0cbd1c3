"""The providers' Batch APIs, each in its documented shape, behind one small interface (`BatchAPI`).

- `OpenAIBatches` — OpenAI's (and every server that copies it: OpenRouter's is taken to): the requests as a JSONL file
  uploaded with ``client.files.create(purpose="batch")``, one line ``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body"}`` each; ``client.batches.create(completion_window="24h")``; polled with
  ``client.batches.retrieve``; the answers read from ``client.files.content`` of its output and error files, lines
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` in any order. All through the
  openai SDK's own ``files`` and ``batches`` resources.
- `gradebench._calls.batch.anthropic.AnthropicBatches` — Anthropic's ``/v1/messages/batches`` (the openai SDK does not
speak
  it).

A `LineResult` says what became of one request: answered (a chat completion body), refused (an HTTP status and the
provider's message: the request itself is at fault, as it would be sent alone), or never run (expired, cancelled, a
server error: `LineResult.resend`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import openai

from ..._catalog.catalog import Entry
from .create import create_once

__all__ = ["BatchAPI", "BatchState", "LineResult", "OpenAIBatches", "RESENT_STATUSES", "batch_api_of", "merge_results"]

RESENT_STATUSES = frozenset({408, 409, 429})
"""Statuses of a batched request that never really ran (with every 5xx): it is sent again, as a request sent alone
would be retried."""

OPENAI_ENDPOINT: Final = "/v1/chat/completions"
"""The ``url`` of every line and the ``endpoint`` of every batch gradebench submits."""


def batch_api_of(entry: Entry, asked: bool) -> str | None:
    """The batch API ``entry``'s verdicts go through: its own ``batch``, else OpenAI's shape when the race asks for
    ``judge_batch`` (``asked``), else None (one request at a time)."""
    return entry.batch or ("openai" if asked else None)


@dataclass(frozen=True, kw_only=True)
class BatchState:
    """A batch as its provider describes it now."""

    id: str
    """The provider's id of the batch."""
    status: str
    """The provider's word for where it is (``validating``, ``in_progress``, ``finalizing``, ``completed``, ...)."""
    done: bool
    """True once nothing more will change: its answers can be read."""
    total: int
    """Requests in the batch."""
    completed: int
    """Requests answered so far."""
    failed: int
    """Requests that failed so far."""
    error: str | None = None
    """Why the batch as a whole failed (a file that did not validate, ...), or None."""
    files: tuple[str | None, ...] = ()
    """Where its answers are (OpenAI: the output and error files' ids; Anthropic: the results URL)."""

    def line(self) -> str:
        """The batch's status and counts in a few words, for the log and the progress bar."""
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.status}: {self.completed}/{self.total} answered{failed}"


@dataclass(frozen=True, kw_only=True)
class LineResult:
    """What became of one request of a batch."""

    custom_id: str
    """The request's id within the batch."""
    body: str | None = None
    """The answer, a chat completion as text, when it was answered (HTTP 200)."""
    status: int | None = None
    """The HTTP status the request was answered with; None when it never ran."""
    error: str | None = None
    """The provider's word on why it was not answered."""
    unreadable: bool = False
    """True when what the results say of it cannot be trusted (a broken line, two answers): the verdict fails with
    ``error``, and it is not sent again (it may have been paid)."""

    @property
    def resend(self) -> bool:
        """True when the request never really ran (expired, cancelled, a server error or a rate limit inside the
        batch): it is sent again, not failed."""
        if self.body is not None or self.unreadable:
            return False
        return self.status is None or self.status >= 500 or self.status in RESENT_STATUSES


class BatchAPI(Protocol):
    """One provider's Batch API, for one entry."""

    max_requests: int
    """The most requests one batch takes."""
    max_bytes: int
    """The largest batch, in bytes of its requests."""

    def line(self, custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One request as this API takes it in a batch (raises `ValueError` for one it cannot carry)."""
        ...

    async def submit(self, lines: Sequence[Mapping[str, Any]], tag: str) -> str:
        """Submit a batch of these lines, tagged ``tag`` where the API keeps metadata; its id. Made at most once
        (`gradebench._calls.batch.create.create_once`): a failed create is looked up (`find`) before it is sent
        again."""
        ...

    async def find(self, tag: str, *, size: int, since: float, until: float) -> str | None:
        """The id of a batch of ``size`` requests submitted with ``tag`` between the times ``since`` and ``until``
        (seconds since the epoch) — a create that failed after the provider made it, or a process that died between
        submitting and noting the id — or None when there is none."""
        ...

    async def poll(self, batch_id: str) -> BatchState:
        """The batch as it is now."""
        ...

    async def results(self, state: BatchState, custom_ids: Iterable[str]) -> list[LineResult]:
        """What became of each of ``custom_ids`` in a batch that is done (a request the batch does not mention was
        never run)."""
        ...


_NAMED_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]{1,200})"')
"""A ``custom_id`` in a line that cannot be read otherwise, so the broken line fails its own request."""
QUOTED_CHARS = 200
"""How much of a broken results line its verdict's error quotes."""


def merge_results(
    files: Iterable[tuple[str, str]],
    read: Callable[[Mapping[str, Any]], LineResult],
    custom_ids: Iterable[str],
    missing: str,
) -> list[LineResult]:
    """What became of each of ``custom_ids``, from the JSON Lines ``files`` (where, text) read line by line with
    ``read``. A line that cannot be read fails only the request it names, quoted (one it does not name fails every
    request the results leave out, rather than send them again); two answers for one id fail it; an answer beats an
    error line for the same id (it ran: never sent again). A request nothing mentions gets ``missing`` (sent again)."""
    found: dict[str, LineResult] = {}
    anonymous: list[str] = []  # broken lines that name no request
    for where, text in files:
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            result = _read_line(line, read)
            if isinstance(result, str):
                more = " ..." if len(line) > QUOTED_CHARS else ""
                quoted = f"{where}: line {number} {result}: {line[:QUOTED_CHARS]!r}{more}"
                named = _NAMED_ID.search(line)
                if named is None:
                    anonymous.append(quoted)
                    continue
                result = LineResult(custom_id=named.group(1), error=quoted, unreadable=True)
            found[result.custom_id] = _merged(found.get(result.custom_id), result)
    unnamed = f"the results have lines naming no request: {'; '.join(anonymous[:3])}" if anonymous else None
    return [
        found.get(c)
        or (
            LineResult(custom_id=c, error=unnamed, unreadable=True)
            if unnamed
            else LineResult(custom_id=c, error=missing)
        )
        for c in custom_ids
    ]


def _read_line(line: str, read: Callable[[Mapping[str, Any]], LineResult]) -> LineResult | str:
    """One results line as ``read`` reads it, or why it cannot be read."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"is not JSON ({exc.msg})"
    if not isinstance(value, dict) or not isinstance(value.get("custom_id"), str):
        return "is not an object with a custom_id"
    try:
        return read(value)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a field of another type than documented
        return f"is not in the documented shape ({type(exc).__name__}: {exc})"


def _merged(before: LineResult | None, now: LineResult) -> LineResult:
    """What two lines for one request say together."""
    if before is None or (before.resend and not now.resend):
        return now
    if before.unreadable or now.unreadable:
        return before if before.unreadable else now
    if before.body is not None and now.body is not None:
        return LineResult(
            custom_id=now.custom_id,
            error="the results answer it twice: neither answer is trusted as its verdict",
            unreadable=True,
        )
    return now if now.body is not None else before


_DONE = frozenset({"completed", "expired", "cancelled", "failed"})


class OpenAIBatches:
    """OpenAI's Batch API through the openai SDK's ``files`` and ``batches`` resources (see the module)."""

    max_requests = 50_000
    max_bytes = 190 * 1024 * 1024  # OpenAI takes input files up to 200 MB: a margin for the JSONL framing

    def __init__(self, client: openai.AsyncOpenAI, *, rate_limit_wait_s: float = 300.0):
        self.client = client
        self.rate_limit_wait_s = rate_limit_wait_s
        """The longest wait a 429 on a batch create is waited out for (the entry's ``rate_limit_wait_s``)."""

    def line(self, custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": OPENAI_ENDPOINT, "body": dict(body)}

    async def submit(self, lines: Sequence[Mapping[str, Any]], tag: str) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        # The upload keeps the SDK's retries: a file stored by an upload that then failed costs nothing and is unused.
        uploaded = await self.client.files.create(file=(f"{tag}.jsonl", data, "application/jsonl"), purpose="batch")
        once = self.client.with_options(max_retries=0)  # a create retried blindly may bill a second batch

        async def create() -> str:
            batch = await once.batches.create(
                input_file_id=uploaded.id,
                endpoint=OPENAI_ENDPOINT,
                completion_window="24h",
                metadata={"gradebench": tag},
            )
            return batch.id

        since = time.time()
        return await create_once(
            create,
            lambda: self.find(tag, size=len(lines), since=since, until=time.time()),
            attempts=self.client.max_retries + 1,
            wait_cap_s=self.rate_limit_wait_s,
        )

    async def find(self, tag: str, *, size: int, since: float, until: float) -> str | None:
        seen = 0
        async for batch in self.client.batches.list(limit=100):
            if (batch.metadata or {}).get("gradebench") == tag:
                return batch.id
            seen += 1
            if seen >= 200:  # the newest 200: a batch submitted and lost before its id was noted is a recent one
                break
        return None

    async def poll(self, batch_id: str) -> BatchState:
        batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        errors = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors else []
        return BatchState(
            id=batch.id,
            status=batch.status,
            done=batch.status in _DONE,
            total=counts.total if counts else 0,
            completed=counts.completed if counts else 0,
            failed=counts.failed if counts else 0,
            error="; ".join(e for e in errors if e)
            or (f"the batch {batch.status}" if batch.status == "failed" else None),
            files=(batch.output_file_id, batch.error_file_id),
        )

    async def results(self, state: BatchState, custom_ids: Iterable[str]) -> list[LineResult]:
        files = []
        for file_id in state.files:
            if file_id:
                files.append((f"batch {state.id}, file {file_id}", (await self.client.files.content(file_id)).text))
        return merge_results(files, _openai_line, custom_ids, f"the batch {state.status} before it ran")


def _openai_line(line: Mapping[str, Any]) -> LineResult:
    """One line of an OpenAI batch's output or error file."""
    custom_id = str(line.get("custom_id"))
    response = line.get("response") if isinstance(line.get("response"), dict) else None
    error = line.get("error") if isinstance(line.get("error"), dict) else None
    if response is not None:
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return LineResult(custom_id=custom_id, body=json.dumps(body, ensure_ascii=False), status=200)
        detail = body.get("error") if isinstance(body, dict) else None
        message = detail.get("message") if isinstance(detail, dict) else None
        return LineResult(custom_id=custom_id, status=status if isinstance(status, int) else None, error=str(message))
    what = f"{error.get('code')}: {error.get('message')}" if error else "no response and no error"
    return LineResult(custom_id=custom_id, error=what)  # batch_expired, batch_cancelled: never run
