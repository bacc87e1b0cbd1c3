"""Gold labels are truth: what a race scored against them says beside the judge's verdicts.

A scorer that reads the input (``field_equals:label@expected_label``) holds every run, the reference run included, to a
gold label its input carries. Its scores are not the judge's opinion of how close a run came to the reference: they
say who was right. So, when a race has them (`gold_inputs`):

- a pinned reference that scores below `GOLD_LOW` against them is a headline: a candidate "as good" as it is as good
  as a reference that is mostly wrong;
- a reference that gave one answer to every input (its outputs equal once whitespace is normalised) is a headline:
  the judge held every candidate to that one answer;
- each candidate is tested against the reference entry on the gold scores (×10, on the judge's scale) by the same
  paired non-inferiority test and margin as the judge's verdict (`gradebench._stats.paired.verdicts`, a failed run 0,
  a run the endpoint failed left out). A judge's ``as good`` that the gold scores call ``worse``, or a ``worse`` they
  call ``as good``, is no finding: the verdict is held ``inconclusive`` and says the judge and the gold labels
  disagree (`contradicted`), so the recommendation never rests on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from .._base.vocab import Role, VerdictBasis
from .._stats import paired
from .._stats.paired import AS_GOOD, INCONCLUSIVE, WORSE, number_text, plural

__all__ = [
    "DISAGREE",
    "GOLD_LOW",
    "SAME_ANSWER_FROM",
    "GoldCheck",
    "GoldScore",
    "contradicted",
    "gold_check",
    "gold_inputs",
    "reference_gold",
]

GOLD_LOW = 0.5
"""A reference run whose mean score against the gold labels is below this (0..1) is mostly wrong: a headline."""
DISAGREE = "the judge and the gold labels disagree"
"""How the reason of a verdict the gold scores contradict begins (the recommendation names those entries)."""
SAME_ANSWER_FROM = 3
"""Fewest inputs on which a reference that gave every one the same answer is called out (two alike may be chance)."""


def gold_inputs(runs: pl.DataFrame) -> set[str] | None:
    """The inputs the scorer held to a gold label, or None when it compared with the reference's output. Only a
    scorer that reads the input scores the reference run (`gradebench._judge.judge.score_reference`): a reference row
    with a score (or a scorer error) says the race was scored against gold labels."""
    references = runs.filter((pl.col("role") == Role.REFERENCE) & pl.col("ok"))
    scored = references.filter(pl.col("scorer").is_not_null() | pl.col("scorer_error").is_not_null())
    if not scored.height:
        return None
    return set(references.filter(pl.col("scorer").is_not_null())["input_id"].to_list())


@dataclass(frozen=True, kw_only=True)
class GoldScore:
    """The reference run's accuracy against the gold labels: was the pinned model right in the first place?"""

    entry: str
    """The reference entry."""
    mean: float
    """Its mean score against the gold labels, 0..1."""
    inputs: int
    """The inputs it was scored on (those with a gold label)."""


def reference_gold(runs: pl.DataFrame) -> GoldScore | None:
    """The reference run's accuracy against the gold labels (the ``scorer`` of the runs frame's reference rows), or
    None when the race was not scored against gold labels."""
    if not gold_inputs(runs):
        return None
    scores = runs.filter((pl.col("role") == Role.REFERENCE) & pl.col("scorer").is_not_null())
    mean = sum(scores["scorer"].to_list()) / scores.height
    return GoldScore(entry=str(scores["entry"][0]), mean=mean, inputs=scores["input_id"].n_unique())


