"""`gradebench.rejudge_report` in a process of its own, for the tests that start two rejudges of one report at once.

    python -m tests.rejudge_child BASE_URL REPORT CACHE OUT BATCH

Judges the report in the folder ``REPORT`` again with a new rubric, the judge being the simulated fleet's served at
``BASE_URL``, on the cache ``CACHE``; ``BATCH`` is 1 (through the fleet's Batch API) or 0 (one verdict at a time).
Writes the new report to ``OUT``.
"""

from __future__ import annotations

import asyncio
import sys

import gradebench as gb

RUBRIC = "A good answer names the order's status and what happens next."


def main(base_url: str, report: str, cache: str, out: str, batch: str) -> None:
    catalog = gb.sim.catalog(base_url=base_url, latency_scale=0)
    judging = gb.JudgeSpec(rubric=RUBRIC, batch=batch == "1")
    made = gb.BenchmarkReport.read_parquet(report)
    asyncio.run(gb.rejudge_report(made, catalog, judging, cache=cache, progress=False)).to_parquet(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
