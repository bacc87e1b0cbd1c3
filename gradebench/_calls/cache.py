"""The on-disk call cache: every model call's answer, under the key `gradebench._records.keys.CallKey` builds.

The key covers the canonical request plus a salt (user salt, input id, role, repeat, call sequence number,
semantic-retry attempt; the contract is in `gradebench._records.keys`), so repeats stay independent while re-running
the same
benchmark is served from disk. Nothing secret enters a value: responses are stored as received (keys scrubbed), never
with their headers.

What a user can rely on:

- **Durable within `FLUSH_SECONDS`.** An answer is on disk at most `FLUSH_SECONDS` after it came back (a timer
  commits the writes gathered, so a process killed with ``kill -9`` loses only the answers of its last moments), and at
  once when a session closes (a race that ends, fails or is stopped).
- **Errors that say what to do.** A cache that cannot be opened (not a cache, a corrupt file) raises a `CacheError`
  naming the folder; a read-only one is read, and nothing is written to it (a fully cached race is served from it,
  also while the process that filled it still holds it open); a disk that fills during a race is said once, and the
  race goes on (the report is still made) with the answers it could not store; a cache on a disk full when it is
  opened is opened read-only, saying why, and serves what it holds.
- **One race at a time per benchmark.** `CallCache.hold` keeps two processes from racing the same benchmark on one
  cache at once: the second waits, then is served from the cache, so both pay once and report the same rows. Two
  rejudges of one report with the same judges are held apart the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache

from .._base.errors import CacheError

__all__ = ["CallCache", "Cached", "default_cache_dir"]

log = logging.getLogger("gradebench")


@dataclass(frozen=True)
class Cached:
    """What the cache holds for one call: the response as received (its text) and what was measured of it."""

    response: str
    """The response body, as text (keys scrubbed)."""
    latency_s: float
    """Time the original request took."""
    header_cost: float | None = None
    """A cost the endpoint reported in a header (LiteLLM's), or None."""
    batch: str | None = None
    """The batch that answered it (its id at the provider), or None for an answer to a request sent alone: a batch
    answer is priced at the batch price, on a hit too."""


_WALL = "wall:"
"""Prefix of the keys that hold runs' wall times beside the calls' answers."""


def default_cache_dir() -> Path:
    """``$GRADEBENCH_CACHE``, else ``.gradebench/cache`` under the working directory."""
    return Path(os.environ.get("GRADEBENCH_CACHE") or Path.cwd() / ".gradebench" / "cache")


class _ReadOnly:
    """A diskcache folder opened read-only: what `CallCache` reads when it may not write. Values are decoded by
    diskcache's own `diskcache.Disk`, so they read exactly as the cache stored them.

    sqlite's ``mode=ro`` comes first: it reads the write-ahead log too, where the answers of a cache still open (in
    this process or another) wait for their checkpoint. ``immutable`` — which reads the database file alone — is the
    fallback for a folder where even the log's index cannot be opened (a closed cache has no log left to miss)."""

    eviction_policy = "none"

    def __init__(self, directory: Path):
        self._disk = diskcache.Disk(str(directory))
        self._db = _connect_read_only(directory / "cache.db")

    def get(self, key: str) -> Any:
        row = self._db.execute("SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1", (key,)).fetchone()
        return None if row is None else self._disk.fetch(row[0], row[1], row[2], False)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM Cache").fetchone()[0])

    def close(self) -> None:
        self._db.close()


def _connect_read_only(db: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        con.execute("SELECT COUNT(*) FROM Cache").fetchone()  # the log is opened on the first read
        return con
    except sqlite3.OperationalError:
        return sqlite3.connect(f"file:{db}?immutable=1", uri=True, check_same_thread=False)


_SQLITE_MEMORY = {"sqlite_mmap_size": 0, "sqlite_cache_size": 2**11}
"""sqlite's own memory for the cache: no memory map and 8 MB of pages (diskcache's defaults are a 64 MB map and
32 MB of pages, which a large race's cache fills: a process racing 20,000 runs peaked 50 MB higher for them). A call is
one lookup and one write; the operating system's page cache serves the reads just as well."""


class CallCache:
    """A diskcache of model responses. Errors are never stored; only successful responses are.

    Nothing is ever evicted (a response is money spent). Writes are gathered and committed together — a transaction
    per write costs more than the rest of a call's bookkeeping — at most `FLUSH_AFTER` of them, never held longer than
    `FLUSH_SECONDS` (a timer on the running event loop commits them), and always when a session closes.
    """

    FLUSH_AFTER = 512
    """Writes gathered before they are committed together (a transaction costs about as much as twenty writes, so
    a race answering fast commits a few hundred at a time; `FLUSH_SECONDS` bounds how long any of them waits)."""
    FLUSH_SECONDS = 0.2
    """The longest an answer waits to be on disk (with real endpoints, writes come seconds apart: each commits)."""
    HOLD_POLL_S = 0.1
    """How often a race waiting for another process's race on the same benchmark looks again."""

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.read_only = False
        """True when the folder may not be written: answers are read from it, none is stored."""
        self._store: Any = self._open()
        self._pending: dict[str, Any] = {}
        self._since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._refused = False  # the disk refused a write: said once

    def _open(self) -> Any:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # cull_limit=0: nothing is ever evicted and nothing expires, so diskcache's look for expired keys on every
            # write (a query each) finds nothing, always
            return diskcache.Cache(str(self.directory), eviction_policy="none", cull_limit=0, **_SQLITE_MEMORY)
        except (sqlite3.OperationalError, PermissionError, OSError) as exc:
            if (self.directory / "cache.db").is_file() and _disk_full(exc):
                self.read_only = True
                log.warning(
                    "the cache at %s cannot be written: the disk is full (%s); answers are read from it, none is "
                    "stored — free some space so a rerun need not pay for the new ones again",
                    self.directory,
                    exc,
                )
                return self._read_only(exc)
            if (self.directory / "cache.db").is_file() and _read_only_folder(self.directory, exc):
                self.read_only = True
                log.warning("the cache at %s is read-only: answers are read from it, none is stored", self.directory)
                return self._read_only(exc)
            raise CacheError(
                f"{self.directory}: the cache cannot be opened ({exc}); give a folder gradebench may write "
                "(Benchmark(cache=...) or GRADEBENCH_CACHE)",
                path=str(self.directory),
            ) from None
        except sqlite3.DatabaseError as exc:
            raise CacheError(
                f"{self.directory}: this is not a readable gradebench cache ({exc}); move the folder aside (or delete "
                "it) to start a fresh cache, or point Benchmark(cache=...) or GRADEBENCH_CACHE elsewhere",
                path=str(self.directory),
            ) from None

    def _read_only(self, cause: BaseException) -> _ReadOnly:
        try:
            return _ReadOnly(self.directory)
        except sqlite3.Error as exc:
            raise CacheError(
                f"{self.directory}: the read-only cache cannot be read ({exc}, after {cause})", path=str(self.directory)
            ) from None

    def get(self, key: str) -> Cached | None:
        value = self._pending.get(key) or self._store.get(key)
        return Cached(*value) if value is not None else None

    def set(self, key: str, value: Cached) -> None:
        # a tuple of plain values: the response text is stored once, as received, never re-encoded; a batch's id
        # only where there is one, so an answer to a request sent alone is stored as it always was
        fields = (value.response, value.latency_s, value.header_cost)
        self._put(key, fields if value.batch is None else (*fields, value.batch))

    def get_wall(self, key: str) -> float | None:
        """The wall time a run took when it was made (see `set_wall`), or None."""
        value = self._pending.get(_WALL + key) or self._store.get(_WALL + key)
        return float(value) if isinstance(value, int | float) else None

    def set_wall(self, key: str, seconds: float) -> None:
        """Keep the wall time of a run made now, so a rerun served from the cache reports it as it reports its cost."""
        self._put(_WALL + key, float(seconds))

    def _put(self, key: str, value: Any) -> None:
        if self.read_only:
            return
        if not self._pending:
            self._since = time.monotonic()
            self._arm()
        self._pending[key] = value
        if len(self._pending) >= self.FLUSH_AFTER or time.monotonic() - self._since >= self.FLUSH_SECONDS:
            self.flush()

    def _arm(self) -> None:
        """Commit within `FLUSH_SECONDS` even if no other answer comes (a process killed later keeps this one)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # used outside an event loop: the next write, a flush or close commits
        if self._timer is None or self._timer_loop is not loop:  # a race's loop, not an earlier race's
            self._timer, self._timer_loop = loop.call_later(self.FLUSH_SECONDS, self.flush), loop

    def flush(self) -> None:
        """Commit the gathered writes. A disk that refuses them (full, or gone read-only) is said once; the race goes
        on with the answers it has."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        try:
            with self._store.transact():
                for key, value in pending.items():
                    self._store.set(key, value)
        except (sqlite3.Error, OSError) as exc:
            if not self._refused:
                log.warning(
                    "the cache at %s could not store %d answers (%s): they are used in this race but not kept; "
                    "free some space (or give another cache) so a rerun need not pay for them again",
                    self.directory,
                    len(pending),
                    exc,
                )
            self._refused = True

    @contextlib.asynccontextmanager
    async def hold(self, name: str, *, doing: str | None = None) -> AsyncIterator[None]:
        """Hold this cache for one race of ``name`` (a benchmark id) against other processes: a second race of the
        same benchmark on the same cache waits for the first, then reads its answers instead of paying again.
        ``doing`` names other work held the same way (a rejudge: ``name`` then keys its report and judges), for the
        line a waiting process writes."""
        lock = self._lock_file(name)
        if lock is None:
            yield
            return
        import fcntl

        try:
            waited = False
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waited:
                        log.warning(
                            "another process is %s on the cache at %s: waiting for it (its answers are then free here)",
                            doing or f"racing benchmark {name}",
                            self.directory,
                        )
                        waited = True
                    await asyncio.sleep(self.HOLD_POLL_S)
            yield
        finally:
            lock.close()  # closing the file releases the lock

    def _lock_file(self, name: str) -> Any:
        if self.read_only or os.name != "posix":
            return None  # nothing is written, so nothing to keep apart (and no flock off POSIX)
        folder = self.directory / "locks"
        try:
            folder.mkdir(exist_ok=True)
            return open(folder / f"{name}.lock", "a")  # held open for the race; hold closes it
        except OSError:
            return None

    def __len__(self) -> int:
        self.flush()
        return len(self._store)

    def clear(self) -> None:
        self._pending.clear()
        if not self.read_only:
            self._store.clear()

    def close(self) -> None:
        self.flush()
        self._store.close()

    def __repr__(self) -> str:
        return f"CallCache({str(self.directory)!r}, {len(self)} entries{', read-only' if self.read_only else ''})"


def _read_only_folder(directory: Path, exc: BaseException) -> bool:
    """Whether a failure to open a cache folder is that it may not be written (else it is another problem)."""
    if "readonly" in str(exc):
        return True
    return not (os.access(directory, os.W_OK) and os.access(directory / "cache.db", os.W_OK))


_SQLITE_FULL = 13
"""sqlite's result code for a write refused because the disk (or the database's size limit) is full."""


def _disk_full(exc: BaseException) -> bool:
    """Whether a failure to open a cache folder is that its disk is full (the cache is still there to be read)."""
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC
