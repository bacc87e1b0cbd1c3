"""What a judge-only verdict is worth on this job, and how many labels would confirm or overturn it: the lines a
report leads with.

Without labels, every verdict rests on the judge alone, and nothing planted can confirm an ``as good``
(`gradebench._verdict.controls`). The report then leads with what it can say of the judge on this job: how lenient
the negative controls would let it be (against the margin), whether it shares a family with an entry (judges favour
their own family's answers), how far it agreed with a person's labels of an earlier report of the same job (when one
is found beside it: `EarlierLabels`), and how many labels a side would likely settle each verdict
(`gradebench._stats.label_plan.planned_labels`: from the judge-only difference and its spread, no more than the
labels alone would need) — at least `MIN_LABELS`, the number a corrected verdict is acted on at. The entry the
recommendation turns on (the cheapest the judge alone calls as good, or failing that the cheapest still
inconclusive) leads: ``report.labels_needed`` is its number.

With labels, the lines say for each verdict whether the labels confirmed the judge-only verdict (the corrected
verdict settled the same way), overturned it (settled the other way, or no longer as good), or left it open and what
would settle it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .._base.vocab import Role, VerdictBasis
from .._records.meta import ReportMeta
from .._stats.label_plan import NO_PLAN, planned_labels
from .._stats.paired import AS_GOOD, INCONCLUSIVE
from .._stats.ppi import MIN_LABELS
from .controls import ControlOutcome
from .evidence import measured_runs
from .label_agreement import ALL_ENTRIES, interval_text
from .labels import labellable

__all__ = ["WORTH_TITLE", "EarlierLabels", "JudgeWorth", "Needed", "judge_worth", "plan_labels"]

WORTH_TITLE = "what the judge-only verdicts are worth on this job (no labels yet):"
"""The first line of the lead block of a report without labels."""
LABELLED_TITLE = "what your labels say of the judge-only verdicts:"
"""The first line of the lead block of a report with labels."""
PANEL = 'gb.widgets.LabelPanel(report, "labels.parquet", order="active")'
"""How to ask for the labels (said once in the lead block)."""


@dataclass(frozen=True, kw_only=True)
class EarlierLabels:
    """A person's labels of an earlier report of the same job: how far the judge agreed with them then."""

    source: str
    """Where they were found (the labels file)."""
    labels: int
    """Labels the figures rest on."""
    kappa: float | None = None
    kappa_lo: float | None = None
    kappa_hi: float | None = None
    bias: float | None = None
    """Mean judge − person, in points."""
    bias_lo: float | None = None
    bias_hi: float | None = None
    agreement: str | None = None
    """The word for κ (``very well`` … ``no better than chance``), or None."""
    unreadable: str | None = None
    """Why the earlier report or its labels could not be read (None: they were)."""

    @classmethod
    def from_row(cls, row: dict, source: str) -> EarlierLabels:
        """From a report's agreement row over every entry (`ALL_ENTRIES`)."""
        keys = ("kappa", "kappa_lo", "kappa_hi", "bias", "bias_lo", "bias_hi", "agreement")
        return cls(source=source, labels=int(row["labels"] or 0), **{k: row[k] for k in keys})

    def text(self) -> str:
        if self.unreadable is not None:
            return f"earlier labels of this job in {self.source} could not be read: {self.unreadable}"
        if self.kappa is None:
            return f"earlier labels of this job ({self.labels}, {self.source}): κ could not be measured"
        bias = "" if self.bias is None else f", bias {self.bias:+.2f} {interval_text(self.bias_lo, self.bias_hi)}"
        word = f"agreed {self.agreement}: " if self.agreement else ""
        return (
            f"earlier labels of this job: the judge {word}κ {self.kappa:.2f} "
            f"{interval_text(self.kappa_lo, self.kappa_hi)}{bias.replace('-', '−')} on {self.labels} labels "
            f"({self.source})"
        )


@dataclass(frozen=True, kw_only=True)
class Needed:
    """How many labels a side would likely settle one entry's label-corrected verdict, planned without labels."""

    entry: str
    """The entry tested against the reference entry."""
    verdict: str
    """Its judge-only verdict."""
    labels: int | None
    """Labels a side (at least `MIN_LABELS`, at most each side's runs); None: labelling every run would likely not
    settle it."""
    runs: tuple[int, int]
    """Runs a person could label: the entry's and the reference entry's (on the paired inputs)."""

    def text(self, reference: str) -> str:
        if self.labels is None:
            return f"{self.entry} ({self.verdict}): labelling every run would likely not settle it: more runs would"
        sides = [min(self.labels, n) for n in self.runs]
        every = " (every run)" if any(s < self.labels for s in sides) or sides == list(self.runs) else ""
        return f"{self.entry} ({self.verdict}): {sides[0]} of its runs and {sides[1]} of {reference}'s{every}"


