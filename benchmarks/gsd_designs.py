"""Group-sequential designs replayed on stored scores: verdicts and calls against the fixed design, and the false
"as good" rate of entries moved exactly onto the margin.

    python benchmarks/verdict_validity.py --truth --scores /tmp/scores.json   # every run's score, 30 draws (~10 min)
    python benchmarks/gsd_designs.py --scores /tmp/scores.json --alpha 0.025,0.05 --futility 0.12

No model is called: a race is replayed from the scores the truth's 30 reference draws stored (26 order inputs × 12
runs of every entry each). Race ``r`` takes draw ``r mod 30``, 16 of its inputs and 4 of each input's 12 runs of every
entry (``numpy.random.default_rng(seed)``), in the cycles `gradebench._verdict.gsd.LookRace` draws (16 units a cycle,
looks every 8 units); each entry's verdict is `gradebench._stats.groupseq.look_verdict` at the given one-sided ``alpha``
(as good), ``worse_alpha`` and ``futility``, beside the fixed design's paired bootstrap on all 64 runs
(`gradebench._stats.paired.non_inferiority`) on the same draws. ``runs_share`` is the runs made (the reference entry's
as
long as any entry races) over the fixed design's 8 × 64. ``margin_as_good`` replays each entry's paired differences
moved so that its true difference is exactly −1: fresh races drawing inputs and runs with replacement from the pooled
draws (``--margin-races`` each); an "as good" there is false, and so is a "worse" (``margin_worse``);
``margin_worst`` is the highest "as good" rate over the entries, with its exact 95% upper bound. A replay is a guide
for choosing a design, not the benchmark: `benchmarks/verdict_validity.py` races the real thing.
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gradebench._stats.groupseq import ALPHA, FUTILITY, WORSE_ALPHA, LookRule, look_verdict, planned_looks
from gradebench._stats.paired import non_inferiority

TRUTH_PATH = Path(__file__).with_name("verdict_truth.json")
REFERENCE, INPUTS, RUNS, MARGIN = "sim/steady", 16, 4, 1.0


def load(path: Path) -> tuple[list[str], np.ndarray]:
    """Entries and scores[draw, entry, input, run] from a ``--scores`` file."""
    draws = json.loads(path.read_text())
    entries = sorted(draws[0]["scores"])
    inputs = sorted(draws[0]["scores"][REFERENCE])
    scores = np.array([[[d["scores"][e][i][:12] for i in inputs] for e in entries] for d in draws], dtype=float)
    return entries, scores


def cycles(values: np.ndarray, rng: np.random.Generator) -> list[tuple[str, float | None]]:
    """Per-input values (16, 4) in the draw order of a group-sequential race: four cycles, each its own order."""
    return [(f"q{i}", float(values[i, c])) for c in range(RUNS) for i in rng.permutation(INPUTS)]


def race_draws(scores: np.ndarray, races: int, seed: int) -> list[np.ndarray]:
    """Race ``r``: draw ``r mod 30``, 16 of its inputs, 4 of each input's runs of every entry (entry, input, run)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(races):
        draw = scores[r % scores.shape[0]][:, rng.choice(scores.shape[2], INPUTS, replace=False), :]
        picks = np.argsort(rng.random(draw.shape), axis=2)[:, :, :RUNS]
        out.append(np.take_along_axis(draw, picks, axis=2))
    return out


def replay(draws: list[np.ndarray], entries: list[str], seed: int, **options: Any) -> list[dict[str, Any]]:
    """Each race's verdict per entry and the units it ran, group-sequential."""
    rng = np.random.default_rng(seed)
    looks, ref = planned_looks(INPUTS * RUNS), entries.index(REFERENCE)
    out = []
    for runs in draws:
        verdicts = {
            e: look_verdict(cycles(runs[k] - runs[ref], rng), looks, MARGIN, LookRule(**options))
            for k, e in enumerate(entries)
            if k != ref
        }
        out.append({e: (v.verdict, looks[max(v.look, 1) - 1]) for e, v in verdicts.items()})
    return out


def fixed(draws: list[np.ndarray], entries: list[str]) -> list[dict[str, Any]]:
    """Each race's verdicts in the fixed design: every run, the paired bootstrap of `gradebench._stats.paired`."""
    out = []
    for runs in draws:
        rows = [
            {
                "input_id": f"q{i}",
                "role": "candidate",
                "entry": e,
                "repeat": j,
                "ok": True,
                "score": float(runs[k, i, j]),
            }
            for k, e in enumerate(entries)
            for i in range(INPUTS)
            for j in range(RUNS)
        ]
        frame = pl.DataFrame(rows)
        out.append(
            {
                e: (non_inferiority(frame, e, REFERENCE, margin=MARGIN).verdict, INPUTS * RUNS)
                for e in entries
                if e != REFERENCE
            }
        )
    return out


