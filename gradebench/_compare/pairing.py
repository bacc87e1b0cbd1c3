"""Two races' runs set side by side, entry by entry: which inputs each entry is compared on, which after runs are
the before race's own (the same salt, from the cache: the same samples, which can show no change), and each entry's
`EntryChange` — its paired change in score, among finished runs, in failures, and its cost and latency.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from .._base.vocab import Design, Role
from .._report.report import BenchmarkReport
from .._stats.paired import plural
from .stats import Change, paired_change, per_input
from .terms import WARN, Difference

__all__ = [
    "CHANGED",
    "MIN_INPUTS",
    "NOT_JUDGED",
    "NOT_REASKED",
    "NO_CHANGE",
    "ONLY_AFTER",
    "ONLY_BEFORE",
    "TOO_FEW",
    "EntryChange",
    "Pairing",
    "alone",
]

MIN_INPUTS = 12
"""Fewest inputs a ``changed`` rests on. On a simulation of unchanged models (five entries, fresh salts, 600 to 1,500
comparisons each), a false ``changed`` on some entry came up in 10–11% of comparisons on 8 inputs, 8% on 10–12,
6% on 16 and 4.5% on 26 (target 5%): a bootstrap over fewer inputs is too sure of its tails."""

CHANGED: Final = "changed"
NO_CHANGE: Final = "no change detected"
TOO_FEW: Final = "too few inputs"
NOT_JUDGED: Final = "not judged"
NOT_REASKED: Final = "not re-asked"
ONLY_BEFORE: Final = "only before"
ONLY_AFTER: Final = "only after"


@dataclass(frozen=True, kw_only=True)
class EntryChange:
    """One entry of a comparison (a row of ``Comparison.entries``): its change in score, failures, cost and latency."""

    entry: str
    """The catalog entry."""
    status: str
    """``changed``, ``no change detected``, ``too few inputs``, ``not judged``, ``not re-asked``, ``only before``
    or ``only after``."""
    is_reference: bool
    """The entry is the reference entry of both races: its transcripts are every score's yardstick."""
    n_inputs: int
    """Inputs compared: raced in both with the same content, every run landed, a score on both sides."""
    runs_before: int
    """Its runs compared from the before race."""
    runs_after: int
    """Its runs compared from the after race."""
    score_before: float | None
    """Mean score before over the inputs compared (a failed run counts 0)."""
    score_after: float | None
    """Mean score after over the inputs compared."""
    change: float | None
    """Mean over the inputs compared of (after − before): what ``status`` rests on."""
    lo: float | None
    """Lower end of its interval at ``level``."""
    hi: float | None
    """Upper end of its interval at ``level``."""
    level: float | None
    """Confidence level of this entry's intervals (the family's level spread over the entries compared)."""
    finished_change: float | None
    """The change in score among the runs that finished only (failures left out)."""
    finished_lo: float | None
    """Lower end of its interval."""
    finished_hi: float | None
    """Upper end of its interval."""
    failed_before: float | None
    """Share of the runs compared that failed, before."""
    failed_after: float | None
    """Share of the runs compared that failed, after."""
    failed_change: float | None
    """Paired change in the share failed (after − before)."""
    failed_lo: float | None
    """Lower end of its interval."""
    failed_hi: float | None
    """Upper end of its interval."""
    failures_changed: bool
    """The failure rate changed (its interval leaves out 0): said apart from the score."""
    cost_before: float | None
    """Cost per run before (failed runs included); None when a run's cost is unknown."""
    cost_after: float | None
    """Cost per run after."""
    latency_before: float | None
    """Mean model-call latency of a finished run before, seconds."""
    latency_after: float | None
    """The same after."""
    currency: str | None
    """Currency of the costs."""
    common_error: str | None
    """The most common error of its failed runs (after; before when failures fell), cut to a line."""
    unjudged: int
    """Runs left out because the judge gave them no score (both sides)."""
    same_runs: int
    """Runs of the after race that are the before race's own (same salt, from the cache)."""
    causes: list[str]
    """What else could explain a change, besides the model (the judge, the catalog, failures, the reference)."""
    sentence: str
    """The entry's change in one sentence."""

    @property
    def cost_ratio(self) -> float | None:
        """Cost per run after / before."""
        return _ratio(self.cost_after, self.cost_before)

    @property
    def latency_ratio(self) -> float | None:
        """Latency after / before."""
        return _ratio(self.latency_after, self.latency_before)


