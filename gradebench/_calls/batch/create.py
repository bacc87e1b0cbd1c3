"""Creating a batch at most once (`create_once`).

A batch create is not idempotent at the provider: one that answers a 5xx, times out or loses its connection may have
made the batch anyway, and sending it again bills a second one (the SDKs' own retries would bill up to
``max_retries + 1``). So a create is sent with no retries of the SDK's or the transport's, and after a failure that
leaves it unknown whether the batch was made, the batch is looked up by what gradebench chose for it (its tag) before
it is created again: again only when the lookup shows none. A 429 made nothing: it is waited out (its
``Retry-After``, as admission reads it) and the create sent again. Attempts are bounded by the entry's
``max_retries``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

import httpx2
import openai

from ..waits import backoff_s, retry_after_s

__all__ = ["AMBIGUOUS_STATUSES", "BatchCreateError", "create_once"]

log = logging.getLogger("gradebench")

AMBIGUOUS_STATUSES = frozenset({408, 409})
"""Statuses of a create (with every 5xx) after which the batch may exist: it is looked up before being sent again."""


class BatchCreateError(Exception):
    """A batch that could not be created. ``made_maybe``: whether the provider may have made it all the same (a
    failure that leaves it unknown, and a lookup that could not settle it): its note is then kept for a later run to
    look for, never created again blindly."""

    def __init__(self, message: str, *, made_maybe: bool):
        super().__init__(message)
        self.made_maybe = made_maybe


async def create_once(
    create: Callable[[], Awaitable[str]],
    find: Callable[[], Awaitable[str | None]],
    *,
    attempts: int,
    wait_cap_s: float,
) -> str:
    """The id of the batch ``create()`` makes, made at most once (see the module): ``find()`` looks it up after a
    failure that may have made it; ``attempts`` creates at the most; a 429 asking to wait longer than ``wait_cap_s``
    is not waited for."""
    attempts = max(1, attempts)
    failure = ""
    for attempt in range(1, attempts + 1):
        try:
            return await create()
        except (openai.OpenAIError, httpx2.HTTPError) as exc:
            status = status_of(exc)
            if status == 429:  # refused: nothing was made
                wait = retry_after_s(_headers(exc)) or backoff_s(attempt)
                if attempt == attempts or wait > wait_cap_s:
                    what = f"the batch create was refused with HTTP 429: {exc}"
                    raise BatchCreateError(what, made_maybe=False) from exc
                await asyncio.sleep(wait)
                continue
            if not _ambiguous(exc, status):
                raise  # refused for what it asks (a 4xx): nothing was made, sending it again would be refused again
            failure = f"{type(exc).__name__}: {exc}" if status is None else f"HTTP {status}: {exc}"
        # The provider may have made it: looked up (after a short wait, so a listing can show it) before any new one.
        await asyncio.sleep(backoff_s(attempt))
        try:
            found = await find()
        except (openai.OpenAIError, httpx2.HTTPError) as exc:
            raise BatchCreateError(
                f"the batch create failed ({failure}) and the lookup of whether it was made failed too ({exc}): it may "
                "have been made, so it is not created again; the next run looks for it again",
                made_maybe=True,
            ) from exc
        if found is not None:
            log.warning(
                "gradebench: a batch create failed (%s) but had made batch %s: that batch is used", failure, found
            )
            return found
        log.warning(
            "gradebench: a batch create failed (%s) and made no batch (looked up): attempt %d", failure, attempt
        )
    raise BatchCreateError(
        f"the batch could not be created in {attempts} attempts (the last: {failure}); each time a lookup showed no "
        "batch was made, so nothing was billed",
        made_maybe=False,
    )


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an error of the openai SDK or of ``httpx2`` carries, or None (no answer came)."""
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code
    return None


def _headers(exc: BaseException) -> Mapping[str, str]:
    if isinstance(exc, openai.APIStatusError | httpx2.HTTPStatusError):
        return exc.response.headers
    return {}


def _ambiguous(exc: BaseException, status: int | None) -> bool:
    """Whether the batch may exist after ``exc``: no answer (a timeout, a dropped connection) or a server error."""
    if status is None:
        return isinstance(exc, openai.APIConnectionError | httpx2.TransportError)
    return status >= 500 or status in AMBIGUOUS_STATUSES
