"""Are the verdicts right? Race the simulated fleet many times in each design against a stored truth.

    python benchmarks/verdict_validity.py --truth                 # writes benchmarks/verdict_truth.json
    python benchmarks/verdict_validity.py --races 200             # one JSON line
    python benchmarks/verdict_validity.py --from-raw raw.jsonl    # the line again, from a --raw run's records

The job is the order agent (`gradebench.jobs.OrderAgent`, 26 order requests) on the simulated ``standard`` grade with
``also=["small"]``: 8 candidate entries, reference entry sim/steady, judge sim/oracle, margin 1 point of 10.

**The truth** (``--truth``) is each entry's mean paired difference, candidate − reference entry, over all 26 inputs
(each weighted equally; a run that failed on the model's answer scores 0, one the endpoint failed or the judge gave
no score is left out, as the verdicts read them), averaged
over ``--salts`` reference draws: each salt is a fixed-design race of all 26 inputs × ``--runs`` runs of every entry
with a reference run of its own per input. A race judges every run against one reference run per input, and which
run that is moves an entry's difference by up to a third of a point, so one race is not a truth. The standard error
is the spread of the per-salt differences over √salts. Entries are classed by the truth: ``worse`` (truth < −1,
worse than the margin), ``within`` (truth ≥ −1), and ``near`` the margin (truth within ±0.5 of −1).

**The races** (default): race ``r`` draws 16 of the 26 inputs with ``random.Random(r)`` and the salt
``validity-r``; every design races the same inputs under the same salt (the same reference runs: a paired comparison
of the designs), each on a fresh temporary cache, the simulated fleet at latency scale 0. The designs:

- ``fixed``: 4 runs of every entry on each of the 16 inputs (``runs=4``), the paired bootstrap: today's default;
- ``gsd``: ``runs="gsd"`` (``runs="auto"`` is another name for it), ``max_runs=64`` (the fixed design's runs per
  entry): the group-sequential race, eight looks every 8 paired units: "worse"
  on a Pocock boundary at 5% from the first, "as good" on an O'Brien–Fleming boundary at 2.5% from the fourth
  (`gradebench._stats.groupseq`);
- ``gsd_at_fixed_spend`` (with ``--at-fixed-spend``): ``runs="gsd"`` with room for three times as many runs
  (``max_runs=192``) and ``budget=`` the fixed design's mean spend per race: what racing to a verdict settles for the
  same money — the settled entries stop and the money goes to the ones near the margin.

Printed: for each design the false ``as good`` rate among entries truly worse than the margin (with its exact 95%
upper bound), the false ``worse`` rate among entries within it, the share of correct settled verdicts (all entries and
those near the margin), what each entry was called, and per race the mean candidate runs, candidate calls, judge
calls, reference calls and cost (spent now, references and judge included), and for the group-sequential design the
share of races each entry stopped at each look (``settled@2``, ``futile@3``); then whether the targets are met.

At latency scale 0 the only real waits left are the openai SDK's retry backoff after the simulated 503s of
sim/flaky (up to seconds per retry): this script sets that backoff to 0
(``gradebench._calls.session.GradebenchClient._calculate_retry_timeout`` returns 0), which changes no answer and no
verdict.
``--workers auto`` uses 2 processes only when the machine is otherwise idle (1-minute load below 0.5), else 1.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

import gradebench as gb
from gradebench._calls.session import GradebenchClient
from gradebench.jobs import OrderAgent, load_inputs

TRUTH_PATH = Path(__file__).with_name("verdict_truth.json")
MARGIN = 1.0
NEAR = 0.5
"""An entry whose truth is within this many points of −margin sits near the margin."""
SUBSET = 16
FIXED_RUNS = 4
AT_FIXED_SPEND_ROOM = 3
GRADE, ALSO, REFERENCE = "standard", ["small"], "sim/steady"


def _no_backoff() -> None:
    """The openai SDK waits (0.5 s, doubling, with jitter) before retrying a 503; at latency 0 nothing else waits."""
    GradebenchClient._calculate_retry_timeout = lambda self, *args, **kwargs: 0.0  # type: ignore[method-assign]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _bench(runs: int | str, inputs: Sequence[dict], salt: str, cache: str, **options: Any) -> gb.Benchmark:
    catalog = gb.sim.SimFleet(latency_scale=0, record=False).catalog()
    bench = gb.Benchmark(
        OrderAgent,
        runs=runs,
        catalog=catalog,
        grade=GRADE,
        also=ALSO,
        salt=salt,
        cache=cache,
        margin=MARGIN,
        progress=False,
        **options,
    )  # type: ignore[arg-type]
    bench.set_inputs(list(inputs))
    return bench


def _run(bench: gb.Benchmark) -> gb.BenchmarkReport:
    asyncio.run(bench.run())
    return bench.report()


def entry_scores(runs: pl.DataFrame) -> dict[str, dict[str, list[float]]]:
    """Per entry, per input: the candidate runs' scores in repeat order, as the verdicts read them (a run that failed
    on the model's answer 0; one the endpoint failed, or the judge gave no score: left out)."""
    lost = pl.col("endpoint_error").is_not_null()
    value = pl.when(pl.col("ok")).then(pl.col("score").cast(pl.Float64)).when(lost).then(None).otherwise(0.0)
    rows = (
        runs.filter(pl.col("role") == "candidate")
        .select("entry", "input_id", "repeat", value.alias("value"))
        .filter(pl.col("value").is_not_null())
        .sort("entry", "input_id", "repeat")
    )
    out: dict[str, dict[str, list[float]]] = {}
    for entry, input_id, _, v in rows.iter_rows():
        out.setdefault(entry, {}).setdefault(input_id, []).append(v)
    return out