def _ratio(after: float | None, before: float | None) -> float | None:
    return None if after is None or not before else after / before


def alone(entry: str, status: str, b: BenchmarkReport, a: BenchmarkReport) -> EntryChange:
    side = b if status == ONLY_BEFORE else a
    runs = side.runs.filter((pl.col("role") == Role.CANDIDATE) & (pl.col("entry") == entry))
    other = a if status == ONLY_BEFORE else b
    why = other.meta.skipped.get(entry)
    return _empty(
        entry,
        status,
        runs_before=runs.height if status == ONLY_BEFORE else 0,
        runs_after=runs.height if status == ONLY_AFTER else 0,
        causes=[why] if why else [],
    )


def _empty(entry: str, status: str, **fields: Any) -> EntryChange:
    """A row with nothing measured (an entry raced on one side only, or never re-asked)."""
    nothing: dict[str, Any] = {
        f.name: None
        for f in dataclasses.fields(EntryChange)
        if f.name not in ("entry", "status", "is_reference", "failures_changed", "causes", "sentence")
    }
    made: dict[str, Any] = {**nothing, "n_inputs": 0, "runs_before": 0, "runs_after": 0, "unjudged": 0, "same_runs": 0}
    made.update({"is_reference": False, "failures_changed": False, "causes": [], "sentence": "", **fields})
    return EntryChange(entry=entry, status=status, **made)


# ------------------------------------------------------------------------------------------------------- pairing


