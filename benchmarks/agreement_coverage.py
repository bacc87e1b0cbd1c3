"""Do the agreement intervals cover what they say? κ and ρ of a judge against labels, κ and the mean difference of a
panel's two judges, against the truth of the whole population of runs.

    python benchmarks/agreement_coverage.py --replications 2000 --seed 0

1. Labels (`gradebench._verdict.label_agreement.agreement`). A population of 200,000 runs per world: a person's score
   (right answers 7..10, wrong ones 0..4; or pass/fail, 10 or 0), half the runs right (``balanced``) or 85%
   (``most_right``); the judge scores an ``informed`` share of the runs as the person does, ±1 point now and then on
   0..10, and the rest as if it had not read the answer (another run's score), and it gives 10 to 15% of the wrong
   answers whatever (jumps, not Gaussian noise). Four judges, κ from about 0 to about 0.9. ``labels`` labels drawn
   at random from the population; the truth is κ (`gradebench._stats.kappa`) and Spearman's ρ of all 200,000 runs.
2. Panels (`gradebench._judge.agreement.judge_agreement`). ``inputs`` inputs × 4 runs: each run has an input effect
   and a run effect both judges see (sd 1 each), each judge its own noise; worlds ``continuous`` (noise 0.8 each, the
   second judge 0.5 higher, scores as drawn), ``judge_scale`` (the same rounded to 0..10: 5 + 1.5 × score),
   ``jumps`` (judge_scale, the second judge giving 10 to 15% of the runs below −0.5), ``weak`` (judge_scale, the second
   judge's noise sd 3) and ``pass_fail`` (each judge passes a run above its own threshold, most runs pass). The truth is
   κ and the mean difference of 100,000 inputs × 4 runs.

Each cell: the share of 95% intervals that cover the truth with its exact (Clopper–Pearson) 95% interval over the
replications, the share of samples given an interval (an undefined κ has none: counted as not covering), the mean
width (for labels also split by whether the sentence warns that κ rests on fewer than `FEW_OTHER` labels off the
person's most common score), and beside it the interval the product used before (a percentile bootstrap of the
labels with κ undefined for a constant side; the panel's delete-one-input jackknife on Fisher's z; for ρ, Fisher's
z with Bonett & Wright's standard error alone).
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from gradebench._judge.agreement import judge_agreement
from gradebench._stats.kappa import kappa_of_sums, unit_sums, weighted_kappa
from gradebench._stats.t import t_two_sided
from gradebench._verdict.label_agreement import FEW_OTHER, agreement, spearman

LEVEL = 0.95
POPULATION = 200_000
PANEL_TRUTH_INPUTS = 100_000
RUNS = 4
JUMP = 0.15  # share of wrong answers the judge gives 10 whatever


# ------------------------------------------------------------------------------------------------ label worlds


def label_population(rng: np.random.Generator, scale: str, right_share: float, informed: float) -> np.ndarray:
    """(2, POPULATION): the judge's and the person's score of every run of one world."""
    right = rng.random(POPULATION) < right_share
    if scale == "0..10":
        good = rng.choice([7, 8, 9, 10], POPULATION, p=[0.15, 0.25, 0.3, 0.3])
        human = np.where(right, good, rng.choice(5, POPULATION))
        close = np.clip(human + rng.choice([-1, 0, 0, 1], POPULATION), 0, 10)
    else:
        human = np.where(right, 10, 0)
        close = human
    judge = np.where(rng.random(POPULATION) < informed, close, rng.permutation(human))
    judge = np.where(~right & (rng.random(POPULATION) < JUMP), 10, judge)
    return np.stack([judge, human]).astype(float)


def mid_ranks(x: np.ndarray) -> np.ndarray:
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2)[inverse.ravel()]


def population_rho(judge: np.ndarray, human: np.ndarray) -> float:
    return float(np.corrcoef(mid_ranks(judge), mid_ranks(human))[0, 1])


def old_label_interval(judge: np.ndarray, human: np.ndarray, rng: np.random.Generator) -> tuple[float, float] | None:
    """The percentile bootstrap the product used before, κ undefined for a resample with a constant side."""
    idx = rng.integers(0, judge.size, size=(2000, judge.size))
    j, h = judge[idx], human[idx]
    found = weighted_kappa(j, h)
    found[(j.std(axis=1) == 0) | (h.std(axis=1) == 0)] = np.nan
    kept = found[~np.isnan(found)]
    if kept.size < 1000 or judge.std() == 0 or human.std() == 0:
        return None
    lo, hi = np.quantile(kept, [0.025, 0.975])
    return float(lo), float(hi)


def old_rho_interval(judge: np.ndarray, human: np.ndarray) -> tuple[float, float] | None:
    """Fisher's z with Bonett & Wright's standard error on the labels, the product's ρ interval before (none for ±1)."""
    rho = float(spearman(judge, human)[0])
    if math.isnan(rho) or abs(rho) > 1 - 1e-9 or judge.size < 4:
        return None
    spread = 1.959963984540054 * math.sqrt((1 + rho**2 / 2) / (judge.size - 3))
    return math.tanh(math.atanh(rho) - spread), math.tanh(math.atanh(rho) + spread)


