"""What the judge costs through its Batch API against one verdict at a time, on the demo's race.

    python benchmarks/batch_cost.py --inputs 10 --runs 2

Races the order agent on the simulated ``standard`` grade (five entries, the demo's ``gradebench demo``: 10 inputs ×
2 runs) twice on fresh caches and fleets — once with ``judge_batch`` off, once on — and reports each race's judge
cost, what it spent in all, the estimate's judge cost beforehand, how many verdicts the two races gave differently
(0: a batched request is answered as the same request sent alone), the batches it took, and a rerun of the batched
race from its cache (what it spends: 0). Latency 0. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs


async def race(cache: Path, inputs: int, runs: int, batch: bool) -> dict[str, Any]:
    fleet = gb.sim.SimFleet(latency_scale=0)
    bench = gb.Benchmark(
        OrderAgent, runs=runs, catalog=fleet.catalog(), grade="standard", cache=cache, progress=False, judge_batch=batch
    )
    bench.set_inputs(load_inputs("orders")[:inputs])
    estimate = await bench.estimate()
    await bench.run()
    report = bench.report()
    judge = report.calls.filter(pl.col("role") == "judge")
    await bench.run()  # the rerun: served from the cache
    rerun = bench.report()
    rerun_judge = rerun.calls.filter((pl.col("role") == "judge") & ~pl.col("cache_hit"))
    return {
        "judge_cost": round(judge["cost"].sum(), 6),
        "spent": round(report.runs["spent_now"].sum() + judge.filter(~pl.col("cache_hit"))["cost"].sum(), 6),
        "estimate_judge_cost": round(estimate.judge_cost, 6),
        "verdicts": report.runs.filter(pl.col("role") == "candidate").select("run_id", "score").sort("run_id"),
        "batches": len(fleet.batch.batches),
        "rerun_spent": round(rerun.runs["spent_now"].sum() + rerun_judge["cost"].sum(), 6),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        direct = await race(Path(folder) / "direct", args.inputs, args.runs, False)
        batched = await race(Path(folder) / "batched", args.inputs, args.runs, True)
    differ = direct["verdicts"].join(batched["verdicts"], on="run_id", suffix="_batch")
    figures = {
        "inputs": args.inputs,
        "runs": args.runs,
        "judge_cost_direct": direct["judge_cost"],
        "judge_cost_batch": batched["judge_cost"],
        "batch_over_direct": round(batched["judge_cost"] / direct["judge_cost"], 4),
        "estimate_judge_direct": direct["estimate_judge_cost"],
        "estimate_judge_batch": batched["estimate_judge_cost"],
        "spent_direct": direct["spent"],
        "spent_batch": batched["spent"],
        "verdicts_differing": differ.filter(pl.col("score").ne_missing(pl.col("score_batch"))).height,
        "batches": batched["batches"],
        "rerun_spent_batch": batched["rerun_spent"],
        "currency": "USD",
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
