"""How long a refused request waits before it is sent again: what the endpoint asks (``Retry-After``), else a
backoff."""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping

__all__ = ["BACKOFF_FIRST_S", "BACKOFF_MAX_S", "backoff_s", "retry_after_s"]


def retry_after_s(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The seconds a response asks to wait: the longest of ``retry-after-ms`` and ``retry-after`` (seconds, or an
    HTTP date).

    The longest, not the first: a proxy passes on the upstream's precise ``retry-after-ms`` (870) beside its own
    rounded ``Retry-After: 1``, and retrying after the shorter is refused again. None when it asks nothing readable.
    ``now`` is the wall-clock time (``time.time()``) a date is measured from.
    """
    readable = (_header_s(headers, "retry-after-ms", 1000.0), _header_s(headers, "retry-after", 1.0))
    asked = [s for s in readable if s is not None]
    return max(asked) if asked else _date_s(headers.get("retry-after"), now)


def _header_s(headers: Mapping[str, str], name: str, per_second: float) -> float | None:
    """Header ``name`` as a finite number of seconds (at least 0), or None."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        seconds = float(value) / per_second
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _date_s(value: str | None, now: float | None) -> float | None:
    """The seconds until ``value`` read as an HTTP date (at least 0), or None."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a date without a zone is read as such
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


def backoff_s(n: int, rng: random.Random | None = None) -> float:
    """The wait after the ``n``-th 429 (1, 2, ...) that gave no ``Retry-After``: doubling from 0.5 s up to 30 s,
    less up to a quarter at random so waiters do not come back together."""
    base = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2.0 ** min(n - 1, 32))
    return base * (1 - 0.25 * (rng or random).random())
