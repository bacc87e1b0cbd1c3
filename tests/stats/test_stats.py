"""gradebench._stats.paired: nested paired bootstrap, non-inferiority verdicts, ratios and the recommendation, by
hand."""

from __future__ import annotations

import itertools
import subprocess
import sys
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from gradebench._records.records import RUNS_SCHEMA
from gradebench._stats.paired import (
    AS_GOOD,
    INCONCLUSIVE,
    RATIOS_SCHEMA,
    VERDICT_SCHEMA,
    WORSE,
    Bootstrap,
    Interval,
    non_inferiority,
    paired_bootstrap,
    ratios,
    verdicts,
)
from gradebench._verdict.recommend import recommend

REF = "sim/steady"
FAIL = "fail"  # a failed run
NULL = "null"  # an ok run whose judging failed


def runs_frame(spec: dict[str, dict[str, list]], *, reference_runs: bool = True) -> pl.DataFrame:
    """A runs frame (full schema) from {entry: {input_id: [score per repeat]}}, plus one reference run per input."""
    rows = []
    inputs = dict.fromkeys(i for per_input in spec.values() for i in per_input)
    if reference_runs:
        rows += [{"input_id": i, "role": "reference", "entry": REF, "repeat": 0, "ok": True} for i in inputs]
    for entry, per_input in spec.items():
        for input_id, scores in per_input.items():
            for repeat, score in enumerate(scores):
                rows.append(
                    {
                        "input_id": input_id,
                        "role": "candidate",
                        "entry": entry,
                        "repeat": repeat,
                        "ok": score != FAIL,
                        "score": None if score in (FAIL, NULL) else score,
                        "cost": 0.01,
                        "latency_s": 1.0,
                    }
                )
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in RUNS_SCHEMA}, schema=RUNS_SCHEMA)


def same(scores: list, n: int = 8) -> dict[str, list]:
    return {f"in{i}": list(scores) for i in range(n)}


# ------------------------------------------------------------------------------------------------ paired_bootstrap


def test_all_equal_scores_give_a_point_interval():
    interval = paired_bootstrap(runs_frame({"a": same([7, 7, 7], 3)}), "a")
    assert interval == Interval(mean=7.0, lo=7.0, hi=7.0, n_inputs=3, n_runs=9, n_dropped=0)


def test_interval_holds_the_mean_is_seeded_and_narrows_with_more_inputs():
    pattern = [2, 5, 7, 9]
    many = runs_frame({"a": {f"in{i}": [pattern[i % 4], pattern[(i + 1) % 4]] for i in range(40)}})
    few = runs_frame({"a": {f"in{i}": [pattern[i % 4], pattern[(i + 1) % 4]] for i in range(4)}})
    first, again, other = (paired_bootstrap(many, "a", bootstrap=Bootstrap(seed=s)) for s in (0, 0, 1))
    assert first.lo is not None and first.hi is not None and first.mean is not None
    assert first.lo < first.mean < first.hi
    assert first.mean == pytest.approx(5.75)
    assert first == again
    assert (other.lo, other.hi) != (first.lo, first.hi)
    narrow, wide = first.hi - first.lo, paired_bootstrap(few, "a").hi - paired_bootstrap(few, "a").lo  # type: ignore[operator]
    assert wide > 1.5 * narrow
    assert (
        paired_bootstrap(many, "a", bootstrap=Bootstrap(level=0.5)).hi < first.hi
    )  # a lower level, a narrower interval


def test_same_interval_in_another_process():
    code = (
        "import sys, polars as pl; from gradebench._stats.paired import Bootstrap, paired_bootstrap;"
        "i = paired_bootstrap(pl.read_parquet(sys.argv[1]), 'a', bootstrap=Bootstrap(seed=3));"
        "print(repr((i.lo, i.hi)))"
    )
    frame = runs_frame({"a": {f"in{i}": [i % 10, (3 * i) % 10] for i in range(12)}})
    here = paired_bootstrap(frame, "a", bootstrap=Bootstrap(seed=3))
    path = __import__("tempfile").mkdtemp() + "/runs.parquet"
    frame.write_parquet(path)
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr((here.lo, here.hi))


