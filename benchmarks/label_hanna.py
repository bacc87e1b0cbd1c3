"""The label-corrected verdict against people's ratings: HANNA's stories, random vs active labelling.

    python benchmarks/label_hanna.py --draws 200 --labels 10 20 40 --seed 0

Data: ``../shared/data/hanna/hanna_dev.csv`` (``--data``; its SOURCE.md): 96 story prompts × 11 story systems, one
story per system per prompt (so systems are paired by prompt), each rated 1–5 by three people and by two LLM judges
(Mistral-7B, Beluga-13B) four times each, on relevance (RE), coherence (CH) and empathy (EM).

- **Scale.** A 1–5 rating r is (r − 1) × 2.5 on the product's 0..10 scale (1 → 0, 3 → 5, 5 → 10), for the judges
  and the people alike. The product's default margin, 1 point of 10 (`gradebench._stats.paired.DEFAULT_MARGIN`), is
  0.4 of a 1–5 point. A judge rating below 1 (the file has 276 of 25,344, down to −1: a rating the judge failed to
  give, averaged in) is left out of the run's mean.
- **Judge scores.** Each story's judge score is the mean of its judge ratings — both judges' four repeats (a panel
  of two, the noise of repeats averaged away); the judge's uncertainty about it (active labelling) is their standard
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
  design (0 random, 1 active) are seeded ``numpy.random.default_rng([seed, c, m, design])``.

Printed per criterion, label count and design: coverage of each one-sided bound (lower ≤ truth, upper ≥ truth) over
every pair and draw, the wrong-verdict rate (``as good`` with truth below −margin, ``worse`` with truth above it), the
settle rate (``as good`` or ``worse``), and the same on the *target* pairs, whose truth lies at least one margin from
the boundary (|truth + margin| ≥ margin) — and the judge-only verdict's wrong rate on the same pairs (the product's
paired bootstrap, `gradebench._stats.paired.non_inferiority`, on the judge scores), and ``variance_at_best``: the
variance the best label chances could reach, as a share of a uniform sample's (`headroom`). ``--steady`` labels each
story with its three people's mean instead (three people's work a label: what steadier labels would settle). Ends
with one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from gradebench._base.vocab import Role
from gradebench._stats.active import FLOOR, ask, judge_uncertainty, label_chances
from gradebench._stats.paired import AS_GOOD, DEFAULT_MARGIN, INCONCLUSIVE, WORSE, non_inferiority
from gradebench._stats.ppi import corrected_difference, corrected_verdicts

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hanna" / "hanna_dev.csv"
CRITERIA = ("RE", "CH", "EM")
DESIGNS = ("random", "active")
MARGIN = DEFAULT_MARGIN


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

    @property
    def truth(self) -> np.ndarray:
        """(S, S): truth[c, r], the people's mean difference, candidate c − reference r."""
        mean = self.people.mean(axis=(1, 2))
        return mean[:, None] - mean[None, :]


def load(path: Path, criterion: str) -> Criterion:
    """One criterion of the HANNA file as arrays (module docstring)."""
    rows = pl.read_csv(path, schema_overrides={"score": pl.Float64}).filter(pl.col("criterion") == criterion)
    systems = sorted(rows["system"].unique().to_list())
    prompts = sorted(rows["prompt"].unique().to_list())
    at = {s: i for i, s in enumerate(systems)}
    judge = np.full((len(systems), len(prompts), 8), np.nan)
    people = np.full((len(systems), len(prompts), 3), np.nan)
    llm = rows.filter((pl.col("kind") == "llm") & (pl.col("score") >= 1.0)).with_columns(ten(pl.col("score")))
    slot = {name: k for k, name in enumerate(sorted(llm["rater"].unique().to_list()))}
    for system, prompt, rater, repeat, score in llm.select("system", "prompt", "rater", "repeat", "score").iter_rows():
        judge[at[system], prompt, slot[rater] * 4 + int(repeat) - 1] = score
    human = rows.filter(pl.col("kind") == "human").with_columns(ten(pl.col("score")))
    for system, prompt, rater, score in human.select("system", "prompt", "rater", "score").iter_rows():
        people[at[system], prompt, int(rater.rsplit("-", 1)[1]) - 1] = score
    if np.isnan(people).any() or np.isnan(judge).all(axis=-1).any():
        raise ValueError(f"{path}: a story of {criterion} lacks a person's rating or every judge rating")
    return Criterion(systems, np.nanmean(judge, axis=-1), judge_uncertainty(judge), people)


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
    else:
        labellable = label_chances(data.spread[system], labels, floor=floor)
        labelled, _ = ask(labellable, rng)
    human = np.where(labelled, said, np.nan)
    return judge[..., None], human[..., None], labellable[..., None]