class Pairing:
    """The runs of two races set side by side: which inputs each entry is compared on, which after runs are the
    before race's own, and each entry's change."""

    def __init__(self, before: BenchmarkReport, after: BenchmarkReport, inputs: list[str], *, judged_alike: bool):
        self.before, self.after = before, after
        self.judged_alike = judged_alike
        """No difference in how the runs were judged (entry, model, params, prompt, options, rubric)."""
        self.reference = (
            before.meta.reference_entry if before.meta.reference_entry == after.meta.reference_entry else ""
        )
        self.runs_b = self._compared(before, inputs)
        self.runs_a = self._compared(after, inputs)
        same = _same_runs(before, after, self.runs_a)
        self.all_same = bool(same) and len(same) == self.runs_a.height
        """Every after run compared is a before run: nothing was re-asked."""
        self.same = same
        if judged_alike and not self.all_same and same:  # the same samples show no change: leave them out
            self.runs_b = self.runs_b.filter(~pl.col("run_id").is_in(same))
            self.runs_a = self.runs_a.filter(~pl.col("run_id").is_in(same))

    @staticmethod
    def _compared(report: BenchmarkReport, inputs: list[str]) -> pl.DataFrame:
        """The candidate runs on the common inputs; of a fixed race stopped early, only an entry's complete inputs
        (a run still out when it stopped is often a failure being retried: the survivors would flatter it)."""
        runs = report.runs.filter((pl.col("role") == Role.CANDIDATE) & pl.col("input_id").is_in(inputs))
        meta = report.meta
        if meta.stopped is None or meta.spec.design is not Design.FIXED:
            return runs
        landed = runs.group_by("entry", "input_id").len()
        complete = landed.filter(pl.col("len") >= int(meta.spec.runs)).select("entry", "input_id")
        return runs.join(complete, on=["entry", "input_id"], how="semi")

    def said(self) -> list[Difference]:
        """What the pairing found about the runs themselves: an after race made of the before race's runs."""
        if self.all_same and self.judged_alike:
            cached = self.runs_a.filter(pl.col("run_id").is_in(self.same) & pl.col("cached")).height
            total = self.runs_a.height
            sentence = "the after race is the before race from the cache: nothing was re-asked"
            if cached < total:
                sentence += (
                    f" ({cached} of {total} runs served from the cache; the other {total - cached}, asked again under "
                    "the same salt, came back the same)"
                )
            return [_cache(WARN, len(self.same), total, sentence + "; race again with a new salt to measure drift")]
        if self.all_same:
            return [
                _cache(
                    WARN,
                    len(self.same),
                    self.runs_a.height,
                    "the after report judges the before race's runs again: every change below is the judge's, not "
                    "the models'",
                )
            ]
        if self.same and self.judged_alike:
            sentence = (
                f"{len(self.same)} of the after race's runs are the before race's own (the same salt: served from "
                "the cache) and are left out; the runs compared were asked again because they failed or were "
                "missing before, so they are no random sample"
            )
            return [_cache(WARN, len(self.same), self.runs_a.height, sentence)]
        if self.same:
            sentence = (
                f"{len(self.same)} of the after race's runs are the before race's own, judged again: part of each "
                "change is the judge's alone"
            )
            return [_cache(WARN, len(self.same), self.runs_a.height, sentence)]
        return []

    def comparable(self, entry: str) -> bool:
        """Whether the entry can be found ``changed``: the family the level is spread over (an entry on too few
        inputs cannot, so it takes no share of the level)."""
        if self.all_same and self.judged_alike:
            return False
        b, a = self._values(self.runs_b, entry), self._values(self.runs_a, entry)
        return len([k for k in b if k in a]) >= MIN_INPUTS

    @staticmethod
    def _values(runs: pl.DataFrame, entry: str, *, finished: bool = False) -> dict[str, Any]:
        part = runs.filter(pl.col("entry") == entry)
        if finished:
            part = part.filter(pl.col("ok"))
        score = pl.when(pl.col("ok")).then(pl.col("score").cast(pl.Float64)).otherwise(0.0)
        return per_input(part, score)

    def change(
        self, entry: str, level: float, *, seed: int, resamples: int, found: Sequence[Difference]
    ) -> EntryChange:
        """The entry's row: its paired changes and what could explain them (the sentence comes later)."""
        part_b = self.runs_b.filter(pl.col("entry") == entry)
        part_a = self.runs_a.filter(pl.col("entry") == entry)
        is_reference = entry == self.reference
        if self.all_same and self.judged_alike:
            return _empty(
                entry,
                NOT_REASKED,
                is_reference=is_reference,
                runs_before=part_b.height,
                runs_after=part_a.height,
                same_runs=part_a.height,
            )
        draw: dict[str, Any] = {"level": level, "resamples": resamples, "seed": seed}
        scores_b, scores_a = self._values(part_b, entry), self._values(part_a, entry)
        inputs = sorted(k for k in scores_b if k in scores_a)
        score = paired_change(scores_b, scores_a, **draw)
        finished = paired_change(
            self._values(part_b, entry, finished=True), self._values(part_a, entry, finished=True), **draw
        )
        failed = pl.col("ok").not_().cast(pl.Float64)
        failures = paired_change(per_input(part_b, failed), per_input(part_a, failed), **draw)
        on_b = part_b.filter(pl.col("input_id").is_in(inputs))
        on_a = part_a.filter(pl.col("input_id").is_in(inputs))
        unjudged = sum(p.filter(pl.col("ok") & pl.col("score").is_null()).height for p in (part_b, part_a))
        status = _status(score, scores_b, scores_a)
        failures_changed = failures.settled and failures.n_inputs >= MIN_INPUTS
        return EntryChange(
            entry=entry,
            status=status,
            is_reference=is_reference,
            n_inputs=score.n_inputs,
            runs_before=on_b.height,
            runs_after=on_a.height,
            score_before=_mean_of_means(scores_b, inputs),
            score_after=_mean_of_means(scores_a, inputs),
            change=score.mean,
            lo=score.lo,
            hi=score.hi,
            level=level,
            finished_change=finished.mean,
            finished_lo=finished.lo,
            finished_hi=finished.hi,
            failed_before=_share_failed(on_b),
            failed_after=_share_failed(on_a),
            failed_change=failures.mean,
            failed_lo=failures.lo,
            failed_hi=failures.hi,
            failures_changed=failures_changed,
            cost_before=_cost_per_run(on_b),
            cost_after=_cost_per_run(on_a),
            latency_before=_latency(on_b),
            latency_after=_latency(on_a),
            currency=_currency(on_a) or _currency(on_b),
            common_error=_common_error(on_a if (failures.mean or 0) >= 0 else on_b),
            unjudged=unjudged,
            same_runs=len([r for r in part_a["run_id"].to_list() if r in self.same]),
            causes=_unscored((scores_b, part_b.height), (scores_a, part_a.height))
            if status == NOT_JUDGED
            else self._causes(entry, is_reference, status, finished, failures_changed, found),
            sentence="",
        )

    def _causes(
        self,
        entry: str,
        is_reference: bool,
        status: str,
        finished: Change,
        failures_changed: bool,
        found: Sequence[Difference],
    ) -> list[str]:
        """What else could explain a change besides the provider's model, most telling first."""
        causes = ["the same runs judged again: the change is the judge's"] if self.all_same else []
        causes += [d.cause for d in found if d.weight == WARN and d.cause and d.entry in (None, entry)]
        if failures_changed and status == CHANGED and not finished.settled:
            causes.append("its failures: among the runs that finished it scores about the same")
        if is_reference and status == CHANGED:
            causes.append(
                "it is also the reference, whose transcripts every score is measured against, so the other entries' "
                "changes may be its"
            )
        return causes