def paired_difference(scores: dict[str, dict[str, list[float]]], entry: str) -> float:
    """Mean over inputs of (the entry's mean score − the reference entry's mean score) on the input."""
    mine, theirs = scores[entry], scores[REFERENCE]
    common = [i for i in mine if i in theirs]
    return statistics.fmean(statistics.fmean(mine[i]) - statistics.fmean(theirs[i]) for i in common)


# ------------------------------------------------------------------------------------------------------------ truth


def truth_draw(salt_index: int, runs: int) -> dict[str, Any]:
    """One reference draw: all inputs × ``runs`` runs of every entry under a salt of its own."""
    _no_backoff()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = _run(_bench(runs, load_inputs("orders"), f"truth-{salt_index}", tmp))
    scores = entry_scores(report.runs)
    return {
        "salt": f"truth-{salt_index}",
        "differences": {e: paired_difference(scores, e) for e in scores if e != REFERENCE},
        "scores": scores,
        "wall_s": time.perf_counter() - started,
    }


def make_truth(salts: int, runs: int, workers: int, scores_path: Path | None) -> dict[str, Any]:
    started = time.perf_counter()
    draws = list(_map(lambda i: (truth_draw, i, runs), range(salts), workers, "truth"))
    if scores_path is not None:  # every run's score, for offline study of designs (not committed)
        scores_path.write_text(json.dumps([{"salt": d["salt"], "scores": d["scores"]} for d in draws]))
    entries = list(draws[0]["differences"])
    table = {}
    for entry in entries:
        values = [d["differences"][entry] for d in draws]
        truth, se = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
        table[entry] = {
            "truth": round(truth, 4),
            "se": round(se, 4),
            "class": "worse" if truth < -MARGIN else "within",
            "near_margin": abs(truth + MARGIN) <= NEAR,
            "per_salt_sd": round(statistics.stdev(values), 4),
            "per_salt_range": [round(min(values), 3), round(max(values), 3)],
        }
    return {
        "how": (
            f"benchmarks/verdict_validity.py --truth --salts {salts} --runs {runs}: per salt (truth-0 .. "
            f"truth-{salts - 1}, its own reference run per input) a fixed-design race of all 26 order inputs × {runs} "
            f"runs of every entry (OrderAgent, grade {GRADE}, also {ALSO}, judge sim/oracle, sim latency 0); an "
            f"entry's difference is the mean over inputs of (its mean score − {REFERENCE}'s mean score), a run "
            "that failed on the model's answer 0, one the endpoint failed left out; truth = the mean over salts, se = "
            "their standard deviation / √salts"
        ),
        "reference_entry": REFERENCE,
        "margin": MARGIN,
        "near": NEAR,
        "salts": salts,
        "runs_per_input": runs,
        "inputs": len(load_inputs("orders")),
        "gradebench_version": gb.__version__,
        "wall_s": round(time.perf_counter() - started, 1),
        "entries": table,
    }


