"""How close is the estimate to the spend? `bench.estimate()`, then `bench.run()`, on a fresh cache, for 6 settings.

    python benchmarks/estimate.py

For the order agent (`OrderAgent`, tools, 26 order requests) and the selecting agent (`SelectingAgent`, one call,
24 selection requests) on the simulated fleet, three settings each (grades, inputs, runs). Each setting gets a fresh
temporary cache: ``await bench.estimate()`` runs the reference runs (they land in the cache) and predicts the race;
``await bench.run()`` then takes the references from the cache and races. Compared: the estimate's ``cost`` (runs +
judge: what the race will spend now, after the references) with what the race spent now (candidate model calls and
judge calls that were not cache hits; the references, made by the estimate, cost the race nothing). Target: within
±25% each, ``error = estimate / actual − 1``.

The fleet runs at ``--latency-scale`` (default 0): the estimate's wall time is printed beside the race's, but it is
not a target (at scale 0 there is no time to estimate). The openai SDK's retry backoff after sim/flaky's simulated
503s is set to 0 (``gradebench._calls.session.GradebenchClient._calculate_retry_timeout`` returns 0); it changes no
answer.
Progress goes to stderr; the last line of stdout is one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from typing import Any

import polars as pl

import gradebench as gb
from gradebench._calls.session import GradebenchClient
from gradebench.jobs import OrderAgent, SelectingAgent, load_inputs

TARGET = 0.25

SETTINGS: list[dict[str, Any]] = [
    {"job": "order", "grade": "standard", "also": [], "inputs": 8, "runs": 2},
    {"job": "order", "grade": "standard", "also": ["small"], "inputs": 16, "runs": 4},
    {"job": "order", "grade": "small", "also": [], "inputs": 26, "runs": 1, "swap": True},
    {"job": "selecting", "grade": "standard", "also": [], "inputs": 8, "runs": 2},
    {"job": "selecting", "grade": "standard", "also": ["small"], "inputs": 12, "runs": 3},
    {"job": "selecting", "grade": "large", "also": [], "inputs": 24, "runs": 1},
]
JOBS = {"order": (OrderAgent, "orders"), "selecting": (SelectingAgent, "selections")}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def spent(calls: pl.DataFrame, role: str) -> float:
    """What the calls of ``role`` spent now (cache hits cost nothing now)."""
    fresh = calls.filter((pl.col("role") == role) & ~pl.col("cache_hit").fill_null(False))
    return float(fresh["cost"].fill_null(0).sum())


async def one(setting: dict[str, Any], latency_scale: float, index: int, seed: int) -> dict[str, Any]:
    job, data = JOBS[setting["job"]]
    inputs = random.Random(f"{seed}:{index}").sample(load_inputs(data), setting["inputs"])
    with tempfile.TemporaryDirectory() as tmp:
        catalog = gb.sim.SimFleet(latency_scale=latency_scale, record=False).catalog()
        bench = gb.Benchmark(
            job,
            runs=setting["runs"],
            catalog=catalog,
            grade=setting["grade"],
            also=setting["also"],
            salt=f"estimate-{seed}-{index}",
            cache=tmp,
            progress=False,
        )
        bench.set_inputs(inputs).set_spec(judge_swap=setting.get("swap", False))
        started = time.perf_counter()
        est = await bench.estimate()
        estimate_s = time.perf_counter() - started
        started = time.perf_counter()
        await bench.run()
        race_s = time.perf_counter() - started
    calls = bench.report().calls
    runs, judge = spent(calls, "candidate"), spent(calls, "judge")
    actual = runs + judge
    return {
        "setting": f"{setting['job']} {setting['grade']}{'+' + '+'.join(setting['also']) if setting['also'] else ''} "
        f"{setting['inputs']}x{setting['runs']}{' swap' if setting.get('swap') else ''}",
        "runs": est.runs,
        "estimate": round(est.cost, 6),
        "actual": round(actual, 6),
        "error": round(est.cost / actual - 1, 4),
        "runs_estimate": round(est.candidates_cost, 6),
        "runs_actual": round(runs, 6),
        "runs_error": round(est.candidates_cost / runs - 1, 4) if runs else None,
        "judge_estimate": round(est.judge_cost, 6),
        "judge_actual": round(judge, 6),
        "judge_error": round(est.judge_cost / judge - 1, 4) if judge else None,
        "references_spent_by_race": round(spent(calls, "reference"), 6),
        "estimate_wall_s": round(est.wall_s, 2),
        "race_wall_s": round(race_s, 2),
        "estimate_took_s": round(estimate_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency-scale", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0, help="draws the inputs and the salt of each setting")
    args = parser.parse_args()
    GradebenchClient._calculate_retry_timeout = lambda self, *a, **k: 0.0  # type: ignore[method-assign]
    started = time.perf_counter()
    results = []
    for index, setting in enumerate(SETTINGS):
        result = asyncio.run(one(setting, args.latency_scale, index, args.seed))
        _log(json.dumps(result))
        results.append(result)
    out = {
        "latency_scale": args.latency_scale,
        "seed": args.seed,
        "target": f"within ±{TARGET:.0%}",
        "met": all(abs(r["error"]) <= TARGET for r in results),
        "worst_error": max((r["error"] for r in results), key=abs),
        "settings": results,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
