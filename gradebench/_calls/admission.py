"""Admission control: how many requests run at once, how fast they start, and how a rate limit is waited out.

One global concurrency limit, per entry a concurrency limit and an adaptive pace (`AdaptiveRate`), and per local
server the slots its ``/props`` gives (`gradebench._calls.servers`), shared by every entry on it.
A 429 is a normal condition, not a failure: `Admission.request` waits it out (the longest of ``retry-after-ms`` and
``retry-after`` in seconds or as an HTTP date, counted from when the 429 arrived; without one, exponential backoff
with jitter) and sends again, for up to the entry's
``rate_limit_wait_s`` from the call's first 429, then fails saying so. A call's first 429 also lowers the entry's pace
(halved; an entry without ``rpm`` starts from ``x-ratelimit-limit-requests`` or from the rate it was sent at), and
each success wins a little back, never above the catalog's ``rpm``: a race converges on the provider's real limit.
The client gradebench builds (`gradebench._calls.session.GradebenchClient`) hands every 429 straight back for this, and
turns an error object sent as a 200 into its status; 408/409/5xx and connection errors are still the openai SDK's own
retries, bounded by ``max_retries``. Hard errors (400/401/403/404/422, a spent quota) fail at once.
`call_error` turns what failed for good into the one-line reason a failed run carries.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import openai

from .._base.errors import CallError
from .._catalog.catalog import Entry
from .servers import ServerSlots
from .waits import backoff_s, retry_after_s

__all__ = [
    "ERROR_IN_200",
    "AdaptiveRate",
    "Admission",
    "RateBucket",
    "Refusals",
    "backoff_s",
    "call_error",
    "retry_after_s",
]

log = logging.getLogger("gradebench")

RETRIED_STATUSES = frozenset({408, 409, 429})

ERROR_IN_200 = "gradebench.error_in_200"
"""Key in ``response.extensions`` of a 200 whose body was only an error object; the value is the error's ``code``."""

T = TypeVar("T")


# ----------------------------------------------------------------------------------------------------------- pacing


