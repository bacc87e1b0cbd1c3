"""The label-corrected verdict against a known truth: coverage, false "as good" and what the judge-only verdict does.

    python benchmarks/judge_labels.py --races 50000 --labels 10 20 40 --inputs 16 --runs 4

The judges the label minimum is chosen over, with between-input spread, are benchmarks/label_validity.py's.

For every scenario of gradebench.sim._label_world (a person's score per run, a judge that errs in jumps: it lets a
verbose candidate's wrong answers pass, is harsh on one side's right answers, or errs on a few percent of the runs),
simulates ``races`` races of ``inputs`` × ``runs`` runs per entry with ``labels`` labels a side (a simple random
sample), and measures, for the label-corrected bounds (gradebench._stats.ppi, one-sided 95%) and for the judge's own
paired difference under the same interval (no labels):

- ``cover_lower`` / ``cover_upper``: share of races whose lower (upper) bound is on the right side of the truth;
  ``cover_both``: both (a two-sided 90% interval); ``cover_95``: the two-sided 95% interval (bounds at 97.5%);
- ``as_good`` / ``worse``: share of races with the verdict at margin 1 (a false "as good" when the truth is at or
  below −1); ``width``: mean upper − lower;
- ``more_labels``, for the label-corrected verdicts left inconclusive (up to 2000 of them): the share given a number
  of labels, the median number, and the share that adding them (the same random sample, extended) settles.

Then ``production``: the judge-only verdict as reports compute it (`gradebench._stats.paired.non_inferiority`, the
nested
paired bootstrap) on ``--production`` races of the first scenarios, to show the judge's own interval is not what
fails; and ``race``: one race on the simulated fleet under the swayed judge (`gradebench.sim.swayed_catalog`,
sim/windy against sim/steady, the order agent's 26 inputs × 4 runs), labelled by the sim's careful person with
``--race-labels`` a side drawn by ten seeds (skip with ``--no-race``). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time

import numpy as np
import polars as pl

from gradebench._stats.paired import Bootstrap, non_inferiority
from gradebench._stats.ppi import FEWEST_LABELS, MIN_LABELS, corrected_difference, more_labels
from gradebench.sim._label_world import SCENARIOS, World, draw

MARGIN = 1.0
SETTLE_SAMPLE = 2000


def verdict_figures(found, truth: float) -> dict:
    return {
        "cover_lower": round(float(np.mean(found.lower <= truth)), 4),
        "cover_upper": round(float(np.mean(found.upper >= truth)), 4),
        "cover_both": round(float(np.mean((found.lower <= truth) & (found.upper >= truth))), 4),
        "as_good": round(float(np.mean(found.lower > -MARGIN)), 4),
        "worse": round(float(np.mean(found.upper < -MARGIN)), 4),
        "width": round(float(np.mean(found.upper - found.lower)), 3),
    }


def settle(world: World, found, labels: int) -> dict:
    """How often the suggested number of labels settles a corrected verdict left inconclusive."""
    open_ = np.flatnonzero((found.lower <= -MARGIN) & (found.upper >= -MARGIN))[:SETTLE_SAMPLE]
    given = [(int(i), m) for i in open_ if (m := more_labels(found, MARGIN, int(i))) is not None]
    out: dict = {"inconclusive": int(open_.size), "given": len(given)}
    if given:
        rows = np.array([i for i, _ in given])
        picked = World(
            world.scenario, *(getattr(world, k)[rows] for k in World.__dataclass_fields__ if k != "scenario")
        )
        more_c = np.array([labels + m[0] for _, m in given])
        more_r = np.array([labels + m[1] for _, m in given])
        again = corrected_difference(*picked.arrays(more_c, more_r))
        out["median_added"] = float(np.median([sum(m) for _, m in given]))
        out["settled"] = round(float(np.mean((again.lower > -MARGIN) | (again.upper < -MARGIN))), 4)
    return out


def production(world: World, races: int) -> dict:
    """The judge-only verdict of `gradebench._stats.paired.non_inferiority` (the nested bootstrap) on the first
    races."""
    said = []
    inputs, runs = world.judge_c.shape[1:]
    for race in range(races):
        rows = [
            {"input_id": f"i{i:02d}", "repeat": k, "role": "candidate", "entry": entry, "ok": True, "score": float(s)}
            for entry, judge in (("c", world.judge_c), ("r", world.judge_r))
            for i in range(inputs)
            for k in range(runs)
            for s in [judge[race, i, k]]
        ]
        test = non_inferiority(pl.DataFrame(rows), "c", "r", margin=MARGIN, bootstrap=Bootstrap(resamples=1000))
        said.append((test.verdict, test.lower))
    truth = world.scenario.truth
    return {
        "races": races,
        "as_good": round(sum(v == "as good" for v, _ in said) / races, 4),
        "cover_lower": round(sum(lo is not None and lo <= truth for _, lo in said) / races, 4),
    }


async def sim_race(labels: int) -> dict:
    """One race under the swayed judge, labelled by the sim's person with ``labels`` a side, ten label draws."""
    os.environ.setdefault("GRADEBENCH_CACHE", tempfile.mkdtemp(prefix="gb-labels-"))
    import gradebench as gb
    from gradebench._verdict.labels import draw_runs
    from gradebench.jobs import OrderAgent, load_inputs

    catalog = gb.sim.swayed_catalog(latency_scale=0)
    bench = gb.Benchmark(
        OrderAgent, runs=4, catalog=catalog, grade="standard", candidates=["sim/steady", "sim/windy"], progress=False
    )
    bench.set_inputs(load_inputs("orders"))
    await bench.run()
    report = bench.report()
    judged = report.models.filter(pl.col("entry") == "sim/windy").row(0, named=True)
    everyone = gb.sim.human_labels(report, report.runs.filter(pl.col("role") == "candidate")["run_id"].to_list())
    truth = report.with_labels(everyone).models.filter(pl.col("entry") == "sim/windy").row(0, named=True)
    draws = []
    for seed in range(10):
        labelled = report.with_labels(gb.sim.human_labels(report, draw_runs(report.runs, 2 * labels, seed=seed)))
        row = labelled.models.filter(pl.col("entry") == "sim/windy").row(0, named=True)
        draws.append(
            {
                "seed": seed,
                "verdict": row["verdict"],
                "mean_diff": round(row["mean_diff"], 3),
                "lower": round(row["lower"], 3),
                "upper": round(row["upper"], 3),
                "covers_all_labelled": bool(row["lower"] <= truth["mean_diff"] <= row["upper"]),
            }
        )
    return {
        "inputs": len(report.meta.inputs),
        "runs": 4,
        "labels_a_side": labels,
        "judge_only": {"verdict": judged["verdict"], "mean_diff": round(judged["mean_diff"], 3)},
        "recommended_judge_only": report.recommend().entry,
        "every_run_labelled": {"verdict": truth["verdict"], "mean_diff": round(truth["mean_diff"], 3)},
        "label_draws": draws,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=50_000)
    parser.add_argument("--labels", type=int, nargs="+", default=[FEWEST_LABELS, MIN_LABELS, 40])
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--production", type=int, default=300)
    parser.add_argument("--race-labels", type=int, default=MIN_LABELS)
    parser.add_argument("--no-race", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    result: dict = {k: getattr(args, k) for k in ("races", "labels", "inputs", "runs", "seed")}
    result["margin"] = MARGIN
    for n, scenario in enumerate(SCENARIOS):
        world = draw(
            scenario, np.random.default_rng([args.seed, n]), races=args.races, inputs=args.inputs, runs=args.runs
        )
        entry: dict = {"about": scenario.about, "truth": scenario.truth}
        entry["judge_only"] = verdict_figures(
            corrected_difference(*world.judge_only(), judge_weight=1.0), scenario.truth
        )
        for labels in args.labels:
            found = corrected_difference(*world.arrays(labels))
            wide = corrected_difference(*world.arrays(labels), level=0.975)
            figures = verdict_figures(found, scenario.truth)
            figures["cover_95"] = round(
                float(np.mean((wide.lower <= scenario.truth) & (wide.upper >= scenario.truth))), 4
            )
            figures["more_labels"] = settle(world, found, labels)
            entry[f"labels_{labels}"] = figures
        if n < 4 and args.production:
            entry["production_judge_only"] = production(world, args.production)
        result[scenario.name] = entry
    if not args.no_race:
        result["race"] = asyncio.run(sim_race(args.race_labels))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
