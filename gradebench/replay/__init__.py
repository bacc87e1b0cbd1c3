"""Replay: recorded outputs as catalog entries, served through the real openai client like any provider.

A `Recording` is what models answered to inputs (a parquet, JSONL or CSV file, or a polars DataFrame: ``input``,
``model``, ``output``, and ``prompt``, ``usage``, ``cost``, ``latency_ms`` when recorded). ``gradebench.replay.catalog``
makes a catalog of it: an entry per recorded model, answered from the recording by an endpoint mounted in-process
(`Replay`, as the simulated fleet is mounted), beside any live entries you add, so a race, the judge, the call cache and
the report see providers like any other: race the outputs a production system already logged against a new candidate
without paying for the old calls again. A `RecordedJudge` (scores from another evaluation, keyed to the recorded
outputs they judged) replays as the judge. A request no record answers fails its run (or its verdict) with a 404 that
names the input and the model: never a silent gap, never an invented answer. See the docs page ``replay.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._catalog.catalog import Catalog, Entry
from ._judge import JudgeRecord, RecordedJudge
from ._recording import Record, Recording
from ._service import JUDGE_GRADE, JUDGE_MODEL, Replay, ReplayRequest

__all__ = [
    "JUDGE_GRADE",
    "JUDGE_MODEL",
    "JudgeRecord",
    "Record",
    "RecordedJudge",
    "Recording",
    "Replay",
    "ReplayRequest",
    "catalog",
]


def catalog(
    recording: Recording,
    pick: str,
    *,
    judge: RecordedJudge | Entry,
    grade: str = "replay",
    add: Sequence[Entry] = (),
    prices: Mapping[str, tuple[float, float]] | None = None,
    latency_scale: float = 1.0,
) -> Catalog:
    """The recording as a catalog, mounted in-process: an entry per recorded model in ``grade`` (``pick`` is the
    reference), the entries in ``add`` racing beside them, ``judge`` (a `RecordedJudge`, or a live `Entry`) the
    ceiling. ``Replay(recording, judge=..., latency_scale=...).catalog(pick, ...)`` is the same with the replay kept
    in hand (its ``requests``); see `Replay.catalog` for ``prices`` and `Replay` for ``latency_scale``."""
    return Replay(recording, judge=judge, latency_scale=latency_scale).catalog(
        pick, grade=grade, add=add, prices=prices
    )