class RateBucket:
    """A token bucket: ``rpm`` requests a minute, with a burst of a few so a cold start is not serialised."""

    def __init__(self, rpm: float, *, burst: int | None = None, clock: Callable[[], float] = time.monotonic):
        self.rate = rpm / 60.0
        self.capacity = float(burst if burst is not None else max(1, min(int(rpm) // 20, 10)))
        self.tokens = self.capacity
        self._clock = clock
        self.updated = clock()
        self._lock = asyncio.Lock()

    @property
    def rpm(self) -> float:
        """The rate in requests per minute."""
        return self.rate * 60.0

    def take(self) -> float:
        """Take a token when there is one (returns 0.0), else the seconds until there will be."""
        self._refill()
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate

    def set_rpm(self, rpm: float, *, burst: int | None = None) -> None:
        """Change the rate from now on (tokens earned so far are kept, up to the new ``burst`` when one is given)."""
        self._refill()
        self.rate = rpm / 60.0
        if burst is not None:
            self.capacity = float(burst)
            self.tokens = min(self.tokens, self.capacity)

    def drain(self) -> None:
        """Drop the tokens on hand: the next start waits a full interval."""
        self._refill()
        self.tokens = min(self.tokens, 0.0)

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def acquire(self) -> None:
        async with self._lock:  # one waiter at a time keeps the order fair
            while (wait := self.take()) > 0:
                await asyncio.sleep(wait)


class AdaptiveRate:
    """The pace of one entry, learning the provider's real limit from its 429s.

    Unpaced until the first 429 when the catalog gives no ``rpm``; paced at the catalog's ``rpm`` (never above it)
    when it does. A 429 holds every start until its ``Retry-After`` has passed, drops the burst, and halves the pace
    (the first cut of an unpaced entry starts from ``x-ratelimit-limit-requests`` or from the rate observed over the
    last minute). 429s answering requests sent before the latest cut do not cut again: one overshoot, one cut.
    Each success then wins back 1/25 of the latest cut (multiplicative decrease, additive increase).
    """

    DECREASE = 0.5
    """Factor of the pace after a 429."""
    RECOVERY = 25
    """Successes it takes to win a cut back."""
    FLOOR_RPM = 1.0
    """The slowest pace a run of 429s can bring an entry to."""
    WINDOW_S = 60.0
    """How far back the observed rate looks."""

    def __init__(self, rpm: float | None = None, *, name: str = "", clock: Callable[[], float] = time.monotonic):
        self.name = name
        self.ceiling: float | None = float(rpm) if rpm else None
        """The catalog's ``rpm``: the pace never goes above it. None: no ceiling."""
        self._clock = clock
        self._bucket = RateBucket(rpm, clock=clock) if rpm else None
        self._resume_at = -math.inf
        self._cut_at = -math.inf
        self._step = 0.0
        self._starts: deque[float] = deque(maxlen=256)
        self._lock = asyncio.Lock()
        self._queued = 0  # calls waiting for (or holding) the lock: while there are any, a newcomer queues too

    @property
    def rpm(self) -> float | None:
        """The current pace in requests per minute; None while unpaced."""
        return None if self._bucket is None else self._bucket.rpm

    def start(self) -> float:
        """Start a request now if the pace allows it (returns 0.0), else the seconds to wait before asking again."""
        now = self._clock()
        if now < self._resume_at:
            return self._resume_at - now
        if self._bucket is not None and (wait := self._bucket.take()) > 0:
            return wait
        if self._bucket is None:
            self._starts.append(now)  # what the first cut starts from
        return 0.0

    async def acquire(self, *, ahead: bool = False) -> None:
        """Wait until a request may start. ``ahead``: a call waiting out a 429 goes before calls not yet sent."""
        if ahead:
            while (wait := self.start()) > 0:
                await asyncio.sleep(wait)
            return
        if not self._queued and self.start() == 0:  # nobody waiting and the pace allows it: no lock to take
            return
        self._queued += 1
        try:
            async with self._lock:  # one waiter at a time keeps the order fair
                while (wait := self.start()) > 0:
                    await asyncio.sleep(wait)
        finally:
            self._queued -= 1

    def limited(
        self, *, sent_at: float, retry_after: float | None = None, limit_rpm: float | None = None, cut: bool = True
    ) -> None:
        """A request sent at ``sent_at`` (this clock) met a 429 asking to wait ``retry_after`` seconds.

        ``limit_rpm``: the provider's ``x-ratelimit-limit-requests``. ``cut=False``: hold and drain, but keep the pace.
        """
        now = self._clock()
        if retry_after:
            self._resume_at = max(self._resume_at, now + retry_after)
        if self._bucket is not None:
            self._bucket.drain()
        if not cut or sent_at < self._cut_at:
            return  # sent at the pace before the latest cut: this overshoot is already paid for
        before = self.rpm or limit_rpm or self._observed_rpm(now)
        after = max(self.FLOOR_RPM, before * self.DECREASE)
        self._step = (before - after) / self.RECOVERY
        if self._bucket is None:
            self._bucket = RateBucket(after, burst=1, clock=self._clock)
        else:
            self._bucket.set_rpm(after, burst=1)
        self._bucket.drain()
        self._cut_at = now
        log.info("rate %s: 429, pace lowered from %.1f to %.1f requests a minute", self.name, before, after)

    def succeeded(self) -> None:
        """A request went through: win back a step of the latest cut."""
        if self._bucket is None or not self._step:
            return
        rpm = self._bucket.rpm + self._step
        if self.ceiling is not None and rpm >= self.ceiling:
            rpm, self._step = self.ceiling, 0.0
        self._bucket.set_rpm(rpm)

    def _observed_rpm(self, now: float) -> float:
        """Requests started over the last minute, per minute of the time they span (at least a second)."""
        recent = [t for t in self._starts if now - t <= self.WINDOW_S]
        if not recent:
            return self.FLOOR_RPM / self.DECREASE
        return len(recent) / max(now - recent[0], 1.0) * 60.0


# ------------------------------------------------------------------------------------------------------ giving up


class Refusals:
    """An entry's run of 429s in a race, to tell a rate limit from an entry that will never answer.

    A 429 that asks to wait (``Retry-After``) is a limit being applied: it is waited out. An entry that has not
    answered once in the race and has refused every request for `GIVE_UP_S`, at least `GIVE_UP_COUNT` of them and
    none asking to wait, is given up on (a spent quota, a key without access to the model): its waiting and later
    calls fail at once with `reason`, and the rest of the race goes on instead of waiting it out call by call.
    """

    GIVE_UP_S = 20.0
    """How long an entry that never answered may refuse before the race gives up on it."""
    GIVE_UP_COUNT = 3
    """Refusals it takes at the least (the pace slows with every 429, so few come in GIVE_UP_S)."""

    def __init__(self, entry: Entry):
        self.entry = entry
        self.answered = False
        self.asked_to_wait = False
        self.count = 0
        self.first: float | None = None
        self.reason: str | None = None
        """Why the race gave up on the entry, or None."""
        self._gave_up = asyncio.Event()

    def refused(self, now: float, asked: float | None, message: str) -> None:
        """A 429 came (``asked``: the seconds it asked to wait, or None)."""
        if self.answered or self.reason is not None:
            return
        self.count += 1
        self.first = now if self.first is None else self.first
        self.asked_to_wait = self.asked_to_wait or asked is not None
        span = now - self.first
        if not self.asked_to_wait and self.count >= self.GIVE_UP_COUNT and span >= self.GIVE_UP_S:
            self.reason = (
                f"{self.entry.name}: gave up on this entry for the race: {self.count} requests refused with HTTP 429 "
                f"over {span:.1f} s, none answered and none asked to wait (no Retry-After) — a spent quota or a key "
                f"without access to the model? The rest of the race goes on: {message}"
            )
            self._gave_up.set()

    def succeeded(self) -> None:
        self.answered = True

    async def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if the race gives up on the entry meanwhile."""
        try:
            await asyncio.wait_for(self._gave_up.wait(), timeout=seconds)
        except TimeoutError:
            pass


# -------------------------------------------------------------------------------------------------------- admission


class Admission:
    """The limits of one benchmark run. Built inside the event loop that uses it. ``servers``: the local servers'
    caps (`gradebench._calls.servers`), shared by every entry on one server."""

    def __init__(
        self,
        entries: Iterable[Entry],
        *,
        concurrency: int,
        clock: Callable[[], float] = time.monotonic,
        servers: ServerSlots | None = None,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self._clock, self.servers = clock, servers
        self._global = asyncio.Semaphore(concurrency)
        self._per_entry: dict[str, asyncio.Semaphore] = {}
        self._rates: dict[str, AdaptiveRate] = {}
        self._refusals: dict[str, Refusals] = {}
        for e in entries:
            self.add(e)

    def add(self, entry: Entry) -> None:
        if entry.name in self._rates:
            return
        if entry.max_concurrency:
            self._per_entry[entry.name] = asyncio.Semaphore(entry.max_concurrency)
        self._rates[entry.name] = AdaptiveRate(entry.rpm, name=entry.name, clock=self._clock)
        self._refusals[entry.name] = Refusals(entry)

    def rate(self, entry: Entry) -> AdaptiveRate:
        """The pace of ``entry`` in this run."""
        self.add(entry)
        return self._rates[entry.name]

    async def request(self, entry: Entry, send: Callable[[], Awaitable[T]]) -> T:
        """Make one request to ``entry`` under its limits, and wait out the 429s it meets.

        ``send()`` runs while a slot is held: the entry's own concurrency slot first, then its server's (a local
        server's slots), then its pace, then the global limit; none of this wait counts against the call's deadline.
        A 429 gives back the global slot while it is waited out (other entries go on); the call keeps its own
        slot and, when its wait is over, starts ahead of calls not yet sent. From its fourth 429 on, a call waits at
        least a growing backoff, whatever the endpoint asks. When the next wait would end past
        ``entry.rate_limit_wait_s`` from the first 429, it fails with a `CallError` that says so;
        ``insufficient_quota`` fails at once, and so does every call to an entry the race gave up on (`Refusals`).
        """
        rate = self.rate(entry)
        refusals = self._refusals[entry.name]
        own = self._per_entry.get(entry.name)
        attempts = limited = 0
        first_sent: float | None = None
        first_429: float | None = None
        if own is not None:
            await own.acquire()
        server = None
        try:
            gate = None if self.servers is None else await self.servers.gate(entry)
            if gate is not None:
                await gate.acquire()
                server = gate
            while True:
                if refusals.reason is not None:
                    raise CallError(refusals.reason, entry=entry.name, status=429, attempts=attempts)
                await rate.acquire(ahead=limited > 0)
                sent_at = self._clock()
                if first_sent is None:
                    first_sent = sent_at
                try:
                    async with self._global:
                        result = await send()
                except openai.RateLimitError as exc:
                    attempts += _attempts(exc) or 1
                    if _quota_spent(exc):
                        raise call_error(entry, exc, earlier_attempts=attempts - 1) from exc
                    now = self._clock()
                    limited += 1
                    if first_429 is None:
                        first_429 = now
                    headers = exc.response.headers
                    asked = retry_after_s(headers)
                    # Only a call's first 429 lowers the pace: its retries are early, not evidence of a faster rate.
                    rate.limited(sent_at=sent_at, retry_after=asked, limit_rpm=_limit_rpm(headers), cut=limited == 1)
                    wait = asked or backoff_s(limited)  # a Retry-After of 0 asks nothing: back off
                    if limited > 3:  # told again and again: wait at least a growing backoff, whatever is asked
                        wait = max(wait, backoff_s(limited - 3))
                    if now + wait > first_429 + entry.rate_limit_wait_s:
                        raise _rate_limited(entry, exc, attempts, now - first_sent, asked) from exc
                    refusals.refused(now, asked or None, _error_message(exc))  # a Retry-After of 0 asks nothing
                    log.debug("%s: 429, waiting %.3f s (attempt %d)", entry.name, wait, attempts)
                    await refusals.wait(wait)
                    continue
                except openai.OpenAIError as exc:
                    if attempts:  # earlier attempts met 429s: count them in
                        raise call_error(entry, exc, earlier_attempts=attempts) from exc
                    raise
                rate.succeeded()
                refusals.succeeded()
                return result
        finally:
            if server is not None:
                server.release()
            if own is not None:
                own.release()


def _attempts(exc: BaseException) -> int | None:
    """HTTP attempts the openai SDK made for the request that raised ``exc`` (its ``x-stainless-retry-count`` + 1)."""
    request = getattr(exc, "request", None)
    try:
        return int(request.headers["x-stainless-retry-count"]) + 1 if request is not None else None
    except (KeyError, ValueError):
        return None


def _limit_rpm(headers: Mapping[str, str]) -> float | None:
    try:
        limit = float(headers.get("x-ratelimit-limit-requests") or "")
    except ValueError:
        return None
    return limit if math.isfinite(limit) and limit > 0 else None


def _quota_spent(exc: openai.APIStatusError) -> bool:
    """A 429 that no wait clears: OpenAI's ``insufficient_quota`` (no credit left, or the monthly budget reached)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    return "insufficient_quota" in (body.get("code"), body.get("type"))


# ----------------------------------------------------------------------------------------------------------- errors


def _rate_limited(
    entry: Entry, exc: openai.APIStatusError, attempts: int, elapsed: float, asked: float | None
) -> CallError:
    tries = f"{attempts} attempt{'s' * (attempts > 1)}"
    more = f"; it asked to wait {asked:g} s more" if asked else ""
    return CallError(
        f"{entry.name}: HTTP 429 after {tries} over {elapsed:.2f} s, still rate limited past "
        f"rate_limit_wait_s={entry.rate_limit_wait_s:g}{more}: {_error_message(exc)}",
        entry=entry.name,
        status=429,
        attempts=attempts,
    )


def call_error(entry: Entry, exc: BaseException, *, earlier_attempts: int = 0) -> CallError:
    """The error a run carries when a call failed for good: which entry, what status, after how many attempts.

    ``earlier_attempts``: attempts made before the request that raised ``exc`` (429s waited out). A `CallError` is
    returned as it is.
    """
    if isinstance(exc, CallError):
        return exc
    retried = entry.max_retries + 1
    made = _attempts(exc)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if made is None:
            made = retried if status in RETRIED_STATUSES or status >= 500 else 1
        attempts = earlier_attempts + made
        detail = _error_message(exc)
        what = f"HTTP {status}"
        if ERROR_IN_200 in exc.response.extensions:
            what = f"HTTP 200 with error {exc.response.extensions[ERROR_IN_200]!r}"
        return CallError(
            f"{entry.name}: {what} after {attempts} attempt{'s' * (attempts > 1)}: {detail}",
            entry=entry.name,
            status=status,
            attempts=attempts,
        )
    attempts = earlier_attempts + (made or retried)
    if isinstance(exc, openai.APITimeoutError):
        return CallError(
            f"{entry.name}: timed out after {attempts} attempts ({entry.timeout_s:g} s each)",
            entry=entry.name,
            attempts=attempts,
        )
    if isinstance(exc, openai.APIConnectionError):
        return CallError(
            f"{entry.name}: connection to {entry.base_url} failed after {attempts} attempts: {exc.__cause__ or exc}",
            entry=entry.name,
            attempts=attempts,
        )
    if isinstance(exc, json.JSONDecodeError):
        return CallError(
            f"{entry.name}: the endpoint answered 200 with a body that is not JSON", entry=entry.name, status=200
        )
    return CallError(f"{entry.name}: {type(exc).__name__}: {exc}", entry=entry.name)


def _error_message(exc: openai.APIStatusError) -> str:
    body: Any = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(exc.message)[:300]
