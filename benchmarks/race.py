"""Measure gradebench's overhead and memory: race N runs (one model call + one judge call each) on simulated entries.

    python benchmarks/race.py --n 2000 --latency-ms 50 --concurrency 100
    python benchmarks/race.py --memory --sizes 2000,20000,200000

Runs the race once at latency 0 to measure the cost per model call (everything but the wait: the openai SDK, the
in-process transport, the simulated endpoint's own work, the cache, admission, the judge prompt, the report), then at
the given latency, then again fully cached. In the same process it measures the openai SDK's own floor: a plain
``AsyncOpenAI`` making the same number of calls to the same simulated endpoint through the same transport at the same
concurrency. Machines differ several times in speed, so ``overhead_ratio`` (gradebench's cost per call over the SDK's)
is the figure to compare (the median of ``--rounds`` pairs taken in turn).

``--memory`` measures instead what a race costs in memory, whole-process: for each of ``--sizes``, a fresh process
races that many runs at latency 0, logs its table and writes the report with ``to_parquet`` (peak resident memory,
race and export times), then another fresh process reads the report back and builds its table (peak memory, read
time). It prints each size as it goes (stderr) and ends with the growth per 1,000 runs between consecutive sizes and
overall, and the export and read times per 1,000 runs (flat when they are linear).

``--inputs K`` spreads the runs over K inputs, each with its own reference run (default 1: one input, its runs
repeats of it); a race of many inputs holds more reference runs and pairs.

Ends with one JSON line: n, latency_ms, concurrency, inputs, wall_s, limit_s (the ideal 2·N·L/C), ratio,
overhead_ms_per_call, sdk_floor_ms_per_call, overhead_ratio, overhead_ratio_cpu (the same ratio in this process's CPU
time, which other work on a loaded machine moves far less than wall time), cached_rerun_s; with --memory: sizes (each
one's peak_rss_mb, race_s, write_s, spool_mb, read_s, read_peak_rss_mb), rss_mb_per_1k_runs,
rss_mb_per_1k_runs_overall, read_rss_mb_per_1k_runs_overall, write_s_per_1k_runs, read_s_per_1k_runs.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import openai

import gradebench as gb
from gradebench._records.spool import spool
from gradebench.sim import SimFleet
from gradebench.sim._profiles import Profile


async def one_call(input: dict, seat: gb.Seat) -> str:
    """Answer the question in one line."""
    return (await seat.chat([{"role": "user", "content": f"Question {input['id']}: one line, please."}])).text


def fixed_latency_fleet(latency_ms: float) -> SimFleet:
    """A two-entry fleet (a runner and a judge) with a fixed latency, no jitter, no failures and no limits; it keeps
    no log of its requests (that log is the test seam's, and it would grow with the race)."""

    def profile(name: str, grade: str) -> Profile:
        return Profile(
            name=name,
            model=name.replace("/", "-"),
            grade=grade,
            price_in=0.1,
            price_out=0.4,
            accuracy=1.0,
            skip_rate=0.0,
            misread_rate=0.0,
            verbosity=1.0,
            latency_ms=latency_ms,
            jitter_ms=0.0,
            ms_per_token=0.0,
            failure_rate=0.0,
            judge_noise=0.0,
            max_concurrency=None,
            max_retries=0,
        )

    return SimFleet(
        latency_scale=1.0, record=False, profiles=[profile("bench/runner", "standard"), profile("bench/judge", "large")]
    )


def race(
    n: int, latency_ms: float, concurrency: int, cache: Path, salt: str, inputs: int = 1
) -> tuple[float, gb.Benchmark]:
    """``n`` candidate runs, ``n / inputs`` on each of ``inputs`` inputs (each with its own reference run)."""
    if n % inputs:
        raise SystemExit(f"--inputs {inputs} does not divide {n} runs")
    catalog = fixed_latency_fleet(latency_ms).catalog()
    bench = gb.Benchmark(
        one_call,
        runs=n // inputs,
        catalog=catalog,
        grade="standard",
        salt=salt,
        cache=cache,
        concurrency=concurrency,
        progress=False,
    )
    bench.set_inputs([{"id": f"q{i}"} for i in range(inputs)])
    started = time.perf_counter()
    asyncio.run(bench.run())
    report = bench.report()
    report.table()  # what a race ends with: the runs and models frames and the table logged
    wall = time.perf_counter() - started
    runs = report.runs
    failed = runs.filter(~runs["ok"]).height + runs["judge_error"].drop_nulls().len()
    if failed:
        raise SystemExit(f"{failed} runs or verdicts failed; the figures would be meaningless")
    return wall, bench


async def sdk_floor(calls: int, concurrency: int) -> float:
    """Seconds for a plain AsyncOpenAI to make ``calls`` chat calls to the same endpoint, ``concurrency`` at a time."""
    fleet = fixed_latency_fleet(0.0)
    runner = dataclasses.replace(fleet.catalog()["bench/runner"])
    http = httpx2.AsyncClient(transport=fleet.transport())
    client = openai.AsyncOpenAI(base_url=runner.base_url, api_key="floor", max_retries=0, http_client=http)
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await client.chat.completions.create(
                model=runner.model, messages=[{"role": "user", "content": f"Question {i}: one line, please."}]
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


def memory_of(n: int, concurrency: int, inputs: int) -> dict[str, float]:
    """Whole-process figures of racing ``n`` runs at latency 0 in a fresh process (the race, its table and
    ``to_parquet``), then of reading that report back in another fresh process: peak resident memory and times."""

    def child(*args: str) -> dict[str, float]:
        done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "report")
        made = child("--peak-of", str(n), "--concurrency", str(concurrency), "--inputs", str(inputs), "--out", out)
        read = child("--read-back", out)
    return {**made, **read}


def race_and_write(n: int, concurrency: int, out: Path, inputs: int) -> dict[str, float]:
    """What ``--peak-of`` measures in its own process: the race, the table, the parquet export."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        _, bench = race(n, 0.0, concurrency, Path(tmp) / "cache", "memory", inputs)
        raced = time.perf_counter() - started
        report = bench.report()
        started = time.perf_counter()
        report.to_parquet(out)
        written = time.perf_counter() - started
    return {
        "race_s": round(raced, 2),
        "write_s": round(written, 3),
        "peak_rss_mb": round(_own_peak_mb(), 1),
        "spool_mb": round(spool().size / 1e6, 1),  # the call bodies kept on disk instead (gradebench._records.spool)
    }


def read_back(out: Path) -> dict[str, float]:
    """What ``--read-back`` measures in its own process: reading a report and building its models frame and table."""
    started = time.perf_counter()
    report = gb.BenchmarkReport.read_parquet(out)
    report.table()
    read = time.perf_counter() - started
    return {"read_s": round(read, 3), "read_peak_rss_mb": round(_own_peak_mb(), 1), "runs": report.runs.height}


def memory_figures(sizes: list[int], concurrency: int, inputs: int = 1) -> dict[str, object]:
    """Each size's figures, and the growth per 1,000 runs between consecutive sizes and from the least to the most."""
    each = {}
    for n in sizes:
        each[n] = memory_of(n, concurrency, inputs)
        print(json.dumps({"n": n, **each[n]}), file=sys.stderr, flush=True)  # a long run shows as it goes

    def slope(key: str, a: int, b: int) -> float:
        return round((each[b][key] - each[a][key]) / ((b - a) / 1000), 2)

    pairs = list(zip(sizes, sizes[1:], strict=False))
    return {
        "sizes": each,
        "rss_mb_per_1k_runs": {f"{a}-{b}": slope("peak_rss_mb", a, b) for a, b in pairs},
        "rss_mb_per_1k_runs_overall": slope("peak_rss_mb", sizes[0], sizes[-1]),
        "read_rss_mb_per_1k_runs_overall": slope("read_peak_rss_mb", sizes[0], sizes[-1]),
        "write_s_per_1k_runs": {n: round(f["write_s"] / (n / 1000), 4) for n, f in each.items()},
        "read_s_per_1k_runs": {n: round(f["read_s"] / (n / 1000), 4) for n, f in each.items()},
    }


def _own_peak_mb() -> float:
    """This process's peak resident memory. VmHWM belongs to the address space, which exec replaces; ru_maxrss
    survives exec on Linux, so a child would report the larger peak of the process that started it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, where VmHWM exists anyway


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="candidate runs")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument(
        "--inputs", type=int, default=1, help="inputs the runs are spread over, each with its reference run (default 1)"
    )
    parser.add_argument(
        "--memory", action="store_true", help="measure whole-process peak memory and the parquet export instead"
    )
    parser.add_argument("--sizes", default="2000,20000,200000", help="runs raced with --memory, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="latency-0 races and SDK floors, taken in turn (medians)")
    parser.add_argument("--peak-of", type=int, help=argparse.SUPPRESS)  # the racing child process of --memory
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--read-back", type=Path, help=argparse.SUPPRESS)  # the reading child process of --memory
    args = parser.parse_args()
    if args.peak_of:
        print(json.dumps(race_and_write(args.peak_of, args.concurrency, args.out, args.inputs)))
        return
    if args.read_back:
        print(json.dumps(read_back(args.read_back)))
        return
    if args.memory:
        sizes = sorted(int(x) for x in args.sizes.split(","))
        figures = memory_figures(sizes, args.concurrency, args.inputs)
        print(json.dumps({"concurrency": args.concurrency, "inputs": args.inputs, **figures}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        calls = 2 * args.n + args.inputs  # each run and its verdict, plus each input's reference
        ours, floors, cpu_ratios = [], [], []
        for round_ in range(args.rounds):  # in turn, so a machine that speeds up or slows down weighs on both alike
            started = time.process_time()
            zero_wall, _ = race(args.n, 0.0, args.concurrency, Path(tmp) / f"zero{round_}", "zero", args.inputs)
            raced = time.process_time()
            ours.append(zero_wall / calls * 1000)
            floors.append(asyncio.run(sdk_floor(calls, args.concurrency)) / calls * 1000)
            cpu_ratios.append((raced - started) / (time.process_time() - raced))
        overhead_ms, floor_ms = statistics.median(ours), statistics.median(floors)
        wall, bench = race(args.n, args.latency_ms, args.concurrency, Path(tmp) / "timed", "timed", args.inputs)
        cached, again = race(args.n, args.latency_ms, args.concurrency, Path(tmp) / "timed", "timed", args.inputs)
        if not again.report().runs["cached"].all():
            raise SystemExit("the rerun was not fully cached")
    limit = 2 * args.n * args.latency_ms / 1000 / args.concurrency
    figures = {
        "n": args.n,
        "latency_ms": args.latency_ms,
        "concurrency": args.concurrency,
        "inputs": args.inputs,
        "wall_s": round(wall, 3),
        "limit_s": round(limit, 3),
        "ratio": round(wall / limit, 3) if limit else None,
        "overhead_ms_per_call": round(overhead_ms, 3),
        "sdk_floor_ms_per_call": round(floor_ms, 3),
        "overhead_ratio": round(statistics.median(o / f for o, f in zip(ours, floors, strict=True)), 2),
        "overhead_ratio_cpu": round(statistics.median(cpu_ratios), 2),
        "cached_rerun_s": round(cached, 3),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