def test_nested_repeats():
    per_input = {"in0": 3, "in1": 9, "in2": 6, "in3": 8, "in4": 1}
    # identical within each input: the runs within an input add nothing, so 3 repeats match 1 (same input draws)
    three = paired_bootstrap(runs_frame({"a": {k: [v] * 3 for k, v in per_input.items()}}), "a")
    one = paired_bootstrap(runs_frame({"a": {k: [v] for k, v in per_input.items()}}), "a")
    assert (three.mean, three.lo, three.hi) == (one.mean, one.lo, one.hi) == (5.4, three.lo, three.hi)
    assert three.n_runs == 15 and one.n_runs == 5 and three.lo < 5.4 < three.hi  # type: ignore[operator]
    # every input has the same mean but its runs differ: only the nested resampling of repeats gives width
    noisy = paired_bootstrap(runs_frame({"a": same([4, 10], 6)}), "a")
    assert noisy.mean == 7.0 and noisy.lo < 7.0 < noisy.hi  # type: ignore[operator]


def test_failed_runs_count_and_null_scores_are_dropped():
    frame = runs_frame({"a": {"in0": [8, FAIL], "in1": [6, NULL], "in2": [NULL, NULL]}})
    interval = paired_bootstrap(frame, "a")
    assert (interval.mean, interval.n_inputs, interval.n_runs, interval.n_dropped) == (5.0, 2, 3, 3)  # (4 + 6) / 2
    assert paired_bootstrap(frame, "a", failed_score=2.0).mean == 5.5  # (5 + 6) / 2
    assert paired_bootstrap(frame, "nobody") == Interval(mean=None, lo=None, hi=None, n_inputs=0, n_runs=0)
    single = paired_bootstrap(runs_frame({"a": {"in0": [8]}}), "a")
    assert (single.mean, single.lo, single.hi) == (8.0, None, None)


def test_bad_parameters_raise():
    frame = runs_frame({"a": same([7])})
    with pytest.raises(ValueError, match="level must be in"):
        paired_bootstrap(frame, "a", bootstrap=Bootstrap(level=1.0))
    with pytest.raises(ValueError, match=r"level must be in \(0.5, 1\)"):
        non_inferiority(frame, "a", REF, bootstrap=Bootstrap(level=0.5))
    with pytest.raises(ValueError, match="margin must be >= 0"):
        non_inferiority(frame, "a", REF, margin=-1)
    with pytest.raises(ValueError, match="lacks columns"):
        paired_bootstrap(frame.drop("score"), "a")


# ------------------------------------------------------------------------------------------------ non_inferiority


def test_identical_candidate_is_as_good():
    # every paired difference 0: the pseudo-pair floor (gradebench._stats.adjusted) needs 26 inputs to clear the
    # margin (on 10, no pair lost says little: a loss rate of 31% would draw none in 2.5% of samples)
    scores = {f"in{i}": [3 + i % 7, 9 - i % 4, 5] for i in range(30)}
    result = non_inferiority(runs_frame({REF: scores, "a": scores}), "a", REF)
    assert (result.mean_diff, result.verdict, result.n_inputs, result.n_pairs, result.more_runs) == (
        0.0,
        AS_GOOD,
        30,
        90,
        None,
    )
    assert -1.0 < result.lower <= 0.0 <= result.upper  # type: ignore[operator]
    assert result.p_value < 0.05  # type: ignore[operator]
    assert "within the margin" in result.reason


def test_three_points_worse_everywhere_is_worse():
    ref = {f"in{i}": [8, 9, 7] for i in range(8)}
    cand = {f"in{i}": [5, 6, 4] for i in range(8)}
    result = non_inferiority(runs_frame({REF: ref, "a": cand}), "a", REF)
    assert result.mean_diff == -3.0 and result.verdict == WORSE
    assert result.upper < -1.0 and result.p_value > 0.99  # type: ignore[operator]
    assert result.more_runs is None and "worse by more than the margin" in result.reason


def test_noisy_candidate_on_two_inputs_is_inconclusive_with_more_runs():
    frame = runs_frame({REF: {"in0": [8, 8, 8], "in1": [8, 8, 8]}, "a": {"in0": [10, 3, 9], "in1": [5, 10, 10]}})
    result = non_inferiority(frame, "a", REF)
    assert result.verdict == INCONCLUSIVE and result.mean_diff == pytest.approx(-1 / 6)
    assert result.lower < -1.0 < result.upper  # type: ignore[operator]
    assert isinstance(result.more_runs, int) and result.more_runs > 0
    assert f"about {result.more_runs} more paired runs" in result.reason
    # mean at or below the margin line: more runs would likely show worse, not settle it as good
    below = runs_frame({REF: {"in0": [8, 8], "in1": [8, 8]}, "a": {"in0": [9, 3], "in1": [2, 9]}})
    result = non_inferiority(below, "a", REF)
    assert result.verdict == INCONCLUSIVE and result.mean_diff == -2.25 and result.more_runs is None
    assert "more runs would likely show worse" in result.reason


