"""The verdicts of a report, computed in one place: from the runs' paired scores to the models frame's verdict columns.

`entry_verdicts` makes them in one pass, in this order:

1. the design's bounds: a fixed number of runs tests each candidate entry against the reference entry with the nested
   paired bootstrap (`gradebench._stats.paired.verdicts`); a race to a verdict reads each entry's verdict from the
   units that landed, in draw order (`RaceState.reading`: the group-sequential looks of ``runs="gsd"`` and of
   ``runs="auto"``, its other name). A race stopped early is compared only where every run the plan gave landed: the
   inputs whose runs all landed, or the units of a race to a verdict replayed up to the stop
   (`gradebench._verdict.racestate.landed`);
2. the evidence: a verdict the runs cannot carry is held open, saying why (`gradebench._verdict.evidence`);
3. the negative controls: every verdict is void when the judge took planted wrong answers for right ones
   (`gradebench._verdict.controls`; the check is made once and handed back with the verdicts);
4. the labels: a verdict label-corrected where a person's scores allow it (`gradebench._verdict.corrected`);
5. the endpoint: an entry whose endpoint failed more than half its runs has no quality verdict (``unmeasured``,
   saying why); one that lost fewer says how many (`gradebench._verdict.evidence.Outage`);
6. the gold labels: a judge-only verdict the gold scores contradict is held open, saying so
   (`gradebench._verdict.gold`);
7. a judge-only ``as good`` the controls cannot confirm says, after its reason, that it rests on the judge alone
   (`gradebench._verdict.controls.unconfirmed_verdicts`).

Every step reads the runs as `gradebench._verdict.evidence.measured_runs` gives them: a run the endpoint failed is
left out of the pairs, never scored 0, so an outage never reads as a quality difference.

The report (`gradebench.BenchmarkReport`) asks for them once, keeps them, and joins the frame into ``report.models``
as it is: nothing amends a verdict after this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from .._base.vocab import VerdictBasis
from .._records.codec import frame
from .._records.meta import ReportMeta
from .._stats import paired
from .controls import ControlOutcome, controls_outcome, unconfirmed_verdicts, void_verdicts
from .corrected import with_labels
from .evidence import Evidence, evidence, measured_runs
from .gold import GoldCheck, contradicted, gold_check
from .gsd import RACES
from .label_agreement import AGREEMENT_SCHEMA
from .labels import HumanLabels
from .racestate import RaceState, landed

__all__ = ["VERDICT_COLUMNS", "EntryVerdicts", "entry_verdicts"]

_F, _I, _S = pl.Float64(), pl.Int64(), pl.String()
VERDICT_COLUMNS: dict[str, pl.DataType] = {
    "entry": _S,
    "verdict": _S,
    "margin": _F,
    "mean_diff": _F,
    "lower": _F,
    "upper": _F,
    "p_value": _F,
    "n_inputs": _I,
    "n_pairs": _I,
    "more_runs": _I,
    "verdict_reason": _S,
    "verdict_held": pl.Boolean(),
    "verdict_basis": _S,
    "more_labels": _I,
}
"""The models frame's verdict columns (see `gradebench._report.models.EntrySummary` for each), keyed by entry."""


@dataclass(frozen=True, kw_only=True)
class EntryVerdicts:
    """A report's verdicts against its reference entry, and what they rest on beside their bounds."""

    frame: pl.DataFrame
    """One row per candidate entry in order of first appearance, in `VERDICT_COLUMNS` (the reference entry's row
    untested: its verdict None)."""
    stops: dict[str, str]
    """Why entries stopped receiving runs before a race to a verdict ended (a stopped race replayed); else empty."""
    controls: ControlOutcome
    """What the negative controls say about the judge, and whether that voids the verdicts."""
    evidence: Evidence
    """Whether the judge told runs apart, and which entries were cut off or refused on most runs."""
    agreement: pl.DataFrame
    """The judge against the labels, per entry and over all (`AGREEMENT_SCHEMA`); empty without labels."""
    gold: GoldCheck | None = None
    """What the gold labels say (`gradebench._verdict.gold`); None when the race was not scored against them."""


