"""What the negative controls say about the judge on this job, and the verdicts they void.

The yardstick is a right answer's score: the reference entry's own runs against its reference run (its
self-agreement), or — when the reference entry did not race — the best entry's mean. The line is the yardstick minus
the verdict's margin: a score above it is, to the non-inferiority test, as good as the reference.

The rule. The verdicts are void when the controls' mean score reaches the line, or the mean of the controls of a kind
that is wrong in substance (another input's answer, an empty answer) does: then a run that gave such answers every
time would itself pass as good, so the test cannot tell a wrong answer from a right one, whatever its bounds say. The
answer cut in half counts in the mean but never voids alone: the half kept may hold the substance, and a judge may
rightly score it well. Why the margin: it is the resolution of the verdict; a candidate wrong on a share p of its
inputs scores about p × (yardstick − controls) below the reference, so when that gap is under the margin even p = 1
passes. A void turns every verdict into ``inconclusive``, held, with the reason, and the recommendation says so.

Only controls that were judged count: one the race did not reach (stopped, out of budget) or that the judge gave no
verdict is said, and nothing is claimed about the judge's leniency until every planted control was judged.
A void from the controls judged stands (more verdicts could only add evidence against the judge, or dilute it).

What the controls can see. They catch a judge only when its scores of wrong answers reach the line, so a clean result
says the judge scored these wrong answers below the line, not that it scores wrong answers as a person would. Take a
judge lenient by L: it adds L points to every wrong answer's score (up to 10). Its controls sit L higher, so on these
controls it voids exactly when b + L reaches the line, where b is the highest of the quantities the rule reads (the
controls' mean and the mean of each kind wrong in substance). Leniency under ``unnoticed = line − b`` goes unnoticed
by these controls, and that figure is what the controls' sentence states (never a blanket "the judge tells a wrong
answer from a right one"). The count and the spread enter through b: with one control a kind, b is the highest of
single scores, and on another draw of inputs it moves by about the judge's spread between wrong answers, so the
leniency caught in half the races is the ``unnoticed`` of a typical race; in a race whose controls happened low the
judge is more lenient than they show. Measured (``benchmarks/control_leniency.py``: the rule above on simulated
controls, 2,000 races a point, seeds 0–2; worlds whose kinds score apart, alike, and near the line), with 3 controls:
the stated figure's 10th–90th percentile spans 1.5–5.0, 1.1–5.5 and 0.6–2.8 points; a judge lenient by the median
stated figure is flagged in 53%, 55%, 55% of races, 1.5 below it in 17%, 26%, 8%, 1.5 above in 87%, 82%, 96%; leniency
of the margin (1) in 7%, 16%, 28%. With 9 controls (the three kinds thrice) the figure scatters less (2.2–4.4 in the
first world) and ±1.5 separates 4% from 95%. A judge fooled by half the wrong answers (a fooled control scores like a
right one) escapes 22–23% of races with 3 controls and more with more controls (44–52% with 6, 52–68% with 9): a
kind's mean dilutes one fooled control. The fast slice is
``test_the_stated_unnoticed_leniency_is_what_a_lenient_judge_gets_past_the_controls``.

What that means for a verdict. A candidate wrong on a share q of the inputs where the reference is right is scored
q × L too high by a judge lenient by L: with q = 1, leniency of the margin moves a verdict by the margin. The controls
cannot rule that out. ``unnoticed`` is how much more lenient the judge could be and still pass them, not how lenient
it already is: a judge lenient by L on wrong answers looks exactly like a stricter judge whose wrong answers deserve L
more, and nothing planted says what a wrong answer deserves on the user's scale (a person does; on real ratings every
judge-only verdict the controls let stand was wrong). Even ``unnoticed ≤ margin``, where a leniency of the margin
would have voided, says only that the judge already puts wrong answers near the line: on the fleet the swayed judge's
controls did so, unvoided, in 1 of 20 races with 3 controls and 1 of 20 with 5 (`benchmarks/control_leniency.py
--fleet 20`). So every judge-only ``as good`` is unconfirmed (`ControlOutcome.unconfirmed` says why, with
``unnoticed`` when there is one): its reason and its verdict line say it rests on the judge alone and that labels are
needed before acting (at least `gradebench._stats.ppi.MIN_LABELS` a side, what a label-corrected verdict needs), the
``verdict`` column keeps ``as good``, and the recommendation names it as good by the judge alone, unconfirmed, without
recommending it. A label-corrected verdict rests on the labels and is a finding. A void still voids: controls can show
a judge is too lenient, never that it is lenient enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from .._base.vocab import ControlKind, Role, VerdictBasis
from .._records.codec import frame
from .._records.meta import ReportMeta
from .._records.planted import KINDS, UNPLANTABLE, control_entry
from .._stats.paired import AS_GOOD, INCONCLUSIVE, VERDICT_SCHEMA
from .._stats.ppi import MIN_LABELS

__all__ = [
    "KIND_WORDS",
    "SUBSTANCE",
    "VOID",
    "ControlOutcome",
    "ControlScore",
    "controls_outcome",
    "control_diagnostics",
    "unconfirmed_verdicts",
    "void_verdicts",
]

VOID = "the judge cannot tell a wrong answer from a right one on this job"
"""Why a void verdict is void (its ``verdict_reason`` starts ``void: `` and this)."""
KIND_WORDS = {
    ControlKind.OTHER_ANSWER: "another input's answer",
    ControlKind.EMPTY: "an empty answer",
    ControlKind.HALF: "the answer cut in half",
    ControlKind.ALTERED: "the answer with its key fact changed",
    ControlKind.VERBOSE: "that answer argued at length",
}
"""Each kind of control in words."""
SUBSTANCE = (ControlKind.OTHER_ANSWER, ControlKind.EMPTY, ControlKind.ALTERED, ControlKind.VERBOSE)
"""The kinds wrong in substance: each voids on its own when it scores above the line."""


@dataclass(frozen=True, kw_only=True)
class ControlScore:
    """One planted control and the judge's score of it."""

    run_id: str
    """The control's run id (its row in ``report.controls``, when judged)."""
    kind: ControlKind
    """How its answer is wrong."""
    input_id: str
    """The input whose reference transcript it is."""
    score: float | None
    """The judge's score, 0..10; None when it was not judged or the judge gave no verdict."""
    error: str | None = None
    """Why there is no score: the judge's error, or that the race stopped before it."""


