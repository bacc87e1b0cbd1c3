"""How often is the verdict wrong against real truth? Recorded answers of two real models replayed through real races.

    nice python benchmarks/truth.py                     # every section, the default sizes (and 228 draws a cell)
    nice python benchmarks/truth.py --only mmlu --n 16 32 --draws 570 --seed 0       # docs/truth.md's figures
    nice python benchmarks/truth.py --only gsm8k --n 32 64 128 --draws 228 --seed 0

The data is RouteLLM's evaluation of Mixtral-8x7B-Instruct (the candidate) and GPT-4-1106 (the reference, the pick) on
MMLU and GSM8K (`../shared/data/routellm`, Apache-2.0; `--data` names another folder holding ``routellm/``). Every
race is a real gradebench race: the recorded answers are `gb.replay` catalog entries served through the openai client,
judged, cached and reported as any provider's, and the verdict is the report's own (`report.models`).

- **The judge** is a `gb.replay.RecordedJudge` replaying the source's own correctness column as a score of 10 (right)
  or 0 (wrong): no live judge runs (gradebench has no race without a judge; a recorded one calls no model), so the
  verdict is the product's paired non-inferiority test on correctness ×10, the scale a code scorer's 0..1 is read on
  (`gradebench._verdict.gold`: a gold scorer's scores ×10, the same test and margin). So the margin of 1 point of 10
  reads as 0.1 of accuracy: "as good" claims Mixtral's accuracy is at most 10 points below GPT-4's on the domain.
- **The code scorer** is a gold scorer (it reads the input), so the report's gold check tests it too: on MMLU it reads
  the recorded correctness (MMLU's files hold no responses: each run's output is the recorded correctness rendered as
  text, "recorded answer: correct" or "... wrong"); on GSM8K it extracts the final number of the real response text and
  compares it with the reference answer's ``#### N``, independently of the source's column (their agreement is
  printed). A judge's verdict the gold check contradicts is held inconclusive by the product, as in any race.
- **Truth** is the full paired difference over every question of the domain (Mixtral's accuracy minus GPT-4's, ×10),
  from the source's correctness column; for GSM8K's gold check, from the extracted numbers. With margin m: a draw is
  *truly worse* when truth ≤ −m (the test's null hypothesis holds) and *truly as good* when truth ≥ −m (a truth exactly
  on the line counts in both). False "as good": verdict "as good" on a truly worse draw; false "worse": verdict
  "worse" on a truly as good one. Coverage: the verdict's interval [lower, upper] holds the truth. Settled: a verdict
  other than inconclusive. A coverage miss "at 0" is one whose interval ends at 0 on the truth's side: on 0/1 scores,
  a draw with no question the candidate lost (or won) cannot reach a truth beyond 0.
- **Draws.** A draw races ``n`` questions sampled without replacement from the domain with
  ``random.Random(f"{seed}:{task}:{n}:{k}")``, k the task's own count of draws; MMLU's draws cycle over its 57
  domains (draw d races domain d mod 57, its sample k = d div 57). The fixed design races each question once
  (``runs=1``: a recording has one answer per question, so a repeat adds nothing); the group-sequential design
  (``runs="gsd"``) is given ``max_runs=n`` so that its eight looks take n/8 new questions each and it never repeats
  one. Intervals on rates are Clopper–Pearson 95%.

HANNA (``--only hanna``: stories rated by people and by LLM judges, ``../shared/data/hanna``) draws labels, not
races: benchmarks/label_hanna.py says how, and its options are in the HANNA group below.

Calls are cached under ``--cache`` (default a folder in the system's temp dir), so a second run is quicker.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl

import gradebench as gb

CANDIDATE = "mistralai/Mixtral-8x7B-Instruct-v0.1"
REFERENCE = "gpt-4-1106-preview"
MODELS = (CANDIDATE, REFERENCE)
DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
"""``../shared/data`` beside the checkout: the folder that holds ``routellm/``."""
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "gradebench-truth" / "cache"
MARGIN = 1.0
DESIGNS = ("fixed", "gsd")
AS_GOOD, WORSE, INCONCLUSIVE = "as good", "worse", "inconclusive"


@dataclass(frozen=True)
class Task:
    """One data set ready to race: its recording, the recorded judge, the inputs (with what the scorer reads) and
    the truth over all of them."""

    section: str
    name: str
    recording: gb.replay.Recording
    judge: gb.replay.RecordedJudge
    inputs: list[dict[str, Any]]
    scorer: Callable[..., float]
    truth: float
    """Candidate minus reference, mean correctness ×10 over every input (the source's correctness column)."""
    gold_truth: float
    """The same by the code scorer (equal to ``truth`` on MMLU, where it reads the recorded correctness)."""

    def catalog(self) -> gb.Catalog:
        return gb.replay.catalog(self.recording, REFERENCE, judge=self.judge, latency_scale=0)


# ------------------------------------------------------------------------------------------------------- the data


def routellm(data: Path) -> Path:
    """The ``routellm`` folder under ``data``, or a clear exit when it is not there."""
    folder = Path(data) / "routellm"
    if not (folder / "gsm8k_responses.csv").is_file() or not (folder / "mmlu").is_dir():
        raise SystemExit(
            f"no RouteLLM data under {Path(data).resolve()}: expected routellm/gsm8k_responses.csv, "
            "routellm/gsm8k_test.jsonl and routellm/mmlu/mmlu_<domain>.csv; give the folder with --data"
        )
    return folder


def recorded_correct(output: str, reference_output: str, *, input: dict[str, Any]) -> float:
    """1 when the run's output is the recorded "correct": MMLU's files record correctness, not responses. It takes
    the input so gradebench treats it as a gold scorer (the recorded correctness is the gold judgement) and scores
    the reference run too."""
    return 1.0 if output == CORRECT else 0.0


recorded_correct.name = "recorded_correct"  # type: ignore[attr-defined]
CORRECT, WRONG = "recorded answer: correct", "recorded answer: wrong"

_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?")


def final_number(text: str) -> float | None:
    """The answer a GSM8K response gives: the first number after its last ``####`` (the format GSM8K's reference
    answers use), else the last number in it."""
    marked = "####" in text
    found = _NUMBER.findall(text.rsplit("####", 1)[-1])
    if not found:
        return None
    try:
        return float((found[0] if marked else found[-1]).replace("$", "").replace(",", ""))
    except ValueError:
        return None


def gold_number(output: str, reference_output: str, *, input: dict[str, Any]) -> float:
    """1 when the response's final number equals the reference answer's ``#### N`` (numerically: ``$20.00`` is 20)."""
    said = final_number(output)
    return 1.0 if said is not None and abs(said - float(input["answer"])) < 1e-9 else 0.0


gold_number.name = "gsm8k_final_number"  # type: ignore[attr-defined]
gold_number.gold = "answer"  # type: ignore[attr-defined]  # kept from the judge's view of the input


def _task(section: str, name: str, rows: list[dict[str, Any]], scorer: Callable[..., float], gold: list[float]) -> Task:
    """``rows``: one per input with ``input``, ``prompt``, each model's ``output`` and ``correct``, and ``extra``
    fields for the scorer. ``gold``: the scorer's score per input and model, in that order."""
    recording = gb.replay.Recording(
        [
            {"input": r["input"], "model": m, "prompt": r["prompt"], "output": r[m]["output"]}
            for r in rows
            for m in MODELS
        ]
    )
    judge = gb.replay.RecordedJudge(
        [{"input": r["input"], "model": m, "score": 10 if r[m]["correct"] else 0} for r in rows for m in MODELS]
    )
    inputs = [{"id": r["input"], "prompt": r["prompt"], **r["extra"]} for r in rows]
    truth = 10 * sum(int(r[CANDIDATE]["correct"]) - int(r[REFERENCE]["correct"]) for r in rows) / len(rows)
    gold_truth = 10 * sum(gold[2 * i] - gold[2 * i + 1] for i in range(len(rows))) / len(rows)
    return Task(section, name, recording, judge, inputs, scorer, truth, gold_truth)


def mmlu_tasks(data: Path, domains: Sequence[str] = ()) -> list[Task]:
    """A task per MMLU domain (all 57, or those named). A question's prompt carries its row number: a few domains
    hold the same question twice (a recording must tell its inputs apart), and every row counts in the truth."""
    tasks = []
    for path in sorted((routellm(data) / "mmlu").glob("mmlu_*.csv")):
        domain = path.stem.removeprefix("mmlu_")
        if domains and domain not in domains:
            continue
        frame = pl.read_csv(path)
        rows = [
            {
                "input": f"{domain}-{i}",
                "prompt": f"[{domain} question {i}]\n{row['prompt']}",
                **{m: {"correct": bool(row[m]), "output": CORRECT if row[m] else WRONG} for m in MODELS},
                "extra": {},
            }
            for i, row in enumerate(frame.iter_rows(named=True))
        ]
        gold = [float(r[m]["correct"]) for r in rows for m in MODELS]
        tasks.append(_task("mmlu", domain, rows, recorded_correct, gold))
    if domains and len(tasks) != len(set(domains)):
        raise SystemExit(f"unknown MMLU domain among {list(domains)}")
    return tasks


def gsm8k_task(data: Path) -> Task:
    """GSM8K: both models' real responses; the reference answers from ``gsm8k_test.jsonl`` by question."""
    folder = routellm(data)
    answers = {}
    for line in (folder / "gsm8k_test.jsonl").read_text().splitlines():
        item = json.loads(line)
        answers[item["question"]] = item["answer"].rsplit("####", 1)[-1].strip().replace(",", "")
    frame = pl.read_csv(folder / "gsm8k_responses.csv")
    rows = [
        {
            "input": f"gsm8k-{i}",
            "prompt": row["prompt"],
            **{m: {"correct": bool(row[m]), "output": row[f"{m}_response"]} for m in MODELS},
            "extra": {"answer": answers[row["prompt"]]},
        }
        for i, row in enumerate(frame.iter_rows(named=True))
    ]
    gold = [gold_number(r[m]["output"], "", input=r["extra"]) for r in rows for m in MODELS]
    return _task("gsm8k", "gsm8k", rows, gold_number, gold)


def scorer_agreement(task: Task) -> dict[str, str]:
    """Per model, how often the code scorer agrees with the source's correctness column, over every input."""
    recorded = task.judge.records
    outputs = {(r.input, r.model): r.output for r in task.recording.records}
    by_id = {i["id"]: i for i in task.inputs}
    agreement = {}
    for model in MODELS:
        same = sum(
            (task.scorer(outputs[(i, model)], "", input=by_id[i]) == 1.0) == (recorded[(i, model)].score == 10)
            for i in by_id
        )
        agreement[model] = f"{same} of {len(by_id)}"
    return agreement


# ------------------------------------------------------------------------------------------------------- a race


@dataclass(frozen=True)
class Outcome:
    """One race's verdict on the candidate, beside the truth."""

    section: str
    task: str
    n: int
    design: str
    draw: int
    truth: float
    verdict: str
    lower: float | None
    upper: float | None
    mean_diff: float | None
    runs: int
    """The candidate's runs the verdict read (the sequential design stops early)."""
    gold_truth: float
    gold_verdict: str | None
    gold_lower: float | None
    gold_upper: float | None


def sample(task: Task, n: int, seed: int, draw: int) -> list[dict[str, Any]]:
    """``n`` of the task's inputs, without replacement, seeded by the seed, the task, ``n`` and the draw."""
    return random.Random(f"{seed}:{task.name}:{n}:{draw}").sample(task.inputs, n)


def race(task: Task, inputs: list[dict[str, Any]], design: str, *, cache: Path, margin: float = MARGIN) -> dict:
    """Race the candidate against the reference on ``inputs``; the report's verdict of the candidate, and the gold
    check's. Fails loudly on any run the replay or the recorded judge could not answer: no silent gaps."""
    sizing: dict[str, Any] = {"runs": 1} if design == "fixed" else {"runs": "gsd", "max_runs": len(inputs)}
    bench = gb.Benchmark(
        task.recording.job(task.name, "Answer the question."),
        catalog=task.catalog(),
        margin=margin,
        controls=0,  # a recorded judge scores recorded outputs only, never a planted wrong answer
        cache=cache,
        progress=False,
        **sizing,
    )
    bench.set_spec(scorer=task.scorer).set_inputs(inputs)
    bench.run_sync()
    report = bench.report()
    runs = report.runs.filter(pl.col("entry") == CANDIDATE)
    broken = runs.filter(~pl.col("ok") | pl.col("judge_error").is_not_null() | pl.col("scorer").is_null())
    if broken.height:
        raise RuntimeError(f"{task.name}: {broken.height} runs not answered or not scored: {broken.row(0, named=True)}")
    row = report.models.filter(pl.col("entry") == CANDIDATE).row(0, named=True)
    gold = report.gold_check()
    checked = gold.verdicts.get(CANDIDATE, {}) if gold is not None else {}
    return {
        "verdict": row["verdict"],
        "lower": row["lower"],
        "upper": row["upper"],
        "mean_diff": row["mean_diff"],
        "runs": runs.height,
        "gold_verdict": checked.get("verdict"),
        "gold_lower": checked.get("lower"),
        "gold_upper": checked.get("upper"),
    }


def measure(
    tasks: Sequence[Task],
    sizes: Iterable[int],
    designs: Iterable[str],
    *,
    draws: int,
    seed: int,
    cache: Path,
    margin: float = MARGIN,
) -> list[Outcome]:
    """``draws`` races per (n, design), cycling over the tasks; progress on stderr."""
    outcomes, started = [], time.monotonic()
    for n in sizes:
        for design in designs:
            for draw in range(draws):
                task = tasks[draw % len(tasks)]
                got = race(task, sample(task, n, seed, draw // len(tasks)), design, cache=cache, margin=margin)
                outcomes.append(
                    Outcome(task.section, task.name, n, design, draw, task.truth, **got, gold_truth=task.gold_truth)
                )
                if (draw + 1) % 50 == 0 or draw + 1 == draws:
                    took = time.monotonic() - started
                    print(
                        f"  {task.section} n={n} {design}: {draw + 1}/{draws} races ({took:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    return outcomes


# ------------------------------------------------------------------------------------------------------- the rates


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact two-sided 95% interval of a rate seen ``k`` times in ``n`` (bisection on the binomial tails)."""
    if n == 0:
        return (0.0, 1.0)

    def solve(rises: Callable[[float], float]) -> float:  # the p where ``rises`` crosses 0.025
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if rises(mid) < 0.025 else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: 1.0 - binomial_cdf(k - 1, n, p))  # P(X >= k) rises with p
    upper = 1.0 if k == n else 1.0 - solve(lambda q: binomial_cdf(k, n, 1.0 - q))  # P(X <= k) falls with p
    return (lower, upper)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in logs (n in the thousands overflows a float otherwise)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    logs = [
        math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * math.log(p) + (n - j) * math.log1p(-p)
        for j in range(k + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def rate(k: int, n: int) -> str:
    if n == 0:
        return "—"
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} = {100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def rates(outcomes: Sequence[Outcome], margin: float = MARGIN, *, gold: bool = False) -> dict[str, Any]:
    """The error rates of one cell's outcomes against the truth (or, with ``gold``, the gold check's against the
    scorer's truth)."""
    picked = [
        (o.gold_truth, o.gold_verdict, o.gold_lower, o.gold_upper) if gold else (o.truth, o.verdict, o.lower, o.upper)
        for o in outcomes
    ]
    worse_truth = [(t, v) for t, v, _, _ in picked if t <= -margin]
    good_truth = [(t, v) for t, v, _, _ in picked if t >= -margin]
    with_interval = [(t, lo, hi) for t, _, lo, hi in picked if lo is not None and hi is not None]
    # A miss whose interval ends at 0 on the truth's side: the draw held (almost) no question on which the truth's
    # sign shows — e.g. none the candidate got wrong and the reference right — so the bootstrap cannot reach it.
    at_zero = sum(not lo - 1e-9 <= t <= hi + 1e-9 and (lo >= 0 > t or hi <= 0 < t) for t, lo, hi in with_interval)
    right = sum((v == AS_GOOD and t > -margin) or (v == WORSE and t < -margin) for t, v, _, _ in picked)
    return {
        "races": len(picked),
        "false_as_good": (sum(v == AS_GOOD for _, v in worse_truth), len(worse_truth)),
        "false_worse": (sum(v == WORSE for _, v in good_truth), len(good_truth)),
        "coverage": (sum(lo - 1e-9 <= t <= hi + 1e-9 for t, lo, hi in with_interval), len(with_interval)),
        "misses_at_zero": at_zero,
        "settled": (sum(v != INCONCLUSIVE for _, v, _, _ in picked), len(picked)),
        "settled_right": (right, len(picked)),
        "runs_mean": sum(o.runs for o in outcomes) / max(1, len(outcomes)),
    }


def cells(outcomes: Sequence[Outcome]) -> dict[tuple[str, int, str], list[Outcome]]:
    grouped: dict[tuple[str, int, str], list[Outcome]] = {}
    for o in outcomes:
        grouped.setdefault((o.section, o.n, o.design), []).append(o)
    return grouped


def table(outcomes: Sequence[Outcome], margin: float = MARGIN, *, gold: bool = False) -> str:
    """A markdown table: a row per (section, n, design)."""
    columns = ["section", "n", "design", 'false "as good"', 'false "worse"', "coverage", "misses at 0", "settled"]
    columns += ["settled right", "runs"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for (section, n, design), group in cells(outcomes).items():
        r = rates(group, margin, gold=gold)
        lines.append(
            f"| {section}{' gold' if gold else ''} | {n} | {design} | {rate(*r['false_as_good'])} | "
            f"{rate(*r['false_worse'])} | {rate(*r['coverage'])} | {r['misses_at_zero']} | {rate(*r['settled'])} | "
            f"{rate(*r['settled_right'])} | {r['runs_mean']:.1f} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------- sections


def mmlu_section(args: argparse.Namespace) -> list[Outcome]:
    tasks = mmlu_tasks(args.data, args.domains)
    truths = sorted((t.truth, t.name, len(t.inputs)) for t in tasks)
    worse = sum(t <= -args.margin for t, _, _ in truths)
    print(f"MMLU: {len(tasks)} domains, {sum(n for *_, n in truths)} questions; truth (Mixtral − GPT-4, points of 10)")
    print(
        f"  from {truths[0][0]:+.2f} ({truths[0][1]}) to {truths[-1][0]:+.2f} ({truths[-1][1]}); {worse} domains truly"
    )
    print(f"  worse (truth ≤ −{args.margin:g}), {len(tasks) - worse} within the margin", flush=True)
    sizes, smallest = args.n or (16, 32), min(tasks, key=lambda t: len(t.inputs))
    if max(sizes) > len(smallest.inputs):
        raise SystemExit(f"--n {max(sizes)} is more than the {len(smallest.inputs)} questions of {smallest.name}")
    return measure(tasks, sizes, args.designs, draws=args.draws, seed=args.seed, cache=args.cache, margin=args.margin)


def gsm8k_section(args: argparse.Namespace) -> list[Outcome]:
    task = gsm8k_task(args.data)
    print(f"GSM8K: {len(task.inputs)} problems; truth (Mixtral − GPT-4, points of 10) {task.truth:+.3f} by the")
    print(f"  source's correctness column, {task.gold_truth:+.3f} by the final-number scorer")
    agreement = scorer_agreement(task)
    print(
        "  the final-number scorer agrees with the source's column on "
        + "; ".join(f"{m}: {a}" for m, a in agreement.items())
    )
    sizes = args.n or (32, 128)
    return measure([task], sizes, args.designs, draws=args.draws, seed=args.seed, cache=args.cache, margin=args.margin)


def hanna() -> ModuleType:
    """benchmarks/label_hanna.py: HANNA's section (people's ratings as labels, LLM judges' as the judge's scores)."""
    if "label_hanna" not in sys.modules:  # benchmarks/ is not a package: loaded by its path
        spec = importlib.util.spec_from_file_location("label_hanna", Path(__file__).with_name("label_hanna.py"))
        sys.modules["label_hanna"] = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(sys.modules["label_hanna"])  # type: ignore[union-attr]
    return sys.modules["label_hanna"]


SECTIONS: dict[str, Callable[[argparse.Namespace], list[Outcome]]] = {
    "mmlu": mmlu_section,
    "gsm8k": gsm8k_section,
    "hanna": lambda args: hanna().section(args),
}


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the folder holding routellm/ (default %(default)s)"
    )
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append", help="run only this section (repeatable)")
    parser.add_argument(
        "--draws", type=int, default=228, help="races per (section, n, design); MMLU's cycle over domains"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, nargs="+", help="questions a race (default: MMLU 16 32, GSM8K 32 128)")
    parser.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    parser.add_argument("--domains", nargs="+", default=[], help="MMLU domains to race (default: all 57)")
    parser.add_argument("--margin", type=float, default=MARGIN, help="points of 10 (1 = 0.1 of accuracy)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the call cache (default %(default)s)")
    parser.add_argument("--out", type=Path, help="write every race's outcome here as JSON lines")
    hanna().add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[Outcome]:
    args = parse(argv)
    if {"mmlu", "gsm8k"} & set(args.only or SECTIONS):
        routellm(args.data)
    outcomes: list[Outcome] = []
    for name in args.only or list(SECTIONS):
        started = time.monotonic()
        found = SECTIONS[name](args)
        if name == "hanna":
            continue  # label draws, not races: it prints its own tables
        outcomes += found
        print(
            f"\n{name}: seed {args.seed}, {args.draws} races a cell, margin {args.margin:g} of 10, "
            f"{time.monotonic() - started:.0f} s; rates with Clopper–Pearson 95% intervals"
        )
        print(table(found, args.margin))
        if name == "gsm8k":
            print("\nthe gold check (the final-number scorer's own verdict, against its own truth):")
            print(table(found, args.margin, gold=True))
        print()
    if args.out:
        args.out.write_text("".join(json.dumps(asdict(o)) + "\n" for o in outcomes))
    return outcomes


if __name__ == "__main__":
    main()