def test_failed_runs_count_as_failed_score_and_null_scores_are_dropped():
    ref = {f"in{i}": [8, 8] for i in range(8)}
    failing = {f"in{i}": [8, FAIL] for i in range(8)}
    result = non_inferiority(runs_frame({REF: ref, "a": failing}), "a", REF)
    assert result.mean_diff == -4.0 and result.verdict == WORSE and result.n_pairs == 16
    assert non_inferiority(runs_frame({REF: ref, "a": failing}), "a", REF, failed_score=8.0).mean_diff == 0.0
    unjudged = {f"in{i}": [8, NULL] for i in range(8)}
    result = non_inferiority(runs_frame({REF: ref, "a": unjudged}), "a", REF)
    # eight pairs, every one tied: too few to exclude the margin (gradebench._stats.adjusted)
    assert (result.mean_diff, result.n_pairs, result.n_dropped, result.verdict) == (0.0, 8, 8, INCONCLUSIVE)


def test_nothing_to_pair_is_inconclusive_with_a_reason():
    frame = runs_frame({REF: {"in0": [8, 8]}, "a": {"in1": [8, 8]}})
    result = non_inferiority(frame, "a", REF)
    assert result.verdict == INCONCLUSIVE and result.mean_diff is None and result.n_inputs == 0
    assert "no input with usable runs in common" in result.reason
    no_ref_repeats = non_inferiority(runs_frame({"a": same([8])}), "a", REF)
    assert no_ref_repeats.verdict == INCONCLUSIVE and "its reference run carries no score" in no_ref_repeats.reason
    one_each = non_inferiority(runs_frame({REF: {"in0": [8]}, "a": {"in0": [8]}}), "a", REF)
    assert one_each.verdict == INCONCLUSIVE and one_each.mean_diff == 0.0 and one_each.lower is None
    itself = non_inferiority(runs_frame({REF: same([8])}), REF, REF)
    assert itself.verdict is None and "not tested against itself" in itself.reason


def test_p_value_is_smaller_when_the_candidate_is_better():
    ref = {f"in{i}": [7, 8] for i in range(5)}
    worse = {f"in{i}": [5 + i % 3, 8] for i in range(5)}
    better = {f"in{i}": [7 + i % 3, 9] for i in range(5)}
    frame = runs_frame({REF: ref, "worse": worse, "better": better})
    p_worse = non_inferiority(frame, "worse", REF).p_value
    p_better = non_inferiority(frame, "better", REF).p_value
    assert p_better < p_worse  # type: ignore[operator]


def _hand_case() -> pl.DataFrame:
    # the reference entry scores 8 twice on every input; d = [0, -1, 0.5, -0.5]
    return runs_frame({REF: same([8, 8], 4), "a": {"in0": [8, 8], "in1": [7, 7], "in2": [9, 8], "in3": [8, 7]}})


def test_hand_computed_case_matches_the_exact_bootstrap_distribution():
    result = non_inferiority(_hand_case(), "a", REF, min_inputs=4)
    assert result.mean_diff == -0.25 and result.n_inputs == 4 and result.n_pairs == 8
    # Exact nested bootstrap: each of the 4 slots draws an input (1/4 each), then the mean of 2 runs drawn from it:
    # in0 -> 0; in1 -> -1; in2 -> 1, 0.5, 0 w.p. 1/4, 1/2, 1/4; in3 -> 0, -0.5, -1 w.p. 1/4, 1/2, 1/4.
    slot: dict[Fraction, Fraction] = {}
    for values in (
        {0: 1},
        {-1: 1},
        {1: Fraction(1, 4), Fraction(1, 2): Fraction(1, 2), 0: Fraction(1, 4)},
        {0: Fraction(1, 4), Fraction(-1, 2): Fraction(1, 2), -1: Fraction(1, 4)},
    ):
        for v, p in values.items():
            slot[Fraction(v)] = slot.get(Fraction(v), Fraction(0)) + Fraction(p) / 4
    dist: dict[Fraction, Fraction] = {}
    for combo in itertools.product(slot.items(), repeat=4):
        mean = sum(v for v, _ in combo) / 4
        dist[mean] = dist.get(mean, Fraction(0)) + np.prod([p for _, p in combo])
    cdf = list(itertools.accumulate(dist[m] for m in sorted(dist)))
    # the two-sided 95% interval: the 2.5% and 97.5% quantiles
    q025 = sorted(dist)[next(i for i, c in enumerate(cdf) if c >= Fraction(25, 1000))]
    q975 = sorted(dist)[next(i for i, c in enumerate(cdf) if c >= Fraction(975, 1000))]
    assert (q025, q975) == (Fraction(-3, 4), Fraction(3, 8))
    assert float(dist[Fraction(-1)]) == pytest.approx(0.0095367, abs=1e-6)  # P(D* <= -1): nothing lies below -1
    assert (result.lower, result.upper) == (-0.75, 0.375)
    assert result.p_value == pytest.approx(float(dist[Fraction(-1)]), abs=0.004)
    assert result.verdict == AS_GOOD
    for seed in range(5):  # the percentile bound is stable on this grid of eighths
        bound = non_inferiority(_hand_case(), "a", REF, bootstrap=Bootstrap(seed=seed)).lower
        assert bound is not None and -0.875 <= bound <= -0.625


