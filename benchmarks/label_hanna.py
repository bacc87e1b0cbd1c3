"""The label-corrected verdict against people's ratings: HANNA's stories, random vs active labelling.

    python benchmarks/label_hanna.py --draws 200 --labels 10 20 40 --seed 0       # = truth.py --only hanna's
    python benchmarks/label_hanna.py --near -1.6 -1.35 --draws 400 --labels 10 20 --seed 7

Data: ``../shared/data/hanna/hanna_dev.csv`` (``--data``; its SOURCE.md): 96 story prompts × 11 story systems, one
story per system per prompt (so systems are paired by prompt), each rated 1–5 by three people and by two LLM judges
(Mistral-7B, Beluga-13B) four times each, on relevance (RE), coherence (CH) and empathy (EM).

- **Scale.** A 1–5 rating r is (r − 1) × 2.5 on the product's 0..10 scale (1 → 0, 3 → 5, 5 → 10), for the judges
  and the people alike. The product's default margin, 1 point of 10 (`gradebench._stats.paired.DEFAULT_MARGIN`), is
  0.4 of a 1–5 point. A judge rating below 1 (the file has 276 of 25,344, down to −1: a rating the judge failed to
  give, averaged in) is left out of the run's mean.
- **Judge scores.** Each story's judge score is the mean of its judge ratings — both judges' four repeats (a panel
  of two, the noise of repeats averaged away), or one judge's four (``--judges``; a story it never rated takes both
  judges', counted as ``judge_filled``); the judge's uncertainty about it (active labelling) is their standard
  deviation (`gradebench._stats.active.judge_uncertainty`).
- **Labels.** One of the story's three people, drawn at random for each labelled story in each draw: a label is one
  person's answer, as the product's label panel gets it; the mean of three would be three people's work a story and
  hide the noise one labeller brings. A random rater's expected rating is the three's mean, so the truth below is
  what the labels estimate.
- **Truth.** For the candidate system C against the reference system R on a criterion, the people's mean
  difference over all 96 prompts (the three's mean rating of C's story less R's, averaged over prompts), 0..10.
- **Races.** Every ordered pair of the 11 systems (110 a criterion) as candidate and reference entry, one run a
  side on each prompt. A draw labels ``labels`` stories a side: *random*, a simple random sample of each side
  (today's `gradebench._verdict.labels.draw_runs`); *active*, ``labels`` a side by sequential Poisson sampling with
  chances led by the judge's uncertainty (`gradebench._stats.active`: ``label_chances``, each chance ``--floor`` to
  1.5 × the mean; ``ask``), each label weighted by the inverse of its chance. The verdict is the product's:
  `gradebench._stats.ppi.corrected_difference` and `corrected_verdicts` (what `gradebench._verdict.corrected.correct`
  calls), one-sided 95% bounds, margin 1. The draws of criterion c (its place in RE, CH, EM), label count m and
  design (0 random, 1 active, 2 fitted) are seeded ``numpy.random.default_rng([seed, c, m, design])``. *fitted*
  (``--labelling fitted``) is active labelling led by `fitted_variance` instead of the judges' spread: a model of
  where people disagree with the judge fitted on every label at once, an upper bound for any uncertainty learned
  from labels as they arrive. *old random* reads
  random's very draws (the same seed) with the corrected verdict of ``--baseline`` (`BASELINE_COMMIT`: classic PPI,
  as it was when the verdict was first held against HANNA), run from that commit's own files (`baseline_estimator`).

Printed per criterion, label count and design: coverage of each one-sided bound (lower ≤ truth, upper ≥ truth) over
every pair and draw, the wrong-verdict rate (``as good`` with truth below −margin, ``worse`` with truth above it), the
settle rate (``as good`` or ``worse``), and the same on the *target* pairs, whose truth lies at least one margin from
the boundary (|truth + margin| ≥ margin) — and the judge-only verdict's wrong rate on the same pairs (the product's
paired bootstrap, `gradebench._stats.paired.non_inferiority`, on the judge scores), and ``variance_at_best``: the
variance the best label chances could reach, as a share of a uniform sample's (`headroom`). ``--near LOW HIGH``
prints instead, for each pair whose truth is in [LOW, HIGH], how often today's and the old verdict say "worse".
``--steady`` labels each story with its three people's mean instead (three people's work a label: what steadier
labels would settle). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import polars as pl

from gradebench._base.vocab import Role
from gradebench._stats.active import FLOOR, ask, judge_uncertainty, label_chances
from gradebench._stats.paired import AS_GOOD, DEFAULT_MARGIN, INCONCLUSIVE, WORSE, non_inferiority
from gradebench._stats.ppi import corrected_difference, corrected_verdicts

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "hanna" / "hanna_dev.csv"
CRITERIA = ("RE", "CH", "EM")
DESIGNS = ("random", "active", "fitted")
OLD = "old random"
"""Random labels read by `BASELINE_COMMIT`'s corrected verdict: the same draws as ``random``'s (the same seed)."""
JUDGES = ("Beluga-13B", "Mistral-7B")
MARGIN = DEFAULT_MARGIN
BASELINE_COMMIT = "7127536344cd95dd85da5858ecc100a8c7ba3522"
"""The label-corrected verdict as it stood when it was first held against HANNA (the figures that asked for fewer
labels): classic PPI, the judge's weight 1 on both sides, a t on inputs − 1 degrees of freedom, skew-widened — the
parent of the commit that tuned the judge's weight (PPI++, cross-fitted) and set the minimum at 20 labels a side."""