# ------------------------------------------------------------------------------------------------------------ races


def race_inputs(index: int) -> list[dict]:
    """The seeded random subset of inputs race ``index`` runs on."""
    return random.Random(index).sample(load_inputs("orders"), SUBSET)


def design_options(design: str, fixed_spend: float | None) -> tuple[int | str, dict[str, Any]]:
    if design == "fixed":
        return FIXED_RUNS, {}
    if design == "gsd":
        return "gsd", {"max_runs": FIXED_RUNS * SUBSET}
    if design == "gsd_at_fixed_spend":
        if fixed_spend is None:
            raise ValueError("gsd_at_fixed_spend needs the fixed design's spend")
        return "gsd", {"max_runs": AT_FIXED_SPEND_ROOM * FIXED_RUNS * SUBSET, "budget": fixed_spend}
    raise ValueError(f"unknown design {design!r}")


def one_race(design: str, index: int, fixed_spend: float | None = None) -> dict[str, Any]:
    """Race ``index`` of a design: each entry's verdict and what the race made and spent."""
    _no_backoff()
    runs, options = design_options(design, fixed_spend)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = _run(_bench(runs, race_inputs(index), f"validity-{index}", tmp, **options))
    models = report.models
    calls = report.calls.group_by("role").len()
    count = dict(zip(calls["role"].to_list(), calls["len"].to_list(), strict=True))
    frame = report.runs
    candidates = frame.filter(pl.col("role") == "candidate")
    return {
        "design": design,
        "race": index,
        "verdicts": {e: v for e, v in zip(models["entry"], models["verdict"], strict=True) if e != REFERENCE},
        "runs": dict(zip(models["entry"], models["runs"], strict=True)),
        "stops": {e: w for e, w in zip(models["entry"], models["stopped"], strict=True) if e != REFERENCE and w},
        "candidate_runs": candidates.height,
        "candidate_calls": count.get("candidate", 0),
        "judge_calls": count.get("judge", 0),
        "reference_calls": count.get("reference", 0),
        "cost": float(frame["spent_now"].sum() + frame["judge_cost"].fill_null(0).sum()),
        "judge_cost": float(frame["judge_cost"].fill_null(0).sum()),
        "stopped": report.meta.stopped,
        "wall_s": time.perf_counter() - started,
    }


def _map(task: Callable[[int], tuple], items: Iterable[int], workers: int, label: str) -> Iterable[Any]:
    """``fn(*args)`` for each ``task(item) = (fn, *args)``, in item order, on ``workers`` processes.

    Progress goes to stderr."""
    jobs = [task(i) for i in items]
    started = time.perf_counter()

    def note(k: int) -> None:
        if k == len(jobs) or k % max(1, len(jobs) // 20) == 0:
            _log(f"{label}: {k}/{len(jobs)} in {time.perf_counter() - started:.0f} s")

    if workers <= 1:
        for k, (fn, *args) in enumerate(jobs, start=1):
            yield fn(*args)
            note(k)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, *args) for fn, *args in jobs]
        for k, future in enumerate(futures, start=1):
            yield future.result()
            note(k)


