"""How often `gradebench.compare` calls an unchanged entry ``changed``, and how often it finds a real drift, on real
races of the simulated fleet.

    python benchmarks/compare_drift.py --races 12 --inputs 16 --runs 2

Races the order agent on the simulated ``standard`` grade (five entries) ``--races`` times with fresh salts on the
fleet as it is, and as many times on a fleet where sim/squint answers as sim/swift does (it skips a tool call a
quarter of the time: the provider swapped the model behind the name). Every pair of unchanged races is compared
(``races·(races−1)/2`` comparisons; the pairs share races, so they are not independent, but each is a fair draw):
``false_changed_comparisons`` is the share with a ``changed`` on some entry (the level, 95%, holds for all five at
once), ``false_changed_entries`` the share of entries called ``changed``. Each unchanged race is then compared with
each drifted one: ``drift_found`` is the share where sim/squint is ``changed`` downwards, ``drift_wrong_sign`` where
it is ``changed`` upwards, and ``others_false_changed`` the share of the other four called ``changed``. Latency 0, a
fresh cache. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs

DRIFT = {"sim/squint": "sim/swift"}


def race(cache: Path, salt: str, inputs: int, runs: int, drift: dict | None) -> gb.BenchmarkReport:
    catalog = gb.sim.catalog(latency_scale=0, drift=drift)
    bench = gb.Benchmark(
        OrderAgent, runs=runs, catalog=catalog, grade="standard", salt=salt, cache=cache, progress=False
    )
    bench.set_inputs(load_inputs("orders")[:inputs]).run_sync()
    return bench.report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=12, help="races of each fleet (unchanged, drifted)")
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder)
        plain = [race(cache, f"plain-{i}", args.inputs, args.runs, None) for i in range(args.races)]
        drifted = [race(cache, f"drift-{i}", args.inputs, args.runs, DRIFT) for i in range(args.races)]
    comparisons = flagged = entries = 0
    for before, after in itertools.combinations(plain, 2):
        changed = gb.compare(before, after).changed
        comparisons += 1
        flagged += bool(changed)
        entries += len(changed)
    found = wrong = others = pairs = 0
    for before, after in itertools.product(plain, drifted):
        comparison = gb.compare(before, after)
        squint = next(r for r in comparison.rows if r.entry == "sim/squint")
        pairs += 1
        found += squint.status == "changed" and squint.change < 0
        wrong += squint.status == "changed" and squint.change > 0
        others += len([e for e in comparison.changed if e != "sim/squint"])
    print(
        json.dumps(
            {
                "races": args.races,
                "inputs": args.inputs,
                "runs": args.runs,
                "comparisons": comparisons,
                "false_changed_comparisons": round(flagged / comparisons, 4),
                "false_changed_entries": round(entries / (5 * comparisons), 4),
                "drift_pairs": pairs,
                "drift_found": round(found / pairs, 4),
                "drift_wrong_sign": round(wrong / pairs, 4),
                "others_false_changed": round(others / (4 * pairs), 4),
                "wall_s": round(time.monotonic() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
