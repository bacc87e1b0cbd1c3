"""A report with human labels: each verdict label-corrected where the labels allow it, said judge-only where not,
and the judge's agreement with the person (``report.agreement``).

`with_labels` takes the judge-only verdicts (the models frame's verdict columns, `gradebench._verdict.pipeline`) and
returns them with the verdict of every entry that has at least `FEWEST_LABELS` labels on its own runs and on the
reference entry's replaced by the label-corrected one (`gradebench._stats.ppi`: prediction-powered inference, paired
by input; below `MIN_LABELS` a side, the number the simulation supports, its line says how many more to label before
acting on it) — ``verdict_basis`` ``label-corrected``,
``more_labels`` for an inconclusive one, ``p_value`` None (the skew-widened bounds have no exact dual p-value) and
``more_runs`` None (what would settle it is labels first). Every other tested entry keeps its judge-only verdict,
marked ``judge-only``, and its reason says why no corrected one was given: too few labels on either side, fewer than
two paired inputs, or a race to a verdict (its stopping read the judge's scores, so a fixed-sample correction over
the runs it chose would not hold). Never a judge-only verdict under the corrected name. The evidence rules hold
both kinds alike (`gradebench._verdict.evidence`): an entry cut off or refused on most runs is never as good.
Labels that carry the chance their run was asked with (active labelling, `HumanLabels.chances`) are weighted by its
inverse; an entry whose labels are some with a chance and some without gets no corrected verdict (two designs in
one sample, which neither weighting describes), and its line says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Final

import numpy as np
import polars as pl

from .._base.vocab import Role, VerdictBasis
from .._records.codec import frame
from .._records.meta import ReportMeta
from .._stats.paired import AS_GOOD, INCONCLUSIVE, MIN_INPUTS, WORSE, number_text, plural
from .._stats.ppi import FEWEST_LABELS, MIN_LABELS, corrected_difference, corrected_verdicts, more_labels
from .evidence import Evidence
from .label_agreement import AGREEMENT_SCHEMA, ALL_ENTRIES, agreement_rows
from .labels import HumanLabels, labellable

__all__ = ["Correction", "basis_text", "correct", "with_labels"]

FAILED_SCORE: Final = 0.0  # a failed run counts 0, as in every judge-only figure


VOID_LIFTED: Final = "the judge alone is void (the negative controls): this verdict rests on your labels"
"""What a label-corrected verdict says when the controls void the judge's own."""


@dataclass(frozen=True, kw_only=True)
class Correction:
    """One entry's label-corrected verdict, or why there is none (``verdict`` None)."""

    entry: str
    """The entry tested against the reference entry."""
    verdict: str | None = None
    """``as good``, ``worse`` or ``inconclusive`` on the person's scale; None: no corrected verdict."""
    mean_diff: float | None = None
    """θ̂, the label-corrected mean difference."""
    lower: float | None = None
    """Its one-sided 95% lower bound."""
    upper: float | None = None
    """Its one-sided 95% upper bound."""
    n_inputs: int | None = None
    """Paired inputs."""
    n_pairs: int | None = None
    """The candidate's runs on them."""
    labels: tuple[int, int] = (0, 0)
    """Labelled runs used: the candidate's and the reference entry's."""
    more_labels: tuple[int, int] | None = None
    """For an inconclusive verdict: about how many more labels on each side would likely settle it."""
    reason: str
    """One sentence: the verdict's, or why there is no corrected verdict."""
    settle: str | None = None
    """For an inconclusive verdict: what would likely settle it, in words."""
    basis: str | None = None
    """What the verdict rests on, in words: ``label-corrected on 12 + 12 labels``, and, below `MIN_LABELS` a side,
    how many more labels the simulation asks for before acting on it."""


def basis_text(
    labels: tuple[int, int],
    entry: str,
    reference: str,
    *,
    active: bool = False,
    runs: tuple[int, int] | None = None,
) -> str:
    """``label-corrected on C + R labels`` (``asked by active labelling`` when they were), with the labels short of
    `MIN_LABELS` on either side named. ``runs``: the runs each side has to label; a side with every run labelled
    and still short needs more runs, not more labels, and is told so."""
    on = f"{VerdictBasis.LABEL_CORRECTED} on {labels[0]} + {labels[1]} labels"
    on += " asked by active labelling" if active else ""
    short = [max(MIN_LABELS - n, 0) for n in labels]
    if not any(short):
        return on
    names = (entry, reference)
    done = [name for k, n, total, name in zip(short, labels, runs or (), names, strict=False) if k and n >= total]
    if done:
        more = " and ".join(done)
        return (
            f"{on}, fewer than the {MIN_LABELS} a side the simulation supports, with every run of {more} labelled: "
            f"race more runs before acting"
        )
    if short[0] == short[1]:
        label = f"{short[0]} more runs a side"
    else:
        label = " and ".join(f"{k} more of {name}" for k, name in zip(short, (entry, reference), strict=True) if k)
    return f"{on}, fewer than the {MIN_LABELS} a side the simulation supports: label {label} before acting"