def test_one_run_per_input_is_the_plain_bootstrap_of_the_differences():
    d = np.array([0.0, -2.0, 1.0, -1.0, 2.0, 0.0])
    frame = runs_frame({REF: same([5], 6), "a": {f"in{i}": [int(5 + x)] for i, x in enumerate(d)}})
    result = non_inferiority(frame, "a", REF, bootstrap=Bootstrap(seed=7))
    boot = d[np.random.default_rng(7).integers(0, 6, size=(2000, 6))].mean(axis=1)
    assert result.mean_diff == 0.0
    assert result.lower == pytest.approx(min(np.quantile(boot, 0.025), 0.0))  # the two-sided 95% interval
    assert result.upper == pytest.approx(max(np.quantile(boot, 0.975), 0.0))
    assert result.p_value == pytest.approx((1 + np.count_nonzero(boot <= -1.0)) / 2001)


# --------------------------------------------------------------------------------------------------------- verdicts


def test_verdicts_frame():
    ref = {f"in{i}": [8, 9] for i in range(30)}  # a twin's every pair is tied: 26 inputs or more clear the margin
    frame = runs_frame({"bad": {f"in{i}": [4, 5] for i in range(30)}, REF: ref, "twin": ref})
    table = verdicts(frame, REF)
    assert table.schema == pl.Schema(VERDICT_SCHEMA)
    assert table["entry"].to_list() == ["bad", REF, "twin"]
    assert table["verdict"].to_list() == [WORSE, None, AS_GOOD]
    me = table.row(1, named=True)
    assert (me["mean_diff"], me["n_pairs"], me["paired_mean"], me["margin"]) == (None, None, 8.5, 1.0)
    twin = table.row(2, named=True)
    assert (twin["mean_diff"], twin["n_inputs"], twin["n_pairs"]) == (0.0, 30, 60)
    assert twin["paired_lo"] <= twin["paired_mean"] == 8.5 <= twin["paired_hi"]
    empty = verdicts(runs_frame({}), REF)
    assert empty.height == 0 and empty.schema == pl.Schema(VERDICT_SCHEMA)


# ----------------------------------------------------------------------------------------------- ratios, recommend


def models_frame(rows: list[tuple]) -> pl.DataFrame:
    cols = ["entry", "cost_per_run", "latency_s_mean", "score_mean"]
    return pl.DataFrame(
        [dict(zip(cols, r, strict=True)) for r in rows],
        schema=dict.fromkeys(cols[1:], pl.Float64) | {"entry": pl.String},
    )


def test_ratios_by_hand():
    models = models_frame(
        [("a", 0.002, 1.0, 7.0), (REF, 0.01, 2.0, 8.0), ("zero", 0.02, 4.0, 0.0), ("none", 0.0, None, None)]
    )
    table = ratios(models, REF)
    assert table.schema == pl.Schema(RATIOS_SCHEMA)
    rows = {r["entry"]: r for r in table.iter_rows(named=True)}
    assert rows["a"]["cost_ratio"] == pytest.approx(0.2)
    assert rows["a"]["latency_ratio"] == pytest.approx(0.5)
    assert rows["a"]["cost_per_point"] == pytest.approx(0.002 / 7)
    assert rows["a"]["cost_per_point_ratio"] == pytest.approx((0.002 / 7) / (0.01 / 8))  # 0.22857...
    assert (rows[REF]["cost_ratio"], rows[REF]["cost_per_point"]) == (1.0, 0.00125)
    assert (rows["zero"]["cost_ratio"], rows["zero"]["cost_per_point"], rows["zero"]["cost_per_point_ratio"]) == (
        2.0,
        None,
        None,
    )
    assert (rows["none"]["cost_ratio"], rows["none"]["latency_ratio"]) == (0.0, None)
    assert ratios(models, "missing")["cost_ratio"].null_count() == 4


