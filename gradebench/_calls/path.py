"""The path one model call takes, in layers: the cache in front of admission control in front of the transport.

Each layer is a small callable ``await layer(request) -> CallAnswer`` with one job, testable alone:

- `CacheLayer` — look the call up by its key; on a miss ask the layer behind it and store what came back (an error
  is never stored);
- `AdmissionLayer` — pacing, concurrency and 429 waits (`gradebench._calls.admission`), and the one-line `CallError` a
call
  that failed for good carries;
- `Transport` — send the request through the openai SDK (its own retries of 5xx and connection errors) within the
  entry's ``timeout_s`` for the whole call, scrub keys from what came back and check it is a completion;
- `Refuse` — the end of the path of a session that answers from the cache alone: a miss raises `NotCached`, so nothing
  is sent and nothing spent (how an estimate learns which runs are already paid for).

The verdicts of a judge that batches take `gradebench._calls.batch.layer.BatchLayer` where admission and the transport
stand:
behind the same cache layer, so a batch answer and a direct one are stored and found under the same key.

A `Session` builds one path per entry; a `Seat` sends each call of its conversation down it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
import openai

from .._base.errors import CallError
from .._base.redact import has_surrogates, scrub_bytes, utf8_safe
from .._catalog.catalog import Entry
from .._records.keys import CallKey
from .admission import Admission, call_error
from .cache import Cached, CallCache
from .usage import LITELLM_COST_HEADER, number

__all__ = ["AdmissionLayer", "CacheLayer", "CallAnswer", "CallLayer", "CallRequest", "NotCached", "Refuse", "Transport"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CallRequest:
    """One model call on its way: the entry, the body as it will be sent, and who is asking."""

    entry: Entry
    """The entry called."""
    body: dict[str, Any]
    """The JSON body (model, messages, parameters, routing)."""
    key: CallKey
    """The call's identity: its cache key and its label headers."""
    wire: bytes | None = None
    """The body's JSON as sent, when the caller encoded it already (the SDK then sends these bytes); None: the SDK
    encodes ``body``."""
    sent_at: list[float] = field(default_factory=list)
    """When each attempt was sent (``time.perf_counter``): queueing and 429 waits are not latency."""

    def latency_s(self) -> float:
        """Seconds since the last attempt was sent (0 when none was)."""
        return time.perf_counter() - self.sent_at[-1] if self.sent_at else 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class CallAnswer:
    """What came back for a call: the response body as received (keys scrubbed) and what was measured of it."""

    response: str
    """The response body, as text."""
    latency_s: float
    """How long the request that answered took (kept from the original request on a cache hit)."""
    header_cost: float | None = None
    """A cost the endpoint reported in a header (LiteLLM's), or None."""
    cache_hit: bool = False
    """True when the answer came from the on-disk cache."""
    parsed: dict[str, Any] | None = None
    """The body parsed, when the layer that read it has it (else `body` parses it)."""
    batch: str | None = None
    """The batch that answered it (its provider's id), or None: the request was sent alone."""

    def body(self) -> dict[str, Any]:
        """The response body, parsed."""
        return self.parsed if self.parsed is not None else json.loads(self.response)


class CallLayer(Protocol):
    """One layer of the call path."""

    async def __call__(self, request: CallRequest) -> CallAnswer: ...


class NotCached(BaseException):
    """A session that answers from the cache alone met a call the cache does not hold (see `Refuse`). A
    BaseException, like a cancellation: a job's own ``except Exception`` must not swallow it and go on as if the call
    had answered."""


class CacheLayer:
    """Answers from the cache by the call's key; asks ``inner`` on a miss and stores its answer.

    ``fresh(key)``, when given, says an answer the cache holds was paid for by this session all the same (a batch
    it collected stored answers to requests not asked yet): served from the cache, it is no hit.
    """

    def __init__(self, cache: CallCache, inner: CallLayer, *, fresh: Callable[[str], bool] | None = None):
        self.cache, self.inner, self.fresh = cache, inner, fresh

    async def __call__(self, request: CallRequest) -> CallAnswer:
        key = request.key.cache_key(request.entry.identity(), request.body)
        cached = self.cache.get(key)
        if cached is not None:
            return CallAnswer(
                response=cached.response,
                latency_s=cached.latency_s,
                header_cost=cached.header_cost,
                cache_hit=self.fresh is None or not self.fresh(key),
                batch=cached.batch,
            )
        answer = await self.inner(request)
        self.cache.set(
            key,
            Cached(
                response=answer.response, latency_s=answer.latency_s, header_cost=answer.header_cost, batch=answer.batch
            ),
        )
        return answer


class AdmissionLayer:
    """Sends through ``inner`` under the entry's limits and waits out 429s; what fails for good is a `CallError`."""

    def __init__(self, admission: Admission, inner: CallLayer):
        self.admission, self.inner = admission, inner

    async def __call__(self, request: CallRequest) -> CallAnswer:
        try:
            return await self.admission.request(request.entry, lambda: self.inner(request))
        except openai.OpenAIError as exc:
            raise call_error(request.entry, exc) from None


class Transport:
    """Sends one request through the openai SDK's own post (its retries, backoff and auth) and reads the answer.

    Raises the SDK's errors as they are (admission control reads a 429 from them), and a `CallError` for a 200 that
    is not a completion (a body that is not JSON, or no ``choices``).
    """

    def __init__(self, client: openai.AsyncOpenAI):
        self.client = client

    async def __call__(self, request: CallRequest) -> CallAnswer:
        entry = request.entry
        # built here already, the body is not re-validated by the SDK, nor encoded again when its bytes are at hand
        sent = {"body": request.body} if request.wire is None else {"content": request.wire}
        request.sent_at.append(time.perf_counter())
        # timeout_s is the deadline of the whole call: the SDK's own timeout restarts with every byte a server trickles
        try:
            async with asyncio.timeout(entry.timeout_s):
                raw = await self.client.post(
                    "/chat/completions",
                    cast_to=httpx2.Response,
                    options={"headers": request.key.labels(), "security": {"bearer_auth": True}},
                    **sent,
                )
        except TimeoutError:
            raise CallError(
                f"{entry.name}: no whole answer within timeout_s={entry.timeout_s:g} s (the deadline of one call, "
                f"its SDK retries included) from {entry.base_url}",
                entry=entry.name,
            ) from None
        latency = request.latency_s()
        response = scrub_bytes(raw.content).decode("utf-8", errors="replace")  # a stray byte is U+FFFD, no crash
        try:
            parsed = json.loads(response)
        except json.JSONDecodeError as exc:
            raise call_error(entry, exc) from None
        if "\\u" in response and has_surrogates(parsed):  # a "\ud800" escape decodes to text no store can hold
            parsed = utf8_safe(parsed)
            response = json.dumps(parsed, ensure_ascii=False)
        if not isinstance(parsed, dict) or not parsed.get("choices"):
            raise CallError(f"{entry.name}: the endpoint answered 200 without choices", entry=entry.name, status=200)
        header_cost = number(raw.headers.get(LITELLM_COST_HEADER))
        return CallAnswer(response=response, latency_s=latency, header_cost=header_cost, parsed=parsed)


class Refuse:
    """The end of a cache-only path: nothing is sent."""

    async def __call__(self, request: CallRequest) -> CallAnswer:
        raise NotCached(request.entry.name)
