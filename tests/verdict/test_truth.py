"""The verdict against real truth: `benchmarks/truth.py` on a vendored sample of RouteLLM's recorded answers.

`tests/data/routellm` holds three MMLU domains whole and GSM8K's first 40 problems (Apache-2.0, the licence beside
them), so this runs where the full `../shared/data` is absent. The truth is recomputed here from the CSV files with
the standard library, the races are real (`gb.replay` entries through the openai client, the recorded judge), and a
race over a whole domain must find exactly the truth.
"""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gradebench._stats.t import t_quantile

from ..scripts import benchmark

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "tests" / "data"
CANDIDATE, REFERENCE = "mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview"


truth = benchmark("truth")


def csv_truth(path: Path) -> float:
    """Mixtral's accuracy minus GPT-4's over every row, ×10, read with the csv module alone."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return 10 * sum((r[CANDIDATE] == "True") - (r[REFERENCE] == "True") for r in rows) / len(rows)


def test_the_truth_is_the_full_paired_difference_of_each_domain() -> None:
    tasks = {t.name: t for t in truth.mmlu_tasks(SAMPLE)}
    assert sorted(tasks) == ["abstract_algebra", "college_chemistry", "us_foreign_policy"]
    for name, task in tasks.items():
        expected = csv_truth(SAMPLE / "routellm" / "mmlu" / f"mmlu_{name}.csv")
        assert task.truth == pytest.approx(expected) and task.gold_truth == pytest.approx(expected)
        assert len(task.inputs) == 100
    assert tasks["abstract_algebra"].truth == pytest.approx(-1.4)  # truly worse than the margin of 1
    assert tasks["college_chemistry"].truth == pytest.approx(0.1)  # truly as good
    gsm8k = truth.gsm8k_task(SAMPLE)
    assert gsm8k.truth == pytest.approx(csv_truth(SAMPLE / "routellm" / "gsm8k_responses.csv"))


def test_the_final_number_is_read_as_gsm8k_answers_are_written() -> None:
    assert truth.final_number("so 9 * $2 = $18.\n#### 18") == 18
    assert truth.final_number("#### $20.00") == 20  # the source's own column marks this one wrong
    assert truth.final_number("he is 54 miles away.\n#### -54\n\n") == -54
    assert truth.final_number("The total is 1,250 dollars, then 3 more hours.") == 3  # no ####: the last number
    assert truth.final_number("#### 0.5\n\nLater: 7 ducks") == 0.5  # the last ####'s number, not what follows it
    assert truth.final_number("I cannot tell.") is None
    assert truth.gold_number("#### 1,000", "", input={"answer": "1000"}) == 1.0


def test_the_gold_scorer_mostly_agrees_with_the_source_column() -> None:
    agreement = truth.scorer_agreement(truth.gsm8k_task(SAMPLE))
    for model in (CANDIDATE, REFERENCE):
        same, _, total = agreement[model].partition(" of ")
        assert total == "40" and int(same) >= 36, agreement


def test_a_race_over_the_whole_domain_finds_the_truth(tmp_path: Path) -> None:
    task = next(t for t in truth.mmlu_tasks(SAMPLE, ["abstract_algebra"]))
    got = truth.race(task, task.inputs, "fixed", cache=tmp_path)
    assert got["runs"] == 100
    assert got["mean_diff"] == pytest.approx(task.truth)  # every recorded answer replayed, judged and paired
    # The interval treats the 100 questions as a sample of a larger population, so even the whole domain, 0.4
    # past the margin, is not called "worse"; it is never called "as good", and the interval holds the truth.
    assert got["verdict"] == "inconclusive" and got["lower"] < task.truth < got["upper"] < 0
    assert got["gold_verdict"] == got["verdict"]  # the code scorer reads the same correctness: its test agrees


def test_sixteen_questions_without_a_loss_are_no_as_good_on_a_truly_worse_domain(tmp_path: Path) -> None:
    # abstract_algebra is 0.4 past the margin; these 16 of its questions hold no question Mixtral lost: every
    # paired difference 0, or one +10. The bootstrap alone said [0, 0] and [0, 1.88]: "as good" on a worse domain.
    task = next(t for t in truth.mmlu_tasks(SAMPLE, ["abstract_algebra"]))
    with (SAMPLE / "routellm" / "mmlu" / "mmlu_abstract_algebra.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    tied = [task.inputs[i] for i, r in enumerate(rows) if r[CANDIDATE] == r[REFERENCE]][:16]
    won = next(task.inputs[i] for i, r in enumerate(rows) if r[CANDIDATE] == "True" and r[REFERENCE] == "False")
    for inputs, lowest in ((tied, -1.54), ([*tied[:15], won], -1.24)):
        got = truth.race(task, inputs, "fixed", cache=tmp_path)
        assert got["runs"] == 16 and got["verdict"] == "inconclusive", got
        assert got["lower"] == pytest.approx(lowest, abs=0.005) and got["lower"] < -1.0 < got["upper"]
        assert got["gold_verdict"] == "inconclusive"  # the gold check reads the same correctness with the same test


def test_error_rates_of_a_few_draws_are_counted_against_the_truth(tmp_path: Path) -> None:
    tasks = truth.mmlu_tasks(SAMPLE)
    outcomes = truth.measure(tasks, [16], ["fixed", "gsd"], draws=3, seed=0, cache=tmp_path)
    assert [(o.task, o.design) for o in outcomes] == [(t.name, d) for d in ("fixed", "gsd") for t in tasks]
    for design in ("fixed", "gsd"):
        r = truth.rates([o for o in outcomes if o.design == design])
        assert r["false_as_good"] == (0, 1)  # abstract_algebra (−1.4): the one truly worse domain
        assert r["false_worse"] == (0, 2)  # the two within the margin
        assert r["coverage"][1] == 3 and r["coverage"][0] >= 2  # a 95% interval
    assert all(o.runs <= 16 for o in outcomes)  # the sequential race's max_runs = n: never a question twice
    again = truth.sample(tasks[0], 16, 0, 0)
    assert again == truth.sample(tasks[0], 16, 0, 0) and len({i["id"] for i in again}) == 16  # seeded, no repeats


def test_a_truth_on_the_line_counts_in_both_denominators() -> None:
    def outcome(value: float, verdict: str, lower: float, upper: float):
        return truth.Outcome("t", "d", 16, "fixed", 0, value, verdict, lower, upper, None, 16, value, None, None, None)

    r = truth.rates(
        [
            outcome(-1.0, "as good", -0.9, 0.5),  # on the line: a false "as good", and a truly as good draw
            outcome(-2.0, "worse", -3.0, -1.5),
            outcome(0.0, "worse", -3.0, -1.5),  # a false "worse" whose interval misses the truth
            outcome(0.5, "inconclusive", -1.5, 1.0),
            outcome(-0.5, "as good", 0.0, 0.0),  # the models alike on every question drawn: a miss at 0
        ]
    )
    assert r["false_as_good"] == (1, 2) and r["false_worse"] == (1, 4)
    assert r["coverage"] == (2, 5) and r["misses_at_zero"] == 1
    assert r["settled"] == (4, 5) and r["settled_right"] == (2, 5)
    assert truth.clopper_pearson(0, 10)[1] == pytest.approx(0.3085, abs=1e-4)
    assert truth.clopper_pearson(5, 10) == pytest.approx((0.1871, 0.8129), abs=1e-4)


def test_the_command_says_where_the_data_is_missing(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no RouteLLM data under .*give the folder with --data"):
        truth.main(["--data", str(tmp_path), "--only", "mmlu"])


FULL = truth.DEFAULT_DATA / "routellm"
needs_full_data = pytest.mark.skipif(not FULL.is_dir(), reason=f"the full RouteLLM data is not at {FULL}")


@needs_full_data
def test_the_full_data_holds_the_truths_the_docs_state() -> None:
    gsm8k = truth.gsm8k_task(truth.DEFAULT_DATA)
    assert round(gsm8k.truth, 3) == -2.183 and round(gsm8k.gold_truth, 3) == -2.494
    assert truth.scorer_agreement(gsm8k) == {CANDIDATE: "1308 of 1319", REFERENCE: "1277 of 1319"}
    tasks = truth.mmlu_tasks(truth.DEFAULT_DATA)
    assert len(tasks) == 57 and sum(len(t.inputs) for t in tasks) == 14042
    assert sum(t.truth <= -1 for t in tasks) == 28


@pytest.mark.slow
@needs_full_data
def test_on_mmlu_false_as_good_stays_under_five_percent(tmp_path: Path) -> None:
    outcomes = truth.measure(truth.mmlu_tasks(truth.DEFAULT_DATA), [32], ["fixed"], draws=228, seed=0, cache=tmp_path)
    r = truth.rates(outcomes)
    assert r["false_as_good"] == (0, 112)  # docs/truth.md: seed 0, the first 228 of its 570 draws at 32 questions
    assert r["coverage"] == (219, 228)  # 96.1% (92.5% before the pseudo-pair floor, gradebench._stats.adjusted)


# ------------------------------------------------------------------------------------------------------- HANNA

HANNA = truth.DEFAULT_DATA if (truth.DEFAULT_DATA / "hanna" / "hanna_dev.csv").is_file() else SAMPLE
"""The full HANNA file beside the checkout when it is there, else the vendored sample (tests/data/hanna)."""
BASELINE = "7127536344cd95dd85da5858ecc100a8c7ba3522"
"""The label-corrected verdict as it was when HANNA asked for fewer labels (classic PPI)."""


def has_baseline() -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", BASELINE], capture_output=True).returncode == 0


def test_the_hanna_section_runs_alone_and_prints_its_tables(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "hanna").symlink_to(HANNA / "hanna", target_is_directory=True)  # no routellm/ beside it
    argv = ["--data", str(tmp_path), "--only", "hanna", "--draws", "4", "--labels", "20", "--criteria", "RE"]
    assert truth.main([*argv, "--baseline", "none"]) == []  # label draws, not races: no race outcomes
    out = capsys.readouterr()
    assert "hanna: seed 0, 4 label draws a pair, margin 1 of 10" in out.out
    assert "| RE | 20 | random |" in out.out and "| RE | 20 | active |" in out.out
    assert "settled on the target pairs at 20 labels a side, every criterion: random " in out.out
    assert 'RE 20 random {"cover_lower"' in out.err  # each cell's figures as it is measured
    with pytest.raises(SystemExit, match=r"no HANNA data under .*expected hanna/hanna_dev.csv"):
        truth.main(["--data", str(tmp_path / "nowhere"), "--only", "hanna"])


def test_the_judge_is_the_mean_of_the_judges_named() -> None:
    path, hanna = HANNA / "hanna" / "hanna_dev.csv", truth.hanna()
    both = hanna.load(path, "CH")
    alone = {name: hanna.load(path, "CH", [name]) for name in hanna.JUDGES}
    assert both.truth == pytest.approx(alone["Mistral-7B"].truth)  # the people's truth whoever judges
    # each judge rated each story four times; a story whose repeats all count is the mean of the two judges' means
    counted = np.isclose(both.judge, (alone["Beluga-13B"].judge + alone["Mistral-7B"].judge) / 2)
    assert counted.mean() > 0.95 and not np.allclose(alone["Beluga-13B"].judge, alone["Mistral-7B"].judge)
    assert alone["Beluga-13B"].filled == 0 and both.filled == 0
    assert alone["Mistral-7B"].filled <= 4  # stories Mistral-7B never rated: both judges' ratings instead
    with pytest.raises(ValueError, match="no judge named"):
        hanna.load(path, "CH", ["GPT-4"])
    best = hanna.headroom(both)
    assert set(best) == {"oracle", "by_spread", "by_score", "by_model"} and all(0 < v <= 1 for v in best.values())
    fitted = hanna.fitted_variance(both)  # the labels' variance as spread and score predict it: chances follow it
    assert fitted.shape == both.judge.shape and np.all(fitted > 0) and np.ptp(fitted) > 0
    found = hanna.cell(both, [0, 1, 20, 2], design="fitted", labels=20, draws=4, floor=0.6)
    assert found["labels_mean"] == pytest.approx([20, 20], abs=0.5) and found["wrong"]["rate"] <= 0.05


@pytest.mark.skipif(not has_baseline(), reason="the baseline commit is not in this clone's history")
def test_the_baseline_is_classic_ppi_read_on_the_same_label_draws() -> None:
    hanna = truth.hanna()
    assert hanna.BASELINE_COMMIT == BASELINE
    data = hanna.load(HANNA / "hanna" / "hanna_dev.csv", "RE")
    old = hanna.baseline_estimator()
    cand, ref = (np.repeat(s, 8) for s in hanna.pairs(len(data.systems)))

    def draw() -> list[np.ndarray]:
        rng = np.random.default_rng([0, 0, 20, 0])  # the seed cell() gives RE's random labels at 20 a side
        return [*hanna.side(data, cand, "random", 20, rng, 0.6), *hanna.side(data, ref, "random", 20, rng, 0.6)]

    arrays = draw()
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, draw(), strict=True))  # the same draws
    then, now = old(*arrays), hanna.corrected_difference(*arrays)
    classic = hanna.corrected_difference(*arrays, judge_weight=1.0)
    assert then.estimate == pytest.approx(classic.estimate, abs=1e-12)  # the judge's weight was 1 on both sides
    assert not np.allclose(then.estimate, now.estimate)  # the tuned weight moves it
    q = t_quantile(0.95, data.judge.shape[1] - 1)  # its t on inputs − 1, where today's counts the labels
    assert np.all(then.estimate - then.lower >= q * then.se - 1e-12) and np.all(now.df == 19)
    for estimator in (old, hanna.corrected_difference):
        figures = hanna.cell(data, [0, 0, 20, 0], design="random", labels=20, draws=8, floor=0.6, estimator=estimator)
        assert figures["cover_lower"]["rate"] >= 0.85 and figures["wrong"]["rate"] <= 0.05
