"""Labels asked by active labelling carry the chance each run was asked with, and the report's label-corrected verdict
weights each label by its inverse: through `report.with_labels` and the labels file, as a user gets them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import gradebench as gb
from gradebench._report.report import BenchmarkReport
from gradebench._verdict.labels import asked_chances
from gradebench.widgets import LabelPanel
from tests.report.test_report import FAST, META, REF, make_run


def swayed(run, gap: float):
    """The run with the judge's scores of the two presentation orders ``gap`` apart."""
    return dataclasses.replace(run, verdict=dataclasses.replace(run.verdict, swap_gap=gap))


def two_entries(inputs: int = 12) -> tuple[BenchmarkReport, dict[str, float], list[str]]:
    """sim/steady and acme/fast, 3 runs an input; the person scores acme/fast's runs the judge scored low 3 points
    lower (a judge lenient on its weak runs), and on acme/fast's first run of each input the judge's two presentation
    orders differed by 3 points. Returns the report, every labellable run's score from the person, and 12 runs of each
    entry to label."""
    rng = np.random.default_rng(5)
    runs = [make_run(REF, f"i{i}", 0, role="reference") for i in range(inputs)]
    runs += [
        make_run(entry, f"i{i}", r, judged=(int(rng.integers(3, 8)), 2))
        for entry in (REF, FAST)
        for i in range(inputs)
        for r in range(3)
    ]
    runs = [swayed(r, 3.0) if r.entry == FAST and r.repeat == 0 and r.role == "candidate" else r for r in runs]
    report = BenchmarkReport(runs, META)
    scores = dict(report.runs.filter(pl.col("role") == "candidate").select("run_id", "score").iter_rows())
    person = {r: max(0.0, s - 3.0) if FAST in r and s < 6 else s for r, s in scores.items()}
    asked = [r for entry in (REF, FAST) for r in sorted(scores) if entry in r][::3]
    return report, person, asked


def labelled(report: BenchmarkReport, person: dict[str, float], asked: list[str], chance: dict[str, float | None]):
    rows = [{"run_id": r, "score": person[r], "chance": chance.get(r)} for r in asked]
    return report.with_labels(gb.HumanLabels(rows)).models.filter(entry=FAST).row(0, named=True)


def test_labels_asked_with_even_chances_give_the_random_samples_verdict_and_uneven_ones_move_it() -> None:
    report, person, asked = two_entries()
    plain = labelled(report, person, asked, {})
    even = labelled(report, person, asked, dict.fromkeys(asked, 12 / 36))  # m / N: what a simple random sample has
    assert plain["verdict_basis"] == even["verdict_basis"] == "label-corrected"
    assert even["mean_diff"] == pytest.approx(plain["mean_diff"], abs=1e-9)
    assert even["lower"] == pytest.approx(plain["lower"], abs=1e-9)
    # asked twice as often where acme/fast scored high: its low runs' labels then weigh twice as much
    scores = dict(report.runs.select("run_id", "score").iter_rows())
    uneven = {r: (0.5 if scores[r] >= 6 else 0.25) for r in asked}
    moved = labelled(report, person, asked, uneven)
    assert moved["verdict_basis"] == "label-corrected"
    assert moved["verdict_reason"].startswith("label-corrected on 12 + 12 labels asked by active labelling, fewer")
    assert plain["verdict_reason"].startswith("label-corrected on 12 + 12 labels, fewer than the 20")
    assert moved["mean_diff"] != pytest.approx(plain["mean_diff"], abs=1e-3)


def test_labels_some_asked_actively_and_some_at_random_get_no_corrected_verdict_and_say_why() -> None:
    report, person, asked = two_entries()
    mixed = dict.fromkeys([r for r in asked if FAST in r][:6], 0.3)  # half of acme/fast's labels with a chance
    row = labelled(report, person, asked, mixed)
    assert row["verdict_basis"] == "judge-only"
    assert "some were asked by active labelling (a chance recorded) and some drawn at random" in row["verdict_reason"]


def test_the_chance_travels_with_the_labels_file_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    labels = gb.HumanLabels([{"run_id": "a", "score": 4, "chance": 0.25}, {"run_id": "b", "score": 6}])
    assert labels.chances == {"a": 0.25}
    again = gb.HumanLabels.read(labels.write(tmp_path / "labels.parquet"))
    assert again == labels and again.chances == {"a": 0.25}
    assert labels.added("c", 5, chance=0.5).chances == {"a": 0.25, "c": 0.5}
    with pytest.raises(ValueError, match="'chance' of run_id 'a' is 0.0: the chance a run was asked with is in"):
        gb.HumanLabels([{"run_id": "a", "score": 4, "chance": 0.0}])


def test_the_panel_asks_in_active_order_records_each_chance_and_says_where_the_verdict_stands(tmp_path: Path) -> None:
    report, person, _ = two_entries()
    path = tmp_path / "labels.parquet"
    panel = LabelPanel(report, path, n=20, seed=1, order="active")
    panel.answer(person[panel.current])
    first = panel.standing()
    assert [line.split(":")[0] for line in first] == [FAST]
    assert "no label-corrected verdict: 1 label on acme/fast and 0 on sim/steady, it needs 10 on each" in first[0]
    assert "gb-label-standing" in panel.progress.value
    while panel.current is not None:
        panel.answer(person[panel.current])
    saved = gb.HumanLabels.read(path)
    assert len(saved) == 20 and set(saved.chances) == set(panel.queue)  # every label says how it was asked
    assert saved.chances == pytest.approx(asked_chances(report.runs, panel.queue))
    gaps = dict(report.runs.select("run_id", "swap_gap").iter_rows())
    unsure = [p for r, p in saved.chances.items() if FAST in r and gaps[r]]
    sure = [p for r, p in saved.chances.items() if FAST in r and not gaps[r]]
    assert unsure and sure and min(unsure) > 2 * max(sure)  # the runs the judge was unsure of were asked more
    assert "label-corrected on 10 + 10 labels asked by active labelling" in panel.standing()[0]
    row = report.with_labels(saved).models.filter(entry=FAST).row(0, named=True)
    assert row["verdict_basis"] == "label-corrected"