@dataclass(frozen=True, kw_only=True)
class ControlOutcome:
    """The negative controls of a report, against a right answer's score: how far below it the judge put them, and
    whether that voids the verdicts (see the module for the rule)."""

    asked: int
    """Controls the race asked for (``spec.controls``)."""
    controls: tuple[ControlScore, ...]
    """Every control planted, in planting order."""
    margin: float
    """The verdict's margin, points of 10."""
    yardstick: float | None
    """A right answer's score: the reference's self-agreement, else the best entry's mean; None when neither."""
    yardstick_entry: str | None = None
    """The entry it is the mean of."""
    self_agreement: bool = False
    """True when the yardstick is the reference entry against its own reference run."""
    entries: tuple[float, float] | None = None
    """The lowest and the highest entry mean (the candidates'), for scale."""
    missing: tuple[str, ...] = field(default_factory=tuple)
    """Why asked-for controls were not planted."""

    @property
    def planted(self) -> int:
        return len(self.controls)

    @property
    def judged(self) -> int:
        """Controls the judge scored."""
        return sum(c.score is not None for c in self.controls)

    @property
    def complete(self) -> bool:
        """Every planted control was judged (and at least one was planted)."""
        return bool(self.controls) and self.judged == self.planted

    @property
    def mean(self) -> float | None:
        """The mean score of the controls judged."""
        return _mean([c.score for c in self.controls])

    def kind_means(self) -> dict[ControlKind, float]:
        """The mean score of each kind judged, in `KINDS` order."""
        means = {k: _mean([c.score for c in self.controls if c.kind is k]) for k in KINDS}
        return {k: m for k, m in means.items() if m is not None}

    @property
    def line(self) -> float | None:
        """The yardstick minus the margin: a score above it passes as good as the reference."""
        return None if self.yardstick is None else self.yardstick - self.margin

    @property
    def fooled_by(self) -> tuple[str, ...]:
        """What reached the line, in words: ``their mean`` and the substance kinds that did; empty when none."""
        line, mean = self.line, self.mean
        if line is None or mean is None:
            return ()
        found = ["their mean"] if mean >= line else []
        found += [KIND_WORDS[k] for k, m in self.kind_means().items() if k in SUBSTANCE and m >= line]
        return tuple(found)

    @property
    def void(self) -> bool:
        """True when the controls judged void the verdicts."""
        return bool(self.fooled_by)

    @property
    def clean(self) -> bool:
        """True when every planted control was judged and they did not void (how lenient a judge could still be:
        `unnoticed`)."""
        return self.complete and self.line is not None and not self.void

    @property
    def unnoticed(self) -> float | None:
        """Leniency on wrong answers these controls would not notice: the points a judge could add to every wrong
        answer's score before they void (the line less the highest of the controls' mean and the means of the kinds
        wrong in substance; see the module). None unless every planted control was judged, against a yardstick, and
        they did not void."""
        if not self.complete or self.line is None or self.void:
            return None
        assert self.mean is not None
        substance = [m for k, m in self.kind_means().items() if k in SUBSTANCE]
        return self.line - max([self.mean, *substance])  # above 0: they did not void

    def unconfirmed(self) -> str:
        """Why a judge-only ``as good`` is unconfirmed, and what would confirm it (see the module: no control result
        confirms one)."""
        if self.unnoticed is not None and self.unnoticed > self.margin:
            why = (
                f"the controls would miss leniency under ~{self.unnoticed:.1f} points on wrong answers, "
                f"more than the margin {self.margin:g}"
            )
        elif self.unnoticed is not None:
            why = (
                f"planted wrong answers scored within ~{self.unnoticed:.1f} points of where a run passes as good, "
                "and controls cannot show how lenient the judge already is"
            )
        elif not self.asked:
            why = "no planted wrong answers checked the judge"
        elif self.void:
            why = VOID
        elif not self.complete:
            why = "the planted wrong answers were not all judged"
        else:
            why = "no right answer was judged to hold the planted wrong answers against"
        return (
            f"by the judge alone, unconfirmed: {why}; label at least {MIN_LABELS} runs of it and of the reference "
            "before acting"
        )

    def scores_text(self) -> str:
        """``another input's answer 3.00, an empty answer 0.00, the answer cut in half 4.00``."""
        return ", ".join(f"{KIND_WORDS[k]} {m:.2f}" for k, m in self.kind_means().items())

    def yardstick_text(self) -> str:
        """``the reference's self-agreement 8.59`` or ``the best entry's mean (sim/chatty, 8.90)``."""
        assert self.yardstick is not None
        if self.self_agreement:
            return f"the reference's self-agreement {self.yardstick:.2f}"
        return f"the best entry's mean ({self.yardstick_entry}, {self.yardstick:.2f}: the reference entry did not race)"

    def headline(self) -> str | None:
        """The report's headline when the controls void its verdicts; else None."""
        if not self.void:
            return None
        assert self.mean is not None
        return (
            f"JUDGE CANNOT TELL A WRONG ANSWER FROM A RIGHT ONE on this job: planted wrong answers scored "
            f"{self.mean:.2f} on average ({self.scores_text()}) against {self.yardstick_text()}; {self._reached()}: "
            "every verdict is void"
        )

    def _reached(self) -> str:
        """``their mean and an empty answer reach 8.30 (that less the margin 1), where a run passes as good``."""
        assert self.line is not None
        found = list(self.fooled_by)
        what = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
        verb = "reaches" if len(found) == 1 else "reach"
        return f"{what} {verb} {self.line:.2f} (that less the margin {self.margin:g}), where a run passes as good"

    def sentence(self) -> str | None:
        """What the controls say, in one line (the table's, the HTML's); None when none were asked for."""
        if not self.asked:
            return None
        mean, head = self.mean, f"controls ({self._counted()})"
        if not self.controls:
            return f"{head}: no check of the judge"
        if mean is None:
            return f"{head}: none got a verdict: no check of the judge"
        scored = f"{head} scored {mean:.2f} on average ({self.scores_text()})"
        if self.yardstick is None:
            return f"{scored}; no right answer was judged to compare them with: no check of the judge"
        below = self.yardstick - mean
        side = f"{below:.2f} below" if below >= 0 else f"{-below:.2f} above"
        scale = f"; the entries score {self.entries[0]:.2f}–{self.entries[1]:.2f}" if self.entries else ""
        where = f"{scored}, {side} {self.yardstick_text()}{scale}"
        if self.void:
            return f"{where}: void, {VOID}"
        if not self.complete:
            return f"{where}: too few judged to say how lenient the judge is on wrong answers"
        return (
            f"{where}: leniency under ~{self.unnoticed:.1f} points on wrong answers would go unnoticed by "
            f"{'these' if self.judged != 1 else 'this'} {self.judged} control{'s' * (self.judged != 1)}"
        )

    def _counted(self) -> str:
        """``3 planted wrong answers`` and what became of the others: not planted, not judged."""
        parts = [f"{self.planted} planted wrong answer{'s' * (self.planted != 1)}"]
        if self.planted < self.asked:
            why = f": {'; '.join(self.missing)}" if self.missing else ""
            parts.append(f"{self.asked - self.planted} of {self.asked} not planted{why}")
        if (unjudged := self.planted - self.judged) and self.controls:
            errors = [c.error for c in self.controls if c.score is None and c.error]
            parts.append(f"{unjudged} not judged: {errors[0]}" if errors else f"{unjudged} not judged")
        return "; ".join(parts)

    def void_reason(self) -> str:
        """The reason a void verdict carries."""
        assert self.mean is not None
        return (
            f"void: {VOID} (planted wrong answers scored {self.mean:.2f} on average against "
            f"{self.yardstick_text()}; {self._reached()})"
        )

    def recommendation(self, job: str) -> str:
        """The recommendation of a void report: no entry, and what to do."""
        assert self.mean is not None and self.yardstick is not None
        return (
            f"no verdict on {job}: {VOID} (planted wrong answers scored {self.mean:.2f} against "
            f"{self.yardstick_text()}): judge with a stronger model (Benchmark(judge=...) or rejudge) before "
            "trusting any entry"
        )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def controls_outcome(
    controls: pl.DataFrame, runs: pl.DataFrame, models: pl.DataFrame, meta: ReportMeta
) -> ControlOutcome:
    """The `ControlOutcome` of a report's controls frame (one row per control judged), its runs frame (whether its
    reference runs were all in), its models frame (``entry, score_mean, is_reference``: the yardstick and the
    entries' scale) and its meta (the controls asked for and planted)."""
    rows = {r["run_id"]: r for r in controls.filter(pl.col("role") == Role.CONTROL).iter_rows(named=True)}
    scores = []
    # a planted control without a row: the race stopped first, or the row was left out of this report
    gone = "the race stopped before it was judged" if meta.stopped is not None else "its row is not in this report"
    for plant in meta.controls:
        row = rows.get(plant.run_id)
        error = gone if row is None else row["judge_error"]
        score = None if row is None else row["score"]
        scores.append(
            ControlScore(run_id=plant.run_id, kind=plant.kind, input_id=plant.input_id, score=score, error=error)
        )
    judged = models.filter(pl.col("score_mean").is_not_null()) if models.height else models
    own = judged.filter(pl.col("is_reference")) if judged.height else judged
    best = judged.sort("score_mean", descending=True, maintain_order=True) if judged.height else judged
    yardstick = own if own.height else best
    entries = None
    if judged.height:
        entries = (float(judged["score_mean"].min()), float(judged["score_mean"].max()))  # type: ignore[arg-type]
    return ControlOutcome(
        asked=meta.spec.controls,
        controls=tuple(scores),
        margin=meta.spec.margin,
        yardstick=float(yardstick["score_mean"][0]) if yardstick.height else None,
        yardstick_entry=str(yardstick["entry"][0]) if yardstick.height else None,
        self_agreement=bool(own.height),
        entries=entries,
        missing=_missing(runs, meta),
    )