def ten(rating: pl.Expr) -> pl.Expr:
    """A 1–5 rating on the 0..10 scale."""
    return (rating - 1.0) * 2.5


@dataclass(frozen=True)
class Criterion:
    """One criterion's stories: systems × prompts."""

    systems: list[str]
    judge: np.ndarray
    """(S, P): the judge panel's mean rating, 0..10."""
    spread: np.ndarray
    """(S, P): the judge's uncertainty (the panel's standard deviation), points."""
    people: np.ndarray
    """(S, P, 3): the three people's ratings, 0..10."""
    filled: int = 0
    """Stories none of the judges asked for rated, scored by every judge's ratings instead (`load`)."""

    @property
    def truth(self) -> np.ndarray:
        """(S, S): truth[c, r], the people's mean difference, candidate c − reference r."""
        mean = self.people.mean(axis=(1, 2))
        return mean[:, None] - mean[None, :]


def load(path: Path, criterion: str, judges: Sequence[str] = JUDGES) -> Criterion:
    """One criterion of the HANNA file as arrays (module docstring); the judge score and its uncertainty from the
    ratings of ``judges`` alone (all four repeats of each) — on a story none of them rated, every judge's (counted in
    ``filled``: Mistral-7B alone leaves 2–4 stories a criterion unrated)."""
    rows = pl.read_csv(path, schema_overrides={"score": pl.Float64}).filter(pl.col("criterion") == criterion)
    systems = sorted(rows["system"].unique().to_list())
    prompts = sorted(rows["prompt"].unique().to_list())
    if prompts != list(range(len(prompts))):
        raise ValueError(f"{path}: prompts must be numbered 0..{len(prompts) - 1}")
    if unknown := set(judges) - set(JUDGES):
        raise ValueError(f"no judge named {sorted(unknown)}: HANNA's are {list(JUDGES)}")
    at = {s: i for i, s in enumerate(systems)}
    judge = np.full((len(systems), len(prompts), 4 * len(JUDGES)), np.nan)
    people = np.full((len(systems), len(prompts), 3), np.nan)
    llm = rows.filter((pl.col("kind") == "llm") & (pl.col("score") >= 1.0)).with_columns(ten(pl.col("score")))
    for system, prompt, rater, repeat, score in llm.select("system", "prompt", "rater", "repeat", "score").iter_rows():
        judge[at[system], prompt, JUDGES.index(rater) * 4 + int(repeat) - 1] = score
    human = rows.filter(pl.col("kind") == "human").with_columns(ten(pl.col("score")))
    for system, prompt, rater, score in human.select("system", "prompt", "rater", "score").iter_rows():
        people[at[system], prompt, int(rater.rsplit("-", 1)[1]) - 1] = score
    if np.isnan(people).any() or np.isnan(judge).all(axis=-1).any():
        raise ValueError(f"{path}: a story of {criterion} lacks a person's rating or every judge rating")
    named = judge[..., [JUDGES.index(j) * 4 + r for j in judges for r in range(4)]]
    unrated = np.isnan(named).all(axis=-1)
    if unrated.any():  # pad with NaN to every judge's width, then take every judge's ratings on those stories
        named = np.concatenate([named, np.full(judge.shape[:-1] + (judge.shape[-1] - named.shape[-1],), np.nan)], -1)
        named = np.where(unrated[..., None], judge, named)
    return Criterion(systems, np.nanmean(named, axis=-1), judge_uncertainty(named), people, int(unrated.sum()))


