"""A person for the simulated fleet, and a judge that errs the way judges do: the sim's known truth for human labels.

`human_score` is what a careful person gives a run: the sim judge's rubric applied to the run as the judge was shown
it, with no noise, no order effect and no verbosity bias (`gradebench.sim._grader.human`). `human_labels` gives a
report's runs those scores as `gradebench.HumanLabels` — the scripted answers a notebook or test stands in for a
person with. `SWAYED` is a judge swayed by verbosity: it lets a long-winded candidate's wrong answer pass 9 times in
10; `WINDY` is a cheap, verbose entry that is wrong more often than not. `swayed_catalog` is the fleet with both added,
`SWAYED` its ceiling: the judge-only verdict calls `WINDY` as good as ``sim/steady``, and the human labels show it is
not (tests/verdict/test_labels.py races it; ``sim/chatty``, verbose and accurate, is over-scored on its rare wrong
answers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from .._base.protocol import content_text
from .._base.vocab import Role
from .._catalog.catalog import Catalog
from .._report.report import BenchmarkReport
from .._verdict.labels import HumanLabels
from ._fleet import SimFleet
from ._grader import human
from ._profiles import CEILING, PICKS, PROFILES, Profile

__all__ = ["SWAYED", "WINDY", "human_labels", "human_score", "swayed_catalog"]

_ORACLE = next(p for p in PROFILES if p.name == CEILING)

SWAYED: Profile = dataclasses.replace(
    _ORACLE,
    name="sim/swayed",
    model="sim-swayed-1",
    verbosity_bias=0.9,
    quirks="a judge swayed by verbosity: a long-winded candidate's wrong answer passes 9 times in 10",
)
"""The ceiling's profile, but a judge swayed by verbosity (`Profile.verbosity_bias` 0.9)."""

WINDY: Profile = Profile(
    name="sim/windy",
    model="sim-windy-1",
    grade="standard",
    price_in=0.12,
    price_out=0.50,
    price_cached_in=0.012,
    accuracy=0.45,
    skip_rate=0.02,
    misread_rate=0.02,
    verbosity=3.0,
    latency_ms=500,
    jitter_ms=150,
    ms_per_token=5,
    failure_rate=0.01,
    judge_noise=0.1,
    quirks="cheap and verbose, wrong on more than half its answers: what a judge swayed by verbosity calls as good",
)
"""A cheap, long-winded entry of the standard grade whose answers are wrong 55% of the time."""


def swayed_catalog(*, latency_scale: float | None = None, seed: int = 0) -> Catalog:
    """The simulated fleet with `WINDY` among the standard entries and `SWAYED` as its ceiling (the judge), the
    built-in picks kept (``sim/steady`` the standard grade's reference)."""
    fleet = SimFleet(latency_scale=latency_scale, seed=seed, profiles=[*PROFILES, WINDY, SWAYED])
    made = fleet.catalog()
    return Catalog(
        made.entries,
        grades=made.grades,
        picks=PICKS,
        ceiling=SWAYED.name,
        source="sim (swayed judge)",
        reference="gradebench.sim:swayed_catalog",
    )


def human_score(report: BenchmarkReport, run_id: str) -> int | None:
    """What a careful person scores a candidate run, 0..10 (module docstring); None for a run never shown to the
    judge (it failed: there is nothing to label). A reference run raises (it is the yardstick)."""
    row = report.runs.filter(pl.col("run_id") == run_id)
    if not row.height:
        raise KeyError(f"no run {run_id!r} in this report")
    if row["role"][0] == Role.REFERENCE:
        raise ValueError(f"run {run_id!r} is a reference run: the yardstick is not scored")
    prompts = report.judge_prompts(run_id)
    if not prompts:
        return None
    users = [m for m in prompts[0] if m.get("role") == "user"]
    verdict = human(content_text(users[-1].get("content")))
    return verdict.accuracy + verdict.work


def human_labels(report: BenchmarkReport, run_ids: Iterable[str], *, labeller: str = "sim person") -> HumanLabels:
    """`human_score` of each of ``run_ids`` as `HumanLabels` (a run never shown to the judge is left out)."""
    scores = {r: s for r in run_ids if (s := human_score(report, r)) is not None}
    return HumanLabels.from_scores(scores, labeller=labeller)