def _missing(runs: pl.DataFrame, meta: ReportMeta) -> tuple[str, ...]:
    """Why controls asked for were not planted: the race stopped before its reference runs were in, or a kind cannot
    be made wrong on these reference answers."""
    planted = {p.number for p in meta.controls}
    absent = [n for n in range(meta.spec.controls) if n not in planted]
    if not absent:
        return ()
    references = runs.filter((pl.col("role") == Role.REFERENCE) & pl.col("ok")).height
    if not meta.controls and references < len(meta.inputs):
        return ("the race stopped before its reference runs were all in",)
    return tuple(dict.fromkeys(UNPLANTABLE[KINDS[n % len(KINDS)]] for n in absent))


def void_verdicts(verdicts: pl.DataFrame, check: ControlOutcome) -> pl.DataFrame:
    """The verdicts frame (`gradebench._stats.paired.VERDICT_SCHEMA`) with every verdict void when the controls say so:
    ``inconclusive``, held, nothing more runs could settle, and the reason first."""
    if not check.void or not verdicts.height:
        return verdicts
    why = check.void_reason()
    rows = verdicts.to_dicts()
    for row in rows:
        if row["verdict"] is None:  # untested (the reference entry itself)
            continue
        bounds = f"the bounds alone: {row['reason']}" if row["reason"] else ""
        row.update(verdict=INCONCLUSIVE, held=True, more_runs=None, reason="; ".join(r for r in (why, bounds) if r))
    return frame(rows, VERDICT_SCHEMA)