def _allowed_inputs(runs: pl.DataFrame, entry: str, reference: str, complete: int | None) -> set[str] | None:
    """For a race stopped early, the inputs where every planned run of both entries landed (as the judge-only verdict
    is tested on); None: every input."""
    if complete is None:
        return None
    landed = {
        (e, i): n
        for e, i, n in runs.filter(pl.col("role") == Role.CANDIDATE).group_by("entry", "input_id").len().iter_rows()
    }
    return {i for (e, i), n in landed.items() if e == entry and min(n, landed.get((reference, i), 0)) >= complete}


Run = tuple[float, float, bool, float]
"""A usable run as (judge score, human score or NaN, labellable, the chance it was asked with or NaN)."""


def _side(
    runs: pl.DataFrame, entry: str, scores: Mapping[str, float], chances: Mapping[str, float]
) -> dict[str, list[Run]]:
    """Per input, the entry's usable runs (`Run`)."""
    part = runs.filter((pl.col("role") == Role.CANDIDATE) & (pl.col("entry") == entry))
    part = part.with_columns(labellable().alias("_labellable")).sort("input_id", "repeat")
    out: dict[str, list[Run]] = {}
    for input_id, run_id, ok, score, can in part.select("input_id", "run_id", "ok", "score", "_labellable").iter_rows():
        if ok is False:
            value = FAILED_SCORE
        elif score is None:
            continue  # the judge gave no score: dropped, as in the judge-only verdict
        else:
            value = float(score)
        human = scores.get(run_id, np.nan) if can else np.nan
        out.setdefault(input_id, []).append((value, float(human), bool(can), chances.get(run_id, np.nan)))
    return out


def _design(side: dict[str, list[Run]], inputs: list[str]) -> str | None:
    """How a side's labels were drawn: ``random`` (no chance recorded), ``active`` (every label's chance recorded),
    or None (some of each: two designs in one sample, which neither weighting describes)."""
    recorded = [not np.isnan(p) for i in inputs for _, h, can, p in side[i] if can and not np.isnan(h)]
    return "active" if recorded and all(recorded) else "random" if not any(recorded) else None


def _arrays(sides: list[dict[str, list[Run]]], inputs: list[str]) -> list[np.ndarray]:
    """`corrected_difference`'s arrays; a side whose labels were drawn by active labelling has, in place of the
    labellable mask, each labelled run's chance (1 marks the others labellable: only a labelled run's chance counts)."""
    width = max(len(side[i]) for side in sides for i in inputs)
    arrays = []
    for side in sides:
        judge, human = np.full((1, len(inputs), width), np.nan), np.full((1, len(inputs), width), np.nan)
        active = _design(side, inputs) == "active"
        can = np.zeros((1, len(inputs), width), dtype=float if active else bool)
        for row, input_id in enumerate(inputs):
            for col, (value, label, ok, chance) in enumerate(side[input_id]):
                judge[0, row, col], human[0, row, col] = value, label
                can[0, row, col] = (chance if not np.isnan(label) else 1.0) if active and ok else ok
        arrays += [judge, human, can]
    return arrays


def correct(
    runs: pl.DataFrame,
    scores: Mapping[str, float],
    entry: str,
    meta: ReportMeta,
    *,
    level: float = 0.95,
    chances: Mapping[str, float] | None = None,
) -> Correction:
    """``entry``'s label-corrected verdict against the reference entry (module docstring), or why there is none.
    ``chances``: the chance each run labelled by active labelling was asked with (`HumanLabels.chances`)."""
    reference, margin = meta.reference_entry, meta.spec.margin
    if meta.spec.design.to_verdict:
        why = "raced to a verdict: its stopping read the judge's scores, so a fixed-sample correction would not hold"
        return Correction(entry=entry, reason=f"no label-corrected verdict: {why}; race runs=N to correct by labels")
    allowed = _allowed_inputs(runs, entry, reference, int(meta.spec.runs) if meta.stopped is not None else None)
    cand, ref = _side(runs, entry, scores, chances or {}), _side(runs, reference, scores, chances or {})
    inputs = sorted(i for i in cand if i in ref and (allowed is None or i in allowed))
    count = {
        name: sum(1 for i in inputs for _, h, can, _ in side[i] if can and not np.isnan(h))
        for name, side in ((entry, cand), (reference, ref))
    }
    labels = (count[entry], count[reference])
    if min(labels) < FEWEST_LABELS:
        return Correction(
            entry=entry,
            labels=labels,
            reason=(
                f"no label-corrected verdict: {plural(labels[0], 'label')} on {entry} and {labels[1]} on "
                f"{reference}, it needs {FEWEST_LABELS} on each ({MIN_LABELS} to act on)"
            ),
        )
    if len(inputs) < 2:
        return Correction(entry=entry, labels=labels, reason="no label-corrected verdict: fewer than 2 paired inputs")
    if mixed := [name for name, side in ((entry, cand), (reference, ref)) if _design(side, inputs) is None]:
        why = "some were asked by active labelling (a chance recorded) and some drawn at random (none)"
        return Correction(
            entry=entry, labels=labels, reason=f"no label-corrected verdict: of {mixed[0]}'s labels {why}"
        )
    found = corrected_difference(*_arrays([cand, ref], inputs), level=level)
    lower, upper, estimate = float(found.lower[0]), float(found.upper[0]), float(found.estimate[0])
    runs_there = tuple(sum(1 for i in inputs for _, _, can, _ in side[i] if can) for side in (cand, ref))
    active = "active" in {_design(cand, inputs), _design(ref, inputs)}
    on = basis_text(labels, entry, reference, active=active, runs=(runs_there[0], runs_there[1]))
    make = partial(
        Correction,
        basis=on,
        entry=entry,
        mean_diff=estimate,
        lower=lower,
        upper=upper,
        n_inputs=len(inputs),
        n_pairs=sum(len(cand[i]) for i in inputs),
        labels=labels,
    )
    line, bounds = number_text(-margin), f"[{number_text(lower, 2)}, {number_text(upper, 2)}]"
    if len(inputs) < MIN_INPUTS:
        settle = f"a verdict needs {MIN_INPUTS} inputs: {MIN_INPUTS - len(inputs)} more"
        return make(verdict=INCONCLUSIVE, reason=f"{on}: bounds {bounds}, but {settle}", settle=settle)
    verdict = str(corrected_verdicts(found, margin)[0])
    if verdict == AS_GOOD:
        return make(verdict=AS_GOOD, reason=f"{on}: lower bound {number_text(lower, 2)} > {line}: within the margin")
    if verdict == WORSE:
        reason = f"{on}: upper bound {number_text(upper, 2)} < {line}: worse by more than the margin"
        return make(verdict=WORSE, reason=reason)
    more = more_labels(found, margin)
    if more is None:
        settle = "even labelling every run would likely not settle it: more runs would"
    else:
        settle = f"~{sum(more)} more labels ({more[0]} on {entry}, {more[1]} on {reference}) would likely settle it"
    return make(
        verdict=INCONCLUSIVE, more_labels=more, reason=f"{on}: bounds {bounds} straddle {line}: {settle}", settle=settle
    )