def entry_verdicts(
    runs: pl.DataFrame,
    summaries: pl.DataFrame,
    meta: ReportMeta,
    *,
    controls: pl.DataFrame,
    labels: HumanLabels | None,
) -> EntryVerdicts:
    """The verdicts of a report (see the module): from its ``runs`` frame, its entries' means (``summaries``: the
    ``entry, score_mean, is_reference`` of each candidate entry, the controls' yardstick), its meta, its frame of
    negative ``controls`` and its ``labels`` (None: judge-only)."""
    check = controls_outcome(controls, runs, summaries, meta)
    found = evidence(runs)
    if not summaries.height:  # no candidate run: nothing to test
        empty = frame([], VERDICT_COLUMNS)
        return EntryVerdicts(
            frame=empty, stops={}, controls=check, evidence=found, agreement=frame([], AGREEMENT_SCHEMA)
        )
    runs = measured_runs(runs)
    bounds, stops = _bounds(runs, meta)
    judged = void_verdicts(_held(bounds, found), check).select(
        "entry",
        "verdict",
        "margin",
        "mean_diff",
        "lower",
        "upper",
        "p_value",
        "n_inputs",
        "n_pairs",
        "more_runs",
        pl.col("reason").alias("verdict_reason"),
        pl.col("held").alias("verdict_held"),
        pl.when(pl.col("verdict").is_not_null()).then(pl.lit(VerdictBasis.JUDGE_ONLY.value)).alias("verdict_basis"),
        pl.lit(None, dtype=_I).alias("more_labels"),
    )
    verdicts, agreement = with_labels(judged, runs, labels, meta, found=found, void=check.void)
    verdicts = _unreached(verdicts, found)
    gold = gold_check(runs, meta.reference_entry, meta.spec.margin)
    verdicts = contradicted(verdicts, gold)
    verdicts = unconfirmed_verdicts(verdicts, check)  # a judge-only "as good" the controls cannot confirm says so
    return EntryVerdicts(frame=verdicts, stops=stops, controls=check, evidence=found, agreement=agreement, gold=gold)


def _bounds(runs: pl.DataFrame, meta: ReportMeta) -> tuple[pl.DataFrame, dict[str, str]]:
    """Each entry's verdict from the design's own bounds (rows of `gradebench._stats.paired.VERDICT_SCHEMA`), and why
    entries stopped before a race to a verdict did."""
    race = RACES.get(meta.spec.design)
    if race is None:
        complete = int(meta.spec.runs) if meta.stopped is not None else None
        return paired.verdicts(runs, meta.reference_entry, margin=meta.spec.margin, complete=complete), {}
    return _race_verdicts(runs, meta, race)


def _race_verdicts(
    runs: pl.DataFrame, meta: ReportMeta, race: type[RaceState[Any]]
) -> tuple[pl.DataFrame, dict[str, str]]:
    """A race to a verdict's verdicts (either design): each entry's reading over the units that landed, in draw order,
    and why entries stopped, for a race stopped early (replayed: see `gradebench._verdict.racestate.replay`)."""
    found = landed(runs, meta, race)
    reference = meta.reference_entry
    rows = []
    for entry in found.entries:
        row: dict[str, Any] = {"entry": entry, "margin": meta.spec.margin}
        if entry != reference:
            read = race.reading(found, entry, meta)
            reason = (paired.unjudged(runs, entry, reference) if not read.paired else None) or read.reason
            if meta.stopped is not None:
                reason += f"; {read.complete}"
            row.update(
                verdict=read.verdict,
                mean_diff=read.mean_diff,
                lower=read.lower,
                upper=read.upper,
                n_inputs=read.n_inputs,
                n_pairs=read.n_pairs,
                reason=reason,
            )
        rows.append(row)
    return frame(rows, paired.VERDICT_SCHEMA), found.stops


def _held(verdicts: pl.DataFrame, found: Evidence) -> pl.DataFrame:
    """The verdicts with those the evidence cannot carry kept open, saying why (`Evidence.hold`)."""
    rows = verdicts.to_dicts()
    for row in rows:
        verdict, reason = found.hold(row["entry"], row["verdict"], row["reason"])
        held = row["verdict"] is not None and bool(found.notes(row["entry"]))
        if held:
            row["more_runs"] = (
                None  # more runs of what the judge cannot tell apart, or of cut-off answers, settle nothing
            )
        row.update(verdict=verdict, reason=reason, held=held if row["verdict"] is not None else None)
    return frame(rows, paired.VERDICT_SCHEMA)


_UNTESTED = (
    "mean_diff",
    "lower",
    "upper",
    "p_value",
    "n_inputs",
    "n_pairs",
    "more_runs",
    "more_labels",
    "verdict_held",
)


def _unreached(verdicts: pl.DataFrame, found: Evidence) -> pl.DataFrame:
    """The verdicts with each entry the endpoint failed on most runs ``unmeasured`` (no verdict, no bounds, the reason
    why), and the runs an entry lost to its endpoint named in its reason."""
    if not found.outages:
        return verdicts
    rows = verdicts.to_dicts()
    for row in rows:
        outage = found.outages.get(row["entry"])
        if outage is None or row["verdict"] is None and not outage.unmeasured:
            continue  # the reference entry keeps no verdict; its lost runs show on its candidates' pairs
        if outage.unmeasured:
            row.update(dict.fromkeys(_UNTESTED), verdict=None, verdict_basis=VerdictBasis.UNMEASURED.value)
            row["verdict_reason"] = outage.reason()
        else:
            row["verdict_reason"] = "; ".join(r for r in (row["verdict_reason"], outage.reason()) if r)
    return frame(rows, dict(verdicts.schema))
