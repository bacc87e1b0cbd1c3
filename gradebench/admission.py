"""Admission control: how many requests run at once and how fast they start.

One global concurrency limit, and per entry a concurrency limit and a requests-per-minute bucket.
Retries of 408/409/429/5xx and connection errors are the openai SDK's own (exponential backoff with jitter,
honouring ``Retry-After`` and ``retry-after-ms``), bounded by the entry's ``max_retries``; `call_error` turns what
the SDK raised into the one-line reason a failed run carries.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TypeVar

import openai

from .catalog import Entry
from .errors import CallError

__all__ = ["Admission", "RateBucket", "call_error"]

RETRIED_STATUSES = frozenset({408, 409, 429})

T = TypeVar("T")


class RateBucket:
    """A token bucket: ``rpm`` requests a minute, with a burst of a few so a cold start is not serialised."""

    def __init__(self, rpm: int, *, burst: int | None = None):
        self.rate = rpm / 60.0
        self.capacity = float(burst if burst is not None else max(1, min(rpm // 20, 10)))
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:  # one waiter at a time keeps the order fair
            while True:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)


class Admission:
    """The limits of one benchmark run. Built inside the event loop that uses it."""

    def __init__(self, entries: Iterable[Entry], *, concurrency: int):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self._global = asyncio.Semaphore(concurrency)
        self._per_entry: dict[str, asyncio.Semaphore] = {}
        self._buckets: dict[str, RateBucket] = {}
        for e in entries:
            self.add(e)

    def add(self, entry: Entry) -> None:
        if entry.name in self._per_entry or entry.name in self._buckets:
            return
        if entry.max_concurrency:
            self._per_entry[entry.name] = asyncio.Semaphore(entry.max_concurrency)
        if entry.rpm:
            self._buckets[entry.name] = RateBucket(entry.rpm)

    @asynccontextmanager
    async def slot(self, entry: Entry) -> AsyncIterator[None]:
        """Hold one request slot for ``entry``: its own limit first, then its rate, then the global limit."""
        self.add(entry)
        own = self._per_entry.get(entry.name)
        if own is not None:
            await own.acquire()
        try:
            bucket = self._buckets.get(entry.name)
            if bucket is not None:
                await bucket.acquire()
            async with self._global:
                yield
        finally:
            if own is not None:
                own.release()

    async def request(self, entry: Entry, send: Callable[[], Awaitable[T]]) -> T:
        """Make one request to ``entry`` under its limits: ``send()`` runs while a slot is held."""
        async with self.slot(entry):
            return await send()


def call_error(entry: Entry, exc: BaseException) -> CallError:
    """The error a run carries when a call failed for good: which entry, what status, after how many attempts."""
    retried = entry.max_retries + 1
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        attempts = retried if status in RETRIED_STATUSES or status >= 500 else 1
        detail = _error_message(exc)
        return CallError(
            f"{entry.name}: HTTP {status} after {attempts} attempt{'s' * (attempts > 1)}: {detail}",
            entry=entry.name,
            status=status,
            attempts=attempts,
        )
    if isinstance(exc, openai.APITimeoutError):
        return CallError(
            f"{entry.name}: timed out after {retried} attempts ({entry.timeout_s:g} s each)",
            entry=entry.name,
            attempts=retried,
        )
    if isinstance(exc, openai.APIConnectionError):
        return CallError(
            f"{entry.name}: connection failed after {retried} attempts: {exc.__cause__ or exc}",
            entry=entry.name,
            attempts=retried,
        )
    if isinstance(exc, json.JSONDecodeError):
        return CallError(
            f"{entry.name}: the endpoint answered 200 with a body that is not JSON", entry=entry.name, status=200
        )
    return CallError(f"{entry.name}: {type(exc).__name__}: {exc}", entry=entry.name)


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(exc.message)[:300]