def pairs(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (candidate, reference), candidate ≠ reference."""
    cand, ref = np.meshgrid(np.arange(count), np.arange(count), indexing="ij")
    keep = cand != ref
    return cand[keep], ref[keep]


def side(
    data: Criterion, system: np.ndarray, design: str, labels: int, rng: np.random.Generator, floor: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One side of every race: (judge, human label or NaN, labellable or the chance asked), each (B, P, 1)."""
    judge = data.judge[system]
    rater = rng.integers(0, 3, judge.shape)
    said = np.take_along_axis(data.people[system], rater[..., None], axis=-1)[..., 0]
    if design == "random":
        ranks = np.argsort(np.argsort(rng.random(judge.shape), axis=1), axis=1)
        labelled, labellable = ranks < labels, np.ones(judge.shape, dtype=bool)
    else:  # active: led by the judges' spread; fitted: by the σ a model fitted on every label predicts
        led = data.spread if design == "active" else np.sqrt(fitted_variance(data))
        labellable = label_chances(led[system], labels, floor=floor)
        labelled, _ = ask(labellable, rng)
    human = np.where(labelled, said, np.nan)
    return judge[..., None], human[..., None], labellable[..., None]


def judge_only(data: Criterion, margin: float = MARGIN) -> np.ndarray:
    """(S, S): the judge-only verdict of candidate c against reference r (the product's paired bootstrap)."""
    count, prompts = data.judge.shape
    runs = pl.DataFrame(
        {
            "entry": np.repeat(data.systems, prompts),
            "input_id": [f"p{p:02d}" for p in range(prompts)] * count,
            "score": data.judge.ravel(),
        }
    ).with_columns(role=pl.lit(Role.CANDIDATE), repeat=pl.lit(0), ok=pl.lit(True))
    found = np.full((count, count), "", dtype=object)
    for c, r in zip(*pairs(count), strict=True):
        found[c, r] = non_inferiority(runs, data.systems[c], data.systems[r], margin=margin).verdict
    return found


def label_variance(data: Criterion) -> np.ndarray:
    """(S, P): σ_s², the expected squared residual of a random one of the story's people against the judge's linear
    prediction of their mean (fitted over every story)."""
    mean = data.people.mean(axis=-1)
    slope, intercept = np.polyfit(data.judge.ravel(), mean.ravel(), 1)
    return (mean - intercept - slope * data.judge) ** 2 + data.people.var(axis=-1)  # a random one of three: ± spread


def fitted_variance(data: Criterion) -> np.ndarray:
    """(S, P): `label_variance` as a least-squares model on the judges' spread, score and score² (a score's distance
    to any boundary) predicts it, fitted on every story's labels at once — the best an uncertainty learned from labels
    as they arrive could know with those features, never reachable in use (design ``fitted``: an upper bound)."""
    judge, spread = data.judge.ravel(), data.spread.ravel()
    sigma2 = label_variance(data).ravel()
    features = np.column_stack([np.ones_like(judge), spread, judge, judge**2])
    fitted = features @ np.linalg.lstsq(features, sigma2, rcond=None)[0]
    return np.maximum(fitted, 0.05 * sigma2.mean()).reshape(data.judge.shape)  # a floor: no chance of 0


def headroom(data: Criterion) -> dict:
    """How much any choice of runs could gain: Var(θ̂) with the best chances π_s ∝ σ_s (Zrnic & Candès), over a
    uniform sample's, is (E σ)² / E σ², σ_s² from `label_variance`. With σ_s known only through the judge's
    uncertainty (its quintile's mean of σ²), through its score, through `fitted_variance` (what an uncertainty learned
    from labels could reach at best), and with the people's own disagreement known (an oracle no judge has)."""
    sigma2 = label_variance(data).ravel()

    def ratio(predicted: np.ndarray) -> float:
        return round(float(np.mean(np.sqrt(predicted)) ** 2 / np.mean(predicted)), 3)

    found = {"oracle": ratio(sigma2)}
    for name, feature in (("by_spread", data.spread.ravel()), ("by_score", data.judge.ravel())):
        bins = np.digitize(feature, np.quantile(feature, [0.2, 0.4, 0.6, 0.8]))
        found[name] = ratio(np.array([sigma2[bins == b].mean() for b in range(5)])[bins])
    found["by_model"] = ratio(fitted_variance(data).ravel())
    return found


def wrong(verdict: np.ndarray, truth: np.ndarray, margin: float = MARGIN) -> np.ndarray:
    """A verdict the truth contradicts: as good with the truth below −margin, worse with it above."""
    return ((verdict == AS_GOOD) & (truth < -margin)) | ((verdict == WORSE) & (truth > -margin))


def share(hit: np.ndarray) -> dict:
    return {"rate": round(float(hit.mean()), 4), "of": int(hit.size)}


def cell(
    data: Criterion,
    seed: list[int],
    *,
    design: str,
    labels: int,
    draws: int,
    floor: float,
    margin: float = MARGIN,
    estimator: Callable[..., Any] = corrected_difference,
) -> dict:
    """Every pair × ``draws`` label draws of one design and label count, read by ``estimator`` (the product's
    `corrected_difference`, or `baseline_estimator`'s): one seed draws the same labels for either."""
    rng = np.random.default_rng(seed)
    cand, ref = (np.repeat(s, draws) for s in pairs(len(data.systems)))
    truth = data.truth[cand, ref]
    found = estimator(*side(data, cand, design, labels, rng, floor), *side(data, ref, design, labels, rng, floor))
    verdict = corrected_verdicts(found, margin)
    target = np.abs(truth + margin) >= margin
    settled = verdict != INCONCLUSIVE
    return {
        "cover_lower": share(found.lower <= truth),
        "cover_upper": share(found.upper >= truth),
        "wrong": share(wrong(verdict, truth, margin)),
        "settled": share(settled),
        "target_settled": share(settled[target]),
        "target_wrong": share(wrong(verdict, truth, margin)[target]),
        "labels_mean": [round(float(x), 2) for x in found.labels.mean(axis=0)],
        "width": round(float(np.mean(found.upper - found.lower)), 3),
    }


def baseline_estimator(commit: str = BASELINE_COMMIT, repo: Path = ROOT) -> Callable[..., Any]:
    """`corrected_difference` as gradebench had it at ``commit``: its ``_stats/ppi.py`` and ``_stats/t.py`` read from
    the repository's history (``git show``) and run as they were, apart from the installed package."""
    package = f"gradebench_at_{commit[:12]}"
    if f"{package}.ppi" not in sys.modules:
        root = types.ModuleType(package)
        root.__path__ = []
        sys.modules[package] = root
        for name in ("t", "ppi"):
            path = f"gradebench/_stats/{name}.py"
            shown = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True)
            if shown.returncode:
                del sys.modules[package]
                raise SystemExit(f"the baseline needs {path} at commit {commit} (git history): {shown.stderr.strip()}")
            module = types.ModuleType(f"{package}.{name}")
            module.__package__ = package
            sys.modules[module.__name__] = module
            exec(compile(shown.stdout, f"{commit[:7]}:{path}", "exec"), module.__dict__)
    return sys.modules[f"{package}.ppi"].corrected_difference


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of HANNA's measurement (shared by this script and `benchmarks/truth.py --only hanna`)."""
    group = parser.add_argument_group("HANNA")
    group.add_argument("--labels", type=int, nargs="+", default=[10, 20, 40], help="HANNA: labels a side")
    group.add_argument("--criteria", nargs="+", default=list(CRITERIA), choices=CRITERIA)
    group.add_argument("--labelling", nargs="+", default=list(DESIGNS[:2]), choices=DESIGNS, help="label designs")
    group.add_argument("--judges", nargs="+", default=list(JUDGES), choices=JUDGES, help="whose ratings are the judge")
    group.add_argument("--floor", type=float, default=FLOOR, help="active labelling's least chance, × the mean")
    group.add_argument(
        "--baseline",
        default=BASELINE_COMMIT,
        help="also read random labels with the corrected verdict of this commit ('none': not; default %(default).7s)",
    )
    group.add_argument("--steady", action="store_true", help="label each story with its three people's mean")