def judge_only(data: Criterion) -> np.ndarray:
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
        found[c, r] = non_inferiority(runs, data.systems[c], data.systems[r], margin=MARGIN).verdict
    return found


def headroom(data: Criterion) -> dict:
    """How much any choice of runs could gain: Var(θ̂) with the best chances π_s ∝ σ_s (Zrnic & Candès), over a
    uniform sample's, is (E σ)² / E σ², σ_s² the expected squared residual of a random person's label against the
    judge's linear prediction. With σ_s known only through the judge's uncertainty (its quintile's mean of σ²), and
    with the people's own disagreement known (an oracle no judge has)."""
    judge, people = data.judge.ravel(), data.people.reshape(-1, 3)
    mean = people.mean(axis=1)
    slope, intercept = np.polyfit(judge, mean, 1)
    sigma2 = (mean - intercept - slope * judge) ** 2 + people.var(axis=1)  # a random one of three: ± its spread
    found = {"oracle": round(float(np.mean(np.sqrt(sigma2)) ** 2 / np.mean(sigma2)), 3)}
    for name, feature in (("by_spread", data.spread.ravel()), ("by_score", judge)):
        bins = np.digitize(feature, np.quantile(feature, [0.2, 0.4, 0.6, 0.8]))
        binned = np.array([sigma2[bins == b].mean() for b in range(5)])[bins]
        found[name] = round(float(np.mean(np.sqrt(binned)) ** 2 / np.mean(binned)), 3)
    return found


def wrong(verdict: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """A verdict the truth contradicts: as good with the truth below −margin, worse with it above."""
    return ((verdict == AS_GOOD) & (truth < -MARGIN)) | ((verdict == WORSE) & (truth > -MARGIN))


def share(hit: np.ndarray) -> dict:
    return {"rate": round(float(hit.mean()), 4), "of": int(hit.size)}


def cell(data: Criterion, seed: list[int], *, design: str, labels: int, draws: int, floor: float) -> dict:
    """Every pair × ``draws`` label draws of one design and label count."""
    rng = np.random.default_rng(seed)
    cand, ref = (np.repeat(s, draws) for s in pairs(len(data.systems)))
    truth = data.truth[cand, ref]
    found = corrected_difference(
        *side(data, cand, design, labels, rng, floor), *side(data, ref, design, labels, rng, floor)
    )
    verdict = corrected_verdicts(found, MARGIN)
    target = np.abs(truth + MARGIN) >= MARGIN
    settled = verdict != INCONCLUSIVE
    return {
        "cover_lower": share(found.lower <= truth),
        "cover_upper": share(found.upper >= truth),
        "wrong": share(wrong(verdict, truth)),
        "settled": share(settled),
        "target_settled": share(settled[target]),
        "target_wrong": share(wrong(verdict, truth)[target]),
        "labels_mean": [round(float(x), 2) for x in found.labels.mean(axis=0)],
        "width": round(float(np.mean(found.upper - found.lower)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--criteria", nargs="+", default=list(CRITERIA), choices=CRITERIA)
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    parser.add_argument("--floor", type=float, default=FLOOR)
    parser.add_argument("--steady", action="store_true", help="label each story with its three people's mean")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    result: dict = {k: getattr(args, k) for k in ("draws", "labels", "floor", "seed", "steady")} | {"margin": MARGIN}
    for criterion in args.criteria:
        data = load(args.data, criterion)
        if args.steady:  # every label the three's mean: steadier labels, the same truth
            data = dataclasses.replace(data, people=np.repeat(data.people.mean(axis=-1, keepdims=True), 3, axis=-1))
        truth, alone = data.truth, judge_only(data)
        cand, ref = pairs(len(data.systems))
        target = np.abs(truth[cand, ref] + MARGIN) >= MARGIN
        judged = wrong(alone[cand, ref], truth[cand, ref])
        entry: dict = {
            "pairs": int(cand.size),
            "target_pairs": int(target.sum()),
            "judge_only_wrong": share(judged),
            "judge_only_target_wrong": share(judged[target]),
            "judge_only_settled": share(alone[cand, ref] != INCONCLUSIVE),
            "variance_at_best": headroom(data),
        }
        print(criterion, "judge-only", json.dumps(entry), flush=True)
        for labels in args.labels:
            for design in args.designs:
                seed = [args.seed, CRITERIA.index(criterion), labels, DESIGNS.index(design)]
                figures = cell(data, seed, design=design, labels=labels, draws=args.draws, floor=args.floor)
                entry[f"{design}_{labels}"] = figures
                print(criterion, labels, design, json.dumps(figures), flush=True)
        result[criterion] = entry
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
