"""A finished batch's answers, for the requests waiting on them (step 4 of `gradebench._calls.batch.layer`).

Answers come in any order and are matched by ``custom_id``. Each is read as the transport reads an answer to a
request sent alone (keys scrubbed, a completion checked) and stored in the cache under its request's key, also when
no request of this process waits for it. A request the provider refused (a 4xx) fails as it would sent alone; one the
batch never ran (expired, cancelled, a 5xx or 429 inside it) is marked to be sent again alone (`RESEND`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ..._base.errors import CallError
from ..._base.redact import has_surrogates, scrub, utf8_safe
from ..cache import Cached, CallCache
from ..path import CallAnswer
from .api import BatchState, LineResult
from .journal import Submitted

__all__ = ["RESEND", "answer_of", "collect"]

log = logging.getLogger("gradebench")

RESEND = object()
"""What a request the batch never ran is answered with: send it again alone."""


def collect(
    note: Submitted, state: BatchState, results: Iterable[LineResult], *, entry: str, cache: CallCache
) -> Iterator[tuple[str, Any]]:
    """Each request of the batch ``note`` describes and what its waiting requests receive (``custom_id``, outcome):
    an answer (`CallAnswer`, stored in the cache before it is yielded), `RESEND`, or the `CallError` a refusal or a
    broken answer is. Once every result is read, the log says how many were answered, refused and sent again."""
    latency = max(0.0, time.time() - note.submitted_at)
    answered, resent, refused = 0, [], 0
    for result in results:
        cache_key = note.requests[result.custom_id]
        outcome: Any
        if result.body is not None:
            outcome = answer_of(result, state.id, latency, entry=entry)
            if isinstance(outcome, CallAnswer):
                cache.set(cache_key, Cached(response=outcome.response, latency_s=latency, batch=state.id))
                answered += 1
        elif result.resend:
            outcome = RESEND
            resent.append(result)
        elif result.unreadable:
            refused += 1
            outcome = CallError(f"{entry}: batch {state.id}: {result.error}", entry=entry)
        else:
            refused += 1
            outcome = CallError(
                f"{entry}: HTTP {result.status} in batch {state.id}: {result.error}", entry=entry, status=result.status
            )
        yield result.custom_id, outcome
    log.info(
        "gradebench: batch %s of %s collected: %d answered, %d refused, %d sent again one at a time%s",
        state.id,
        entry,
        answered,
        refused,
        len(resent),
        f" at the full price ({resent[0].error}{' ...' if len(resent) > 1 else ''})" if resent else "",
    )


def answer_of(result: LineResult, batch_id: str, latency: float, *, entry: str) -> CallAnswer | CallError:
    """A batch's answer as the transport reads one (keys scrubbed, a completion checked)."""
    assert result.body is not None
    text = scrub(result.body)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed.get("choices"):
        return CallError(f"{entry}: batch {batch_id} answered 200 without choices", entry=entry, status=200)
    if "\\u" in text and has_surrogates(parsed):
        parsed = utf8_safe(parsed)
        text = json.dumps(parsed, ensure_ascii=False)
    return CallAnswer(response=text, latency_s=latency, parsed=parsed, batch=batch_id)