@dataclass(frozen=True, kw_only=True)
class GoldCheck:
    """What the gold labels say about a race: the reference's own score, whether it answered every input alike, and
    each candidate's verdict on the gold scores."""

    reference: GoldScore
    """The reference run against the gold labels."""
    same_answer: str | None
    """The one answer the reference gave every input (whitespace normalised), when it did; else None."""
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per candidate entry, its row of `gradebench._stats.paired.VERDICT_SCHEMA` on the gold scores ×10."""

    def headlines(self) -> list[str]:
        """A line for a reference that scores below `GOLD_LOW`, and one for a reference that answered alike."""
        ref, lines = self.reference, []
        if ref.mean < GOLD_LOW:
            lines.append(
                f"REFERENCE MOSTLY WRONG: the pinned reference {ref.entry} scores {ref.mean:.2f} against your gold "
                f"labels ({plural(ref.inputs, 'input')}): a candidate 'as good' as it is as good as a reference that "
                "is mostly wrong"
            )
        if self.same_answer is not None:
            answer = self.same_answer if len(self.same_answer) <= 60 else self.same_answer[:57] + "..."
            lines.append(
                f"REFERENCE ANSWERS ALIKE: {ref.entry} gave the same answer to every input ({answer}): the judge held "
                "every candidate to that one answer"
            )
        return lines

    def caveat(self) -> str | None:
        """What a recommendation must carry about the reference, or None when it scored well and answered apart."""
        if self.reference.mean < GOLD_LOW:
            return f"but {self.reference.entry} itself scores {self.reference.mean:.2f} against the gold labels"
        if self.same_answer is not None:
            return f"but {self.reference.entry} gave the same answer to every input"
        return None


def gold_check(runs: pl.DataFrame, reference_entry: str, margin: float) -> GoldCheck | None:
    """The `GoldCheck` of a race's runs (as the verdicts read them), or None when it was not scored against gold."""
    reference = reference_gold(runs)
    inputs = gold_inputs(runs)
    if reference is None or not inputs:
        return None
    outputs = runs.filter((pl.col("role") == Role.REFERENCE) & pl.col("ok"))["output"].to_list()
    answers = {" ".join(str(o).split()) for o in outputs}
    same = next(iter(answers)) if len(outputs) >= SAME_ANSWER_FROM and len(answers) == 1 else None
    on_gold = runs.filter(pl.col("input_id").is_in(sorted(inputs)) & (pl.col("role") == Role.CANDIDATE))
    scored = on_gold.with_columns((pl.col("scorer") * 10).alias("score"))  # a failed run still counts 0 (``ok``)
    frame = paired.verdicts(scored, reference_entry, margin=margin)
    verdicts = {row["entry"]: row for row in frame.iter_rows(named=True) if row["verdict"] is not None}
    return GoldCheck(reference=reference, same_answer=same, verdicts=verdicts)


def contradicted(verdicts: pl.DataFrame, gold: GoldCheck | None) -> pl.DataFrame:
    """The verdicts (the models frame's verdict columns) with each judge-only ``as good`` the gold scores call
    ``worse``, and each ``worse`` they call ``as good``, held ``inconclusive``, the reason saying both."""
    if gold is None or not verdicts.height:
        return verdicts
    rows = verdicts.to_dicts()
    for row in rows:
        on_gold = gold.verdicts.get(row["entry"])
        judged = row["verdict"]
        if on_gold is None or row["verdict_basis"] != VerdictBasis.JUDGE_ONLY or judged not in (AS_GOOD, WORSE):
            continue
        if {judged, on_gold["verdict"]} != {AS_GOOD, WORSE}:
            continue
        bounds = f"[{number_text(on_gold['lower'], 2)}, {number_text(on_gold['upper'], 2)}]"
        why = (
            f"{DISAGREE}: the judge says {judged}, the gold scores say {on_gold['verdict']} "
            f"(Δ {number_text(on_gold['mean_diff'], 2)} {bounds} on {plural(on_gold['n_inputs'], 'input')}, ×10): "
            "no verdict rests on the judge here"
        )
        row.update(verdict=INCONCLUSIVE, verdict_held=True, more_runs=None)
        row["verdict_reason"] = f"{why}; the judge's bounds alone: {row['verdict_reason']}"
    return pl.DataFrame(rows, schema=verdicts.schema)