def measure(path: Path, args: argparse.Namespace, margin: float = MARGIN, *, echo: TextIO = sys.stdout) -> dict:
    """Every criterion, label count and design of ``args`` (`add_arguments`, and ``draws`` and ``seed``); a JSON
    line per cell on ``echo`` as it is measured, and everything in one dict."""
    old = None if args.baseline == "none" else baseline_estimator(args.baseline)
    result: dict = {k: getattr(args, k) for k in ("draws", "labels", "floor", "seed", "steady", "judges", "baseline")}
    result["margin"] = margin
    for criterion in args.criteria:
        data = load(path, criterion, args.judges)
        if args.steady:  # every label the three's mean: steadier labels, the same truth
            data = dataclasses.replace(data, people=np.repeat(data.people.mean(axis=-1, keepdims=True), 3, axis=-1))
        truth, alone = data.truth, judge_only(data, margin)
        cand, ref = pairs(len(data.systems))
        target = np.abs(truth[cand, ref] + margin) >= margin
        judged = wrong(alone[cand, ref], truth[cand, ref], margin)
        entry: dict = {
            "pairs": int(cand.size),
            "judge_filled": data.filled,
            "target_pairs": int(target.sum()),
            "judge_only_wrong": share(judged),
            "judge_only_target_wrong": share(judged[target]),
            "judge_only_settled": share(alone[cand, ref] != INCONCLUSIVE),
            "variance_at_best": headroom(data),
        }
        print(criterion, "judge-only", json.dumps(entry), file=echo, flush=True)
        for labels in args.labels:
            for design in args.labelling + ([OLD] if old is not None and "random" in args.labelling else []):
                seed = [args.seed, CRITERIA.index(criterion), labels, DESIGNS.index(design.removeprefix("old "))]
                figures = cell(
                    data,
                    seed,
                    design=design.removeprefix("old "),
                    labels=labels,
                    draws=args.draws,
                    floor=args.floor,
                    margin=margin,
                    estimator=old if design == OLD else corrected_difference,
                )
                entry[f"{design}_{labels}"] = figures
                print(criterion, labels, design, json.dumps(figures), file=echo, flush=True)
        result[criterion] = entry
    return result


