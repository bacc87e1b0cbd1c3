"""A recorded judge: the scores another evaluation gave recorded outputs, replayed as the blind judge's verdicts.

Its columns are ``input`` and ``model`` (whose recorded output was judged) and either ``score`` (a whole number of
points, 0 to 10) or ``accuracy`` (0 to 7) and ``work`` (0 to 3), the two axes gradebench's judge answers in; ``reason``
is optional. A score is given as the judge answers it: accuracy ``min(score, 7)``, work the rest, so the run's score
is the recorded one. Every problem is a `ValueError` naming the file (or ``<frame>``), the column and the row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ._table import TableError, checked_columns, frame_of, read_table, text, where

__all__ = ["JudgeRecord", "RecordedJudge"]

ACCURACY_POINTS = 7
WORK_POINTS = 3
_COLUMNS = ("input", "model", "score", "accuracy", "work", "reason")


@dataclass(frozen=True, kw_only=True)
class JudgeRecord:
    """One recorded verdict: how another evaluation scored ``model``'s recorded output on ``input``."""

    input: str
    """The input's id."""
    model: str
    """The model whose recorded output was judged."""
    accuracy: int
    """0..7."""
    work: int
    """0..3."""
    reason: str
    """The reason recorded, or one that says the verdict was recorded."""
    row: int
    """Its row in the table (from 1)."""

    @property
    def score(self) -> int:
        """Points of 10: accuracy plus work."""
        return self.accuracy + self.work

    def verdict(self) -> dict[str, Any]:
        """The verdict as the judge answers it."""
        return {"accuracy": self.accuracy, "work": self.work, "reason": self.reason}


class RecordedJudge:
    """Recorded verdicts, checked: ``RecordedJudge(frame)`` or ``RecordedJudge.read(path)`` (parquet, JSONL, CSV).
    Given as a replay's ``judge``, it answers the judge's prompt on a recorded output with that output's verdict."""

    def __init__(self, data: pl.DataFrame | Sequence[Mapping[str, Any]], *, source: str = "<frame>"):
        self.source = source
        """Where it was read from: what its errors name."""
        frame = frame_of(data, source)
        checked_columns(frame, source, ("input", "model"), _COLUMNS[2:])
        has_score = "score" in frame.columns
        if has_score == ("accuracy" in frame.columns or "work" in frame.columns):
            raise TableError(f"{source}: give a score column (0-10) or accuracy (0-7) and work (0-3), not both")
        if not has_score and not {"accuracy", "work"} <= set(frame.columns):
            missing = "work" if "accuracy" in frame.columns else "accuracy"
            raise TableError(f"{source}: missing column {missing!r} (accuracy and work go together)")
        self.records: dict[tuple[str, str], JudgeRecord] = {}
        """The verdicts by (input, model)."""
        for row, raw in enumerate(frame.to_dicts(), start=1):
            made = _judged(source, row, raw)
            first = self.records.setdefault((made.input, made.model), made)
            if first.verdict() != made.verdict():
                raise TableError(
                    f"{source}: rows {first.row} and {row} both score model {made.model!r} on input {made.input!r}, "
                    f"differently: a replayed judge gives one verdict"
                )

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> RecordedJudge:
        """Read and check a file of recorded verdicts."""
        return cls(read_table(path, strings=("input", "model", "reason")), source=str(path))

    def __repr__(self) -> str:
        return f"RecordedJudge({self.source}, {len(self.records)} verdicts)"

    def __len__(self) -> int:
        return len(self.records)

    def get(self, input: str, model: str) -> JudgeRecord | None:
        """The verdict recorded on ``model``'s output for ``input``, or None."""
        return self.records.get((input, model))


def _judged(source: str, row: int, raw: dict[str, Any]) -> JudgeRecord:
    for column in ("input", "model"):
        if raw[column] is None or not str(raw[column]).strip():
            raise TableError(f"{where(source, row, column, raw)}: is empty")
    if "score" in raw:
        score = _points(source, row, raw, "score", ACCURACY_POINTS + WORK_POINTS)
        accuracy = min(score, ACCURACY_POINTS)
        work = score - accuracy
        said = f"recorded score {score} of 10"
    else:
        accuracy = _points(source, row, raw, "accuracy", ACCURACY_POINTS)
        work = _points(source, row, raw, "work", WORK_POINTS)
        said = f"recorded accuracy {accuracy} of 7, work {work} of 3"
    reason = raw.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise TableError(f"{where(source, row, 'reason', raw)}: must be text, got {reason!r}")
    return JudgeRecord(
        input=text(raw["input"]),
        model=str(raw["model"]),
        accuracy=accuracy,
        work=work,
        reason=reason.strip() if reason and reason.strip() else f"A verdict replayed from another evaluation: {said}.",
        row=row,
    )


def _points(source: str, row: int, raw: dict[str, Any], column: str, most: int) -> int:
    value = raw[column]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    whole = isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()
    if not whole or not 0 <= value <= most:
        raise TableError(
            f"{where(source, row, column, raw)}: must be a whole number from 0 to {most}, got {raw[column]!r}"
        )
    return int(value)
