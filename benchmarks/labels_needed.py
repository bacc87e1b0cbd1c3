"""Do the labels a report asks for settle the verdict? The planned labels checked against simulated races.

    python benchmarks/labels_needed.py --races 4000 --seed 0

A report without labels leads with how many labels a side would likely settle each verdict
(`gradebench._stats.label_plan.planned_labels`: planned from the judge's scores alone, at least `MIN_LABELS`, the
number a corrected verdict is acted on at, at most every run). For each world below and each race shape (inputs ×
runs an entry), this simulates ``races`` races (`gradebench.sim._label_world.draw`: a person's score and a judge's
of every run, the truth known), plans the labels from the judge's scores alone, labels that many runs a side (a
simple random sample: the panel's active order is one when no swap gap was measured) and computes the
label-corrected verdict (`gradebench._stats.ppi.corrected_difference`, margin 1). Per world and shape:

- ``planned``: share of races given a number (the rest are told labelling every run would likely not settle it);
- ``settled``: of those, the share whose corrected verdict settled (as good or worse) on the planned labels — the
  figure the plan promises about 0.8 of, when the judge's Δ holds — with its 95% Monte Carlo interval (Wilson);
- ``wrong``: of those, the share settled on the wrong side of the truth (as good below the margin line, worse above);
- ``labels_median``: the median number told; ``settled_unplanned``: of the races told "more runs", the share that
  every run labelled settled after all.

The worlds: a fair judge with the candidate as good (truth 0), a little worse (−0.4) and well below the margin (−2.2);
the judge biases of `gradebench.sim._label_world.SCENARIOS` whose truth is off the margin line (lenient on a worse
verbose candidate, harsh on an as-good one, a rare lenient bias on an as-good one); and a fair judge on the margin
line (−1), where no number of labels settles a verdict with good probability. Seeds: world w, shape s is drawn by
``numpy.random.default_rng([seed, w, s])``. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from gradebench._stats.label_plan import NO_PLAN, planned_labels
from gradebench._stats.ppi import MIN_LABELS, corrected_difference, corrected_verdicts
from gradebench.sim._label_world import SCENARIOS, Scenario, Side, draw

MARGIN = 1.0
Z = 1.959963984540054
SHAPES = ((16, 4), (10, 2), (26, 4))
"""Inputs × runs an entry: the label benchmarks' shape, `gradebench demo`'s, and the order agent's every input."""


def _fair(name: str, right: float, about: str) -> Scenario:
    return Scenario(
        name=name,
        candidate=Side(right=right, spread=0.04),
        reference=Side(right=0.95, spread=0.01),
        about=about,
    )


_BIASED = {s.name: s for s in SCENARIOS}
WORLDS: tuple[Scenario, ...] = (
    _fair("fair_as_good", 0.95, "a fair judge, the candidate as good (truth 0)"),
    _fair("fair_slightly_worse", 0.85, "a fair judge, the candidate 0.4 worse"),
    _fair("fair_worse", 0.40, "a fair judge, the candidate 2.2 worse"),
    _BIASED["verbose_worse"],
    _BIASED["harsh_on_candidate_as_good"],
    _BIASED["verbose_as_good_rare_bias"],
    _fair("fair_at_margin", 0.70, "a fair judge, the candidate on the margin line (truth −1)"),
)
"""The worlds the plan is checked in (the module docstring)."""


def wilson(hits: int, n: int) -> list[float]:
    """The 95% Wilson score interval of a rate of ``hits`` in ``n`` (none for n = 0)."""
    if not n:
        return []
    p = hits / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def check(world: Scenario, rng: np.random.Generator, *, races: int, inputs: int, runs: int) -> dict:
    """One world and shape: the plan's figures (module docstring)."""
    drawn = draw(world, rng, races=races, inputs=inputs, runs=runs)
    every = np.ones(drawn.judge_c.shape, dtype=bool)
    plan = planned_labels(drawn.judge_c, every, drawn.judge_r, every, MARGIN)
    told = np.where(plan == NO_PLAN, inputs * runs, np.minimum(np.maximum(plan, MIN_LABELS), inputs * runs))
    verdicts = corrected_verdicts(corrected_difference(*drawn.arrays(told)), MARGIN)
    settled = verdicts != "inconclusive"
    truth = world.truth
    wrong = ((verdicts == "as good") & (truth < -MARGIN)) | ((verdicts == "worse") & (truth > -MARGIN))
    given = plan != NO_PLAN
    hits, n = int((settled & given).sum()), int(given.sum())
    return {
        "world": world.name,
        "truth": round(truth, 3),
        "inputs": inputs,
        "runs": runs,
        "races": races,
        "planned": round(n / races, 4),
        "settled": round(hits / n, 4) if n else None,
        "settled_mc95": wilson(hits, n),
        "wrong": round(int((wrong & given).sum()) / n, 4) if n else None,
        "labels_median": float(np.median(told[given])) if n else None,
        "settled_unplanned": round(float(settled[~given].mean()), 4) if (~given).any() else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started, rows = time.process_time(), []
    for w, world in enumerate(WORLDS):
        for s, (inputs, runs) in enumerate(SHAPES):
            row = check(world, np.random.default_rng([args.seed, w, s]), races=args.races, inputs=inputs, runs=runs)
            rows.append(row)
            mc = row["settled_mc95"]
            print(
                f"{world.name:<28} {inputs:>2}×{runs}  planned {row['planned']:.3f}  settled {row['settled']} "
                f"{mc}  wrong {row['wrong']}  labels {row['labels_median']}  every-run {row['settled_unplanned']}"
            )
    print(
        json.dumps(
            {"seed": args.seed, "races": args.races, "cpu_s": round(time.process_time() - started, 1), "rows": rows}
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
