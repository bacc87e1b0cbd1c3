"""The on-disk call cache: every model call's answer, under the key `gradebench._keys.CallKey` builds.

The key covers the canonical request plus a salt (user salt, input id, role, repeat, call sequence number,
semantic-retry attempt; the contract is in `gradebench._keys`), so repeats stay independent while re-running the same
benchmark is served from disk. Nothing secret enters a value: responses are stored as received (keys scrubbed), never
with their headers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import diskcache

__all__ = ["CallCache", "Cached", "default_cache_dir"]


@dataclass(frozen=True)
class Cached:
    """What the cache holds for one call: the response as received (its text) and what was measured of it."""

    response: str
    """The response body, as text (keys scrubbed)."""
    latency_s: float
    """Time the original request took."""
    header_cost: float | None = None
    """A cost the endpoint reported in a header (LiteLLM's), or None."""


def default_cache_dir() -> Path:
    """``$GRADEBENCH_CACHE``, else ``.gradebench/cache`` under the working directory."""
    return Path(os.environ.get("GRADEBENCH_CACHE") or Path.cwd() / ".gradebench" / "cache")


class CallCache:
    """A diskcache of model responses. Errors are never stored; only successful responses are.

    Nothing is ever evicted (a response is money spent). Writes are gathered and committed together — a transaction
    per write costs more than the rest of a call's bookkeeping — at most `FLUSH_AFTER` of them, never held longer than
    `FLUSH_SECONDS`, and always when a session closes (a stopped race keeps every answer it got).
    """

    FLUSH_AFTER = 32
    """Writes gathered before they are committed together."""
    FLUSH_SECONDS = 1.0
    """The longest a write waits for the others (with real endpoints, writes come seconds apart: each commits)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._store = diskcache.Cache(str(self.directory), eviction_policy="none")
        self._pending: dict[str, tuple[str, float, float | None]] = {}
        self._since = 0.0

    def get(self, key: str) -> Cached | None:
        value = self._pending.get(key) or self._store.get(key)
        return Cached(*value) if value is not None else None

    def set(self, key: str, value: Cached) -> None:
        # a tuple of plain values: the response text is stored once, as received, never re-encoded
        if not self._pending:
            self._since = time.monotonic()
        self._pending[key] = (value.response, value.latency_s, value.header_cost)
        if len(self._pending) >= self.FLUSH_AFTER or time.monotonic() - self._since >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Commit the gathered writes."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        with self._store.transact():
            for key, value in pending.items():
                self._store.set(key, value)

    def __len__(self) -> int:
        self.flush()
        return len(self._store)

    def clear(self) -> None:
        self._pending.clear()
        self._store.clear()

    def close(self) -> None:
        self.flush()
        self._store.close()

    def __repr__(self) -> str:
        return f"CallCache({str(self.directory)!r}, {len(self)} entries)"
