"""Digests of one-judge races on the simulated fleet: what a race that names no panel of judges reports, part by part.

`tests/judge/test_judges.py` holds the digests the release before panels of judges gave (computed by running this file
with
that release on the path: ``PYTHONPATH=<old tree> python tests/one_judge_digest.py``) and checks this release gives
the same. Only the public API of that release is used here, so the file runs on both. What varies from one run to
the next whatever the code (latencies and wall times as measured, the ``created`` stamp of a response, the version) is
set aside; everything else — the estimate, the table, the notebook HTML, every row of runs, models, calls and
diagnostics, and the meta — is hashed. The meta is hashed without the fields added to it since (``families``
and the spec's ``judges`` for panels of judges, ``entries`` for `gb.compare`), and the models frame without the two
columns labels add (``verdict_basis``, ``more_labels``): their own tests check them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import json
import sys
import tempfile
from typing import Any

import gradebench as gb
from gradebench.jobs import OrderAgent, SelectingAgent, load_inputs

ADDED_META = ("families", "entries", "controls", "started_at", "finished_at", "rejudged_at")
"""Meta fields added since (set aside here, checked apart): judges' families, the catalog terms `gb.compare` reads,
the negative controls planted, and when the race ran (a time: it varies from run to run)."""
ADDED_SPEC = ("judges", "controls")
"""Race-spec fields added since: a panel of judges, the number of negative controls."""
ADDED_MODELS = ("verdict_basis", "more_labels")
"""What human labels add to the models frame (test_labels checks them)."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _untimed_call(call: gb.results.Call) -> gb.results.Call:
    response = call.response
    if response is not None:
        response.pop("created", None)  # the sim stamps each response with the clock
    return gb.results.Call.from_bodies(
        request=call.request_json,
        response=None if response is None else json.dumps(response, ensure_ascii=False),
        **{
            f.name: getattr(call, f.name)
            for f in dataclasses.fields(gb.results.Call)
            if f.name not in ("request_packed", "response_packed")
        }
        | {"latency_s": 0.0},
    )


def _untimed(run: gb.results.Run) -> gb.results.Run:
    verdict = run.verdict
    if verdict is not None:
        verdict = dataclasses.replace(verdict, calls=[_untimed_call(c) for c in verdict.calls])
    return dataclasses.replace(
        run,
        calls=[_untimed_call(c) for c in run.calls],
        wall_s=0.0,
        wall_now_s=None if run.wall_now_s is None else 0.0,
        verdict=verdict,
    )


def _meta(report: gb.BenchmarkReport) -> dict[str, Any]:
    meta = report.meta.to_dict()
    meta.pop("gradebench_version")
    for name in ADDED_META:
        meta.pop(name, None)
    for name in ADDED_SPEC:
        meta["spec"].pop(name, None)
    return meta


def report_digests(report: gb.BenchmarkReport) -> dict[str, str]:
    """Each part of a report, hashed (timings set aside)."""
    fixed = gb.BenchmarkReport([_untimed(r) for r in report.to_runs()], report.meta, report.noise)
    return {
        "table": _digest(fixed.table()),
        "html": _digest(fixed._repr_html_()),
        "runs": _digest(fixed.runs.to_dicts()),
        "models": _digest(fixed.models.drop(ADDED_MODELS, strict=False).to_dicts()),
        "calls": _digest(fixed.calls.to_dicts()),
        "diagnostics": _digest(fixed.diagnostics().to_dicts()),
        "meta": _digest(_meta(fixed)),
    }


async def race_digests(cache: str) -> dict[str, dict[str, str]]:
    """Two one-judge races on a fresh cache: the order agent (8 inputs × 1, its estimate first) and the selecting
    agent under the label-bias check (4 inputs × 2)."""
    catalog = gb.sim.catalog(latency_scale=0)
    # negative controls came later (three planted runs a race by default): without them, a race is as it was
    plain: dict[str, Any] = {"controls": 0} if "controls" in inspect.signature(gb.Benchmark).parameters else {}
    order = gb.Benchmark(OrderAgent, runs=1, catalog=catalog, grade="standard", cache=cache, progress=False, **plain)
    order.set_inputs(load_inputs("orders")[:8])
    made = await order.estimate()
    await order.run()
    estimate = made.frame().drop("wall_s").to_dicts()
    line = made.line().rsplit(" · about ", 1)[0]
    selecting = gb.Benchmark(
        SelectingAgent, runs=2, catalog=catalog, grade="standard", cache=cache, progress=False, **plain
    )
    selecting.set_inputs(load_inputs("selections")[:4]).set_spec(judge_swap=True)
    await selecting.run()
    return {
        "order": {**report_digests(order.report()), "estimate": _digest([line, estimate])},
        "selecting": report_digests(selecting.report()),
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as cache:
        json.dump(asyncio.run(race_digests(cache)), sys.stdout, indent=2, sort_keys=True)
        print()