def label_cell(rng: np.random.Generator, world: np.ndarray, labels: int, replications: int) -> dict:
    true_kappa, true_rho = float(weighted_kappa(*world)[0]), population_rho(*world)
    tally = Tally("kappa", "rho", "kappa_before", "rho_before")
    split = {"few_other": Tally("kappa"), "enough_other": Tally("kappa")}
    for _ in range(replications):
        pick = rng.integers(0, world.shape[1], labels)
        judge, human = world[:, pick]
        found = agreement(judge, human, seed=int(rng.integers(1 << 30)))
        tally.add("kappa", found.kappa_lo, found.kappa_hi, true_kappa)
        few = "few_other" if found.other_than_mode < FEW_OTHER else "enough_other"
        split[few].add("kappa", found.kappa_lo, found.kappa_hi, true_kappa)
        tally.add("rho", found.spearman_lo, found.spearman_hi, true_rho)
        tally.add("kappa_before", *(old_label_interval(judge, human, rng) or (None, None)), true_kappa)
        tally.add("rho_before", *(old_rho_interval(judge, human) or (None, None)), true_rho)
    out = {"true_kappa": round(true_kappa, 4), "true_rho": round(true_rho, 4), **tally.summary(replications)}
    for name, part in split.items():  # κ's coverage among the samples the sentence warns on, and the others
        if part.samples:
            out[f"kappa_{name}"] = part.summary(part.samples)["kappa"] | {"samples": part.samples}
    return out


LABEL_WORLDS = [
    (scale, marginal, informed)
    for scale in ("0..10", "pass/fail")
    for marginal in ("balanced", "most_right")
    for informed in (0.0, 0.5, 0.8, 0.97)
]


def labels_part(seed: int, sizes: list[int], replications: int, progress: Callable[[str], None]) -> dict:
    out = {}
    for number, (scale, marginal, informed) in enumerate(LABEL_WORLDS):
        rng = np.random.default_rng([seed, 1, number])
        world = label_population(rng, scale, 0.5 if marginal == "balanced" else 0.85, informed)
        for labels in sizes:
            name = f"{scale}/{marginal}/informed_{informed}/{labels}_labels"
            out[name] = label_cell(rng, world, labels, replications)
            progress(f"{name}: {out[name]}")
    return out


# ------------------------------------------------------------------------------------------------ panel worlds