def _upper(k: int, n: int, level: float = 0.95) -> float:
    """Exact (Clopper–Pearson) one-sided upper bound of a rate seen k times in n."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisection on the binomial tail P(X <= k | p) = 1 − level
        mid = (lo + hi) / 2
        tail = sum(math.comb(n, j) * mid**j * (1 - mid) ** (n - j) for j in range(k + 1))
        lo, hi = (mid, hi) if tail > 1 - level else (lo, mid)
    return hi


def _stopped_at(races: list[dict[str, Any]], entry: str) -> dict[str, Any]:
    """For a group-sequential race: the share of races in which ``entry`` stopped settled or futile at each look
    (``settled@2``), or ran to the last (``max_runs``)."""
    kinds: dict[str, int] = {}
    for r in races:
        why = r.get("stops", {}).get(entry, "")
        look = re.search(r"at look (\d+) of", why)
        if look is None:
            continue
        kind = f"{why.split(':')[0].split(' ')[0]}@{look.group(1)}"
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"stopped_at": {k: round(v / len(races), 3) for k, v in sorted(kinds.items())}} if kinds else {}


def summarise(races: list[dict[str, Any]], truth: dict[str, Any]) -> dict[str, Any]:
    table = truth["entries"]
    right = {e: ("worse" if t["class"] == "worse" else "as good") for e, t in table.items()}
    pairs = [(e, v) for r in races for e, v in r["verdicts"].items()]
    worse = [v for e, v in pairs if table[e]["class"] == "worse"]
    within = [v for e, v in pairs if table[e]["class"] == "within"]
    near = [(e, v) for e, v in pairs if table[e]["near_margin"]]
    false_good, false_worse = worse.count("as good"), within.count("worse")
    n = len(races)

    def mean(key: str) -> float:
        return round(statistics.fmean(r[key] for r in races), 4)

    return {
        "races": n,
        "false_as_good": f"{false_good} of {len(worse)}",
        "false_as_good_rate": round(false_good / len(worse), 4) if worse else None,
        "false_as_good_upper95": round(_upper(false_good, len(worse)), 4) if worse else None,
        "false_worse": f"{false_worse} of {len(within)}",
        "false_worse_rate": round(false_worse / len(within), 4) if within else None,
        "correct_settled_rate": round(sum(v == right[e] for e, v in pairs) / len(pairs), 4),
        "correct_settled_per_race": round(sum(v == right[e] for e, v in pairs) / n, 3),
        "near_margin_correct_rate": round(sum(v == right[e] for e, v in near) / len(near), 4) if near else None,
        "near_margin_settled_rate": round(sum(v != "inconclusive" for _, v in near) / len(near), 4) if near else None,
        "per_entry": {
            e: {
                label: round(sum(r["verdicts"].get(e) == label for r in races) / n, 3)
                for label in ("as good", "worse", "inconclusive")
            }
            | {"runs": round(statistics.fmean(r["runs"][e] for r in races), 1)}
            | _stopped_at(races, e)
            for e in table
        },
        "candidate_runs": mean("candidate_runs"),
        "candidate_calls": mean("candidate_calls"),
        "judge_calls": mean("judge_calls"),
        "reference_calls": mean("reference_calls"),
        "cost": round(statistics.fmean(r["cost"] for r in races), 4),
        "judge_cost_share": round(sum(r["judge_cost"] for r in races) / sum(r["cost"] for r in races), 3),
        "stopped_by_budget": sum(r["stopped"] == "budget" for r in races),
        "wall_s_per_race": round(statistics.fmean(r["wall_s"] for r in races), 2),
    }


def _calls(design: dict[str, Any]) -> float:
    return design["candidate_calls"] + design["judge_calls"]


def targets(result: dict[str, Any]) -> dict[str, Any]:
    fixed = result["fixed"]
    designs = [d for d in result.values() if isinstance(d, dict) and "races" in d]
    out: dict[str, Any] = {
        "false_as_good_at_most_5pct": all(d["false_as_good_rate"] <= 0.05 for d in designs),
        "false_as_good_upper95_at_most_5pct": all(d["false_as_good_upper95"] <= 0.05 for d in designs),
    }
    if "gsd" in result:
        gsd, calls = result["gsd"], _calls(result["gsd"]) / _calls(fixed)
        out["gsd_calls_share_of_fixed"] = round(calls, 3)
        out["gsd_correct_at_least_fixed"] = gsd["correct_settled_rate"] >= fixed["correct_settled_rate"]
        out["gsd_correct_at_least_fixed_with_60pct_of_the_calls"] = out["gsd_correct_at_least_fixed"] and calls <= 0.6
    same = result.get("gsd_at_fixed_spend")
    if same is not None:
        out["at_fixed_spend_calls_share_of_fixed"] = round(
            (same["candidate_calls"] + same["judge_calls"]) / (fixed["candidate_calls"] + fixed["judge_calls"]), 3
        )
        out["near_margin_correct_fixed"] = fixed["near_margin_correct_rate"]
        out["near_margin_correct_gsd_at_fixed_spend"] = same["near_margin_correct_rate"]
        out["at_fixed_spend_settles_more_near_the_margin"] = (
            same["near_margin_correct_rate"] > fixed["near_margin_correct_rate"]
        )
    return out


def _workers(asked: str) -> int:
    if asked != "auto":
        return max(1, int(asked))
    return 2 if (os.cpu_count() or 1) >= 2 and os.getloadavg()[0] < 0.5 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--truth", action="store_true", help="compute the ground truth and write it")
    parser.add_argument("--salts", type=int, default=30, help="reference draws behind the truth")
    parser.add_argument("--runs", type=int, default=12, help="runs per input and entry in each draw of the truth")
    parser.add_argument("--scores", type=Path, help="with --truth: also write every run's score here")
    parser.add_argument("--races", type=int, default=200, help="races per design")
    parser.add_argument("--first", type=int, default=0, help="index of the first race")
    parser.add_argument("--designs", default="fixed,gsd", help="comma-separated: fixed, gsd")
    parser.add_argument("--at-fixed-spend", action="store_true", help="also race gsd_at_fixed_spend")
    parser.add_argument("--fixed-spend", type=float, help="with --at-fixed-spend: the fixed design's mean spend")
    parser.add_argument("--raw", type=Path, help="also write every race's record here (JSON lines)")
    parser.add_argument("--from-raw", type=Path, help="summarise the records a --raw run wrote instead of racing")
    parser.add_argument("--workers", default="auto", help="processes: a number, or auto (2 only on an idle machine)")
    args = parser.parse_args()
    workers = _workers(args.workers)
    _log(f"{workers} worker{'s' if workers > 1 else ''}")
    started = time.perf_counter()
    if args.truth:
        truth = make_truth(args.salts, args.runs, workers, args.scores)
        TRUTH_PATH.write_text(json.dumps(truth, indent=1) + "\n")
        print(json.dumps(truth["entries"]))
        return
    truth = json.loads(TRUTH_PATH.read_text())
    indices = range(args.first, args.first + args.races)
    designs = [d for d in args.designs.split(",") if d]
    records: dict[str, list[dict[str, Any]]] = {}
    if args.from_raw is not None:  # summarise the races another run wrote with --raw, racing nothing
        for line in args.from_raw.read_text().splitlines():
            record = json.loads(line)
            records.setdefault(record["design"], []).append(record)
        designs = []
    for design in designs:
        records[design] = list(_map(lambda i, d=design: (one_race, d, i), indices, workers, design))
    if args.at_fixed_spend:
        if "fixed" not in records and args.fixed_spend is None:
            raise SystemExit("--at-fixed-spend needs the fixed design in --designs, or --fixed-spend")
        spend = args.fixed_spend or statistics.fmean(r["cost"] for r in records["fixed"])
        design = "gsd_at_fixed_spend"
        records[design] = list(_map(lambda i: (one_race, design, i, spend), indices, workers, design))
    if args.raw is not None:
        args.raw.write_text("".join(json.dumps(r) + "\n" for rs in records.values() for r in rs))
    result: dict[str, Any] = {
        "job": "order-agent",
        "grade": GRADE,
        "also": ALSO,
        "reference_entry": REFERENCE,
        "margin": MARGIN,
        "inputs_per_race": SUBSET,
        "truth": {
            e: [t["truth"], t["se"], t["class"] + (" near" if t["near_margin"] else "")]
            for e, t in truth["entries"].items()
        },
    }
    for design, rs in records.items():
        result[design] = summarise(rs, truth)
    if "fixed" in result and len(records) > 1:
        result["targets"] = targets(result)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
