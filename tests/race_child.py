"""A race in a process of its own, for the tests that kill it, interrupt it, share its cache or starve its disk.

    python -m tests.race_child MODE BASE_URL CACHE INPUTS RUNS

``MODE`` is ``run`` (``asyncio.run(bench.run())``, as a script does), ``run_sync_in_loop`` (``bench.run_sync()``
called inside a running event loop, as a notebook cell does) or ``run_sync_in_asyncio_run`` (``bench.run_sync()``
called from a coroutine that ``asyncio.run`` runs). The catalog is one standard entry (``ref-1``, the pick,
raced against itself) and a judge (``judge-1``) on ``BASE_URL``; calls go one at a time, so their order is fixed.
Prints one JSON line: the runs, how many were cached, and a digest of their outputs and scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from typing import Any

import gradebench as gb


def catalog(base_url: str) -> gb.Catalog:
    def entry(name: str, model: str, grade: str) -> gb.Entry:
        fields = {"price_in": 1.0, "price_out": 2.0, "max_retries": 0, "max_concurrency": 1, "timeout_s": 30.0}
        return gb.Entry(name=name, model=model, grade=grade, base_url=base_url, **fields)

    entries = [entry("acme/ref", "ref-1", "standard"), entry("judge/oracle", "judge-1", "large")]
    return gb.Catalog(entries, grades=["standard", "large"], picks={"standard": "acme/ref"}, ceiling="judge/oracle")


async def answer(input: dict[str, Any], seat: gb.Seat) -> str:
    """Answer the customer's question in one sentence."""
    return (await seat.chat([{"role": "user", "content": input["question"]}])).text


def inputs(n: int) -> list[dict[str, str]]:
    return [{"id": f"q{i}", "question": f"Question {i}: can order A-{1000 + i} be refunded?"} for i in range(n)]


def benchmark(base_url: str, cache: str, n_inputs: int, runs: int) -> gb.Benchmark:
    bench = gb.Benchmark(
        answer, catalog=catalog(base_url), grade="standard", runs=runs, cache=cache, concurrency=1, progress=False
    )
    return bench.set_inputs(inputs(n_inputs))


def summary(bench: gb.Benchmark) -> str:
    runs = bench.report().runs
    rows = runs.select("run_id", "output", "score").sort("run_id").write_csv()
    cached = int(runs["cached"].sum())
    return json.dumps({"runs": runs.height, "cached": cached, "digest": hashlib.sha256(rows.encode()).hexdigest()})


def main(argv: list[str]) -> None:
    mode, base_url, cache, n_inputs, runs = argv
    bench = benchmark(base_url, cache, int(n_inputs), int(runs))
    if mode == "run":
        asyncio.run(bench.run())
    elif mode == "run_sync_in_loop":

        async def cell() -> None:  # a notebook cell: the kernel's loop runs, and the cell calls run_sync()
            bench.run_sync()

        loop = asyncio.new_event_loop()
        loop.run_until_complete(cell())  # no SIGINT handler of asyncio's: Ctrl-C raises where the cell waits
    elif mode == "run_sync_in_asyncio_run":

        async def script() -> None:  # a script's asyncio.run(main()) whose main calls plain code that calls run_sync()
            bench.run_sync()

        asyncio.run(script())  # asyncio's SIGINT handler: the first Ctrl-C only cancels the main task
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(summary(bench), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