def percent(figure: dict) -> str:
    return f"{100 * figure['rate']:.1f}%"


def tables(result: dict) -> str:
    """`measure`'s result as two markdown tables (the judge alone; every cell) and the settle rates on the target
    pairs by label count, every criterion's draws together."""
    criteria = [c for c in CRITERIA if c in result]
    lines = ["| criterion | pairs | target pairs | judge-only wrong | wrong, target | settled | variance at best |"]
    lines.append("|" + "---|" * 7)
    for c in criteria:
        e = result[c]
        best = ", ".join(f"{k.removeprefix('by_')} {v}" for k, v in e["variance_at_best"].items())
        lines.append(
            f"| {c} | {e['pairs']} | {e['target_pairs']} | {e['judge_only_wrong']['rate'] * e['pairs']:.0f} | "
            f"{e['judge_only_target_wrong']['rate'] * e['target_pairs']:.0f} | {percent(e['judge_only_settled'])} | "
            f"{best} |"
        )
    lines += [
        "",
        "| criterion | labels a side | labelling | cover lower / upper | wrong, all pairs | settled, target |",
    ]
    lines[-1] += " wrong, target | width | draws (target) |"
    lines.append("|" + "---|" * 9)
    for c in criteria:
        for key, f in result[c].items():
            if not isinstance(f, dict) or "cover_lower" not in f:
                continue
            design, _, labels = key.rpartition("_")
            lines.append(
                f"| {c} | {labels} | {design} | {f['cover_lower']['rate']:.3f} / {f['cover_upper']['rate']:.3f} | "
                f"{percent(f['wrong'])} | **{percent(f['target_settled'])}** | {percent(f['target_wrong'])} | "
                f"{f['width']:.2f} | {f['wrong']['of']} ({f['target_settled']['of']}) |"
            )
    lines.append("")
    for labels in result["labels"]:
        settled = {}
        for design in (OLD, *DESIGNS):
            cells = [result[c].get(f"{design}_{labels}") for c in criteria]
            if all(cells):
                hits = sum(f["target_settled"]["rate"] * f["target_settled"]["of"] for f in cells)
                settled[design] = hits / sum(f["target_settled"]["of"] for f in cells)
        said = ", ".join(f"{design} {100 * rate:.1f}%" for design, rate in settled.items())
        if settled.get(OLD):
            said += "; " + ", ".join(f"{d} {rate / settled[OLD]:.2f}×" for d, rate in settled.items() if d != OLD)
            said += " the old"
        lines.append(f"settled on the target pairs at {labels} labels a side, every criterion: {said}")
    return "\n".join(lines)