def panel_scores(rng: np.random.Generator, world: str, inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """The two judges' scores of ``inputs`` × RUNS runs (input-major) in one world."""
    true = np.repeat(rng.normal(0, 1, inputs), RUNS) + rng.normal(0, 1, inputs * RUNS)
    b_noise = 3.0 if world == "weak" else 0.8
    a, b = true + rng.normal(0, 0.8, true.size), true + 0.5 + rng.normal(0, b_noise, true.size)
    if world == "pass_fail":
        return np.where(a > -1.0, 10.0, 0.0), np.where(b > -1.4, 10.0, 0.0)
    if world != "continuous":
        a, b = (np.clip(np.round(5 + 1.5 * v), 0, 10) for v in (a, b))
    if world == "jumps":
        b = np.where((true < -0.5) & (rng.random(true.size) < JUMP), 10.0, b)
    return a, b


def panel_frame(a: np.ndarray, b: np.ndarray) -> pl.DataFrame:
    runs = [f"r{i}" for i in range(a.size)]
    inputs = [f"i{i // RUNS}" for i in range(a.size)]
    frame = {"run_id": runs * 2, "entry": ["e"] * (2 * a.size), "input_id": inputs * 2}
    return pl.DataFrame({**frame, "judge_entry": ["a"] * a.size + ["b"] * a.size, "score": np.concatenate([a, b])})


def old_panel_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """The delete-one-input jackknife on Fisher's z with Student's t the product used before."""
    sums = unit_sums(a, b, np.arange(a.size) // RUNS)
    m, total = sums.shape[1], sums.sum(axis=1)
    found, left_one_out = float(kappa_of_sums(*total)), kappa_of_sums(*(total[:, None] - sums))
    if math.isnan(found) or np.isnan(left_one_out).any():
        return None
    z = np.arctanh(np.clip(left_one_out, -1 + 1e-9, 1 - 1e-9))
    spread = math.sqrt((m - 1) / m * float(((z - z.mean()) ** 2).sum())) * t_two_sided(LEVEL, m - 1)
    centre = math.atanh(max(-1 + 1e-9, min(1 - 1e-9, found)))
    return math.tanh(centre - spread), math.tanh(centre + spread)


PANEL_WORLDS = ("continuous", "judge_scale", "jumps", "weak", "pass_fail")


def panels_part(seed: int, sizes: list[int], replications: int, progress: Callable[[str], None]) -> dict:
    out = {}
    for number, world in enumerate(PANEL_WORLDS):
        a, b = panel_scores(np.random.default_rng([seed, 2, number, 0]), world, PANEL_TRUTH_INPUTS)
        true_kappa, true_diff = float(weighted_kappa(a, b)[0]), float(np.mean(b - a))
        for inputs in sizes:
            rng = np.random.default_rng([seed, 2, number, inputs])
            tally = Tally("kappa", "diff", "kappa_before")
            for _ in range(replications):
                a, b = panel_scores(rng, world, inputs)
                found = judge_agreement(panel_frame(a, b), ["a", "b"])
                assert found is not None
                pair = found.pairs[0]
                tally.add("kappa", pair.kappa_lo, pair.kappa_hi, true_kappa)
                tally.add("diff", pair.diff_lo, pair.diff_hi, true_diff)
                tally.add("kappa_before", *(old_panel_interval(a, b) or (None, None)), true_kappa)
            name = f"{world}/{inputs}_inputs"
            out[name] = {"true_kappa": round(true_kappa, 4), "true_diff": round(true_diff, 4)}
            out[name] |= tally.summary(replications)
            progress(f"{name}: {out[name]}")
    return out


# ------------------------------------------------------------------------------------------------ counting


class Tally:
    """Per figure: intervals given, intervals that covered the truth, and their summed width."""

    def __init__(self, *figures: str) -> None:
        self.counts = {f: [0, 0, 0.0] for f in figures}
        self.samples = 0

    def add(self, figure: str, lo: float | None, hi: float | None, truth: float) -> None:
        self.samples += figure == next(iter(self.counts))
        if lo is None or hi is None:
            return
        count = self.counts[figure]
        count[0] += 1
        count[1] += lo <= truth <= hi
        count[2] += hi - lo

    def summary(self, replications: int) -> dict:
        out = {}
        for figure, (given, covered, width) in self.counts.items():
            out[figure] = {
                "coverage": round(covered / replications, 4),
                "coverage_ci": [round(v, 4) for v in clopper_pearson(covered, replications)],
                "given": round(given / replications, 4),
                "mean_width": round(width / max(given, 1), 3),
            }
        return out


def binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0
    if p >= 1:
        return 0.0 if k < n else 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = (
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    )
    return min(1.0, sum(math.exp(t) for t in terms))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a rate seen ``k`` times in ``n``, by bisection of the binomial tails."""
    tail = (1 - level) / 2

    def bisect(inside: Callable[[float], bool]) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else bisect(lambda p: 1 - binomial_cdf(k - 1, n, p) < tail)
    upper = 1.0 if k == n else bisect(lambda p: binomial_cdf(k, n, p) > tail)
    return lower, upper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replications", type=int, default=2000)
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--inputs", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=["labels", "panels", "both"], default="both")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    result: dict = {"replications": args.replications, "seed": args.seed, "level": LEVEL}
    if args.part in ("labels", "both"):
        result["labels"] = labels_part(args.seed, args.labels, args.replications, progress)
    if args.part in ("panels", "both"):
        result["panels"] = panels_part(args.seed, args.inputs, args.replications, progress)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
