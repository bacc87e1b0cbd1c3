"""Anthropic's Message Batches API (``POST /v1/messages/batches``, poll ``GET /v1/messages/batches/{id}`` until its
``processing_status`` is ``ended``, read the JSONL at its ``results_url``), over ``httpx2``: the openai SDK does not
speak it.

A judge entry with ``batch = "anthropic"`` is called one request at a time at Anthropic's OpenAI-compatible endpoint
(``base_url`` is ``https://api.anthropic.com/v1``), so its requests are chat completions and so are its cached
answers. In a batch each request goes as Messages API ``params`` (`messages_params`: the system messages as
``system``, ``max_tokens`` given, a JSON-schema ``response_format`` as ``output_config.format``) and each answer
comes back as the chat completion the same request sent alone would have stored (`chat_completion`), so the two are
interchangeable in the cache. A parameter that has no place in the Messages API is refused, naming it (never
dropped unsaid).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import httpx2

from ..._catalog.catalog import Entry
from ..waits import backoff_s, retry_after_s
from .api import BatchState, LineResult, merge_results
from .create import BatchCreateError, create_once

__all__ = ["ANTHROPIC_VERSION", "AnthropicBatches", "chat_completion", "messages_params"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header every request carries."""
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` of a request that sets none (the Messages API requires one; a verdict needs a few hundred)."""

_SAME = ("temperature", "top_p", "top_k", "metadata")
"""Parameters the Messages API takes under the same name and meaning."""
_LEFT_OUT = ("prompt_cache_key", "prompt_cache_retention", "n", "stream")
"""Parameters with no meaning for one message of a batch (routing hints, a single choice, no stream): not sent."""
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "stop",
}
"""Anthropic's ``stop_reason`` as the chat completion's ``finish_reason``."""
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""Anthropic's error types and the HTTP status each is sent with (its errors page)."""
_COUNTED = ("processing", "succeeded", "errored", "canceled", "expired")
"""A batch's ``request_counts``: together, its requests."""
CLOCK_SKEW_S = 60.0
"""How far the provider's clock (a batch's ``created_at``) may be from this machine's when a batch is looked up by
when it was made."""
LOOKED_UP = 200
"""The newest batches a lookup reads."""


def messages_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """A chat completion request as Messages API params (see the module); a `ValueError` names a parameter that has
    no place there."""
    system, messages = [], []
    for message in body.get("messages") or []:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            messages.append({"role": role, "content": text})
        else:
            raise ValueError(f"a {role!r} message has no place in an Anthropic batch (tool turns are not batched)")
    params: dict[str, Any] = {"model": body["model"], "messages": messages}
    if system:
        params["system"] = "\n\n".join(system)
    params["max_tokens"] = body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
    if body.get("stop"):
        stop = body["stop"]
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    for name in _SAME:
        if name in body:
            params[name] = body[name]
    format_ = body.get("response_format")
    if isinstance(format_, Mapping) and format_.get("type") == "json_schema":
        params["output_config"] = {"format": {"type": "json_schema", "schema": format_["json_schema"]["schema"]}}
    elif format_ is not None:
        raise ValueError(f"response_format {format_.get('type')!r} has no place in an Anthropic batch")
    known = {"model", "messages", "max_tokens", "max_completion_tokens", "stop", "response_format", *_SAME, *_LEFT_OUT}
    unknown = sorted(set(body) - known)
    if unknown:
        raise ValueError(f"parameter {unknown[0]!r} has no place in Anthropic's Messages API (drop_params it)")
    return params


def chat_completion(message: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic message as the chat completion it stands for: the text, the finish reason and the usage (the
    prompt's tokens with those read from and written to its cache, the cache reads as ``cached_tokens``)."""
    text = "".join(b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text")
    usage = message.get("usage") or {}
    read = int(usage.get("cache_read_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read + int(usage.get("cache_creation_input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return {
        "id": message.get("id"),
        "object": "chat.completion",
        "created": 0,
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": _STOP.get(str(message.get("stop_reason")), message.get("stop_reason")),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": read},
        },
    }


class AnthropicBatches:
    """Anthropic's Message Batches API for one entry (see the module), over ``http``."""

    max_requests = 100_000
    max_bytes = 250 * 1024 * 1024  # Anthropic takes batches up to 256 MB

    def __init__(self, entry: Entry, http: httpx2.AsyncClient):
        self.entry, self.http = entry, http
        self.base = entry.base_url.rstrip("/")

    def line(self, custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": messages_params(body)}

    async def submit(self, lines: Sequence[Mapping[str, Any]], tag: str) -> str:
        async def create() -> str:  # sent once: a create retried blindly may bill a second batch
            made = await self._send("POST", f"{self.base}/messages/batches", {"requests": list(lines)}, retried=False)
            return str(made.json()["id"])

        since = time.time()
        return await create_once(
            create,
            lambda: self.find(tag, size=len(lines), since=since, until=time.time()),
            attempts=self.entry.max_retries + 1,
            wait_cap_s=self.entry.rate_limit_wait_s,
        )

    async def find(self, tag: str, *, size: int, since: float, until: float) -> str | None:
        """Anthropic's batches carry no metadata and list no requests, so the batch is known by what gradebench chose
        of it that the listing shows: ``size`` requests, created between ``since`` and ``until`` (give or take
        `CLOCK_SKEW_S`). None when no batch fits; two that fit cannot be told apart, and neither is taken (a
        `BatchCreateError`: it may have been made)."""
        fits: list[str] = []
        after, seen = None, 0
        while seen < LOOKED_UP:  # newest first: a batch lost while being created is a recent one
            query = f"?limit=100&after_id={after}" if after else "?limit=100"
            page = (await self._send("GET", f"{self.base}/messages/batches{query}")).json()
            for batch in page.get("data") or []:
                seen += 1
                created = _epoch_s(batch.get("created_at"))
                if created is None or created > until + CLOCK_SKEW_S:
                    continue
                if created < since - CLOCK_SKEW_S:
                    return _only(fits, size, tag)
                counts = batch.get("request_counts") or {}
                if sum(int(counts.get(k) or 0) for k in _COUNTED) == size:
                    fits.append(str(batch["id"]))
            after = page.get("last_id")
            if not page.get("has_more") or not after:
                break
        return _only(fits, size, tag)

    async def poll(self, batch_id: str) -> BatchState:
        batch = (await self._send("GET", f"{self.base}/messages/batches/{batch_id}")).json()
        counts = batch.get("request_counts") or {}
        answered = int(counts.get("succeeded", 0))
        failed = sum(int(counts.get(k, 0)) for k in ("errored", "canceled", "expired"))
        return BatchState(
            id=str(batch["id"]),
            status=str(batch.get("processing_status")),
            done=batch.get("processing_status") == "ended",
            total=answered + failed + int(counts.get("processing", 0)),
            completed=answered,
            failed=failed,
            files=(batch.get("results_url"),),
        )

    async def results(self, state: BatchState, custom_ids: Iterable[str]) -> list[LineResult]:
        url = state.files[0] if state.files else None
        files = [(f"batch {state.id}, {url}", (await self._send("GET", url)).text)] if url else []
        return merge_results(files, _anthropic_line, custom_ids, "not in the batch's results")

    async def _send(self, method: str, url: str, body: Any = None, *, retried: bool = True) -> httpx2.Response:
        """One request with Anthropic's headers; 429, 5xx and 529 retried (``max_retries``, none when not
        ``retried``), each after the wait it asks for (``retry-after-ms`` or ``Retry-After``, the longer, read as
        admission reads them) or a backoff, counted from when it arrived; no retry that would end past
        ``rate_limit_wait_s`` from the first refusal. Any other error raised with Anthropic's message."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        # the key goes only to the entry's own origin: a results_url elsewhere is the provider's to sign, not our key's
        if _origin(url) == _origin(self.base):
            headers["x-api-key"] = self.entry.api_key()
        retries = self.entry.max_retries if retried else 0
        first_refused: float | None = None
        for attempt in range(retries + 1):
            response = await self.http.request(method, url, json=body, headers=headers, timeout=self.entry.timeout_s)
            if response.status_code < 400:
                return response
            if (response.status_code != 429 and response.status_code < 500) or attempt == retries:
                break
            arrived = time.monotonic()
            first_refused = arrived if first_refused is None else first_refused
            wait = retry_after_s(response.headers) or backoff_s(attempt + 1)  # a Retry-After of 0 asks nothing
            if attempt >= 3:  # told again and again: at least a growing backoff, as admission does
                wait = max(wait, backoff_s(attempt - 2))
            if arrived + wait > first_refused + self.entry.rate_limit_wait_s:
                break
            await asyncio.sleep(wait)
        raise httpx2.HTTPStatusError(
            f"{self.entry.name}: {method} {url}: HTTP {response.status_code}: {_message(response)}",
            request=response.request,
            response=response,
        )


def _only(fits: list[str], size: int, tag: str) -> str | None:
    """The one batch that fits a lookup, None for none; more than one cannot be told apart."""
    if len(fits) > 1:
        raise BatchCreateError(
            f"batch {tag}: {len(fits)} batches of {size} requests were made while it was being created "
            f"({', '.join(fits)}): which is gradebench's cannot be told, so none is used and none is made again",
            made_maybe=True,
        )
    return fits[0] if fits else None


def _epoch_s(value: Any) -> float | None:
    """An RFC 3339 time (``2024-09-24T18:37:24.100435Z``) in seconds since the epoch, or None."""
    try:
        when = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url`` (the port None when it is the scheme's default)."""
    parsed = httpx2.URL(url)
    return parsed.scheme.lower(), parsed.host.lower(), parsed.port


def _message(response: httpx2.Response) -> str:
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        return response.text[:200]
    return str(error.get("message") or error)


def _anthropic_line(line: Mapping[str, Any]) -> LineResult:
    """One line of a batch's results: ``{"custom_id", "result": {"type": succeeded|errored|canceled|expired}}``."""
    custom_id = str(line.get("custom_id"))
    result = line.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        body = json.dumps(chat_completion(result.get("message") or {}), ensure_ascii=False)
        return LineResult(custom_id=custom_id, body=body, status=200)
    if kind == "errored":
        error = (result.get("error") or {}).get("error") or result.get("error") or {}
        status = _ERROR_STATUS.get(str(error.get("type")), 500)
        return LineResult(custom_id=custom_id, status=status, error=f"{error.get('type')}: {error.get('message')}")
    return LineResult(custom_id=custom_id, error=f"the request was {kind}")  # canceled, expired: never run
