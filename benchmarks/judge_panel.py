"""A panel of two judges: do the agreement intervals cover the truth, and does the panel find a judge that favours its
own family?

    python benchmarks/judge_panel.py --panels 2000 --inputs 16 --runs 2

1. Coverage (`gradebench._judge.agreement.judge_agreement`). Simulated panels of ``inputs`` inputs × 4 runs at 8, 20
and 40
   inputs (seed 11): each run has an input effect and a run effect both judges see (sd 1 each), each judge its own
   noise (sd 0.8), and the second judge scores 0.5 higher. ``continuous``: the scores as drawn, the truth
   κ = 2·2 / (2·2 + 2·0.8² + 0.5²) and a difference of 0.5. ``judge_scale``: the same put on the judge's scale (5 +
   1.5 × score, rounded to whole points, clipped to 0..10), the truth from 400,000 runs. The share of 95% intervals
   that cover the truth, for κ and for the mean difference.
2. Detection on the simulated fleet. The order agent on the five ``standard`` entries, ``inputs`` × ``runs``, judged
   by sim/oracle and sim/sage (fresh cache, latency 0): once with the fleet as built (no judge favours anyone), once
   with the borealis models writing in a house style that sim/sage, as a judge, rewards with 3 points of accuracy.
   Per entry, sim/sage − sim/oracle; the truth is 0 everywhere in the first race, and positive for borealis entries
   (sim/steady, sim/swift) only in the second.

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile

import numpy as np
import polars as pl

import gradebench as gb
from gradebench._judge.agreement import judge_agreement
from gradebench._stats.kappa import kappa
from gradebench.jobs import OrderAgent, load_inputs

STYLE = "Every fact above was checked against the tools."


def panel(rng: np.random.Generator, inputs: int, runs: int, *, scale: bool) -> pl.DataFrame:
    u = np.repeat(rng.normal(0, 1, inputs), runs)
    t = u + rng.normal(0, 1, inputs * runs)
    a, b = t + rng.normal(0, 0.8, t.size), t + 0.5 + rng.normal(0, 0.8, t.size)
    if scale:
        a, b = (np.clip(np.round(5 + 1.5 * v), 0, 10) for v in (a, b))
    ids = [f"r{i}" for i in range(t.size)]
    inputs_of = [f"i{i // runs}" for i in range(t.size)]
    rows = {"run_id": ids * 2, "entry": ["e"] * (2 * t.size), "input_id": inputs_of * 2}
    return pl.DataFrame({**rows, "judge_entry": ["a"] * t.size + ["b"] * t.size, "score": np.concatenate([a, b])})


def truth(scale: bool) -> tuple[float, float]:
    if not scale:
        return 2 * 2.0 / (2 * 2.0 + 2 * 0.8**2 + 0.5**2), 0.5
    big = panel(np.random.default_rng(99), 100_000, 4, scale=True)
    a, b = (big.filter(judge_entry=j)["score"].to_numpy() for j in ("a", "b"))
    found = kappa(a, b)
    assert found is not None
    return found, float(np.mean(b - a))


def coverage(panels: int) -> dict[str, dict[str, float]]:
    out = {}
    for scale in (False, True):
        k_true, d_true = truth(scale)
        for inputs in (8, 20, 40):
            rng, hit = np.random.default_rng(11), {"kappa": 0, "diff": 0}
            for _ in range(panels):
                found = judge_agreement(panel(rng, inputs, 4, scale=scale), ["a", "b"])
                assert found is not None
                p = found.pairs[0]
                hit["kappa"] += p.kappa_lo is not None and p.kappa_lo <= k_true <= (p.kappa_hi or 0)
                hit["diff"] += p.diff_lo is not None and p.diff_lo <= d_true <= (p.diff_hi or 0)
            name = f"{'judge_scale' if scale else 'continuous'}_{inputs}_inputs"
            out[name] = {k: v / panels for k, v in hit.items()} | {"true_kappa": round(k_true, 4)}
    return out


def fleet(biased: bool) -> gb.Catalog:
    profiles = []
    for p in gb.sim.PROFILES:
        if biased and p.family == "borealis":
            p = dataclasses.replace(p, signature=STYLE, self_preference=3 if p.name == "sim/sage" else 0)
        profiles.append(p)
    return gb.sim.SimFleet(latency_scale=0, profiles=profiles).catalog()


async def detection(inputs: int, runs: int) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for biased in (False, True):
        with tempfile.TemporaryDirectory() as cache:
            bench = gb.Benchmark(
                OrderAgent,
                runs=runs,
                catalog=fleet(biased),
                grade="standard",
                judges=["sim/oracle", "sim/sage"],
                cache=cache,
                progress=False,
            )
            await bench.set_inputs(load_inputs("orders")[:inputs]).run()
            found = bench.report().judge_agreement()
            assert found is not None
            pair = found.pairs[0]
            flags = bench.report().diagnostics().filter(kind="judge_family")["entry"].to_list()
            out["biased" if biased else "as_built"] = {
                "kappa": round(pair.kappa or 0, 3),
                "kappa_interval": [round(pair.kappa_lo or 0, 3), round(pair.kappa_hi or 0, 3)],
                "mean_diff": round(pair.mean_diff or 0, 3),
                "diff_interval": [round(pair.diff_lo or 0, 3), round(pair.diff_hi or 0, 3)],
                "sage_minus_oracle_by_entry": {e: round(d, 3) for e, d in pair.by_entry.items()},
                "runs_both_judged": pair.runs,
                "judge_family_flags": flags,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panels", type=int, default=2000)
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    result = {"panels": args.panels, "coverage_95": coverage(args.panels)}
    result["detection"] = asyncio.run(detection(args.inputs, args.runs))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
