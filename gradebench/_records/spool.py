"""Where the bodies of a race's calls live while the race and its report are in hand: a file, not the heap.

A call keeps its request and response bodies (a judge's request holds both transcripts), and a race of 200,000 runs
holds 600,000 of them: kept in memory, they alone would grow a process by gigabytes. So a body of `SPOOL_FROM`
bytes or more is written to the process's `Spool` — an unlinked temporary file that disappears with the process, or
sooner, once no call holds a body in it (`ROTATE_AT`) — and the call holds a `Spooled` handle (where the bytes are)
that reads them back on demand from the page cache. The last
`Spool.TAIL` bytes are kept in memory before they are written in one go, so a body costs an append, not a system call.

A handle pickles as its bytes, so a call sent to another process (or stored) carries its body, not a pointer into
this process's file. A child made by ``fork`` writes its own spool: the parent's file is only ever appended to by the
parent. When the spool cannot be written (a full disk), bodies stay in memory and the log says so once: a race never
fails because its transcripts could not leave the heap.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from typing import Any

__all__ = ["ROTATE_AT", "SPOOL_FROM", "Packed", "Spool", "Spooled", "body_bytes", "keep", "spool"]

log = logging.getLogger("gradebench")

SPOOL_FROM = 256
"""Bodies of this many bytes or more leave the heap; a shorter one costs less kept than its handle saves."""


class Spool:
    """An append-only store of bytes in an unlinked temporary file (in ``directory``; the system's temp dir by
    default, ``TMPDIR``), its last `TAIL` bytes in memory."""

    TAIL = 1 << 20
    """Bytes kept in memory before they are written to the file in one write."""

    def __init__(self, directory: str | None = None):
        self._written = 0  # bytes in the file; the tail starts there
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._broken: OSError | None = None
        self._where = directory or tempfile.gettempdir()
        try:
            self._file: Any = tempfile.TemporaryFile(prefix="gradebench-spool-", dir=directory)
        except OSError as exc:  # no temp folder to write: every body stays in memory, as said once
            self._file = None
            self._fail(exc)
        else:
            self._fd = self._file.fileno()

    def put(self, data: bytes) -> Spooled | bytes:
        """Keep ``data``: a handle to it, or ``data`` itself once the file has failed."""
        if self._broken is not None or len(data) > 0xFFFFFFFF:  # a handle holds a length below 4 GiB
            return data
        with self._lock:
            offset = self._written + len(self._tail)
            self._tail += data
            if len(self._tail) >= self.TAIL:
                self._flush()
        return Spooled(self, offset, len(data))

    def read(self, offset: int, length: int) -> bytes:
        """The ``length`` bytes kept at ``offset``."""
        if offset < self._written:  # on disk: no lock needed, the file below _written never changes
            return os.pread(self._fd, length, offset)
        with self._lock:
            if offset >= self._written:
                start = offset - self._written
                return bytes(self._tail[start : start + length])
        return os.pread(self._fd, length, offset)

    @property
    def writable(self) -> bool:
        """Whether bodies still go to the file (False once it failed: they stay in memory)."""
        return self._broken is None

    @property
    def size(self) -> int:
        """Bytes kept so far (on disk and in the tail)."""
        return self._written + len(self._tail)

    def _flush(self) -> None:
        try:
            done = 0
            view = memoryview(self._tail)
            while done < len(view):
                done += os.pwrite(self._fd, view[done:], self._written + done)
        except OSError as exc:  # the tail stays in memory and readable; later bodies are kept as bytes
            self._fail(exc)
            return
        self._written += len(self._tail)
        self._tail = bytearray()

    def _fail(self, exc: OSError) -> None:
        self._broken = exc
        log.warning(
            "cannot keep call bodies in a temporary file in %s (%s): they stay in memory, so a large race grows "
            "the process; set TMPDIR to a folder with room",
            self._where,
            exc,
        )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Spooled:
    """A body kept in a `Spool`: its bytes on demand (`body_bytes`). Equal to another body with the same bytes."""

    __slots__ = ("_span", "_spool")

    def __init__(self, store: Spool, offset: int, length: int):
        # one int for both (a race keeps a handle per body: two ints cost 56 bytes, one 32)
        self._spool, self._span = store, offset << 32 | length

    def bytes(self) -> bytes:
        return self._spool.read(self._span >> 32, self._span & 0xFFFFFFFF)

    def __len__(self) -> int:
        return self._span & 0xFFFFFFFF

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Spooled | bytes):
            return body_bytes(other) == self.bytes()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.bytes())

    def __reduce__(self) -> tuple[Any, ...]:
        return (bytes, (self.bytes(),))  # another process gets the bytes, never an offset into this one's file

    def __repr__(self) -> str:
        return f"Spooled({len(self)} bytes at {self._span >> 32})"


Packed = bytes | Spooled
"""A body as a call keeps it: its packed bytes, in memory or spooled."""

ROTATE_AT = 256 << 20
"""Bytes a spool file takes before the next bodies go to a new one. A file lives as long as a handle into it does
(each `Spooled` holds its `Spool`), so the bodies of reports let go of give their disk back: a notebook kernel that
races all day does not fill its temp folder."""

_spools: dict[int, Spool] = {}  # the current one per process (a forked child must not append to its parent's file)
_spools_lock = threading.Lock()


def spool() -> Spool:
    """This process's current spool, opened on first use and anew every `ROTATE_AT` bytes."""
    pid = os.getpid()
    found = _spools.get(pid)
    if found is None or found.size >= ROTATE_AT:
        with _spools_lock:
            found = _spools.get(pid)
            if found is None or found.size >= ROTATE_AT:
                found = _spools[pid] = Spool()
    return found


def keep(data: bytes) -> Packed:
    """``data`` as a call keeps it: spooled from `SPOOL_FROM` bytes, else itself."""
    return spool().put(data) if len(data) >= SPOOL_FROM else data


def body_bytes(packed: Packed) -> bytes:
    return packed.bytes() if isinstance(packed, Spooled) else packed