def with_labels(
    verdicts: pl.DataFrame,
    runs: pl.DataFrame,
    labels: HumanLabels | None,
    meta: ReportMeta,
    *,
    found: Evidence,
    void: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The judge-only verdicts (one row per candidate entry, in the models frame's verdict columns) label-corrected
    where the labels allow it, and the agreement frame (`AGREEMENT_SCHEMA`; empty without labels). ``found``: what the
    runs say about whether a verdict can stand (`gradebench._verdict.evidence`), held to the corrected verdicts too.
    When the negative controls ``void`` the judge's verdicts, a verdict the labels correct stands on them (the
    correction holds whatever the judge's bias, an uninformative judge included: the judge's weight then falls to
    about 0 and the interval is about as wide as the labels alone make it), and says so; one they cannot correct
    stays void."""
    if labels is None or not verdicts.height:
        return verdicts, frame([], AGREEMENT_SCHEMA)
    scores = labels.scores
    entries = verdicts["entry"].to_list()
    rows = agreement_rows(runs, scores, entries, meta.reference_entry, meta.spec.margin)
    tested = dict(verdicts.select("entry", pl.col("verdict").is_not_null()).iter_rows())
    updated = []
    for row in verdicts.iter_rows(named=True):
        if not tested[row["entry"]]:
            updated.append(row)
            continue
        fix = correct(runs, scores, row["entry"], meta, chances=labels.chances)
        judge_only = {"judge_verdict": row["verdict"], "judge_mean_diff": row["mean_diff"], "judge_lower": row["lower"]}
        if fix.verdict is None:
            row = {**row, "verdict_reason": f"{row['verdict_reason']}; {fix.reason}"}
            correction = fix.reason
        else:
            verdict, reason = found.hold(fix.entry, fix.verdict, fix.reason)
            reason = f"{VOID_LIFTED}; {reason}" if void else reason
            row = {
                **row,
                "verdict": verdict,
                "mean_diff": fix.mean_diff,
                "lower": fix.lower,
                "upper": fix.upper,
                "p_value": None,
                "n_inputs": fix.n_inputs,
                "n_pairs": fix.n_pairs,
                "more_runs": None,
                "more_labels": sum(fix.more_labels) if fix.more_labels and verdict == INCONCLUSIVE else None,
                "verdict_reason": reason,
                "verdict_held": bool(found.notes(fix.entry)),
                "verdict_basis": VerdictBasis.LABEL_CORRECTED,
            }
            assert fix.basis is not None  # every corrected verdict says what it rests on
            correction = fix.basis
        agree = next(r for r in rows if r["entry"] == row["entry"])
        agree.update(judge_only, correction=correction, settle=fix.settle if row["verdict"] == INCONCLUSIVE else None)
        if fix.verdict is not None and agree["distrust"]:
            agree["sentence"] = f"{agree['sentence']} (the label-corrected verdict allows for it)"
        updated.append(row)
    assert rows[-1]["entry"] == ALL_ENTRIES
    return frame(updated, dict(verdicts.schema)), frame(rows, AGREEMENT_SCHEMA)