def figures(races: list[dict[str, Any]], right: dict[str, str], entries: list[str]) -> dict[str, Any]:
    made = sum(sum(u for _, u in race.values()) + max(u for _, u in race.values()) for race in races)
    pairs = [(e, v) for race in races for e, (v, _) in race.items()]
    return {
        "correct_settled_per_race": round(sum(v == right[e] for e, v in pairs) / len(races), 3),
        "runs_share": round(made / len(races) / (len(entries) * INPUTS * RUNS), 3),
        "false_as_good": sum(v == "as good" and right[e] == "worse" for e, v in pairs),
    }


def at_margin(
    scores: np.ndarray, entries: list[str], races: int, seed: int, **options: Any
) -> dict[str, tuple[float, float]]:
    """Per entry moved onto the margin: the share of races called "as good" and the share called "worse"."""
    rng = np.random.default_rng(seed)
    looks, ref, rates = planned_looks(INPUTS * RUNS), entries.index(REFERENCE), {}
    for k, e in enumerate(entries):
        if k == ref:
            continue
        pooled = (scores[:, k] - scores[:, ref]).transpose(1, 0, 2).reshape(scores.shape[2], -1)
        pooled = pooled - pooled.mean() - MARGIN
        good = worse = 0
        for _ in range(races):
            inputs = rng.integers(0, pooled.shape[0], INPUTS)
            values = pooled[inputs[:, None], rng.integers(0, pooled.shape[1], (INPUTS, RUNS))]
            verdict = look_verdict(cycles(values, rng), looks, MARGIN, LookRule(**options)).verdict
            good, worse = good + (verdict == "as good"), worse + (verdict == "worse")
        rates[e] = (round(good / races, 4), round(worse / races, 4))
    return rates


def _log_binomial(n: int, j: int, p: float) -> float:
    """log P(X = j) for X ~ Binomial(n, p), in logs: the counts here (thousands of races) overflow a float."""
    return math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * math.log(p) + (n - j) * math.log1p(-p)


def _upper(k: int, n: int, level: float = 0.95) -> float:
    """Exact (Clopper–Pearson) one-sided upper bound of a rate seen k times in n."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisection on the binomial tail P(X <= k | p) = 1 − level
        mid = (lo + hi) / 2
        tail = sum(math.exp(_log_binomial(n, j, mid)) for j in range(k + 1))
        lo, hi = (mid, hi) if tail > 1 - level else (lo, mid)
    return hi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", type=Path, required=True, help="a verdict_validity.py --truth --scores file")
    parser.add_argument("--races", type=int, default=400)
    parser.add_argument("--margin-races", type=int, default=2000)
    parser.add_argument("--alpha", default=f"{ALPHA}", help="comma-separated one-sided levels of 'as good'")
    parser.add_argument("--worse-alpha", default=f"{WORSE_ALPHA}", help="comma-separated one-sided levels of 'worse'")
    parser.add_argument("--futility", default=f"{FUTILITY}", help="comma-separated predictive-power floors (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    truth = json.loads(TRUTH_PATH.read_text())["entries"]
    entries, scores = load(args.scores)
    right = {e: "worse" if t["class"] == "worse" else "as good" for e, t in truth.items()}
    draws = race_draws(scores, args.races, args.seed)
    result: dict[str, Any] = {"races": args.races, "margin_races": args.margin_races, "seed": args.seed}
    result["fixed"] = figures(fixed(draws, entries), right, entries)
    grid = [
        {"alpha": float(a), "worse_alpha": float(w), "futility": float(f)}
        for a in args.alpha.split(",")
        for w in args.worse_alpha.split(",")
        for f in args.futility.split(",")
    ]
    for options in grid:
        margin = at_margin(scores, entries, args.margin_races, args.seed + 1, **options)
        name = "gsd " + " ".join(f"{k}={v:g}" for k, v in options.items())
        worst = max(good for good, _ in margin.values())
        result[name] = figures(replay(draws, entries, args.seed, **options), right, entries) | {
            "margin_as_good": {e: good for e, (good, _) in margin.items()},
            "margin_worse": {e: worse for e, (_, worse) in margin.items()},
            "margin_worst": worst,
            "margin_worst_upper95": round(_upper(round(worst * args.margin_races), args.margin_races), 4),
        }
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
