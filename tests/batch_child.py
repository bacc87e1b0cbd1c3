"""A race with a batched judge in a process of its own, for the tests that kill it while its batch runs.

    python -m tests.batch_child BASE_URL CACHE BATCH

The simulated fleet served at ``BASE_URL``; the order agent on two inputs, once on each of two candidates; ``BATCH``
is 1 (the judge through the fleet's Batch API) or 0 (one verdict at a time). Prints one JSON line: what was spent,
the judge's calls and how many the cache served, and a digest of the verdicts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys

import polars as pl

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs


async def race(base_url: str, cache: str, batch: bool) -> str:
    """The race, and the JSON line the process prints (the tests that need no process of their own call this)."""
    catalog = gb.sim.catalog(base_url=base_url)
    bench = gb.Benchmark(
        OrderAgent, runs=1, catalog=catalog, grade="standard", cache=cache, progress=False, judge_batch=batch
    )
    bench.set_spec(candidates=["sim/swift", "sim/steady"]).set_inputs(load_inputs("orders")[:2])
    await bench.run()
    report = bench.report()
    judge = report.calls.filter(pl.col("role") == "judge")
    judge_spent = judge.filter(~pl.col("cache_hit"))["cost"].sum()
    verdicts = report.runs.filter(pl.col("role") == "candidate").select("run_id", "score", "reason").sort("run_id")
    return json.dumps(
        {
            "spent": report.runs["spent_now"].sum() + judge_spent,
            "judge_spent": judge_spent,
            "judge_calls": judge.height,
            "judge_cached": int(judge["cache_hit"].sum()),
            "digest": hashlib.sha256(verdicts.write_csv().encode()).hexdigest(),
        }
    )


def main(base_url: str, cache: str, batch: str) -> None:
    print(asyncio.run(race(base_url, cache, batch == "1")), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
