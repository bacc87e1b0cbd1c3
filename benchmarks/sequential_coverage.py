"""Simulated coverage and width of gradebench._stats.sequential's betting bounds against a naive interval looked at
every t.

    python benchmarks/sequential_coverage.py --sequences 1000 --length 200

For four bounded distributions of paired differences with a known mean (score-like differences, two points at the
extremes, 20·Beta(2, 3) − 10, half-point differences with sd ≈ 2), simulates independent sequences and checks every
bound after every value. ``miss_*`` is the share of sequences whose bound ever excluded the true mean (a one-sided
bound at alpha; ``miss_either`` for the pair, at most 2·alpha); ``width`` is the mean of upper − lower at
t = 25, 50, 100, 200. The naive interval is mean ∓ z_(1−alpha)·s/√t, looked at from the 8th value on (as
``min_inputs``). For distributions whose mean is above −1, ``settled_share`` is the share of sequences whose lower
bound passed −1 (``as good`` at margin 1) and ``settle_median`` the median number of values it took (length + 1 when
fewer than half did; the naive interval's figures are there to compare, not to use). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from statistics import NormalDist

import numpy as np

from gradebench._stats.sequential import GRID, TRUNCATION, betting_bounds

WIDTH_AT = (25, 50, 100, 200)


def draw(name: str, rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """A batch of sequences from the named distribution, with its exact mean."""
    if name == "score_differences":
        support = np.array([-8.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0])
        p = np.array([0.05, 0.05, 0.10, 0.20, 0.35, 0.20, 0.05])
        return rng.choice(support, size=shape, p=p), float(support @ p)
    if name == "extremes":
        return np.where(rng.random(shape) < 0.25, 10.0, -10.0), -5.0
    if name == "beta_like":
        return 20.0 * rng.beta(2.0, 3.0, shape) - 10.0, -2.0
    if name == "realistic":
        return np.clip(np.round(rng.normal(0.0, 2.0, shape) * 2) / 2, -10.0, 10.0), 0.0
    raise ValueError(f"unknown distribution {name!r}")


def naive(x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / t
    var = np.maximum(np.cumsum(x**2, axis=1) - t * mean**2, 0.0) / np.maximum(t - 1, 1)
    half = NormalDist().inv_cdf(1 - alpha) * np.sqrt(var / t)
    return mean - half, mean + half


def summary(lower: np.ndarray, upper: np.ndarray, mu: float, looked: np.ndarray) -> dict:
    low = ((lower > mu) & looked).any(axis=1)
    high = ((upper < mu) & looked).any(axis=1)
    width = (upper - lower).mean(axis=0)
    out: dict = {
        "miss_lower": round(float(low.mean()), 4),
        "miss_upper": round(float(high.mean()), 4),
        "miss_either": round(float((low | high).mean()), 4),
    }
    out["width"] = {str(t): round(float(width[t - 1]), 3) for t in WIDTH_AT if t <= width.size}
    if mu > -1.0:
        done = (lower > -1.0) & looked
        settled = np.where(done.any(axis=1), np.argmax(done, axis=1) + 1, lower.shape[1] + 1)
        out["settled_share"] = round(float(done.any(axis=1).mean()), 4)
        out["settle_median"] = float(np.median(settled))  # length + 1 when fewer than half settled
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=1000)
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--c", type=float, default=TRUNCATION)
    parser.add_argument("--grid", type=int, default=GRID)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    looked = np.arange(1, args.length + 1) >= 8
    everywhere = np.ones(args.length, dtype=bool)
    result: dict = {key: getattr(args, key) for key in ("sequences", "length", "alpha", "c", "grid", "seed")}
    for name in ("score_differences", "extremes", "beta_like", "realistic"):
        x, mu = draw(name, rng, (args.sequences, args.length))
        lower, upper = betting_bounds(x, -10.0, 10.0, alpha=args.alpha, c=args.c, grid=args.grid)
        result[name] = {
            "mean": mu,
            "betting": summary(lower, upper, mu, everywhere),
            "naive": summary(*naive(x, args.alpha), mu, looked),
        }
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