@dataclass(frozen=True, kw_only=True)
class JudgeWorth:
    """The lead block of a report: what the judge-only verdicts are worth, and the labels that would settle them."""

    labelled: bool
    """The report has labels (the block says what they did)."""
    lines: tuple[str, ...]
    """The block, title first."""
    needed: tuple[Needed, ...]
    """Per tested entry, the planned labels (empty when the report has labels)."""
    pivot: str | None
    """The entry the recommendation turns on, or None."""

    @property
    def labels_needed(self) -> int | None:
        """Labels a side that would likely settle the verdict the recommendation turns on (None: no such entry, the
        report has labels, or labelling every run would not settle it)."""
        found = next((n for n in self.needed if n.entry == self.pivot), None)
        return None if found is None else found.labels


def plan_labels(runs: pl.DataFrame, entry: str, meta: ReportMeta, verdict: str) -> Needed | None:
    """``entry``'s planned labels a side against the reference entry (module docstring), its judge-only ``verdict``
    said beside; None with fewer than two paired inputs."""
    measured = measured_runs(runs).filter(pl.col("role") == Role.CANDIDATE)
    reference = meta.reference_entry
    sides = []
    for name in (entry, reference):
        # a failed run counts 0, as in every verdict; one the judge gave no score is left out
        usable = ~pl.col("ok").fill_null(False) | pl.col("score").is_not_null()
        part = measured.filter((pl.col("entry") == name) & usable).with_columns(
            labellable().alias("_can"), pl.when(pl.col("ok")).then("score").otherwise(0.0).alias("score")
        )
        sides.append({i: g for (i,), g in part.partition_by("input_id", as_dict=True).items()} if part.height else {})
    inputs = sorted(set(sides[0]) & set(sides[1]))
    if len(inputs) < 2:
        return None
    width = max(sides[k][i].height for k in (0, 1) for i in inputs)
    arrays = []
    for side in sides:
        judge, can = np.full((1, len(inputs), width), np.nan), np.zeros((1, len(inputs), width), dtype=bool)
        for row, i in enumerate(inputs):
            scores = side[i]["score"].to_numpy().astype(float)
            judge[0, row, : len(scores)] = scores
            can[0, row, : len(scores)] = side[i]["_can"].to_numpy()
        arrays += [judge, can]
    judge_c, can_c, judge_r, can_r = arrays
    planned = int(planned_labels(judge_c, can_c, judge_r, can_r, meta.spec.margin)[0])
    counts = (int(can_c.sum()), int(can_r.sum()))
    labels = None if planned == NO_PLAN else max(planned, MIN_LABELS)
    return Needed(entry=entry, verdict=verdict, labels=labels, runs=counts)


def _pivot(models: pl.DataFrame, meta: ReportMeta, verdict: str) -> str | None:
    """The entry the recommendation turns on: the cheapest cheaper entry whose (judge-only) ``verdict`` column says
    as good, else the cheapest still inconclusive; None when neither."""
    ref = models.filter(pl.col("entry") == meta.reference_entry)
    ref_cost = ref["cost_per_run"][0] if ref.height else None
    tested = models.filter(pl.col(verdict).is_not_null() & (pl.col("entry") != meta.reference_entry))
    if ref_cost is not None:
        tested = tested.filter(pl.col("cost_per_run").is_null() | (pl.col("cost_per_run") < ref_cost))
    tested = tested.sort("cost_per_run", nulls_last=True, maintain_order=True)
    for wanted in (AS_GOOD, INCONCLUSIVE):
        found = tested.filter(pl.col(verdict) == wanted)
        if found.height:
            return str(found["entry"][0])
    return None


def _controls_line(check: ControlOutcome) -> str:
    """How lenient the negative controls would let the judge be, against the margin."""
    margin = f"{check.margin:g}"
    if check.void:
        return "the negative controls void the judge's verdicts: it took planted wrong answers for right ones"
    if check.unnoticed is not None and check.unnoticed > check.margin:
        return (
            f"the negative controls would miss leniency under ~{check.unnoticed:.1f} points on wrong answers, more "
            f"than the margin {margin}: they cannot confirm an as good"
        )
    if check.unnoticed is not None:
        return (
            f"the negative controls would miss leniency under ~{check.unnoticed:.1f} points on wrong answers (the "
            f"margin {margin}); they cannot show how lenient the judge already is"
        )
    return "no negative control measured how lenient the judge is on wrong answers"


