"""The on-disk call cache: every model call, keyed by the canonical request plus a salt.

The salt (user salt, input id, role, repeat, call sequence number, semantic-retry attempt) keeps repeats independent:
the second repeat of an input, the second call inside one run and a retry after an unusable answer each get a key of
their own, so variance never collapses through the cache, while re-running the same benchmark is served from disk.
Nothing secret enters a key or a value: requests are stored as the JSON body that was sent, never with their headers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache

__all__ = ["CallCache", "Cached", "canonical_json", "default_cache_dir"]

FORMAT = 2
"""Bumped whenever what a key covers or what a value holds changes, so old entries are never misread."""


@dataclass(frozen=True)
class Cached:
    """What the cache holds for one call: the response as received (its text) and what was measured of it."""

    response: str
    """The response body, as text (keys scrubbed)."""
    latency_s: float
    """Time the original request took."""
    header_cost: float | None = None
    """A cost the endpoint reported in a header (LiteLLM's), or None."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


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

    @staticmethod
    def key(entry_identity: dict[str, Any], body: dict[str, Any], salt: dict[str, Any]) -> str:
        """sha256 of the entry identity, the request body as sent and the salt."""
        material = canonical_json({"v": FORMAT, "entry": entry_identity, "body": body, "salt": salt})
        return hashlib.sha256(material.encode()).hexdigest()

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
