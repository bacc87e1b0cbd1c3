"""The label minimum: how often the label-corrected bounds cover the truth, judge by judge, label count by label count.

    python benchmarks/label_validity.py --races 20000 --labels 10 20 30 40 --inputs 16 --runs 4

For every judge of `gradebench.sim._label_world.JUDGES` (fair, lenient, biased by input, rare, constant, offset, pure
noise; each at the margin line, truth −1 exactly, with between-input spread), simulates ``races`` races of ``inputs``
× ``runs`` runs per entry, labels ``labels`` runs a side (a simple random sample), and measures the label-corrected
verdict (`gradebench._stats.ppi.corrected_difference`, one-sided 95% bounds, margin 1):

- ``cover_lower`` / ``cover_upper``: share of races whose lower (upper) bound is on the right side of the truth;
  ``cover_both``: both (a two-sided 90% interval). Each with its 95% Monte Carlo interval (Wilson);
- ``false_as_good`` (lower bound above −1) and ``false_worse`` (upper bound below −1): at the margin line both are
  wrong, so they are 1 − the coverages;
- ``width``: mean upper − lower, beside ``width_labels_alone`` (the judge's weight fixed at 0) and
  ``width_classic`` (fixed at 1, classic PPI) on the same races, and the mean tuned weights ``weight_c``/``weight_r``.

Then ``rare_long``: the rare judge again with ``--long-runs`` runs an input (400 a side at 16 inputs) and
``--long-labels`` labels a side, where a bias on ~5% of the runs can escape the labels. Seeds: judge j is drawn by
``numpy.random.default_rng([seed, j])``, the long cell by ``[seed, 100]``. Ends with one JSON line (also the
``minimum``: the fewest labels of those measured at which every judge's one-sided coverages are ≥ 0.93).

``--active`` draws the labels by active labelling instead (`gradebench._stats.active`: chances led by how near a
run's judge score is to 7, ``--floor`` to ``--ceiling`` × the mean chance; ``labels`` a side by sequential Poisson
sampling, seeded ``[seed, j, 1]``) and the corrected verdict weights each label by 1/chance.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from gradebench._stats.active import CEILING, FLOOR, ask, judge_uncertainty, label_chances
from gradebench._stats.ppi import corrected_difference
from gradebench.sim._label_world import JUDGES, Scenario, World, draw

MARGIN = 1.0
Z = 1.959963984540054
COVERAGE_FLOOR = 0.93
BOUNDARY, WIDTH = 7.0, 3.0
"""Active labelling here: a run's uncertainty is how near its judge score lies to 7, within 3 points (a judge with
one rating a run has no spread to show): between a right answer's 8–10 and a wrong one's 4–6."""


def wilson(hits: int, n: int) -> list[float]:
    """The 95% Wilson score interval of a rate of ``hits`` in ``n``."""
    p = hits / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def rate(hit: np.ndarray) -> dict:
    count = int(hit.sum())
    return {"rate": round(count / hit.size, 4), "mc95": wilson(count, hit.size)}


def actively(
    world: World, labels: int, rng: np.random.Generator, floor: float, ceiling: float
) -> tuple[np.ndarray, ...]:
    """The arrays with ``labels`` runs a side drawn by active labelling (`gradebench._stats.active`, over each side's
    runs of a race), each run's chance in place of the labellable mask."""
    arrays: list[np.ndarray] = []
    for judge, human in ((world.judge_c, world.human_c), (world.judge_r, world.human_r)):
        flat = judge.reshape(judge.shape[0], -1, 1)
        uncertainty = judge_uncertainty(flat, boundary=BOUNDARY, width=WIDTH)
        chances = label_chances(uncertainty, labels, floor=floor, ceiling=ceiling)
        labelled, _ = ask(chances, rng)
        arrays += [judge, np.where(labelled.reshape(judge.shape), human, np.nan), chances.reshape(judge.shape)]
    return tuple(arrays)


def cell(judge: Scenario, seed: list[int], *, races: int, inputs: int, runs: int, labels: int, **active: float) -> dict:
    """One judge and label count; with ``floor`` and ``ceiling`` given, the labels drawn by active labelling."""
    world = draw(judge, np.random.default_rng(seed), races=races, inputs=inputs, runs=runs)
    if active:
        arrays = actively(world, labels, np.random.default_rng([*seed, 1]), active["floor"], active["ceiling"])
    else:
        arrays = world.arrays(labels)
    found = corrected_difference(*arrays)
    alone = corrected_difference(*arrays, judge_weight=0.0)
    classic = corrected_difference(*arrays, judge_weight=1.0)
    truth = judge.truth
    return {
        "cover_lower": rate(found.lower <= truth),
        "cover_upper": rate(found.upper >= truth),
        "cover_both": rate((found.lower <= truth) & (found.upper >= truth)),
        "false_as_good": rate(found.lower > -MARGIN),
        "false_worse": rate(found.upper < -MARGIN),
        "width": round(float(np.mean(found.upper - found.lower)), 3),
        "width_labels_alone": round(float(np.mean(alone.upper - alone.lower)), 3),
        "width_classic": round(float(np.mean(classic.upper - classic.lower)), 3),
        "cover_lower_classic": round(float(np.mean(classic.lower <= truth)), 4),
        "weight_c": round(float(found.weights[:, 0].mean()), 3),
        "weight_r": round(float(found.weights[:, 1].mean()), 3),
        "labels_mean": [round(float(x), 2) for x in found.labels.mean(axis=0)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=20_000)
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 20, 30, 40])
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--long-runs", type=int, default=25)
    parser.add_argument("--long-labels", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--active", action="store_true", help="draw the labels by active labelling")
    parser.add_argument("--floor", type=float, default=FLOOR, help="the active chances' floor, × the mean chance")
    parser.add_argument("--ceiling", type=float, default=CEILING, help="the active chances' ceiling, × the mean")
    args = parser.parse_args()
    active = {"floor": args.floor, "ceiling": args.ceiling} if args.active else {}
    started = time.perf_counter()
    result: dict = {
        k: getattr(args, k) for k in ("races", "labels", "inputs", "runs", "seed", "active", "floor", "ceiling")
    }
    result["margin"], result["truth"] = MARGIN, -MARGIN
    holds = dict.fromkeys(args.labels, True)
    for j, judge in enumerate(JUDGES):
        entry: dict = {"about": judge.about}
        for labels in args.labels:
            size = {"races": args.races, "inputs": args.inputs, "runs": args.runs, "labels": labels}
            figures = cell(judge, [args.seed, j], **size, **active)
            entry[f"labels_{labels}"] = figures
            holds[labels] &= min(figures["cover_lower"]["rate"], figures["cover_upper"]["rate"]) >= COVERAGE_FLOOR
            print(judge.name, labels, json.dumps(figures), flush=True)
        result[judge.name] = entry
    rare = next(j for j in JUDGES if j.name == "rare")
    long = {"races": args.races, "inputs": args.inputs, "runs": args.long_runs, "labels": args.long_labels}
    result["rare_long"] = {**long, **cell(rare, [args.seed, 100], **long, **active)}
    result["minimum"] = next((m for m in sorted(args.labels) if holds[m]), None)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
