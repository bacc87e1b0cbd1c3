"""How often does the gold test behind a "the judge and the gold labels disagree" say worse, or as good, wrongly?

    python benchmarks/gold_check.py --races 2000      # one JSON line per world, then the targets

A race scored against gold labels gives each run a 0/1 gold score; `gradebench._verdict.gold` tests each candidate
on them (×10) against the reference entry by the judge's own paired non-inferiority test and margin (1 point of 10:
0.1 of accuracy). A judge's ``as good`` is held open when that test says ``worse``, a ``worse`` when it says
``as good``. So the rates that matter are the gold test's false ``worse`` for a candidate truly as accurate (it
would hold a right ``as good`` open) and its false ``as good`` at the margin (it would hold a right ``worse`` open),
at the input counts a gold data set has.

The worlds are not the simulated fleet's: each race draws its inputs' accuracies afresh — the reference entry's
``p_i`` uniform on [0.35, 0.95] (inputs differ a lot: the between-input spread is the largest source of variance),
the candidate's ``p_i − δ`` — then each entry's runs on each input as Bernoulli draws, scored ×10. ``δ`` is 0 (as
accurate), 0.1 (exactly on the margin) or 0.2 (twice the margin worse). The truth is the mean of ``−δ`` over inputs:
exact. Seeds: race ``r`` of a world uses ``numpy.random.default_rng([seed, world, r])``; the bootstrap's own seed is
the product's fixed one. Intervals are Clopper–Pearson 95%.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import polars as pl

from gradebench._base.vocab import Role
from gradebench._stats.paired import AS_GOOD, WORSE, non_inferiority

WORLDS = [(n, runs, delta) for n in (10, 30) for runs in (1, 2) for delta in (0.0, 0.1, 0.2)]
"""(inputs, runs per input and entry, δ): the sizes of a small and a larger gold set."""


def race_frame(rng: np.random.Generator, n: int, runs: int, delta: float) -> pl.DataFrame:
    """One race's candidate runs of both entries, their gold scores ×10 in ``score``."""
    p = rng.uniform(0.35, 0.95, size=n)
    rows: dict[str, list[object]] = {"input_id": [], "role": [], "entry": [], "repeat": [], "ok": [], "score": []}
    for entry, accuracy in (("ref", p), ("cand", p - delta)):
        hits = rng.random((n, runs)) < accuracy[:, None]
        for i in range(n):
            for k in range(runs):
                rows["input_id"].append(f"i{i}")
                rows["role"].append(Role.CANDIDATE.value)
                rows["entry"].append(entry)
                rows["repeat"].append(k)
                rows["ok"].append(True)
                rows["score"].append(10.0 * hits[i, k])
    return pl.DataFrame(rows)


def _at_most(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


def _solve(tail: object, target: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(50):  # bisection: the tail falls as p rises
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) > target else (lo, mid)  # type: ignore[operator]
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact two-sided 95% interval of a rate seen k times in n."""
    lo = 0.0 if k == 0 else _solve(lambda p: _at_most(k - 1, n, p), 0.975)
    hi = 1.0 if k == n else _solve(lambda p: _at_most(k, n, p), 0.025)
    return lo, hi


def world(index: int, n: int, runs: int, delta: float, races: int, seed: int) -> dict[str, object]:
    said = {AS_GOOD: 0, WORSE: 0}
    for r in range(races):
        rng = np.random.default_rng([seed, index, r])
        verdict = non_inferiority(race_frame(rng, n, runs, delta), "cand", "ref", margin=1.0).verdict
        if verdict in said:
            said[verdict] += 1
    out: dict[str, object] = {"inputs": n, "runs": runs, "delta": delta, "races": races}
    for name, k in (("as_good", said[AS_GOOD]), ("worse", said[WORSE])):
        lo, hi = clopper_pearson(k, races)
        out[name] = round(k / races, 4)
        out[f"{name}_ci"] = [round(lo, 4), round(hi, 4)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    results = [world(i, n, runs, d, args.races, args.seed) for i, (n, runs, d) in enumerate(WORLDS)]
    for line in results:
        print(json.dumps(line))
    false_worse = max(float(r["worse"]) for r in results if r["delta"] == 0.0)  # type: ignore[arg-type]
    false_good = max(float(r["as_good"]) for r in results if r["delta"] == 0.1)  # type: ignore[arg-type]
    print(json.dumps({"max_false_worse_at_0": false_worse, "max_false_as_good_at_margin": false_good}))


if __name__ == "__main__":
    main()
