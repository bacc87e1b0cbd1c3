"""The judge through a Batch API: verdict requests gathered into batches, each answer landing in the cache under the
key the same request sent alone would have (`BatchLayer`).

A `BatchLayer` stands in the call path of a judge entry where admission control and the transport stand for a
request sent alone (`gradebench._calls.path`: the cache layer in front of it is the same, so a batch answer and a
direct one are interchangeable: same key, same record, the batch's id beside it so a hit keeps the batch price).
What a request goes through:

1. **Gathered.** Requests wait together while the race holds the batch open (its candidate runs are landing:
   `hold`), then until none has come for `LINGER_S`, or until the batch is as large as the API takes.
2. **Noted, then submitted.** The batch's requests (``custom_id`` → cache key) are written to the cache's batch notes
   (`gradebench._calls.batch.journal`) before it is created and again with its id, so a process started later — a
   notebook run again tomorrow — that asks any of them waits for that batch instead of paying again. A batch is
   created at most once: a create that fails after the provider may have made it is looked up before it is sent again
   (`gradebench._calls.batch.create`).
3. **Polled** every ``batch_poll_s`` (the entry's); a progress bar and the log say its status and counts.
4. **Collected** (`gradebench._calls.batch.collect`). Answers come in any order and are matched by ``custom_id``;
   every one is stored in the cache (also those no request of this process waits for), then the note is dropped. A
   request the provider refused (a 4xx: a schema it does not take, a bad parameter) fails as it would sent alone — a
   400 to a schema makes the judge ask again in prose, in the next batch. A request the batch never ran (expired,
   cancelled, a 5xx or 429 inside it) is **sent again alone**, at the full price, and the log says how many: a
   verdict waits at most one completion window. A batch that failed as a whole fails each of its requests with its
   reason; nothing is sent alone in its place. A results line that cannot be read fails only the verdict it names,
   two answers for one id fail it, and an answered id is never sent again (`gradebench._calls.batch.api.merge_results`).

Stopping a race leaves its batches running at the provider: their notes stay, and the next run collects them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from tqdm.auto import tqdm

from ..._base.errors import CallError
from ..._base.protocol import batch_custom_id
from ..._catalog.catalog import Entry
from ..cache import CallCache
from ..path import CallAnswer, CallLayer, CallRequest
from ..waits import BACKOFF_MAX_S
from .api import BatchAPI, BatchState, LineResult
from .collect import RESEND, collect
from .create import BatchCreateError
from .journal import Journal, Submitted, endpoint_of

__all__ = ["LINGER_S", "POLL_FAILURES", "BatchLayer"]

log = logging.getLogger("gradebench")

LINGER_S = 0.2
"""Seconds without a new request before a batch no race holds open is submitted (the requests of one burst — a
rejudge, the retries after a batch — go together)."""
POLL_FAILURES = 5
"""Looks at a batch in a row that may fail (the network, the provider) before its requests fail; its note stays, so a
later run looks again (so does any failure this code did not expect: see `BatchLayer._spawn`)."""


@dataclass
class _Ask:
    """A request waiting to be submitted, and who waits for it."""

    cache_key: str
    line: dict[str, Any]
    size: int
    futures: list[asyncio.Future[Any]] = field(default_factory=list)


_REBATCH = object()
"""What a request of a batch that will never answer is answered with: ask again, in a new batch."""


class BatchLayer:
    """The judge calls to one entry, through its Batch API (see the module); ``direct`` sends a request alone."""

    def __init__(
        self,
        entry: Entry,
        api_name: str,
        api: BatchAPI,
        cache: CallCache,
        direct: CallLayer,
        *,
        held: Callable[[], bool] = lambda: False,
        progress: bool = False,
    ):
        self.entry, self.api_name, self.api, self.cache, self.direct = entry, api_name, api, cache, direct
        self.journal = Journal(cache.directory, writable=not cache.read_only)
        self.endpoint = endpoint_of(entry.identity(), api_name)
        self._held = held
        self.progress = progress
        self._pending: dict[str, _Ask] = {}
        self._pending_bytes = 0
        self._notes: dict[str, Submitted] = {}  # custom_id -> the submitted batch that asks it
        self._waiters: dict[str, list[asyncio.Future[Any]]] = {}
        self._watched: dict[str, asyncio.Task[None]] = {}  # tag -> its poller
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._loaded = False
        self._collected: set[str] = set()  # the cache keys of the answers this layer collected
        self.submitted: list[str] = []
        """The ids of the batches this layer submitted, in order."""

    # ---------------------------------------------------------------------------------------------------- asking

    async def __call__(self, request: CallRequest) -> CallAnswer:
        self._load()
        cache_key = request.key.cache_key(self.entry.identity(), request.body)
        stored = self.cache.get(cache_key)  # a batch collected since the cache layer looked
        if stored is not None:
            hit = not self.collected(cache_key)
            return CallAnswer(response=stored.response, latency_s=stored.latency_s, cache_hit=hit, batch=stored.batch)
        custom_id = batch_custom_id(request.key.labels(), cache_key)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        note = self._notes.get(custom_id)
        if note is not None:
            self._waiters.setdefault(custom_id, []).append(future)
            self._watch(note)
        else:
            self._gather(custom_id, cache_key, request, future)
        outcome = await future
        if outcome is RESEND:
            return await self.direct(request)
        if outcome is _REBATCH:
            return await self(request)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _gather(self, custom_id: str, cache_key: str, request: CallRequest, future: asyncio.Future[Any]) -> None:
        ask = self._pending.get(custom_id)
        if ask is not None and ask.cache_key != cache_key:  # 168 bits of the key in the id: never expected
            future.set_result(RESEND)  # sent alone rather than risk another request's answer
            return
        if ask is None:
            try:
                line = self.api.line(custom_id, request.body)
            except ValueError as exc:  # a parameter this API cannot carry: said now, nothing sent
                future.set_exception(
                    CallError(f"{self.entry.name}: cannot go in a batch: {exc}", entry=self.entry.name)
                )
                return
            ask = self._pending[custom_id] = _Ask(cache_key=cache_key, line=line, size=len(json.dumps(line)) + 1)
            self._pending_bytes += ask.size
        ask.futures.append(future)
        self._last = asyncio.get_running_loop().time()
        if len(self._pending) >= self.api.max_requests or self._pending_bytes >= self.api.max_bytes:
            self._submit_pending()
        else:
            self._arm()

    def collected(self, cache_key: str) -> bool:
        """Whether this layer collected the answer under ``cache_key``: paid for by this race (a batch it submitted,
        or one an earlier process submitted and this one collected), so served from the cache it is no hit."""
        return cache_key in self._collected

    # ---------------------------------------------------------------------------------------------- submitting

    def released(self) -> None:
        """The race no longer holds batches open: submit once requests stop coming."""
        if self._pending:
            self._arm()

    def _arm(self) -> None:
        if self._timer is None and not self._held():
            self._timer = asyncio.get_running_loop().call_later(LINGER_S, self._linger)

    def _linger(self) -> None:
        self._timer = None
        if not self._pending or self._held():
            return
        idle = asyncio.get_running_loop().time() - self._last
        if idle < LINGER_S:
            self._timer = asyncio.get_running_loop().call_later(LINGER_S - idle, self._linger)
            return
        self._submit_pending()

    def _submit_pending(self) -> None:
        asks = {c: a for c, a in self._pending.items() if any(not f.done() for f in a.futures)}
        self._pending, self._pending_bytes = {}, 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not asks:
            return
        note = Submitted.new(self.api_name, self.entry.name, self.endpoint, {c: a.cache_key for c, a in asks.items()})
        for custom_id, ask in asks.items():
            self._notes[custom_id] = note
            self._waiters.setdefault(custom_id, []).extend(ask.futures)
        self.journal.write(note)  # before it exists: a process killed while creating it finds it again by its tag
        self._spawn(note, self._submit(note, [a.line for a in asks.values()]))

    def _spawn(self, note: Submitted, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` on ``note``'s batch in a task of its own (one at a time per batch): whatever it raises fails
        the batch's requests with it (a note kept for a later run), so no verdict waits on a task that died."""

        async def guarded() -> None:
            try:
                await work
            except Exception as exc:  # a provider's answer this code did not expect: the rows say what it was
                log.exception("gradebench: batch %s of %s", note.batch_id or note.tag, self.entry.name)
                what = f"{self.entry.name}: batch {note.batch_id or note.tag}: {type(exc).__name__}: {exc}"
                self._fail(note, what, keep=True)
            finally:
                self._watched.pop(note.tag, None)

        task = asyncio.get_running_loop().create_task(guarded())
        self._watched[note.tag] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _submit(self, note: Submitted, lines: list[dict[str, Any]]) -> None:
        try:
            note.batch_id = await self.api.submit(lines, note.tag)
        except (openai.OpenAIError, httpx2.HTTPError, BatchCreateError, ValueError, KeyError) as exc:
            made_maybe = isinstance(exc, BatchCreateError) and exc.made_maybe
            if not made_maybe:  # known not made: nothing to look for later
                self.journal.drop(note)
            what = f"{self.entry.name}: the batch could not be submitted to {self.entry.base_url}: {exc}"
            self._fail(note, what, keep=made_maybe)
            return
        self.journal.write(note)
        self.submitted.append(note.batch_id)
        log.info(
            "gradebench: batch %s submitted to %s (%s): %d verdict requests",
            note.batch_id,
            self.entry.name,
            self.api_name,
            len(lines),
        )
        await self._poll(note)

    # -------------------------------------------------------------------------------------------------- polling

    def _load(self) -> None:
        """The batches earlier processes submitted here and did not collect: their requests wait on them."""
        if self._loaded:
            return
        self._loaded = True
        for note in self.journal.load(self.endpoint):
            for custom_id in note.requests:
                self._notes[custom_id] = note
            log.info(
                "gradebench: batch %s of %s (%d verdict requests, submitted %s) is picked up again",
                note.batch_id or note.tag,
                self.entry.name,
                len(note.requests),
                time.strftime("%Y-%m-%d %H:%M", time.localtime(note.submitted_at)),
            )

    def _watch(self, note: Submitted) -> None:
        if note.tag not in self._watched:  # a batch noted while being created, then its process died: looked for
            self._spawn(note, self._poll(note) if note.batch_id is not None else self._recover(note))

    async def _recover(self, note: Submitted) -> None:
        """A batch noted while it was being created: found by its tag, or asked again in a new batch."""
        # it was sent between the note and the last attempt's timeout (the waits between: a backoff or 429s)
        attempts = self.entry.max_retries + 1
        until = note.submitted_at + attempts * (self.entry.timeout_s + BACKOFF_MAX_S) + self.entry.rate_limit_wait_s
        try:
            note.batch_id = await self.api.find(
                note.tag, size=len(note.requests), since=note.submitted_at, until=min(until, time.time())
            )
        except (openai.OpenAIError, httpx2.HTTPError, BatchCreateError) as exc:  # cannot list, or cannot tell which
            log.warning(
                "gradebench: batch %s could not be looked for (%s); if it was made, it is paid twice", note.tag, exc
            )
        if note.batch_id is None:
            log.warning(
                "gradebench: batch %s of %s was being created when its process stopped and is not found: its %d "
                "requests go in a new batch",
                note.tag,
                self.entry.name,
                len(note.requests),
            )
            self._ask_again(note)
            return
        self.journal.write(note)
        await self._poll(note)

    async def _poll(self, note: Submitted) -> None:
        assert note.batch_id is not None
        bar = tqdm(
            total=len(note.requests), desc=f"judge batch {self.entry.name}", unit="verdict", disable=not self.progress
        )
        said, failures = None, 0
        try:
            while True:
                try:
                    state = await self.api.poll(note.batch_id)
                    failures = 0
                except (openai.OpenAIError, httpx2.HTTPError) as exc:
                    if _status(exc) == 404:
                        log.warning(
                            "gradebench: batch %s is not known at %s: its requests go in a new batch",
                            note.batch_id,
                            self.entry.base_url,
                        )
                        self._ask_again(note)
                        return
                    failures += 1
                    if failures >= POLL_FAILURES:
                        raise
                    await asyncio.sleep(self.entry.batch_poll_s)
                    continue
                bar.n = min(bar.total, state.completed + state.failed)
                bar.set_postfix_str(state.status, refresh=True)
                if state.status != said:
                    log.info("gradebench: batch %s of %s %s", state.id, self.entry.name, state.line())
                    said = state.status
                if state.done:
                    break
                await asyncio.sleep(self.entry.batch_poll_s)
            if state.error is not None:
                self.journal.drop(note)
                self._fail(note, f"{self.entry.name}: batch {state.id} {state.status}: {state.error}")
                return
            results = await self.api.results(state, note.requests)
        finally:
            bar.close()
        self._collect(note, state, results)

    # ------------------------------------------------------------------------------------------------ collecting

    def _collect(self, note: Submitted, state: BatchState, results: list[LineResult]) -> None:
        """Every answer of a finished batch into the cache, and to the requests waiting for it (see
        `gradebench._calls.batch.collect`)."""
        for custom_id, outcome in collect(note, state, results, entry=self.entry.name, cache=self.cache):
            if isinstance(outcome, CallAnswer):
                self._collected.add(note.requests[custom_id])
            self._notes.pop(custom_id, None)
            _settle(self._waiters.pop(custom_id, []), outcome)
        self.cache.flush()  # on disk before the note goes: a process killed now loses nothing it paid for
        self.journal.drop(note)

    def _fail(self, note: Submitted, message: str, *, keep: bool = False) -> None:
        """Every request of a batch fails with ``message`` (``keep``: its note stays for a later run)."""
        error = CallError(message, entry=self.entry.name)
        log.warning("gradebench: %s", message)
        for custom_id in note.requests:
            if not keep:
                self._notes.pop(custom_id, None)
            _settle(self._waiters.pop(custom_id, []), error)

    def _ask_again(self, note: Submitted) -> None:
        """A batch that will never answer: its waiting requests go in a new one."""
        self.journal.drop(note)
        for custom_id in note.requests:
            self._notes.pop(custom_id, None)
        for custom_id in note.requests:
            _settle(self._waiters.pop(custom_id, []), _REBATCH)

    async def aclose(self) -> None:
        """Stop looking at the batches (they go on at the provider; their notes stay for the next run)."""
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _settle(futures: list[asyncio.Future[Any]], outcome: Any) -> None:
    """Hand ``outcome`` (an answer, a sentinel or an error) to every request still waiting for it."""
    for future in futures:
        if future.done():  # its race was stopped
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


def _status(exc: BaseException) -> int | None:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code
    return None
