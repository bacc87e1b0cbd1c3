"""A panel of judges: every run judged by each judge, one verdict made of theirs, and their verdicts kept apart.

`gradebench._judge.judge.each_judge` is the one loop over the judges, around the one-judge path: a setup without a
panel asks its judge alone, exactly as before, so a one-judge race makes the same requests, keys and report. With a
panel every judge is asked (at once), and `combine` makes the run's verdict: the mean accuracy and work of the judges,
their calls (so the cost and the budget count every judge), each judge's verdict kept in ``JudgeScore.panel``.

A judge that gives no verdict while another does leaves the run **unjudged**, with a ``judge_error`` that names the
judge that failed and what the others scored: a panel's score is the mean of every judge, and the mean of those that
happened to answer would be a score on another scale (a lenient judge's alone) passing as the panel's. The runs judged
by some judges only are counted in the report's judge headline and in the judges' agreement line; the verdicts the
others gave are kept in ``report.verdicts``.

``report.verdicts`` (`VERDICTS_SCHEMA`) has one row per run and judge of a panel race (empty for a one-judge race,
whose one verdict is the run's own row), and is written to ``verdicts.parquet`` beside the runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from .._base.vocab import Role, SchemaUse, ScorePath
from .._records.codec import frame
from .._records.records import VERDICT_COLUMNS, Call, JudgeScore, Run

__all__ = [
    "PANEL_INCOMPLETE",
    "VERDICTS_FILE",
    "VERDICTS_SCHEMA",
    "combine",
    "panel_label",
    "verdict_rows",
    "verdicts_frame",
    "with_panels",
]

VERDICTS_FILE = "verdicts.parquet"
"""Where a panel race's per-judge verdicts are written beside the runs (a one-judge race writes none)."""
VERDICTS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "entry": pl.String(),
    "input_id": pl.String(),
    "repeat": pl.Int64(),
    **VERDICT_COLUMNS,
}
"""One row per run and judge of a panel race: the run (id, entry, input, repeat) and that judge's verdict, in the
runs frame's verdict columns (``judge_entry`` names the judge)."""
PANEL_INCOMPLETE = "not every judge gave a verdict"
"""How the ``judge_error`` of a run some judges of its panel gave no verdict on begins."""


def panel_label(judges: Iterable[str]) -> str:
    """The judges of a panel as one name: ``sim/oracle + sim/sage`` (a panel verdict's ``judge_entry``)."""
    return " + ".join(judges)


def combine(verdicts: Sequence[JudgeScore]) -> JudgeScore:
    """One verdict of a panel's: the mean accuracy and work (and label-bias gap) of its judges, every judge's calls
    and attempts, each judge's verdict in ``panel``. When a judge gave none the run is unjudged (no score) and its
    error names who failed, why, and what the others scored (see the module)."""
    calls = [c for v in verdicts for c in v.calls]
    answered = [v for v in verdicts if v.score is not None]
    shared: dict[str, Any] = dict(
        judge_entry=panel_label(v.judge_entry for v in verdicts),
        path=_path([v.path for v in answered]),
        schema=_schema([v.schema for v in verdicts]),
        params=dict(verdicts[0].params),
        attempts=sum(v.attempts for v in verdicts),
        calls=calls,
        panel=tuple(verdicts),
    )
    if len(answered) < len(verdicts):
        failed = "; ".join(f"{v.judge_entry} gave none: {v.error}" for v in verdicts if v.score is None)
        scored = ", ".join(f"{v.judge_entry} scored {v.score:g}" for v in answered)
        kept = f"; {scored} (in report.verdicts, not counted: a panel's score is every judge's mean)" if scored else ""
        return JudgeScore(accuracy=None, work=None, error=f"{PANEL_INCOMPLETE}: {failed}{kept}", **shared)
    gaps = [v.swap_gap for v in verdicts if v.swap_gap is not None]
    return JudgeScore(
        accuracy=_mean(v.accuracy for v in verdicts),
        work=_mean(v.work for v in verdicts),
        reason=" | ".join(f"{v.judge_entry}: {v.reason}" for v in verdicts),
        swap_gap=_mean(gaps) if gaps else None,
        **shared,
    )


def _mean(values: Iterable[float | None]) -> float:
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known)


def _path(paths: Sequence[ScorePath | None]) -> ScorePath | None:
    """``schema`` when every judge that answered honoured it, ``fallback`` when one was read from prose."""
    if not paths:
        return None
    return ScorePath.SCHEMA if all(p == ScorePath.SCHEMA for p in paths) else ScorePath.FALLBACK


def _schema(uses: Sequence[SchemaUse | None]) -> SchemaUse | None:
    """What the judges' endpoints did with the schema: the worst of them."""
    for state in (SchemaUse.REJECTED, SchemaUse.IGNORED, SchemaUse.HONOURED):
        if state in uses:
            return state
    return None


# ------------------------------------------------------------------------------------------------ verdicts frame


def verdict_rows(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """The rows of ``report.verdicts``: each judge's verdict on each candidate run a panel judged."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        if run.role is not Role.CANDIDATE or run.verdict is None:
            continue
        where = {"run_id": run.run_id, "entry": run.entry, "input_id": run.input_id, "repeat": run.repeat}
        rows.extend({**where, **one.to_row()} for one in run.verdict.panel)
    return rows


def verdicts_frame(runs: Iterable[Run]) -> pl.DataFrame:
    """``report.verdicts`` of these runs (`VERDICTS_SCHEMA`; empty for a one-judge race)."""
    return frame(verdict_rows(runs), VERDICTS_SCHEMA)


def with_panels(records: Sequence[Run], verdicts: pl.DataFrame, params: Mapping[str, Any], *, source: str) -> list[Run]:
    """Runs read back from parquet with their panel's verdicts (the rows of ``verdicts.parquet``): each judge's
    verdict with its own calls (the run's judge calls of that judge's entry). A row of a run the report lacks, or
    of a run without a verdict, raises a `ValueError` naming ``source``: the two files are of different reports."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in verdicts.iter_rows(named=True):
        by_run.setdefault(row["run_id"], []).append(row)
    out = []
    for run in records:
        rows = by_run.pop(run.run_id, None)
        if rows is None:
            out.append(run)
            continue
        if run.verdict is None:
            raise ValueError(f"{source}: run {run.run_id} has judges' verdicts but no verdict of its own")
        calls = run.verdict.calls
        panel = tuple(JudgeScore.from_row(row, _of(calls, row["judge_entry"]), params) for row in rows)
        out.append(replace(run, verdict=replace(run.verdict, panel=panel)))
    if by_run:
        raise ValueError(f"{source}: verdicts of runs the report does not hold: {sorted(by_run)[:3]}")
    return out


def _of(calls: Sequence[Call], judge: str) -> list[Call]:
    return [c for c in calls if c.entry == judge]
