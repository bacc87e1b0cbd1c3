"""Does every race design keep its false "as good" at the margin to 5% when inputs differ? Synthetic jobs, the
product's own race code.

    nice python benchmarks/design_validity.py --races 2000 --seed 22          # every world, every design (~1 h)
    python benchmarks/design_validity.py --races 300 --worlds skewed-2 --designs auto-256

A job here is a population of inputs. On input i the reference entry's run scores round(r_i + e) and the candidate's
round(r_i + δ + σ_b·z_i + e), clipped to 0..10, with e ~ N(0, σ_w²) fresh on every run; r_i ~ N(6.5, 1.5²); z_i has
mean 0 and sd 1 in one of four shapes: ``normal``; ``skewed`` (z = 1 − Exp(1): a long tail of inputs much worse,
skewness −2); ``bimodal`` (z = ±1, half each); ``rare-bad`` (z = −3 on 10% of inputs, +1/3 on the rest: 16 inputs
miss every bad one in 18.5% of races). A candidate that fails (``fail`` > 0) scores 0 on that share of
its runs. The truth is the job's mean paired difference, E_i[E(candidate score | i) − E(reference score | i)] with the
clipping and the failures in it, computed exactly over the noise (the expected rounded, clipped score is
Σ_k Φ((level − k + ½)/σ_w)) and over 200,000 inputs drawn once (seed 0); δ is solved (bisection) so that the truth is
exactly −margin (an "as good" is false, and so would a "worse" be) or 0 (one margin inside: a "worse" is false, an "as
good" is power). Each race draws its 16 inputs fresh from the population.

Designs, raced by the product's code on these scores (no HTTP, no fleet); ``--designs`` picks among them, by default
``fixed``, ``gsd-64`` and ``gsd-256`` (``auto-*`` race the same class on the same jobs, so they print the same):
- ``fixed``: 16 inputs × 4 runs, `gradebench._stats.paired.non_inferiority` on the runs frame a report would hold.
- ``auto-64`` / ``auto-256``: ``runs="auto"`` with ``max_runs`` 64 (the default, 4 per input) and 256 (16 per input):
  the race class the product dispatches for the design (`gradebench._verdict.gsd.RACES`) asked for its waves
  (`next_wave`) and fed the scores (`land`) until it is done; the verdict is the entry's at its stop (`verdict`).
- ``gsd-64`` / ``gsd-256``: the same with ``runs="gsd"`` (today the same class: ``auto`` is a name for it).

Printed per world and design: false "as good" at the margin with its Clopper–Pearson 95% interval, false "worse" at
truth 0, power (as good at truth 0), mean runs of the candidate. Race r of a cell uses seed (seed, world, design,
truth, r); the same seed gives the same figures. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from gradebench._base.vocab import Design, Role
from gradebench._stats.paired import AS_GOOD, WORSE, non_inferiority
from gradebench._verdict.gsd import RACES

INPUTS, FIXED_RUNS, MARGIN, CAND, REF = 16, 4, 1.0, "cand", "ref"
POPULATION = 200_000


@dataclass(frozen=True)
class World:
    name: str
    shape: str
    between: float
    """σ_b: sd of the candidate's per-input shift (points of 10, before rounding and clipping)."""
    noise: float
    """σ_w: per-run noise sd."""
    fail: float = 0.0
    """Share of the candidate's runs that fail (score 0)."""


WORLDS = [
    World("normal-0", "normal", 0.0, 1.5),
    World("normal-0.5", "normal", 0.5, 1.5),
    World("normal-1", "normal", 1.0, 1.5),
    World("normal-2", "normal", 2.0, 1.5),
    World("skewed-1", "skewed", 1.0, 1.5),
    World("skewed-2", "skewed", 2.0, 1.5),
    World("bimodal-2", "bimodal", 2.0, 1.5),
    World("normal-1-noisy", "normal", 1.0, 2.5),
    World("failing-1", "normal", 1.0, 1.0, fail=0.1),
    World("rare-bad-2", "rare-bad", 2.0, 1.5),
]
DESIGNS = ["fixed", "auto-64", "auto-256", "gsd-64", "gsd-256"]
DEFAULT_DESIGNS = ["fixed", "gsd-64", "gsd-256"]


