"""Human labels: `HumanLabels` (validation, the file and its atomic write), the seeded stratified draw, the judge's
agreement (κ, ρ, bias, the sentence) measured by simulation, `report.with_labels` in every view, the `LabelPanel`,
and one race on the simulated fleet with a judge swayed by verbosity, end to end."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import gradebench as gb
from gradebench._report.present import lead
from gradebench._report.report import BenchmarkReport
from gradebench._stats.kappa import weighted_kappa
from gradebench._stats.ppi import FEWEST_LABELS, MIN_LABELS
from gradebench._verdict import labels as label_rules
from gradebench._verdict.label_agreement import (
    AGREEMENT_SCHEMA,
    ALL_ENTRIES,
    MIN_AGREEMENT,
    agreement,
    agreement_word,
    spearman,
)
from gradebench._verdict.labels import LABELS_FILE, LABELS_SCHEMA, draw_runs
from gradebench._verdict.worth import WORTH_TITLE
from gradebench.jobs import OrderAgent, load_inputs
from gradebench.widgets import LabelPanel
from tests.report.test_report import FAST, META, REF, build_runs, make_run

from ..sizes import Size, sized

# --------------------------------------------------------------------------------------------------------- labels


def test_labels_from_a_frame_a_mapping_and_pass_fail() -> None:
    df = pl.DataFrame({"run_id": ["a", "b", "c"], "score": [7.0, 10.0, 0.5], "labeller": ["ann", None, "bo"]})
    labels = gb.HumanLabels(df)
    assert labels.frame.schema == LABELS_SCHEMA and labels.scores == {"a": 7.0, "b": 10.0, "c": 0.5}
    said = gb.HumanLabels.from_scores({"a": "pass", "b": "FAIL", "d": True, "e": False})
    assert said.scores == {"a": 10.0, "b": 0.0, "d": 10.0, "e": 0.0}
    assert said.frame["passed"].to_list() == [True, False, True, False]
    passed = gb.HumanLabels(pl.DataFrame({"run_id": ["a", "b"], "passed": [True, False]}))
    assert passed.scores == {"a": label_rules.PASS_SCORE, "b": label_rules.FAIL_SCORE}
    spreadsheet = gb.HumanLabels(pl.DataFrame({"run_id": ["a", "b"], "score": ["7", " 9.5 "]}))
    assert spreadsheet.scores == {"a": 7.0, "b": 9.5}
    assert gb.HumanLabels.from_scores({"a": np.int64(3), "b": np.float64(4.5)}).scores == {"a": 3.0, "b": 4.5}
    assert len(gb.HumanLabels()) == 0 and gb.HumanLabels().frame.schema == LABELS_SCHEMA


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"run_id": ["a", "b"], "score": [3, 11]}, "'score' of run_id 'b' is 11: a label is a number from 0 to 10"),
        ({"run_id": ["a"], "score": [-0.5]}, "'score' of run_id 'a' is -0.5"),
        ({"run_id": ["a", "b"], "score": [3, None]}, "'score' of run_id 'b' is None"),
        ({"run_id": ["a"], "score": [float("nan")]}, "'score' of run_id 'a' is nan"),
        ({"run_id": ["a"], "score": ["maybe"]}, "'score' of run_id 'a' is 'maybe'"),
        ({"run_id": ["a", "a", "b"], "score": [3, 4, 5]}, "run_id 'a' labelled more than once"),
        ({"run_id": ["a", None], "score": [3, 4]}, "'run_id' is empty in row 1"),
        ({"run_id": ["a"], "score": [3], "note": ["x"]}, "unknown columns \\['note'\\]"),
        ({"run_id": ["a"]}, "need a 'run_id' column and a 'score' \\(or 'passed'\\) column"),
        ({"run_id": ["a"], "passed": [None]}, "'passed' is empty for run_id 'a'"),
        ({"run_id": ["a"], "score": [3.0], "passed": [True]}, "run_id 'a' has 'passed' True but 'score' 3"),
        ({"run_id": ["a"], "score": [3], "labelled_at": ["yesterday"]}, "'labelled_at' must be a datetime"),
    ],
)
def test_a_bad_label_is_refused_naming_the_field_and_the_run(frame: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gb.HumanLabels(pl.DataFrame(frame, strict=False), source="sheet.xlsx")


MIXED = r"labels mix two scales: run_id {} labelled pass/fail \({}\) and run_id {} scored 0 to 10 \({}\)"


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (lambda: gb.HumanLabels.from_scores({"a": "pass", "b": 7, "c": "fail"}), MIXED.format("'a', 'c'", 2, "'b'", 1)),
        (
            lambda: gb.HumanLabels(pl.DataFrame({"run_id": ["a", "b", "c"], "score": ["7", " pass ", "3"]})),
            MIXED.format("'b'", 1, "'a', 'c'", 2),
        ),
        (lambda: gb.HumanLabels.from_scores({"a": 3, "b": 4}).added("c", True), MIXED.format("'c'", 1, "'a', 'b'", 2)),
        (lambda: gb.HumanLabels.from_scores({"a": "pass"}).added("b", 10), MIXED.format("'a'", 1, "'b'", 1)),
        (
            lambda: gb.HumanLabels(
                pl.DataFrame({"run_id": ["a", "b"], "score": [10.0, 10.0], "passed": [True, None]})
            ),  # a file written before labels kept to one scale
            MIXED.format("'a'", 1, "'b'", 1),
        ),
    ],
)
def test_labels_mixing_pass_fail_with_scores_are_refused_naming_the_runs_on_each_scale(labels, message) -> None:
    with pytest.raises(ValueError, match=message):
        labels()


def test_a_panel_asking_pass_fail_refuses_to_add_to_a_file_of_scores(tmp_path: Path) -> None:
    report = BenchmarkReport(build_runs(), META)
    path = tmp_path / LABELS_FILE
    LabelPanel(report, path, n=4, seed=2).answer(5)
    first = gb.HumanLabels.read(path)
    with pytest.raises(ValueError, match="labels mix two scales"):
        LabelPanel(report, path, n=4, seed=2, scale="pass/fail").answer("pass")
    assert gb.HumanLabels.read(path) == first  # nothing written


def test_relabelling_a_run_keeps_the_latest_answer() -> None:
    at = datetime(2026, 11, 30, 9, tzinfo=UTC)
    labels = gb.HumanLabels.from_scores({"a": 3, "b": 4}).added("a", 8, labeller="ann", at=at)
    assert labels.scores == {"b": 4.0, "a": 8.0}
    assert labels.frame.filter(run_id="a").row(0, named=True) == {
        "run_id": "a",
        "score": 8.0,
        "passed": None,
        "labeller": "ann",
        "labelled_at": at,
        "chance": None,
    }
    with pytest.raises(ValueError, match="'score' of run_id 'c' is 12"):
        labels.added("c", 12)


def test_labels_round_trip_a_file_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out" / LABELS_FILE
    labels = gb.HumanLabels.from_scores({"a": 3, "b": 10}).added("c", 6.5, labeller="ann")
    assert labels.write(path) == path
    again = gb.HumanLabels.read(path)
    assert again == labels and again.frame.schema == LABELS_SCHEMA
    assert os.listdir(path.parent) == [LABELS_FILE]  # no temporary file left behind

    def broken(self, file, *args, **kwargs):  # a crash mid-write: half a file, then an error
        Path(file).write_bytes(b"PAR1 half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        labels.added("d", 1).write(path)
    monkeypatch.undo()
    assert gb.HumanLabels.read(path) == labels  # the last whole file is still there
    assert os.listdir(path.parent) == [LABELS_FILE]
    with pytest.raises(FileNotFoundError, match="no labels file there"):
        gb.HumanLabels.read(tmp_path / "nowhere.parquet")


def test_labels_that_cannot_belong_to_the_report_are_refused_by_name() -> None:
    report = BenchmarkReport(build_runs(), META)
    with pytest.raises(ValueError, match="run_id 'elsewhere' not in this report \\(1 of 2 labels\\)"):
        report.with_labels({"c-sim/steady-i0-0": 5, "elsewhere": 5})
    with pytest.raises(ValueError, match="run_id 'r-sim/steady-i0-0' is a reference run"):
        report.with_labels({"r-sim/steady-i0-0": 5})


# ----------------------------------------------------------------------------------------------------------- draw


def race_runs(entries: int = 3, inputs: int = 8, repeats: int = 3) -> pl.DataFrame:
    runs = [make_run(REF, f"i{i}", 0, role="reference") for i in range(inputs)]
    names = [REF, *(f"acme/e{k}" for k in range(1, entries))]
    runs += [make_run(e, f"i{i}", r, judged=(5, 2)) for e in names for i in range(inputs) for r in range(repeats)]
    runs.append(make_run("acme/e1", "i0", 9, ok=False, error="CallError: 500", judged=None))
    runs.append(make_run("acme/e1", "i1", 9, judged=(None, None), judge_error="no valid verdict"))
    return BenchmarkReport(runs, META).runs


def test_the_draw_is_seeded_stratified_and_extends_without_redrawing() -> None:
    runs = race_runs()
    drawn = draw_runs(runs, 20, seed=3)
    assert drawn == draw_runs(runs, 20, seed=3) and drawn != draw_runs(runs, 20, seed=4)
    entries = dict(runs.select("run_id", "entry").iter_rows())
    counts = pl.Series([entries[r] for r in drawn]).value_counts()["count"].to_list()
    assert sorted(counts) in ([6, 7, 7], [6, 6, 8]) or max(counts) - min(counts) <= 1
    assert max(counts) - min(counts) <= 1
    assert draw_runs(runs, 35, seed=3)[:20] == drawn  # more labels later: the same sample, extended
    pool = runs.filter(label_rules.labellable())["run_id"].to_list()
    assert set(draw_runs(runs, 10_000, seed=3)) == set(pool)  # every labellable run, and nothing else
    assert "c-acme/e1-i0-9" not in pool and "c-acme/e1-i1-9" not in pool  # failed, unjudged
    assert not any(r.startswith("r-") for r in pool)  # never a reference run
    with pytest.raises(ValueError, match="n must be an integer >= 1, got 0"):
        draw_runs(runs, 0)


def test_the_order_of_the_draw_says_nothing_about_the_entry() -> None:
    """Each round takes one run of every entry in a fresh seeded order: over many seeds, every entry comes first in
    a round about as often (seeds 0..299, 3 entries: each within 0.25–0.42 of the rounds)."""
    runs = race_runs()
    entries = dict(runs.select("run_id", "entry").iter_rows())
    firsts = [entries[draw_runs(runs, 3 * 8, seed=s)[3 * k]] for s in range(300) for k in range(8)]
    shares = pl.Series(firsts).value_counts(normalize=True)["proportion"].to_list()
    assert len(shares) == 3 and all(0.25 <= p <= 0.42 for p in shares)


# ------------------------------------------------------------------------------------------------------ agreement


def kappa_by_hand(a: list[int], b: list[int]) -> float:
    """Quadratic-weighted κ written out as the textbook does, for checking the vectorised one."""
    n, cats = len(a), range(11)
    observed = {(i, j): sum(1 for x, y in zip(a, b, strict=True) if (x, y) == (i, j)) / n for i in cats for j in cats}
    pa = {i: sum(1 for x in a if x == i) / n for i in cats}
    pb = {j: sum(1 for y in b if y == j) / n for j in cats}
    w = {(i, j): ((i - j) / 10) ** 2 for i in cats for j in cats}
    return 1 - sum(w[c] * observed[c] for c in w) / sum(w[(i, j)] * pa[i] * pb[j] for i, j in w)


def test_kappa_and_spearman_match_their_definitions() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        a = rng.integers(0, 11, 25)
        b = np.clip(a + rng.integers(-3, 4, 25), 0, 10)
        assert float(weighted_kappa(a, b)[0]) == pytest.approx(kappa_by_hand(list(a), list(b)))
    assert float(weighted_kappa([3, 7, 10], [3, 7, 10])[0]) == 1.0
    assert np.isnan(weighted_kappa([5, 5, 5], [5, 5, 5])[0])  # nobody varies: undefined
    assert float(weighted_kappa([9.5, 2.5], [10, 3])[0]) == pytest.approx(98 / 99)  # a half counts: 1 − 0.25/24.75
    assert float(spearman([1, 2, 3, 4], [10, 20, 30, 40])[0]) == pytest.approx(1.0)
    assert float(spearman([1, 2, 2, 3], [3, 2, 2, 1])[0]) == pytest.approx(-1.0)  # ties share their mean rank
    assert float(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])[0]) == pytest.approx(0.8)  # 1 − 6·4/(5·24)
    assert np.isnan(spearman([1, 2, 3], [4, 4, 4])[0])


@sized(60, 300)
def test_the_agreement_intervals_cover_the_population_values(size: Size) -> None:
    """A judge that over-scores by a known amount now and then: over 300 samples of 40 labels (seed 7), the 95%
    intervals of the bias (a percentile bootstrap) and of κ each cover the population value in at least 90% of them
    (measured 0.95 and 0.97; κ's percentile bootstrap, used before, 0.95 here)."""
    rng = np.random.default_rng(7)
    support = np.arange(11)
    human_p = np.array([0, 0, 0, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2, 0.2, 0.2])
    shift_p = {0: 0.6, 1: 0.25, 3: 0.15}  # judge − human, before clipping
    joint = np.zeros((11, 11))
    for h, ph in zip(support, human_p, strict=True):
        for s, ps in shift_p.items():
            joint[min(h + s, 10), h] += ph * ps
    weights = ((support[:, None] - support[None, :]) / 10) ** 2
    kappa_true = 1 - (weights * joint).sum() / (weights * np.outer(joint.sum(1), joint.sum(0))).sum()
    bias_true = sum(joint[j, h] * (j - h) for j in support for h in support)
    cells = [(j, h) for j in support for h in support]
    flat = joint.ravel()
    hits = {"bias": 0, "kappa": 0}
    for _ in range(size.n):
        pick = rng.choice(len(cells), size=40, p=flat / flat.sum())
        judge, human = np.array([cells[i][0] for i in pick]), np.array([cells[i][1] for i in pick])
        found = agreement(judge, human, seed=int(rng.integers(1 << 30)))
        hits["bias"] += found.bias_lo <= bias_true <= found.bias_hi
        hits["kappa"] += found.kappa_lo is not None and found.kappa_lo <= kappa_true <= found.kappa_hi
    assert hits["bias"] / size.n >= size.at_least(0.90) and hits["kappa"] / size.n >= size.at_least(0.90), hits


@pytest.mark.parametrize(
    ("kappa", "word"),
    [(0.95, "very well"), (0.81, "very well"), (0.8, "well"), (0.61, "well"), (0.5, "moderately"),
     (0.3, "fairly"), (0.1, "slightly"), (0.0, "slightly"), (-0.2, "no better than chance")],
)  # fmt: skip
def test_the_words_follow_landis_and_koch(kappa: float, word: str) -> None:
    assert agreement_word(kappa) == word


# ------------------------------------------------------------------------------------------------------ a report


def labelled_report(
    n_inputs: int = 12, *, judge_plus: float = 0.0, labels: int = 12, fast_low: int = 4, **meta: object
) -> BenchmarkReport:
    """sim/steady (the reference entry) and acme/fast, 3 runs an input (acme/fast's accuracy from ``fast_low`` to
    7); the person gives every run the judge's score, less ``judge_plus`` on acme/fast's (a judge that over-scores
    it). ``meta``: changes to the meta (a race stopped early; ``truncated``: acme/fast cut off on every run)."""
    rng = np.random.default_rng(8)
    truncated = meta.pop("truncated", False)
    runs = [make_run(REF, f"i{i}", 0, role="reference") for i in range(n_inputs)]
    for entry in (REF, FAST):
        for i in range(n_inputs):
            for r in range(3):
                accuracy = int(rng.integers(5, 8)) if entry == REF else int(rng.integers(fast_low, 8))
                finish = "length" if truncated and entry == FAST else "stop"
                runs.append(make_run(entry, f"i{i}", r, judged=(accuracy, int(rng.integers(1, 4))), finish=finish))
    runs.append(make_run(FAST, "i0", 5, ok=False, error="CallError: 500", judged=None))
    if meta.get("stopped"):  # the race stopped before acme/fast's last run on the last input landed
        runs = [r for r in runs if r.run_id != f"c-{FAST}-i{n_inputs - 1}-2"]
    report = BenchmarkReport(runs, {**META, **meta})
    frame = report.runs
    drawn = draw_runs(frame, 2 * labels, seed=1) + ["c-acme/fast-i0-5"]  # and one label on a failed run
    scores = dict(frame.select("run_id", "score").iter_rows())
    human = {r: max(0.0, (scores[r] or 0) - (judge_plus if FAST in r else 0.0)) for r in drawn}
    return report.with_labels(human)


def test_a_report_without_labels_says_nothing_of_them() -> None:
    report = BenchmarkReport(build_runs(), META)
    assert report.labels is None and report.agreement.height == 0 and report.agreement.schema == AGREEMENT_SCHEMA
    said = lead(report)  # it leads with what the judge-only verdicts are worth, and the labels that would settle them
    lines = report.table().splitlines()
    top = lines.index(WORTH_TITLE)  # under the header and the judge's headlines, above the models table
    assert (
        said[0] == WORTH_TITLE and lines[top : top + len(said)] == said and lines[top + len(said)].startswith("  entry")
    )
    rest = report.table().replace("\n".join(said), "")
    assert "labels" not in rest and "judge-only" not in rest
    assert "gb-agreement" not in report._repr_html_()
    assert report.models["verdict_basis"].to_list() == [None, "judge-only"]


def test_with_labels_measures_the_judge_and_corrects_the_verdict() -> None:
    fair, biased = labelled_report(), labelled_report(judge_plus=2.0)
    for report in (fair, biased):
        assert report.agreement.schema == AGREEMENT_SCHEMA
        assert report.agreement["entry"].to_list() == [REF, FAST, ALL_ENTRIES]
        fast = report.agreement.filter(entry=FAST).row(0, named=True)
        assert fast["labels"] == 12 and fast["left_out"] == 1  # the failed run's label is left out, and counted
        row = report.models.filter(entry=FAST).row(0, named=True)
        assert row["verdict_basis"] == "label-corrected" and row["p_value"] is None and row["more_runs"] is None
        assert row["verdict_reason"].startswith("label-corrected on 12 + 12 labels")
    fair_fast = fair.agreement.filter(entry=FAST).row(0, named=True)
    assert fair_fast["kappa"] == 1.0 and fair_fast["bias"] == 0.0
    # 12 labels without a disagreement do not prove κ is 1: the interval allows for disagreement they have not shown
    assert fair_fast["sentence"].startswith("on acme/fast: the judge agrees with you very well (κ 1.00 [0.")
    assert fair_fast["sentence"].endswith("–1.00], 12 labels)") and fair_fast["kappa_lo"] < 0.9
    biased_fast = biased.agreement.filter(entry=FAST).row(0, named=True)
    assert biased_fast["relative_bias"] == pytest.approx(biased_fast["bias"]) and biased_fast["bias"] > 1.5
    assert "the judge over-scores acme/fast by" in biased_fast["sentence"]
    assert (
        "against sim/steady" in biased_fast["sentence"]
        and "don't trust its judge-only verdict" in biased_fast["sentence"]
    )
    # the correction moves the difference by the bias the labels measured; the judge-only one stays beside it
    judge_only = biased.agreement.filter(entry=FAST)["judge_mean_diff"][0]
    corrected = biased.models.filter(entry=FAST)["mean_diff"][0]
    assert judge_only == pytest.approx(fair.agreement.filter(entry=FAST)["judge_mean_diff"][0])
    assert corrected == pytest.approx(judge_only - biased_fast["bias"], abs=0.25)
    overall = biased.agreement.filter(entry=ALL_ENTRIES).row(0, named=True)
    assert overall["labels"] == 24 and "1 labels on failed or unjudged runs left out" in overall["sentence"]


def test_too_few_labels_leave_the_verdict_judge_only_and_say_so() -> None:
    report = labelled_report(labels=FEWEST_LABELS - 2)
    row = report.models.filter(entry=FAST).row(0, named=True)
    assert row["verdict_basis"] == "judge-only"
    assert f"no label-corrected verdict: {FEWEST_LABELS - 2} labels on acme/fast" in row["verdict_reason"]
    fast = report.agreement.filter(entry=FAST).row(0, named=True)
    few = FEWEST_LABELS - 2
    assert fast["sentence"] == f"on acme/fast: too few labels to say ({few} labels, {MIN_AGREEMENT} needed)"
    assert fast["agreement"] is None and fast["correction"].startswith("no label-corrected verdict")
    table = report.table()
    assert f"judge-only (no label-corrected verdict: {FEWEST_LABELS - 2} labels on acme/fast" in table


def test_a_stopped_race_is_corrected_on_its_complete_inputs_and_a_cut_off_entry_is_never_as_good() -> None:
    stopped = labelled_report(stopped="cancelled")
    row = stopped.models.filter(entry=FAST).row(0, named=True)
    assert row["verdict_basis"] == "label-corrected" and row["n_inputs"] == 11  # the input still in flight is out
    cut = labelled_report(fast_low=5, truncated=True)
    assert cut.agreement.filter(entry=FAST)["judge_verdict"][0] == "inconclusive"  # held open judge-only
    row = cut.models.filter(entry=FAST).row(0, named=True)
    assert row["verdict_basis"] == "label-corrected" and row["verdict"] == "inconclusive" and row["verdict_held"]
    assert "truncated on" in row["verdict_reason"] and "never as good" in row["verdict_reason"]
    assert row["lower"] > -1.0  # its bounds alone would say as good


def test_every_view_says_which_verdicts_are_label_corrected(tmp_path: Path) -> None:
    report = labelled_report(judge_plus=2.0)
    table = report.table()
    assert "the judge against your labels" in table and "  all entries  the judge agrees with you" in table
    line = next(x for x in table.splitlines() if x.startswith("  acme/fast ") and "paired runs" in x)
    short = f"fewer than the {MIN_LABELS} a side the simulation supports: label {MIN_LABELS - 12} more runs a side"
    assert f"label-corrected on 12 + 12 labels, {short} before acting (the judge alone:" in line
    html = report._repr_html_()
    assert "gb-agreement" in html and "don&#x27;t trust its judge-only verdict" in html
    page = report.to_html(tmp_path / "report.html").read_text()
    assert "the judge against your labels" in page and "label-corrected on 12 + 12 labels" in page
    pick = report.recommend()
    assert pick is not None and ("label-corrected" in pick.sentence or pick.entry == REF)


def test_the_recommendation_says_its_verdict_is_label_corrected() -> None:
    from gradebench._verdict.recommend import recommend

    models = pl.DataFrame(
        {
            "entry": [REF, "acme/cheap", "acme/cheaper"],
            "cost_per_run": [1.0, 0.5, 0.2],
            "verdict": [None, "as good", "inconclusive"],
            "verdict_basis": [None, "label-corrected", "label-corrected"],
            "lower": [None, -0.4, -1.6],
            "n_pairs": [None, 48, 48],
            "n_inputs": [None, 12, 12],
            "more_runs": [None, None, None],
            "more_labels": [None, None, 30],
        }
    )
    pick = recommend(models, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert pick is not None and "(margin 1.0, 48 paired runs, label-corrected, lower bound −0.40)" in pick.sentence
    none_good = models.with_columns(pl.lit("inconclusive").alias("verdict"))
    pick = recommend(none_good, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert pick is not None and "about 30 more labels would likely settle the nearest" in pick.sentence
    unsettleable = none_good.with_columns(pl.lit(None, dtype=pl.Int64).alias("more_labels"))
    pick = recommend(unsettleable, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert pick is not None and "even labelling every run would likely not settle them" in pick.sentence


def test_labels_travel_with_the_report(tmp_path: Path) -> None:
    report = labelled_report()
    again = BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "race"))
    assert (tmp_path / "race" / LABELS_FILE).is_file()
    assert again.labels == report.labels and again.models.equals(report.models)
    assert report.with_margin(1.5).labels == report.labels
    assert report.with_noise([], k=3).labels == report.labels
    gb.HumanLabels.from_scores({"other-race": 4}).write(tmp_path / "race" / LABELS_FILE)
    with pytest.raises(ValueError, match=f"race/{LABELS_FILE}: run_id 'other-race' not in this report"):
        BenchmarkReport.read_parquet(tmp_path / "race")  # a stale labels file is named, not applied
    (tmp_path / "race" / LABELS_FILE).unlink()
    assert BenchmarkReport.read_parquet(tmp_path / "race").labels is None


def test_the_models_tab_shows_the_basis_and_the_agreement() -> None:
    from gradebench.widgets._views import Views

    views = Views()
    views.show(labelled_report(judge_plus=2.0), lambda what, exc: (_ for _ in ()).throw(exc))
    assert "verdict_<wbr>basis" in views.models_table.value and "<td>label-corrected</td>" in views.models_table.value
    assert "gb-agreement" in views.models_table.value


# ---------------------------------------------------------------------------------------------------- the panel


def test_the_panel_hides_the_judge_and_the_entry_until_answered(tmp_path: Path) -> None:
    report = BenchmarkReport(build_runs(), META)
    path = tmp_path / LABELS_FILE
    panel = LabelPanel(report, path, n=4, seed=2)
    assert "gb-label-panel" in panel._dom_classes
    assert [b.description for b in panel.buttons.values()] == [str(i) for i in range(11)]
    assert all("gb-label-button" in b._dom_classes for b in panel.buttons.values())
    assert "gb-label-7" in panel.buttons[7]._dom_classes and panel.buttons[7].tooltip == "score 7 of 10"
    first = panel.current
    assert first in panel.queue and len(panel.queue) == 4
    row = report.runs.filter(run_id=first).row(0, named=True)
    shown = panel.candidate_view.value + panel.reference_view.value + panel.title.value + panel.revealed.value
    for secret in (row["entry"], row["model"], "because", "sim/judge", "verdict"):
        assert secret not in shown, secret  # entry, model, the judge's reason and entry: all hidden
    assert "the run to label" in shown and "the reference run" in shown
    panel.answer(6)
    assert gb.HumanLabels.read(path).scores == {first: 6.0}  # written at once
    assert panel.current != first and row["entry"] in panel.revealed.value and "the judge gave" in panel.revealed.value
    panel.buttons[9].click()  # the button does what answer() does
    assert len(gb.HumanLabels.read(path)) == 2


def test_a_panel_opened_again_carries_on_and_a_bad_answer_saves_nothing(tmp_path: Path) -> None:
    report = BenchmarkReport(build_runs(), META)
    path = tmp_path / LABELS_FILE
    panel = LabelPanel(report, path, n=4, seed=2)
    panel.answer(5)
    again = LabelPanel(report, path, n=4, seed=2)
    assert again.labels == panel.labels and again.current == panel.current and again.answered == 1
    with pytest.raises(ValueError, match="asks a score from 0 to 10, got 'pass'"):
        again.answer("pass")
    with pytest.raises(ValueError, match="'score' of run_id .* is 11"):
        again.answer(11)
    again.buttons[3].disabled = False
    assert len(gb.HumanLabels.read(path)) == 1
    for _ in range(3):
        again.answer(4)
    assert again.current is None and all(b.disabled for b in again.buttons.values())
    with pytest.raises(RuntimeError, match="every drawn run is labelled \\(4\\): extend"):
        again.answer(4)
    assert len(again.extend(2)) == 6 and again.current is not None
    assert again.labelled_report().labels == again.labels


def test_a_click_that_cannot_save_says_so_in_the_panel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = BenchmarkReport(build_runs(), META)
    panel = LabelPanel(report, tmp_path / LABELS_FILE, n=3, seed=0)
    first = panel.current
    monkeypatch.setattr(gb.HumanLabels, "write", lambda self, path: (_ for _ in ()).throw(OSError("read-only")))
    panel.buttons[8].click()
    assert "not saved: OSError: read-only" in panel.status.value and panel.current == first
    assert not (tmp_path / LABELS_FILE).exists()


def test_a_pass_fail_panel_and_a_labels_file_of_another_race(tmp_path: Path) -> None:
    report = BenchmarkReport(build_runs(), META)
    panel = LabelPanel(report, tmp_path / LABELS_FILE, n=2, scale="pass/fail", labeller="ann")
    assert list(panel.buttons) == ["pass", "fail"] and "gb-label-pass" in panel.buttons["pass"]._dom_classes
    panel.answer("pass")
    panel.buttons["fail"].click()
    assert sorted(panel.labels.scores.values()) == [0.0, 10.0] and set(panel.labels.frame["labeller"]) == {"ann"}
    with pytest.raises(ValueError, match="asks pass/fail"):
        LabelPanel(report, tmp_path / "other.parquet", scale="pass/fail").answer(1)
    gb.HumanLabels.from_scores({"someone-else": 3}).write(tmp_path / "stale.parquet")
    with pytest.raises(ValueError, match="run_id 'someone-else' not in this report"):
        LabelPanel(report, tmp_path / "stale.parquet")
    with pytest.raises(ValueError, match="scale must be one of"):
        LabelPanel(report, tmp_path / "x.parquet", scale="stars")


# ------------------------------------------------------------------------------------------------------- the sim


def test_a_swayed_judge_lets_a_long_winded_wrong_answer_pass_and_the_sim_person_does_not() -> None:
    from gradebench.sim._grader import human, judge, long_winded, parse_transcript

    ref = '{"kind": "answer", "output": {"decision": "deny", "reason": "late"}}'
    cand = '{"kind": "answer", "output": {"decision": "refund", "reason": "' + "because " * 20 + '"}}'
    prompt = (
        f'<transcript label="K" role="reference">\n{ref}\n</transcript>\n'
        f'<transcript label="Q" role="candidate">\n{cand}\n</transcript>'
    )
    assert long_winded(parse_transcript(ref), parse_transcript(cand))
    swayed = [judge(prompt, random.Random(s), verbosity_bias=0.9) for s in range(200)]
    fooled = sum(v.accuracy == 7 for v in swayed) / 200
    assert 0.8 <= fooled <= 0.97  # 0.9 asked
    assert all(judge(prompt, random.Random(s)).accuracy < 7 for s in range(50))  # a fair judge never is
    assert human(prompt).accuracy < 7
    assert all(p.verbosity_bias == 0 for p in gb.sim.PROFILES) and gb.sim.SWAYED.verbosity_bias == 0.9


async def test_a_race_under_a_swayed_judge_the_labels_correct_end_to_end(tmp_path: Path) -> None:
    """The issue's demonstration on the fleet itself: sim/windy (cheap, verbose, wrong more often than not) raced
    against sim/steady under sim/swayed (lets 9 in 10 long-winded wrong answers pass), 16 inputs × 4 runs. The
    judge-only verdict calls windy as good by the judge alone, unconfirmed, and does not recommend it; 16 labels a side
    from the sim's careful person, given through the panel, make its verdict not as good and warn off the judge on
    windy.
    Labelling every run shows the truth: windy is more than a point worse on the person's scale."""
    catalog = gb.sim.swayed_catalog(latency_scale=0)
    bench = gb.Benchmark(
        OrderAgent, runs=4, catalog=catalog, grade="standard", candidates=["sim/steady", "sim/windy"], progress=False
    )
    bench.set_inputs(load_inputs("orders")[:16])
    await bench.run()
    report = bench.report()
    assert report.meta.judge_entry == "sim/swayed"
    windy = report.models.filter(entry="sim/windy").row(0, named=True)
    assert windy["verdict"] == "as good" and windy["verdict_basis"] == "judge-only"  # the naive verdict fails
    pick = report.recommend()  # as good by the judge alone, which the controls cannot confirm: not recommended
    assert pick is not None and pick.entry == "sim/steady" and pick.sentence.startswith("not a finding: sim/windy")

    panel = LabelPanel(report, tmp_path / LABELS_FILE, n=32, seed=0)
    while (run_id := panel.current) is not None:  # scripted answers stand in for a person
        score = gb.sim.human_score(report, run_id)
        assert score is not None
        panel.answer(score)
    labelled = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path)).with_labels(panel.labels)
    fixed = labelled.models.filter(entry="sim/windy").row(0, named=True)
    assert fixed["verdict_basis"] == "label-corrected" and fixed["verdict"] != "as good"
    assert fixed["lower"] < -1.0 and fixed["mean_diff"] < windy["mean_diff"] - 0.5
    sentence = labelled.agreement.filter(entry="sim/windy")["sentence"][0]
    assert "over-scores sim/windy" in sentence and "don't trust its judge-only verdict" in sentence
    line = next(x for x in labelled.table().splitlines() if x.startswith("  sim/windy ") and "paired runs" in x)
    short = f"fewer than the {MIN_LABELS} a side the simulation supports: label {MIN_LABELS - 16} more runs a side"
    assert f"label-corrected on 16 + 16 labels, {short} before acting (the judge alone: as good" in line
    if fixed["verdict"] == "inconclusive":  # what would settle it is said on its line
        settle = labelled.agreement.filter(entry="sim/windy")["settle"][0]
        assert settle and settle in line
        steady = labelled.agreement.filter(entry="sim/steady").row(0, named=True)
    assert steady["agreement"] in ("well", "very well")
    again = labelled.recommend()
    assert again is not None and again.entry == "sim/steady"

    everyone = gb.sim.human_labels(report, report.runs.filter(role="candidate")["run_id"].to_list())
    truth = report.with_labels(everyone).models.filter(entry="sim/windy")["mean_diff"][0]
    assert truth < -1.0  # worse than the margin on the person's scale


def test_kappa_of_a_side_that_never_varies_is_0_and_undefined_only_when_neither_does() -> None:
    """A constant side against a varying one: the squared disagreement is then exactly chance's, so κ is 0 — a judge
    that gives every run one score cannot tell runs apart. Only when neither side varies is κ 0 / 0, undefined."""
    assert weighted_kappa(np.array([10, 9, 10]), np.array([10, 10, 10]))[0] == 0.0
    assert weighted_kappa(np.array([7, 7, 7, 7]), np.array([0, 10, 3, 9]))[0] == 0.0
    assert np.isnan(weighted_kappa(np.array([7, 7, 7]), np.array([7, 7, 7]))[0])
    assert weighted_kappa(np.array([10, 9, 3]), np.array([10, 8, 2]))[0] > 0.9
