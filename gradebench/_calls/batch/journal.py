"""The batches a cache has submitted and not yet collected, on disk beside the answers: ``<cache>/batches/*.json``.

A batch outlives the process that submitted it (a notebook stopped tonight and run again tomorrow), so its id and
what it asks (each request's ``custom_id`` and cache key) are written down before anything waits on it: a later
process that asks any of those requests again waits for that batch instead of paying for a new one, and stores
every answer it brings under its key. A batch is noted before it is created (no id yet) and again once it has one:
a process that died in between finds it again by what gradebench chose for it (``BatchAPI.find``: OpenAI's tag in
its ``metadata``; Anthropic's size and creation time). The
note goes once the batch's answers are in the cache. One JSON file per batch, written whole (a temporary file
renamed), so a process killed while writing leaves the last whole note.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..._records.keys import short_hash

__all__ = ["Journal", "Submitted", "endpoint_of"]

log = logging.getLogger("gradebench")

JOURNAL_FORMAT = 1
"""Bumped when what a note holds changes (an old note is then set aside, not misread)."""


@dataclass(kw_only=True)
class Submitted:
    """One batch a cache submitted: where, its id once it has one, and what it asks."""

    tag: str
    """gradebench's own name of the batch (its file, and the metadata it was created with)."""
    api: str
    """The batch API (``openai``, ``anthropic``, ``openrouter``)."""
    entry: str
    """The judge entry's name (for people reading the note)."""
    endpoint: str
    """Which entry identity the batch is for (a `short_hash` of it): a note is picked up only by the same model."""
    requests: dict[str, str]
    """Each request's ``custom_id`` and its cache key."""
    batch_id: str | None = None
    """The provider's id of the batch; None while it is being created."""
    submitted_at: float = field(default_factory=time.time)
    """When it was submitted (seconds since the epoch): its answers' latency is counted from here."""

    @staticmethod
    def new(api: str, entry: str, endpoint: str, requests: Mapping[str, str]) -> Submitted:
        return Submitted(
            tag=f"gb-{secrets.token_hex(8)}", api=api, entry=entry, endpoint=endpoint, requests=dict(requests)
        )


def endpoint_of(identity: Mapping[str, Any], api: str) -> str:
    """Who a batch is for: the entry's identity (endpoint, model, routing, key variable) and the batch API."""
    return short_hash("batch", dict(identity), api)


class Journal:
    """The notes of the batches a cache has submitted (see the module)."""

    def __init__(self, directory: Path, *, writable: bool = True):
        self.directory = directory / "batches"
        self.writable = writable
        self._said = False

    def load(self, endpoint: str) -> list[Submitted]:
        """The batches submitted for ``endpoint`` and not yet collected, oldest first."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                raw = json.loads(path.read_text())
                if raw.pop("v", None) != JOURNAL_FORMAT:
                    continue
                note = Submitted(**raw)
            except (OSError, ValueError, TypeError) as exc:
                log.warning("gradebench: the batch note %s cannot be read (%s): left as it is", path, exc)
                continue
            if note.endpoint == endpoint:
                found.append(note)
        return sorted(found, key=lambda n: n.submitted_at)

    def write(self, note: Submitted) -> None:
        """Write (or rewrite) a batch's note whole."""
        if not self.writable:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"{note.tag}.json"
            partial = path.with_suffix(".partial")
            partial.write_text(json.dumps({"v": JOURNAL_FORMAT, **asdict(note)}, sort_keys=True))
            os.replace(partial, path)
        except OSError as exc:
            if not self._said:
                log.warning(
                    "gradebench: batch %s cannot be noted in %s (%s): a process started later will not know of it",
                    note.batch_id or note.tag,
                    self.directory,
                    exc,
                )
                self._said = True

    def drop(self, note: Submitted) -> None:
        """Forget a batch whose answers are in the cache (or that will never answer)."""
        if self.writable:
            (self.directory / f"{note.tag}.json").unlink(missing_ok=True)