def with_verdicts(rows: list[tuple]) -> pl.DataFrame:
    cols = ["entry", "cost_per_run", "verdict", "lower", "n_pairs"]
    schema = {
        "entry": pl.String,
        "cost_per_run": pl.Float64,
        "verdict": pl.String,
        "lower": pl.Float64,
        "n_pairs": pl.Int64,
    }
    return pl.DataFrame([dict(zip(cols, r, strict=True)) for r in rows], schema=schema)


def test_recommend_the_cheapest_entry_that_is_as_good():
    frame = with_verdicts(
        [
            ("sim/pricey", 0.02, AS_GOOD, -0.1, 60),
            (REF, 0.01, None, None, None),
            ("sim/swift", 0.0021, AS_GOOD, -0.43, 60),
            ("sim/slim", 0.003, AS_GOOD, -0.2, 60),
            ("sim/cheap", 0.001, WORSE, -2.5, 60),
            ("sim/unsure", 0.0005, INCONCLUSIVE, -1.4, 60),
        ]
    )
    rec = recommend(frame, job="order-agent", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None
    expected = "sim/swift is as good as sim/steady on order-agent (margin 1.0, 60 paired runs, lower bound −0.43)"
    assert rec.sentence == expected + " at 0.21× the cost"
    assert (rec.entry, rec.reference, rec.lower, rec.n_pairs) == ("sim/swift", REF, -0.43, 60)
    assert rec.cost_ratio == pytest.approx(0.21)


def test_recommend_falls_back_to_the_reference_or_nothing():
    frame = with_verdicts(
        [(REF, 0.01, None, None, None), ("sim/pricey", 0.02, AS_GOOD, -0.1, 60), ("sim/cheap", 0.001, WORSE, -3.0, 60)]
    )
    rec = recommend(frame, job="order-agent", reference_entry=REF, margin=1.5, currency="USD")
    assert rec is not None and rec.entry == REF and rec.cost_ratio == 1.0
    assert rec.sentence == "no cheaper entry is as good as sim/steady on order-agent (margin 1.5)"
    assert (
        recommend(
            frame.filter(pl.col("entry") != REF).filter(pl.col("verdict") != AS_GOOD),
            job="j",
            reference_entry=REF,
            margin=1.0,
            currency="USD",
        )
        is None
    )
    # without the reference's cost the sentence gives the cost per run, and a tiny ratio keeps 2 significant digits
    alone = recommend(frame.filter(pl.col("entry") != REF), job="j", reference_entry=REF, margin=0.5, currency="USD")
    assert alone is not None and alone.sentence.endswith("lower bound −0.10) at 0.02 USD per run")
    tiny = with_verdicts([(REF, 1.0, None, None, None), ("a", 0.0012, AS_GOOD, 0.04, 1)])
    rec = recommend(tiny, job="j", reference_entry=REF, margin=1.0, currency=None)
    assert rec is not None
    assert (
        rec.sentence
        == "a is as good as sim/steady on j (margin 1.0, 1 paired run, lower bound 0.04) at 0.0012× the cost"
    )


def test_too_few_inputs_keep_the_verdict_open():
    ref = {f"in{i}": [8, 9] for i in range(5)}
    worse = {f"in{i}": [4, 5] for i in range(5)}
    result = non_inferiority(runs_frame({REF: ref, "a": worse}), "a", REF)
    assert result.verdict == INCONCLUSIVE and result.upper < -1.0  # type: ignore[operator]  # the bounds say worse
    assert result.more_runs == (8 - 5) * 2 and "on 5 inputs only" in result.reason
    assert non_inferiority(runs_frame({REF: ref, "a": worse}), "a", REF, min_inputs=5).verdict == WORSE


def test_unknown_cost_is_never_ranked_cheaper():
    # an entry whose endpoint reported no usage has an unknown cost: never the cheap pick, said plainly
    frame = with_verdicts([(REF, 0.01, None, None, None), ("sim/free?", None, AS_GOOD, -0.2, 60)])
    rec = recommend(frame, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and rec.entry == REF
    assert (
        rec.sentence == "no cheaper entry is as good as sim/steady on j (margin 1.0); as good, cost unknown: sim/free?"
    )
    # the reference's own cost unknown: nothing is ranked against it
    frame = with_verdicts([(REF, None, None, None, None), ("sim/swift", 0.002, AS_GOOD, -0.2, 60)])
    rec = recommend(frame, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and rec.entry == REF and rec.cost_ratio is None
    assert rec.sentence.startswith("cost unknown for sim/steady") and "as good: sim/swift" in rec.sentence
    assert ratios(models_frame([(REF, None, 1.0, 8.0), ("a", 0.002, 1.0, 8.0)]), REF)["cost_ratio"].null_count() == 2


# ------------------------------------------------------------------------------- honest under failure (issue 14)


def test_nothing_to_pair_because_the_judge_gave_no_verdict_blames_the_judge():
    frame = runs_frame({REF: {"in0": [NULL, NULL]}, "a": {"in0": [NULL, 8]}})
    result = non_inferiority(frame, "a", REF)
    assert result.verdict == INCONCLUSIVE and "has no usable candidate runs" not in result.reason
    assert result.reason == f"the judge gave no verdict on any run of {REF} (2 runs): nothing to pair"
    both = non_inferiority(runs_frame({REF: {"in0": [NULL]}, "a": {"in0": [NULL, NULL]}}), "a", REF)
    assert both.reason == f"the judge gave no verdict on any run of a (2 runs) or of {REF} (1 run): nothing to pair"


def test_a_stopped_race_is_tested_only_on_the_inputs_complete_before_the_stop():
    ref = {f"in{i}": [8, 9] for i in range(10)}
    # "a" fails once on in8 and in9; the stop came before its second run there landed
    cand = {**{f"in{i}": [8, 9] for i in range(8)}, "in8": [FAIL], "in9": [FAIL]}
    frame = runs_frame({REF: ref, "a": cand})
    whole = verdicts(frame, REF).filter(pl.col("entry") == "a").row(0, named=True)
    assert whole["n_inputs"] == 10 and "before the stop" not in whole["reason"]
    stopped = verdicts(frame, REF, complete=2).filter(pl.col("entry") == "a").row(0, named=True)
    assert stopped["n_inputs"] == 8 and stopped["n_pairs"] == 16
    assert stopped["reason"].endswith("; on 8 inputs complete before the stop")


def test_recommend_withholds_from_a_race_cut_short_and_never_picks_an_entry_that_never_answered():
    frame = with_verdicts([(REF, 0.01, None, None, None), ("sim/swift", 0.002, AS_GOOD, -0.2, 60)])
    stopped = frame.with_columns(pl.Series("stopped", [None, "cancelled: 8 of 10 runs landed before the stop"]))
    rec = recommend(stopped, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and rec.entry == REF and rec.sentence.startswith("withheld: the race stopped")
    assert "(on sim/swift)" in rec.sentence and "it resumes from the cache" in rec.sentence
    budget = frame.with_columns(pl.Series("stopped", [None, "budget: the next runs would not fit"]))
    rec = recommend(budget, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and "raise the budget" in rec.sentence
    settled = frame.with_columns(pl.Series("stopped", [None, "settled: as good after 24 runs"]))
    rec = recommend(settled, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and rec.entry == "sim/swift"  # a race to a verdict that ended as planned
    silent = frame.with_columns(pl.Series("ok_rate", [1.0, 0.0]))
    rec = recommend(silent, job="j", reference_entry=REF, margin=1.0, currency="USD")
    assert rec is not None and rec.entry == REF


@pytest.mark.parametrize("width", [1, 3, 40])
def test_the_nested_bootstrap_draws_the_same_whatever_its_step(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    # the step bounds memory (`_CHUNK` values at once); the draws, and so every interval, must not depend on it
    from gradebench._stats import paired as paired_module

    values = np.random.default_rng(1).random((25, width))
    counts = np.random.default_rng(2).integers(1, width + 1, size=25)

    def means(chunk: int) -> np.ndarray:
        monkeypatch.setattr(paired_module, "_CHUNK", chunk)
        rng = np.random.default_rng(7)
        idx = rng.integers(0, 25, size=(300, 25))
        return paired_module.resample_means(values, counts, idx, rng)

    assert np.array_equal(means(1 << 20), means(1 << 18)) and np.array_equal(means(1 << 20), means(1))