def _family_line(meta: ReportMeta) -> str:
    """Whether a judge shares its family with an entry raced (judges favour their own family's answers)."""
    families, said = meta.families, []
    entries = list(dict.fromkeys([*([meta.reference_entry] if meta.reference_entry else []), *meta.candidates]))
    for judge in meta.judges:
        family = families.get(judge)
        if family is None:
            said.append(f"the judge {judge}'s family is unknown: nothing says whether it favours an entry's answers")
            continue
        same = [e for e in entries if e == judge or families.get(e) == family]
        unknown = [e for e in entries if e not in families]
        if same:
            said.append(
                f"the judge {judge} is of family {family}, as {', '.join(same)}: their scores may be inflated "
                "(the judge_family diagnostic)"
            )
        else:
            tail = f" (the family of {', '.join(unknown)} unknown)" if unknown else ""
            said.append(f"the judge {judge} (family {family}) shares no family with an entry raced{tail}")
    return "; ".join(said) or "the judge is not known: nothing says whether it favours an entry's answers"


def judge_worth(
    runs: pl.DataFrame,
    models: pl.DataFrame,
    meta: ReportMeta,
    check: ControlOutcome,
    agreement: pl.DataFrame,
    earlier: EarlierLabels | None = None,
) -> JudgeWorth | None:
    """The lead block (module docstring) of a report: its runs, models frame, meta, negative controls and label
    agreement (empty without labels); None when no entry was tested against the reference entry, or the race ran
    to a verdict (its verdicts cannot be label-corrected)."""
    tested = models.filter(pl.col("verdict").is_not_null())
    if not tested.height or meta.spec.design.to_verdict:
        return None
    if agreement.height:
        return _labelled(tested, agreement, meta)
    needed = []
    for entry, verdict, basis in tested.select("entry", "verdict", "verdict_basis").iter_rows():
        if basis != VerdictBasis.UNMEASURED and (plan := plan_labels(runs, entry, meta, verdict)) is not None:
            needed.append(plan)
    pivot = _pivot(models, meta, "verdict")
    lines = [WORTH_TITLE, f"  {_controls_line(check)}", f"  {_family_line(meta)}"]
    lines.append(f"  {earlier.text()}" if earlier is not None else "  no earlier labels of this job were found")
    reference = meta.reference_entry
    lead = next((n for n in needed if n.entry == pivot), None)
    others = [n for n in needed if n.entry != pivot]
    if lead is not None:
        lines.append(f"  to confirm or overturn the recommendation, label {lead.text(reference)}, asked by {PANEL}")
    if others:
        lines.append(
            f"  {'the other verdicts' if lead else 'to settle the verdicts'}: "
            + "; ".join(n.text(reference) for n in others)
        )
    lines.append(
        "  (labels a side at which the label-corrected verdict would settle with probability ~0.8 if the judge's Δ "
        f"holds, at least the {MIN_LABELS} a verdict is acted on at: docs/labels.md)"
    )
    return JudgeWorth(labelled=False, lines=tuple(lines), needed=tuple(needed), pivot=pivot)


def _labelled(tested: pl.DataFrame, agreement: pl.DataFrame, meta: ReportMeta) -> JudgeWorth:
    """The lead block of a report with labels: per tested entry, confirmed, settled (where the judge alone was
    inconclusive), overturned, still open, or not yet corrected."""
    said = {r["entry"]: r for r in agreement.iter_rows(named=True)}
    lines = [LABELLED_TITLE]
    for row in tested.iter_rows(named=True):
        own = said.get(row["entry"])
        if own is None or row["verdict_basis"] == VerdictBasis.UNMEASURED:
            continue
        alone, now = own["judge_verdict"], row["verdict"]
        if row["verdict_basis"] != VerdictBasis.LABEL_CORRECTED:
            lines.append(f"  {row['entry']}: not yet: {own['correction']} (the judge alone: {alone})")
        elif now == INCONCLUSIVE:
            lines.append(f"  {row['entry']}: open: {own['settle'] or 'not settled'} (the judge alone: {alone})")
        elif now == alone:
            lines.append(f"  {row['entry']}: confirmed: {now} on your labels, as the judge alone said")
        elif alone == INCONCLUSIVE:
            lines.append(f"  {row['entry']}: settled: {now} on your labels, where the judge alone was inconclusive")
        else:
            lines.append(f"  {row['entry']}: overturned: {now} on your labels; the judge alone said {alone}")
    every = said.get(ALL_ENTRIES)
    if every is not None and every["kappa"] is not None:
        lines.append(f"  the judge against all {every['labels']} labels: {every['sentence']}")
    return JudgeWorth(labelled=True, lines=tuple(lines), needed=(), pivot=_pivot_labelled(tested, said, meta))


def _pivot_labelled(tested: pl.DataFrame, said: dict, meta: ReportMeta) -> str | None:
    """`_pivot` on the judge-only verdicts a labelled report keeps in its agreement rows."""
    alone = [said[e]["judge_verdict"] if e in said else None for e in tested["entry"]]
    return _pivot(tested.with_columns(pl.Series("_judge", alone, dtype=pl.String())), meta, "_judge")