def _cache(weight: str, same: int, total: int, sentence: str) -> Difference:
    return Difference(
        kind="cache",
        weight=weight,  # type: ignore[arg-type]
        entry=None,
        before="",
        after=f"{same} of {total} runs are the before race's",
        sentence=sentence,
    )


def _same_runs(before: BenchmarkReport, after: BenchmarkReport, compared: pl.DataFrame) -> set[str]:
    """The after race's compared runs that are the before race's own: the same run id (same salt, benchmark, input,
    entry, repeat) and the same answers (output, error and generation ids)."""
    shared = set(compared["run_id"].to_list()) & set(before.runs["run_id"].to_list())
    if not shared:
        return set()
    prints_b, prints_a = _fingerprints(before, shared), _fingerprints(after, shared)
    return {r for r in shared if prints_b.get(r) is not None and prints_b.get(r) == prints_a.get(r)}


def _fingerprints(report: BenchmarkReport, run_ids: set[str]) -> dict[str, str]:
    runs = report.runs.filter(pl.col("run_id").is_in(run_ids)).select("run_id", "output", "error")
    calls = (
        report.call_facts()
        .filter(pl.col("run_id").is_in(run_ids) & (pl.col("role") != Role.JUDGE))
        .sort("run_id", "seq")
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("generation_id").fill_null(""))
    )
    ids = {r: "\x00".join(g) for r, g in calls.iter_rows()}
    return {r: json.dumps([o, e, ids.get(r, "")]) for r, o, e in runs.iter_rows()}


def _unscored(before: tuple[dict[str, Any], int], after: tuple[dict[str, Any], int]) -> list[str]:
    """Why an entry has nothing to compare, per side: no run landed on the inputs compared, or none was scored."""
    said = []
    for side, (groups, landed) in (("before", before), ("after", after)):
        if not landed:
            said.append(f"no run of it landed on the inputs compared {side}")
        elif not groups:
            said.append(f"the judge scored none of its {plural(landed, 'run')} {side}")
    return ["; ".join(said)]


ERROR_CHARS = 80
"""How much of an error a sentence quotes."""


def _common_error(runs: pl.DataFrame) -> str | None:
    errors = runs.filter(~pl.col("ok"))["error"].drop_nulls()
    if not errors.len():
        return None
    text = str(errors.value_counts(sort=True).row(0)[0]).splitlines()[0]
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "\u2026"


def _status(score: Change, before: dict[str, Any], after: dict[str, Any]) -> str:
    if not before or not after:
        return NOT_JUDGED
    if score.n_inputs < MIN_INPUTS or score.lo is None:
        return TOO_FEW
    return CHANGED if score.settled else NO_CHANGE


def _mean_of_means(groups: dict[str, Any], inputs: list[str]) -> float | None:
    values = [float(groups[k].mean()) for k in inputs]
    return sum(values) / len(values) if values else None


def _share_failed(runs: pl.DataFrame) -> float | None:
    return None if not runs.height else runs.filter(~pl.col("ok")).height / runs.height


def _cost_per_run(runs: pl.DataFrame) -> float | None:
    if not runs.height or runs["cost"].null_count():
        return None
    return float(runs["cost"].sum()) / runs.height


def _latency(runs: pl.DataFrame) -> float | None:
    ok = runs.filter(pl.col("ok"))["latency_s"].drop_nulls()
    return float(ok.mean()) if ok.len() else None  # type: ignore[arg-type]


def _currency(runs: pl.DataFrame) -> str | None:
    values = runs["currency"].drop_nulls()
    return str(values[0]) if values.len() else None