def section(args: argparse.Namespace) -> list:
    """`benchmarks/truth.py --only hanna`: the HANNA file under ``args.data`` measured, its tables printed (each
    cell's JSON on stderr as it goes); no races, so no outcome of truth.py's kind."""
    path = Path(args.data) / "hanna" / "hanna_dev.csv"
    if not path.is_file():
        raise SystemExit(f"no HANNA data under {Path(args.data).resolve()}: expected hanna/hanna_dev.csv; give --data")
    started = time.monotonic()
    result = measure(path, args, args.margin, echo=sys.stderr)
    print(
        f"\nhanna: seed {args.seed}, {args.draws} label draws a pair, margin {args.margin:g} of 10, "
        f"{time.monotonic() - started:.0f} s; judges {' + '.join(args.judges)}"
    )
    print(tables(result), flush=True)
    return []


def near_pairs(path: Path, args: argparse.Namespace, low: float, high: float) -> None:
    """For each pair whose truth lies in [low, high]: how often random labels make each verdict "worse" or leave it
    inconclusive, today's and (``--baseline``) the old, on the same draws (seeded ``[seed, candidate, reference,
    labels]``, ``args.draws`` of them a pair)."""
    old = None if args.baseline == "none" else baseline_estimator(args.baseline)
    for criterion in args.criteria:
        data = load(path, criterion, args.judges)
        for c, r in zip(*pairs(len(data.systems)), strict=True):
            if not low <= data.truth[c, r] <= high:
                continue
            said = []
            for labels in args.labels:
                rng = np.random.default_rng([args.seed, int(c), int(r), labels])
                cand, ref = np.full(args.draws, c), np.full(args.draws, r)
                arrays = [*side(data, cand, "random", labels, rng, args.floor)]
                arrays += side(data, ref, "random", labels, rng, args.floor)
                for name, estimator in (("today", corrected_difference), ("old", old)):
                    if estimator is not None:
                        verdict = corrected_verdicts(estimator(*arrays), MARGIN)
                        said.append(f"{name} {labels}: worse {np.mean(verdict == WORSE):.2f}")
                        said[-1] += f", inconclusive {np.mean(verdict == INCONCLUSIVE):.2f}"
            where = f"{criterion} {data.systems[c]} vs {data.systems[r]} ({data.truth[c, r]:+.2f})"
            print(where, "; ".join(said), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--near", type=float, nargs=2, metavar=("LOW", "HIGH"), help="per pair, truth in [LOW, HIGH]")
    add_arguments(parser)
    args = parser.parse_args()
    if args.near:
        near_pairs(args.data, args, *args.near)
        return
    started = time.perf_counter()
    result = measure(args.data, args)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
