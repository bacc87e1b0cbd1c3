"""Do the negative controls tell a good judge from a weak one? Race the simulated fleet under three judges, many times.

    python benchmarks/controls.py --races 40      # one JSON line on stdout, progress on stderr

Each race ``r`` is the order agent (`gradebench.jobs.OrderAgent`) on 16 of the 26 order inputs drawn with
``random.Random(r)``, salt ``controls-r``, 2 runs of each of the 8 entries of ``standard`` with ``also=["small"]``,
margin 1, the default 3 negative controls (one of each kind), a fresh temporary cache, the fleet at latency scale 0.
The judges, each on every race:

- ``oracle``: ``sim/oracle``, the fleet's judge (it moves accuracy by a point on 10% of verdicts);
- ``noisy``: its twin moving accuracy by a point on 50% of verdicts (a good judge with a shaky hand);
- ``skim``: its twin that checks the tool calls but never reads the answer (``Profile.judge_skims``): a weak judge.

Printed per judge: how many races the controls voided, the gap between the reference's self-agreement and the
controls' mean (min, mean, max: how far below a right answer the judge put them), each kind's mean score, and the
verdicts' errors against the stored truth (``benchmarks/verdict_truth.json``, the oracle's paired differences): false
``as good`` among the entries truly worse than the margin, with the controls (a void is never an ``as good``) and on the
same runs without them (the report rebuilt without its control rows), with exact 95% upper bounds; and what the
controls cost: their judge calls as a share of the race's.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gradebench as gb
from gradebench._base.vocab import ControlKind, Role
from gradebench._calls.session import GradebenchClient
from gradebench.jobs import OrderAgent, load_inputs

TRUTH = json.loads(Path(__file__).with_name("verdict_truth.json").read_text())["entries"]
ORACLE = next(p for p in gb.sim.PROFILES if p.name == "sim/oracle")
JUDGES = {
    "oracle": ORACLE,
    "noisy": dataclasses.replace(ORACLE, judge_noise=0.5),
    "skim": dataclasses.replace(ORACLE, judge_skims=True),
}
SUBSET, RUNS, MARGIN = 16, 2, 1.0


def _no_backoff() -> None:
    """At latency 0 the only waits left are the openai SDK's backoff before it retries sim/flaky's 503s."""
    GradebenchClient._calculate_retry_timeout = lambda self, *args, **kwargs: 0.0  # type: ignore[method-assign]


def race(judge: str, index: int) -> gb.BenchmarkReport:
    profiles = [JUDGES[judge] if p.name == "sim/oracle" else p for p in gb.sim.PROFILES]
    catalog = gb.sim.SimFleet(profiles=profiles, latency_scale=0, record=False).catalog()
    with tempfile.TemporaryDirectory() as cache:
        bench = gb.Benchmark(
            OrderAgent,
            runs=RUNS,
            catalog=catalog,
            grade="standard",
            also=["small"],
            margin=MARGIN,
            salt=f"controls-{index}",
            cache=cache,
            progress=False,
        )
        bench.set_inputs(random.Random(index).sample(load_inputs("orders"), SUBSET))
        asyncio.run(bench.run())
        return bench.report()


def false_as_good(report: gb.BenchmarkReport) -> tuple[int, int]:
    """(entries called ``as good`` that are truly worse than the margin, entries truly worse)."""
    worse = {e for e, t in TRUTH.items() if t["class"] == "worse"}
    called = dict(report.models.select("entry", "verdict").iter_rows())
    return sum(called.get(e) == "as good" for e in worse), len(worse)


def upper95(k: int, n: int) -> float:
    """The exact (Clopper-Pearson) one-sided 95% upper bound of a rate seen k times in n."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisect P(X <= k | p) = 0.05
        mid = (lo + hi) / 2
        tail = sum(math.comb(n, i) * mid**i * (1 - mid) ** (n - i) for i in range(k + 1))
        lo, hi = (mid, hi) if tail > 0.05 else (lo, mid)
    return round(hi, 4)


def measure(judge: str, races: int) -> dict[str, Any]:
    voids, gaps, kinds = 0, [], {k: [] for k in ControlKind}
    wrong_with = wrong_without = truly_worse = 0
    control_calls = judge_calls = 0
    started = time.perf_counter()
    for index in range(races):
        report = race(judge, index)
        check = report.controls_outcome()
        voids += check.void
        if check.mean is not None and check.yardstick is not None:
            gaps.append(check.yardstick - check.mean)
        for kind, mean in check.kind_means().items():
            kinds[kind].append(mean)
        blind = gb.BenchmarkReport(
            [r for r in report.to_runs() if r.role is not Role.CONTROL], report.meta.replace(controls=[])
        )
        k, n = false_as_good(report)
        wrong_with, truly_worse = wrong_with + k, truly_worse + n
        wrong_without += false_as_good(blind)[0]
        judges = report.calls.filter(role="judge")
        control_calls += judges.filter(judges["run_id"].is_in(report.controls["run_id"].to_list())).height
        judge_calls += judges.height
        print(f"{judge} race {index + 1}/{races}: void={check.void} gap={gaps[-1]:.2f}", file=sys.stderr, flush=True)
    return {
        "races": races,
        "voided": f"{voids} of {races}",
        "gap": {"min": round(min(gaps), 2), "mean": round(statistics.fmean(gaps), 2), "max": round(max(gaps), 2)},
        "kind_means": {k.value: round(statistics.fmean(v), 2) for k, v in kinds.items() if v},
        "false_as_good_with_controls": f"{wrong_with} of {truly_worse}",
        "false_as_good_with_controls_upper95": upper95(wrong_with, truly_worse),
        "false_as_good_without_controls": f"{wrong_without} of {truly_worse}",
        "false_as_good_without_controls_upper95": upper95(wrong_without, truly_worse),
        "control_share_of_judge_calls": round(control_calls / judge_calls, 4),
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=40, help="races per judge (default 40)")
    parser.add_argument("--judges", nargs="*", default=list(JUDGES), choices=list(JUDGES))
    args = parser.parse_args()
    _no_backoff()
    print(json.dumps({judge: measure(judge, args.races) for judge in args.judges}))


if __name__ == "__main__":
    main()
