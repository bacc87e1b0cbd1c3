"""What a report leads with: without labels, what the judge-only verdicts are worth on this job and how many labels a
side would settle them (checked against simulated races); with labels, whether they confirmed the judge; and the
labels of an earlier report of the same job."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import gradebench as gb
from gradebench._report.earlier import earlier_labels, with_earlier_labels
from gradebench._report.present import lead
from gradebench._report.report import BenchmarkReport
from gradebench._stats.label_plan import NO_PLAN, planned_labels
from gradebench._stats.ppi import MIN_LABELS, corrected_difference, corrected_verdicts
from gradebench._verdict.label_agreement import ALL_ENTRIES
from gradebench._verdict.labels import LABELS_FILE
from gradebench._verdict.worth import LABELLED_TITLE, WORTH_TITLE
from gradebench.sim._label_world import draw
from tests.report.test_report import FAST, REF
from tests.verdict.test_labels import labelled_report

from ..scripts import benchmark

bench = benchmark("labels_needed")


def cheaper(report: BenchmarkReport) -> BenchmarkReport:
    """``report`` with acme/fast's calls at a quarter of their cost: cheaper than the reference entry, so the
    recommendation turns on its verdict."""

    def quarter(run: gb.Run) -> gb.Run:
        if run.entry != FAST:
            return run
        calls = [dataclasses.replace(c, cost=None if c.cost is None else c.cost / 4) for c in run.calls]
        return dataclasses.replace(run, calls=calls)

    made = BenchmarkReport([quarter(r) for r in report.to_runs()], report.meta)
    return made.with_labels(report.labels) if report.labels is not None else made


def test_without_labels_the_report_leads_with_what_the_judge_only_verdict_is_worth() -> None:
    labelled = cheaper(labelled_report(n_inputs=16, fast_low=5, labels=20))
    report = BenchmarkReport(labelled.to_runs(), labelled.meta)  # the same race before anyone labelled it
    row = report.models.filter(entry=FAST).row(0, named=True)
    assert row["verdict"] == "as good" and row["verdict_basis"] == "judge-only"
    lines = report.table().splitlines()
    assert lines[1] == WORTH_TITLE  # straight under the header
    block = lines[1 : 1 + len(lead(report))]
    assert "no negative control measured how lenient the judge is on wrong answers" in block[1]
    assert "the judge sim/judge's family is unknown" in block[2]
    assert block[3] == "  no earlier labels of this job were found"
    needed = report.labels_needed
    assert needed is not None and needed >= MIN_LABELS
    asked = f"to confirm or overturn the recommendation, label {FAST} (as good): {needed} of its runs and {needed} of"
    assert asked in block[4] and 'order="active"' in block[4]
    # the number is the plan on the judge's own scores: the same arrays through planned_labels
    runs = report.runs.filter(role="candidate").sort("input_id", "repeat")
    sides: list[np.ndarray] = []
    for entry in (FAST, REF):  # 3 judged runs an input each (acme/fast's failed run on i0 aside, which is not)
        scores = np.stack([runs.filter(entry=entry, input_id=f"i{i}", ok=True)["score"].to_numpy() for i in range(16)])
        sides += [scores[None].astype(float), np.ones((1, *scores.shape), dtype=bool)]
    planned = int(planned_labels(*sides, 1.0)[0])
    assert planned != NO_PLAN and needed == max(planned, MIN_LABELS)
    page = report._repr_html_()  # the notebook's view (and the HTML page's summary) leads with it too
    assert page.index('class="gb-worth"') < page.index('class="gb-models"') and WORTH_TITLE in page


def test_with_labels_that_confirm_the_lead_says_confirmed_and_one_the_labels_move_says_so() -> None:
    confirmed = cheaper(labelled_report(n_inputs=16, fast_low=5, labels=20))
    assert confirmed.models.filter(entry=FAST)["verdict_basis"][0] == "label-corrected"
    lines = confirmed.table().splitlines()
    assert lines[1] == LABELLED_TITLE
    assert lines[2] == f"  {FAST}: confirmed: as good on your labels, as the judge alone said"
    assert confirmed.labels_needed is None  # nothing more to ask
    moved = cheaper(labelled_report(fast_low=5, judge_plus=2.0))  # the judge over-scores acme/fast by 2 points
    said = moved.table().splitlines()[2]
    assert said.startswith(f"  {FAST}: open: ") and said.endswith("(the judge alone: as good)")


def test_an_earlier_reports_labels_are_led_with(tmp_path: Path) -> None:
    earlier = cheaper(labelled_report(n_inputs=16, fast_low=5, labels=20))
    earlier.to_parquet(tmp_path / "out")  # the labels beside it, as a panel writes them
    found = earlier_labels(tmp_path / "out", earlier.meta.job)
    assert found is not None and found.labels == earlier.agreement.filter(entry=ALL_ENTRIES)["labels"][0]
    bare = with_earlier_labels(BenchmarkReport(earlier.to_runs(), earlier.meta), found)
    line = lead(bare)[3]
    assert line.startswith("  earlier labels of this job: the judge agreed ") and f"{found.labels} labels" in line
    assert earlier_labels(tmp_path / "out", "another-job") is None
    assert earlier_labels(tmp_path / "nothing", earlier.meta.job) is None
    gb.HumanLabels.from_scores({"r-of-another-race": 5}).write(tmp_path / "out" / LABELS_FILE)
    broken = earlier_labels(tmp_path / "out", earlier.meta.job)
    assert broken is not None and "could not be read: ValueError" in broken.text()


@pytest.mark.parametrize(
    ("world", "least"),
    [("fair_as_good", 0.9), ("fair_worse", 0.9), ("fair_slightly_worse", 0.9), ("verbose_as_good_rare_bias", 0.75)],
)
def test_the_labels_asked_for_settle_the_verdict_in_simulated_races(world: str, least: float) -> None:
    """Fast slice of benchmarks/labels_needed.py (its figures are in docs/labels.md): of 400 races of 16 inputs × 4
    runs where the plan gives a number, labelling that many runs a side settles the corrected verdict in at least
    ``least`` of them (the plan asks for power 0.8 and is on the safe side of the variance), never on the wrong side."""
    index, scenario = next((w, s) for w, s in enumerate(bench.WORLDS) if s.name == world)
    row = bench.check(scenario, np.random.default_rng([0, index, 0]), races=400, inputs=16, runs=4)
    assert row["planned"] > 0.5 and row["settled"] >= least and row["wrong"] <= 0.01


def test_on_the_margin_line_the_plan_asks_for_no_labels_and_a_judge_that_is_wrong_misleads_it() -> None:
    """What the plan cannot do, measured: a candidate on the margin line gets a number in few races (labels cannot
    settle it); a judge that lets 90% of a worse candidate's wrong answers pass plans from its own wrong Δ, and the
    labels asked for settle that verdict in a minority of races — but the corrected verdict calls it as good rarely."""
    margin = next(s for s in bench.WORLDS if s.name == "fair_at_margin")
    assert bench.check(margin, np.random.default_rng([1, 0]), races=400, inputs=16, runs=4)["planned"] < 0.05
    fooled = next(s for s in bench.WORLDS if s.name == "verbose_worse")
    drawn = draw(fooled, np.random.default_rng([1, 1]), races=400, inputs=16, runs=4)
    every = np.ones(drawn.judge_c.shape, dtype=bool)
    plan = planned_labels(drawn.judge_c, every, drawn.judge_r, every, 1.0)
    told = np.maximum(plan, MIN_LABELS)
    verdicts = corrected_verdicts(corrected_difference(*drawn.arrays(told)), 1.0)
    assert (plan != NO_PLAN).mean() > 0.9 and (verdicts != "inconclusive").mean() < 0.4
    assert (verdicts == "as good").mean() < 0.05


def test_a_panel_on_some_entries_asks_only_about_their_runs_each_as_the_whole_panel_would(tmp_path: Path) -> None:
    from gradebench.widgets import LabelPanel

    labelled = labelled_report(n_inputs=16, fast_low=5, labels=20)
    report = BenchmarkReport(labelled.to_runs(), labelled.meta)
    every = LabelPanel(report, tmp_path / "all.parquet", n=60, order="active")
    some = LabelPanel(report, tmp_path / "some.parquet", n=30, order="active", entries=[FAST])
    entry_of = dict(report.runs.select("run_id", "entry").iter_rows())
    assert {entry_of[r] for r in some.queue} == {FAST}
    assert some.queue == [r for r in every.queue if entry_of[r] == FAST]  # the same sample of acme/fast's runs
    with pytest.raises(ValueError, match="did not race"):
        LabelPanel(report, tmp_path / "x.parquet", entries=["acme/never"])