def ndtr(x: np.ndarray) -> np.ndarray:
    """Φ(x), vectorised (Abramowitz & Stegun 7.1.26 for erfc: absolute error under 1.5e-7)."""
    z = np.abs(np.asarray(x, dtype=float)) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    upper = 0.5 * poly * np.exp(-z * z)  # 1 − Φ(|x|)
    return np.where(np.asarray(x) >= 0, 1.0 - upper, upper)


def shape_draws(shape: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of z (mean 0, sd 1) of ``shape``."""
    if shape == "normal":
        return rng.standard_normal(n)
    if shape == "skewed":
        return 1.0 - rng.exponential(1.0, n)
    if shape == "rare-bad":
        return np.where(rng.random(n) < 0.1, -3.0, 1.0 / 3.0)
    if shape == "bimodal":
        return np.where(rng.random(n) < 0.5, -1.0, 1.0)
    raise ValueError(f"unknown shape {shape!r}")


def expected_score(level: np.ndarray, noise: float) -> np.ndarray:
    """E round(level + e) clipped to 0..10, e ~ N(0, noise²): Σ_{k=1..10} P(level + e ≥ k − ½) (interpolated on a
    grid of step 0.001: the function is smooth, the error under 1e-7)."""
    grid, values = _expected_table(noise)
    return np.interp(level, grid, values)


@functools.lru_cache(maxsize=8)
def _expected_table(noise: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.arange(-20.0, 30.0, 0.001)
    k = np.arange(1, 11)
    return grid, np.asarray(ndtr((grid[:, None] - k + 0.5) / noise).sum(axis=1))


@functools.lru_cache(maxsize=64)
def shift_for(world: World, truth: float) -> float:
    """δ that makes the job's mean paired difference exactly ``truth`` (bisection over a fixed population)."""
    rng = np.random.default_rng(0)
    ref = 6.5 + 1.5 * rng.standard_normal(POPULATION)
    z = shape_draws(world.shape, POPULATION, rng)
    reference = expected_score(ref, world.noise).mean()

    def job_mean(delta: float) -> float:
        return float((1 - world.fail) * expected_score(ref + delta + world.between * z, world.noise).mean() - reference)

    lo, hi = -10.0, 10.0
    for _ in range(40):  # to 2e-5 of a point
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if job_mean(mid) < truth else (lo, mid)
    return (lo + hi) / 2


class Job:
    """One race's 16 inputs, drawn fresh from the world's population, and their runs' scores on demand."""

    def __init__(self, world: World, delta: float, rng: np.random.Generator):
        self.world, self.rng = world, rng
        self.ids = [f"q{i}" for i in range(INPUTS)]
        ref = 6.5 + 1.5 * rng.standard_normal(INPUTS)
        cand = ref + delta + world.between * shape_draws(world.shape, INPUTS, rng)
        self.level = {(REF, q): r for q, r in zip(self.ids, ref, strict=True)}
        self.level |= {(CAND, q): c for q, c in zip(self.ids, cand, strict=True)}

    def score(self, entry: str, input_id: str) -> float:
        if entry == CAND and self.rng.random() < self.world.fail:
            return 0.0
        value = round(self.level[(entry, input_id)] + self.world.noise * self.rng.standard_normal())
        return float(min(10, max(0, value)))


def fixed_race(job: Job) -> tuple[str, int]:
    """The fixed design's verdict on 16 × 4 runs of each entry, and the candidate's runs."""
    rows = [
        (q, Role.CANDIDATE.value, e, k, True, job.score(e, q)) for q in job.ids for e in (REF, CAND) for k in range(4)
    ]
    runs = pl.DataFrame(rows, schema=["input_id", "role", "entry", "repeat", "ok", "score"], orient="row")
    verdict = non_inferiority(runs, CAND, REF, margin=MARGIN).verdict
    return str(verdict), INPUTS * FIXED_RUNS


def to_verdict_race(design: str, max_runs: int) -> Callable[[Job, str], tuple[str, int]]:
    """A race to a verdict as the product runs it: the class it dispatches for ``design``, waves in and scores out."""
    race_class = RACES[Design(design)]

    def run(job: Job, seed: str) -> tuple[str, int]:
        race = race_class([REF, CAND], REF, job.ids, margin=MARGIN, max_runs=max_runs, seed=seed)
        while not race.done and (wave := race.next_wave()):
            race.land({(e, u): job.score(e, u.input_id) for e, u in wave})
        state = race.entry(CAND)
        return str(state.verdict.verdict if state.verdict is not None else None), state.runs

    return run


def designs() -> dict[str, Callable[[Job, str], tuple[str, int]]]:
    return {
        "fixed": lambda job, seed: fixed_race(job),
        **{f"{d}-{m}": to_verdict_race(d, m) for d in ("auto", "gsd") for m in (64, 256)},
    }


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    head = math.lgamma(n + 1)
    logs = [head - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq for j in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact two-sided 95% interval of a rate seen ``k`` times in ``n`` (bisection on the binomial tails)."""

    def solve(tail: Callable[[float], float]) -> float:  # tail rises with p from below 0.025 to above it
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid) < 0.025 else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: 1.0 - binomial_cdf(k - 1, n, p))
    upper = 1.0 if k == n else 1.0 - solve(lambda q: binomial_cdf(k, n, 1.0 - q))
    return lower, upper


def cell(world: World, design: str, truth: float, races: int, seed: int) -> dict[str, Any]:
    """``races`` races of ``design`` in ``world`` at ``truth``: verdict counts and the candidate's mean runs."""
    delta = shift_for(world, truth)
    run = designs()[design]
    counts = {AS_GOOD: 0, WORSE: 0}
    runs = 0
    for r in range(races):
        # runs="auto" is the group-sequential race: its cells draw the gsd cells' jobs, so the two print the same
        key = [seed, WORLDS.index(world), DESIGNS.index(design.replace("auto", "gsd")), int(truth == 0), r]
        job = Job(world, delta, np.random.default_rng(key))
        verdict, made = run(job, f"{seed}:{r}")
        counts[verdict] = counts.get(verdict, 0) + 1
        runs += made
    return {"as_good": counts[AS_GOOD], "worse": counts[WORSE], "races": races, "mean_runs": runs / races}


def rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:6.1%} [{lo:.1%}, {hi:.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=2000, help="races a cell at the margin (world × design)")
    parser.add_argument("--inside-races", type=int, default=500, help="races a cell one margin inside (truth 0)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--worlds", default=",".join(w.name for w in WORLDS))
    parser.add_argument("--designs", default=",".join(DEFAULT_DESIGNS), help=f"of {', '.join(DESIGNS)}")
    args = parser.parse_args()
    worlds = [w for w in WORLDS if w.name in args.worlds.split(",")]
    chosen = [d for d in DESIGNS if d in args.designs.split(",")]
    print(
        f"seed {args.seed}, {args.races} races a cell at the margin and {args.inside_races} at truth 0, margin "
        f"{MARGIN:g}, {INPUTS} inputs a race; runs='auto' races with {RACES[Design.AUTO].__name__}, runs='gsd' with "
        f"{RACES[Design.GROUP_SEQUENTIAL].__name__}"
    )
    out: dict[str, Any] = {"seed": args.seed, "races": args.races, "inside_races": args.inside_races, "cells": {}}
    worst = 0.0
    for world in worlds:
        for design in chosen:
            start = time.perf_counter()
            at_margin = cell(world, design, -MARGIN, args.races, args.seed)
            inside = cell(world, design, 0.0, args.inside_races, args.seed)
            n, m = args.races, args.inside_races
            high = clopper_pearson(at_margin["as_good"], n)[1]
            worst = max(worst, high)
            print(
                f"{world.name:17} {design:9} false as good {rate(at_margin['as_good'], n)}"
                f"  false worse {rate(inside['worse'], m)}  power {inside['as_good'] / m:6.1%}"
                f"  runs {at_margin['mean_runs']:5.1f}/{inside['mean_runs']:5.1f}"
                f"  ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
            out["cells"][f"{world.name}/{design}"] = {
                "false_as_good": at_margin["as_good"] / n,
                "false_as_good_upper95": round(high, 4),
                "false_worse_at_0": inside["worse"] / m,
                "power_at_0": inside["as_good"] / m,
                "mean_runs_at_margin": at_margin["mean_runs"],
                "mean_runs_at_0": inside["mean_runs"],
            }
    out["worst_false_as_good_upper95"] = round(worst, 4)
    out["every_design_within_6pct"] = worst <= 0.06
    print(json.dumps(out))


if __name__ == "__main__":
    main()
