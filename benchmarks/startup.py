"""Measure how quickly gradebench starts and how quickly a fully cached rerun of the demo answers.

    python benchmarks/startup.py --imports 5 --reruns 3

Each figure is a fresh process (the interpreter's own start included), the median of the repeats: ``import
gradebench``; ``import gradebench`` then reading ``gb.Benchmark`` and ``gb.BenchmarkReport`` (what a script racing a
job loads before its first call); and ``gradebench demo`` run again in a folder where it ran once (every call a cache
hit, the charts already rendered). Each gives its wall time and its CPU time (user + system, the process's threads
included): on a loaded machine the wall time grows with the load and the CPU time much less, so both are printed,
with the load average.

Ends with one JSON line: python_s (the interpreter alone), import_s, import_cpu_s, api_s, api_cpu_s,
demo_first_s, demo_rerun_s, demo_rerun_cpu_s, load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def timed(args: list[str], cwd: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one child process running ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def medians(args: list[str], repeats: int, cwd: str | None = None) -> tuple[float, float]:
    measured = [timed(args, cwd) for _ in range(repeats)]
    return statistics.median(w for w, _ in measured), statistics.median(c for _, c in measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imports", type=int, default=5, help="fresh processes for each import figure")
    parser.add_argument("--reruns", type=int, default=3, help="cached reruns of the demo")
    args = parser.parse_args()
    python = [sys.executable, "-c"]
    bare, _ = medians([*python, "pass"], args.imports)
    imported = medians([*python, "import gradebench"], args.imports)
    api = medians([*python, "import gradebench as gb; gb.Benchmark; gb.BenchmarkReport"], args.imports)
    with tempfile.TemporaryDirectory() as folder:
        env_cache = os.path.join(folder, ".gradebench", "cache")
        demo = [sys.executable, "-m", "gradebench", "demo"]
        os.environ["GRADEBENCH_CACHE"] = env_cache  # the child's cache: this folder's, whatever the caller set
        first, _ = timed(demo, cwd=folder)
        rerun = medians(demo, args.reruns, cwd=folder)
    figures = {
        "python_s": round(bare, 3),
        "import_s": round(imported[0], 3),
        "import_cpu_s": round(imported[1], 3),
        "api_s": round(api[0], 3),
        "api_cpu_s": round(api[1], 3),
        "demo_first_s": round(first, 2),
        "demo_rerun_s": round(rerun[0], 2),
        "demo_rerun_cpu_s": round(rerun[1], 2),
        "load": os.getloadavg()[0],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