def unconfirmed_verdicts(verdicts: pl.DataFrame, check: ControlOutcome) -> pl.DataFrame:
    """The verdicts frame (the models frame's verdict columns) with every judge-only ``as good`` saying after its
    reason that it rests on the judge alone (`ControlOutcome.unconfirmed`); its verdict stays ``as good``."""
    if not verdicts.height:
        return verdicts
    note = check.unconfirmed()
    judge_only = (pl.col("verdict") == AS_GOOD) & (pl.col("verdict_basis") == VerdictBasis.JUDGE_ONLY.value)
    reason = pl.concat_str([pl.col("verdict_reason").fill_null(""), pl.lit(f"; {note}")])
    return verdicts.with_columns(
        pl.when(judge_only).then(reason).otherwise(pl.col("verdict_reason")).alias("verdict_reason")
    )


def control_diagnostics(check: ControlOutcome) -> list[dict[str, str | None]]:
    """Diagnostics rows (kind, entry, run_id, detail): ``control_scored_high`` for a control above the line,
    ``control_unjudged`` for one without a verdict."""
    found: list[dict[str, str | None]] = []
    line = check.line
    for c in check.controls:
        words, entry = KIND_WORDS[c.kind], control_entry(c.kind)
        if c.score is None:
            detail = f"{words} planted on input {c.input_id}: not judged ({c.error or 'no verdict'})"
            found.append({"kind": "control_unjudged", "entry": entry, "run_id": c.run_id, "detail": detail})
        elif line is not None and c.score >= line:
            detail = (
                f"{words} planted on input {c.input_id} scored {c.score:.2f}, above {line:.2f} "
                f"({check.yardstick_text()} minus the margin): the judge took a wrong answer for a right one"
            )
            found.append({"kind": "control_scored_high", "entry": entry, "run_id": c.run_id, "detail": detail})
    return found
