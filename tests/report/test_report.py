"""BenchmarkReport: frames and schemas, means and intervals, diagnostics, table, parquet round trip."""

from __future__ import annotations

import json
from dataclasses import replace

import polars as pl
import pytest

from gradebench._records.codec import pack
from gradebench._records.meta import ReportMeta
from gradebench._records.records import CALLS_SCHEMA, RUNS_SCHEMA, Call, JudgeScore, Run
from gradebench._report.diagnostics import DIAGNOSTICS_SCHEMA
from gradebench._report.models import MODELS_SCHEMA, EntrySummary
from gradebench._report.report import BenchmarkReport

REF, FAST, JUDGE = "sim/steady", "acme/fast", "sim/judge"
COST = {REF: 0.001, FAST: 0.002}
META = {
    "benchmark_id": "b1",
    "job": "refund-desk",
    "grade": "standard",
    "reference_entry": REF,
    "judge_entry": JUDGE,
    "judge_params": {"temperature": 0},
    "rubric": "refund only after the lookup",
    "gradebench_version": "0.1.0",
    "skipped": {"acme/nokey": "ACME_KEY is not set"},
    "salt": "s0",
    "runs_per_entry": 3,
}


def make_call(run_id, seq, role, entry, *, hit=False, finish="stop", tools=0, error=None, cost=None) -> Call:
    tool_results = [
        {"id": f"t{i}", "name": "lookup_order", "arguments": {"order": i}, "result": {"status": "paid"}}
        for i in range(tools)
    ]
    return Call.from_bodies(
        run_id=run_id,
        seq=seq,
        role=role,
        entry=entry,
        request={"model": entry, "messages": [{"role": "user", "content": "refund é?"}], "seq": seq},
        response=None if error else {"id": f"gen-{run_id}-{seq}", "choices": [{"finish_reason": finish}]},
        tool_results=tool_results,
        input_tokens=0 if error else 100,
        output_tokens=0 if error else 20,
        latency_s=0.5,
        cost=0.0 if error else (COST.get(entry, 0.01) if cost is None else cost),
        cache_hit=hit,
        generation_id=None if error else f"gen-{run_id}-{seq}",
        finish_reason=None if error else finish,
        error=error,
    )


def verdict(run_id, accuracy, work, *, path="schema", error=None, attempts=1) -> JudgeScore:
    calls = [make_call(run_id, 0, "judge", JUDGE, finish="stop") for _ in range(attempts)]
    return JudgeScore(
        accuracy=accuracy,
        work=work,
        reason="because",
        judge_entry=JUDGE,
        path=path,
        params={"temperature": 0},
        attempts=attempts,
        error=error,
        calls=calls,
    )


def make_run(
    entry,
    input_id,
    repeat,
    *,
    role="candidate",
    ok=True,
    output="default",
    n_calls=2,
    hit=False,
    finish="stop",
    error=None,
    judged=(7, 3),
    path="schema",
    judge_error=None,
    scorer=None,
) -> Run:
    run_id = f"{role[0]}-{entry}-{input_id}-{repeat}"
    if error:
        calls = [make_call(run_id, 0, role, entry, error=error)]
    else:
        calls = [make_call(run_id, i, role, entry, hit=hit, finish="tool_calls", tools=1) for i in range(n_calls - 1)]
        calls.append(make_call(run_id, n_calls - 1, role, entry, hit=hit, finish=finish))
    v = None
    if role == "candidate" and judged is not None:
        v = verdict(run_id, *judged, path=path, error=judge_error, attempts=3 if judge_error else 1)
    return Run(
        benchmark_id="b1",
        job="refund-desk",
        input_id=input_id,
        run_id=run_id,
        role=role,
        entry=entry,
        model=entry.split("/")[1] + "-1",
        grade="standard",
        simulated=entry.startswith("sim/"),
        repeat=repeat,
        currency="USD",
        ok=ok,
        error=error,
        output=None
        if error
        else ({"decision": f"refund-{entry}-{input_id}-{repeat}"} if output == "default" else output),
        calls=calls,
        wall_s=1.0,
        verdict=v,
        scorer=scorer,
    )


def build_runs() -> list[Run]:
    same = {"decision": "refund"}
    return [
        make_run(REF, "i0", 0, role="reference"),
        make_run(REF, "i1", 0, role="reference"),
        # sim/steady: identical outputs on i0 (collapsed salting), a judge fallback, a cache-hit run, a 3-call run
        make_run(REF, "i0", 0, output=same, judged=(7, 3), scorer=1.0),
        make_run(REF, "i0", 1, output=same, judged=(6, 2), path="fallback", scorer=1.0),
        make_run(REF, "i0", 2, output=same, judged=(7, 2), scorer=0.0),
        make_run(REF, "i1", 0, hit=True, judged=(5, 3), scorer=1.0),
        make_run(REF, "i1", 1, judged=(7, 3)),
        make_run(REF, "i1", 2, n_calls=3, judged=(6, 1)),
        # acme/fast: a truncated run, a judge error, a zero score, an empty output, a failure
        make_run(FAST, "i0", 0, finish="length", judged=(4, 1)),
        make_run(FAST, "i0", 1, judged=(None, None), judge_error="no valid verdict after 3 attempts"),
        make_run(FAST, "i0", 2, judged=(0, 0)),
        make_run(FAST, "i1", 0, output="", judged=(0, 0)),
        make_run(FAST, "i1", 1, judged=(6, 2)),
        make_run(FAST, "i1", 2, ok=False, error="CallError: acme/fast: 500 upstream", judged=None),
    ]


@pytest.fixture
def runs() -> list[Run]:
    return build_runs()


@pytest.fixture
def report(runs) -> BenchmarkReport:
    return BenchmarkReport(runs, META)


def clean_report() -> BenchmarkReport:
    return BenchmarkReport(
        [make_run(REF, "i0", 0, role="reference"), make_run(FAST, "i0", 0), make_run(FAST, "i0", 1, judged=(6, 3))],
        META,
    )


# ------------------------------------------------------------------------------------------------------------ schemas


def test_schemas(report):
    assert report.runs.schema == pl.Schema(RUNS_SCHEMA)
    assert report.calls.schema == pl.Schema(CALLS_SCHEMA)
    assert report.models.schema == pl.Schema(MODELS_SCHEMA)
    assert report.diagnostics().schema == pl.Schema(DIAGNOSTICS_SCHEMA)
    assert (
        report.runs.columns
        == (
            "benchmark_id job input_id run_id role entry model grade simulated repeat ok error endpoint_error calls "
            "tool_calls input_tokens output_tokens cached_input_tokens reasoning_tokens latency_s wall_s wall_now_s "
            "cost cost_source price_table_cost spent_now currency cached finish_reason truncated refused output score "
            "accuracy work reason judge_entry judge_path judge_schema judge_error judge_attempts judge_cost swap_gap "
            "scorer scorer_error tool_missing tool_extra tool_arg_mismatch tool_diff"
        ).split()
    )


def test_empty_report_has_every_column():
    empty = BenchmarkReport([], {})
    for frame, schema in [(empty.runs, RUNS_SCHEMA), (empty.calls, CALLS_SCHEMA), (empty.models, MODELS_SCHEMA)]:
        assert frame.height == 0
        assert frame.schema == pl.Schema(schema)
    assert empty.diagnostics().schema == pl.Schema(DIAGNOSTICS_SCHEMA)
    assert empty.reference is None and empty.output is None
    assert "no candidate runs" in empty.table()


def test_a_stored_report_missing_a_column_is_refused_by_name(report, tmp_path):
    out = report.to_parquet(tmp_path / "race")
    report.runs.drop("score").write_parquet(out / "runs.parquet")
    with pytest.raises(ValueError, match=r"runs.parquet lacks columns \['score'\]"):
        BenchmarkReport.read_parquet(out)


# -------------------------------------------------------------------------------------------------------------- cells


def row(report, run_id):
    return report.runs.filter(pl.col("run_id") == run_id).row(0, named=True)


def test_run_cells(report):
    assert report.runs.height == 14
    ref = row(report, "r-sim/steady-i0-0")
    assert ref["role"] == "reference" and ref["calls"] == 2 and ref["tool_calls"] == 1
    assert all(ref[c] is None for c in ["score", "accuracy", "work", "reason", "judge_entry", "judge_path"])
    assert ref["judge_attempts"] is None and ref["judge_cost"] is None

    three = row(report, "c-sim/steady-i1-2")
    assert three["calls"] == 3 and three["tool_calls"] == 2  # judge calls are not counted
    assert three["input_tokens"] == 300 and three["output_tokens"] == 60
    assert three["latency_s"] == pytest.approx(1.5) and three["wall_s"] == 1.0
    assert three["score"] == three["accuracy"] + three["work"] == 7
    assert three["judge_attempts"] == 1 and three["judge_cost"] == pytest.approx(0.01)

    hit = row(report, "c-sim/steady-i1-0")
    assert hit["cached"] is True and hit["cost"] == pytest.approx(0.002) and hit["spent_now"] == 0.0
    fresh = row(report, "c-sim/steady-i1-1")
    assert fresh["cached"] is False and fresh["spent_now"] == fresh["cost"] == pytest.approx(0.002)

    failed = row(report, "c-acme/fast-i1-2")
    assert failed["ok"] is False and "500" in failed["error"] and failed["output"] is None and failed["calls"] == 1
    # a failed run is not judged (no judge call, no judge cost) and scores 0 in every figure
    assert failed["score"] == failed["accuracy"] == failed["work"] == 0.0 and failed["judge_entry"] is None
    assert failed["judge_attempts"] == 0 and failed["judge_cost"] == 0.0 and "not judged" in failed["reason"]

    jerr = row(report, "c-acme/fast-i0-1")
    assert jerr["score"] is None and jerr["judge_error"].startswith("no valid verdict")
    assert jerr["judge_attempts"] == 3 and jerr["judge_cost"] == pytest.approx(0.03)
    assert row(report, "c-sim/steady-i0-1")["judge_path"] == "fallback"
    assert row(report, "c-acme/fast-i0-0")["finish_reason"] == "length"
    assert json.loads(row(report, "c-sim/steady-i0-0")["output"]) == {"decision": "refund"}
    assert row(report, "c-acme/fast-i1-0")["output"] == '""'


def test_calls_frame(report, runs):
    run_calls = sum(len(r.calls) for r in runs)
    judge_calls = sum(len(r.verdict.calls) for r in runs if r.verdict)
    assert report.calls.height == run_calls + judge_calls
    assert report.calls.filter(pl.col("role") == "judge").height == judge_calls
    assert set(report.calls["role"].unique()) == {"reference", "candidate", "judge"}
    judged = report.calls.filter((pl.col("run_id") == "c-acme/fast-i0-1") & (pl.col("role") == "judge"))
    assert judged.height == 3 and set(judged["entry"]) == {JUDGE}
    failed = report.calls.filter(pl.col("run_id") == "c-acme/fast-i1-2").row(0, named=True)
    assert failed["response"] is None and failed["error"].startswith("CallError")


def test_reference_and_output(report):
    assert report.reference["run_id"] == "r-sim/steady-i0-0"
    assert report.output == {"decision": "refund-sim/steady-i0-0"}


def test_calls_for_rebuilds_records(report, runs):
    for run in runs:
        assert report.calls_for(run.run_id, role=run.role) == run.calls
        if run.verdict:
            assert report.calls_for(run.run_id, role="judge") == run.verdict.calls
            assert report.calls_for(run.run_id) == run.calls + run.verdict.calls
    assert report.calls_for("nope") == []


# ------------------------------------------------------------------------------------------------------------- models


def test_models_means(report):
    models = report.models
    assert models["entry"].to_list() == [REF, FAST]  # reference row excluded, order of first appearance
    steady, fast = models.iter_rows(named=True)

    assert steady["is_reference"] is True and steady["simulated"] is True and fast["is_reference"] is False
    assert steady["runs"] == 6 and steady["ok_rate"] == 1.0 and steady["judged"] == 6
    assert steady["score_mean"] == pytest.approx((10 + 8 + 9 + 8 + 10 + 7) / 6)
    assert steady["accuracy_mean"] == pytest.approx((7 + 6 + 7 + 5 + 7 + 6) / 6)
    assert steady["work_mean"] == pytest.approx((3 + 2 + 2 + 3 + 3 + 1) / 6)
    assert steady["scorer_mean"] == pytest.approx(3 / 4)
    assert steady["calls_mean"] == pytest.approx(13 / 6)
    assert steady["input_tokens_mean"] == pytest.approx(1300 / 6)
    assert steady["output_tokens_mean"] == pytest.approx(260 / 6)
    assert steady["latency_s_mean"] == pytest.approx(6.5 / 6)
    assert steady["wall_s_mean"] == pytest.approx(1.0)
    assert steady["cost_per_run"] == pytest.approx(13 * 0.001 / 6)
    assert steady["spent_now"] == pytest.approx(11 * 0.001)  # the cache-hit run's 2 calls cost nothing now
    assert steady["currency"] == "USD"

    assert fast["runs"] == 6 and fast["ok_rate"] == pytest.approx(5 / 6)
    # judged: the runs the judge scored; the failed run counts as 0, the judge error is left out
    assert fast["judged"] == 4 and fast["score_mean"] == pytest.approx((5 + 0 + 0 + 8 + 0) / 5)
    assert fast["scorer_mean"] is None
    assert fast["calls_mean"] == pytest.approx(2.0)  # over ok runs
    assert fast["cost_per_run"] == pytest.approx(10 * 0.002 / 6)  # the failed run still counts in runs
    assert fast["spent_now"] == pytest.approx(10 * 0.002)


def test_model_rows_are_the_models_frame(report):
    rows = report.model_rows()
    assert all(isinstance(m, EntrySummary) for m in rows)
    assert [m.to_row() for m in rows] == report.models.to_dicts()  # same figures, same order
    steady, fast = rows
    assert (steady.entry, steady.is_reference, steady.verdict) == (REF, True, None)
    assert fast.entry == FAST and fast.runs == 6 and fast.cost_per_run == pytest.approx(10 * 0.002 / 6)
    assert fast.verdict is not None and fast.cost_ratio == report.models["cost_ratio"][1]
    assert rows[0] is report.model_rows()[0] and report.model_rows() is not report.model_rows()  # cached, copied
    assert BenchmarkReport([], {}).model_rows() == []


def test_interval_contains_mean_and_is_reproducible(report, runs):
    for m in report.models.iter_rows(named=True):
        assert m["score_lo"] <= m["score_mean"] <= m["score_hi"]
        assert m["score_lo"] < m["score_hi"]
        assert 0 <= m["score_lo"] and m["score_hi"] <= 10
    again = BenchmarkReport(build_runs(), META).models
    assert again.equals(report.models)


def test_interval_null_below_two_scores():
    rep = BenchmarkReport([make_run(FAST, "i0", 0, judged=(6, 2)), make_run(FAST, "i0", 1, judged=None)], {})
    m = rep.models.row(0, named=True)
    assert m["score_mean"] == 8.0 and m["judged"] == 1 and m["score_lo"] is None and m["score_hi"] is None
    assert m["is_reference"] is False


# -------------------------------------------------------------------------------------------------------- diagnostics


def test_every_diagnostic_fires(report):
    d = report.diagnostics()
    kinds = d["kind"].to_list()
    assert kinds == sorted(kinds)
    by_kind = {k: d.filter(pl.col("kind") == k) for k in set(kinds)}
    assert set(by_kind) == {
        "empty_output",
        "failed",
        "judge_error",
        "judge_fallback",
        "truncated",
        "zero_score_nonempty",
    }
    assert by_kind["failed"]["run_id"].to_list() == ["c-acme/fast-i1-2"]
    assert "500 upstream" in by_kind["failed"]["detail"][0]
    assert by_kind["empty_output"]["run_id"].to_list() == ["c-acme/fast-i1-0"]
    assert by_kind["truncated"]["run_id"].to_list() == ["c-acme/fast-i0-0"]
    assert by_kind["zero_score_nonempty"]["run_id"].to_list() == ["c-acme/fast-i0-2"]  # not the empty one
    fallback = by_kind["judge_fallback"].row(0, named=True)  # one row per entry, with the count
    assert (
        by_kind["judge_fallback"].height == 1
        and fallback["entry"] == REF
        and fallback["detail"].startswith("1 verdict")
    )
    assert by_kind["judge_error"]["run_id"].to_list() == ["c-acme/fast-i0-1"]


def test_repeats_that_never_differ_and_shared_generations_are_flagged():
    same = {"decision": "refund"}
    runs = [make_run(REF, i, 0, role="reference") for i in ("i0", "i1")]
    runs += [make_run(REF, i, k, output=same) for i in ("i0", "i1") for k in range(3)]
    runs += [make_run(FAST, "i0", k, output={"k": k}) for k in range(2)]
    shared = runs[-1]
    # the second FAST run was served the first one's generation: what a collapsed cache salt looks like
    runs[-1] = replace(shared, calls=[replace(c, run_id=shared.run_id) for c in runs[-2].calls])
    d = BenchmarkReport(runs, META).diagnostics()
    identical = d.filter(pl.col("kind") == "identical_outputs")
    assert identical["entry"].to_list() == [REF] and "all 2 inputs" in identical["detail"][0]
    generation = d.filter(pl.col("kind") == "shared_generation")
    assert generation["entry"].unique().to_list() == [FAST]
    assert "share generation" in generation["detail"][0]
    # one input that always gets the same answer is normal, not a finding
    varied = [r for r in runs if not (r.entry == REF and r.input_id == "i1" and r.repeat == 2)]
    varied.append(make_run(REF, "i1", 2, output={"decision": "deny"}))
    assert "identical_outputs" not in BenchmarkReport(varied, META).diagnostics()["kind"].to_list()


def test_no_diagnostics_on_a_clean_run():
    d = clean_report().diagnostics()
    assert d.height == 0 and d.schema == pl.Schema(DIAGNOSTICS_SCHEMA)


# -------------------------------------------------------------------------------------------------------------- table


def test_table(report):
    text = report.table()
    assert str(report) == text
    lines = text.splitlines()
    assert (
        "refund-desk" in lines[0] and "standard" in lines[0] and JUDGE in lines[0] and "2 inputs × 3 runs" in lines[0]
    )
    steady = next(line for line in lines if REF in line and line.startswith("*"))
    assert "(sim)" in steady
    fast = next(line for line in lines if line.startswith(f"  {FAST} "))  # its row (the lead block names it first)
    assert "(sim)" not in fast and "83%" in fast and "USD" in fast
    assert any("acme/nokey" in line and "ACME_KEY is not set" in line for line in lines)
    totals = next(line for line in lines if line.startswith("cost of the runs"))
    assert "spent now" in totals
    assert lines[-1].startswith("recommendation: ")
    assert max(map(len, lines)) <= 170  # acme/fast's verdict line names the run its endpoint failed
    assert FAST in report._repr_html_()


# ------------------------------------------------------------------------------------------------------------ parquet


def test_parquet_round_trip(report, runs, tmp_path):
    out = report.to_parquet(tmp_path / "race")
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "calls.parquet",
        "controls.parquet",
        "meta.json",
        "models.parquet",
        "noise.parquet",
        "runs.parquet",
    ]
    assert json.loads((out / "meta.json").read_text()) == ReportMeta.from_dict(META).to_dict()
    back = BenchmarkReport.read_parquet(out)
    assert back.runs.equals(report.runs)
    assert back.calls.equals(report.calls)
    assert back.models.equals(report.models)
    assert back.meta == report.meta == ReportMeta.from_dict(META)
    assert back.table() == report.table()
    assert back.diagnostics().equals(report.diagnostics())
    for run in runs:
        assert back.calls_for(run.run_id) == report.calls_for(run.run_id)
    assert back.calls_for(runs[0].run_id) == runs[0].calls


def test_empty_round_trip(tmp_path):
    empty = BenchmarkReport([], META)
    back = BenchmarkReport.read_parquet(empty.to_parquet(tmp_path))
    assert back.runs.equals(empty.runs) and back.calls.equals(empty.calls) and back.models.equals(empty.models)
    assert back.runs.schema == pl.Schema(RUNS_SCHEMA) and back.models.schema == pl.Schema(MODELS_SCHEMA)


def test_read_parquet_missing(tmp_path, report):
    with pytest.raises(FileNotFoundError, match="runs.parquet"):
        BenchmarkReport.read_parquet(tmp_path / "nowhere")
    out = report.to_parquet(tmp_path / "race")
    (out / "calls.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="calls.parquet"):
        BenchmarkReport.read_parquet(out)


def test_an_input_most_candidates_dispute_flags_the_reference():
    runs = [make_run(REF, "i0", 0, role="reference"), make_run(REF, "i1", 0, role="reference")]
    runs += [make_run(e, "i0", k, judged=(2, 3)) for e in (REF, FAST) for k in range(2)]  # everyone disagrees on i0
    runs += [make_run(e, "i1", k, judged=(7, 3)) for e in (REF, FAST) for k in range(2)]
    d = BenchmarkReport(runs, META).diagnostics()
    disputed = d.filter(pl.col("kind") == "reference_disputed")
    assert disputed.height == 1 and disputed["run_id"][0] == "r-sim/steady-i0-0"
    assert "input i0: 4 of 4 candidate runs" in disputed["detail"][0]


def without_usage(run: Run) -> Run:
    calls = [replace(c, input_tokens=None, output_tokens=None, cost=None) for c in run.calls]
    return replace(run, calls=calls)


def test_unknown_usage_stays_unknown_in_every_figure():
    runs = [make_run(REF, "i0", 0, role="reference"), make_run(REF, "i0", 0), without_usage(make_run(FAST, "i0", 0))]
    report = BenchmarkReport(runs, META)
    fast = report.runs.filter(pl.col("entry") == FAST).row(0, named=True)
    assert (fast["input_tokens"], fast["output_tokens"], fast["cost"], fast["spent_now"]) == (None, None, None, None)
    model = report.models.filter(pl.col("entry") == FAST).row(0, named=True)
    assert model["cost_per_run"] is None and model["cost_ratio"] is None and model["input_tokens_mean"] is None
    no_usage = report.diagnostics().filter(pl.col("kind") == "no_usage")
    assert no_usage["entry"].to_list() == [FAST] and "unknown" in no_usage["detail"][0]
    text = report.table()
    assert "unknown" in next(line for line in text.splitlines() if line.startswith("  " + FAST))
    assert "unknown for 1 run without usage" in next(line for line in text.splitlines() if line.startswith("cost of"))


def test_a_stale_catalog_price_shows_beside_the_providers_cost():
    run = make_run(FAST, "i0", 0)
    calls = [replace(c, cost=0.004, cost_source="provider", price_table_cost=0.002) for c in run.calls]
    report = BenchmarkReport([make_run(REF, "i0", 0, role="reference"), replace(run, calls=calls)], META)
    row = report.runs.filter(pl.col("entry") == FAST).row(0, named=True)
    assert (row["cost"], row["price_table_cost"], row["cost_source"]) == (0.008, 0.004, "provider")
    mismatch = report.diagnostics().filter(pl.col("kind") == "price_mismatch")
    assert mismatch["entry"].to_list() == [FAST] and "stale" in mismatch["detail"][0]


def test_a_reused_response_id_with_other_content_is_not_a_shared_generation():
    def answered(run: Run, text: str) -> Run:
        body = {"id": "chatcmpl-mock", "choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
        calls = [replace(c, generation_id="chatcmpl-mock", response_packed=pack(json.dumps(body))) for c in run.calls]
        return replace(run, calls=calls)

    runs = [
        make_run(REF, "i0", 0, role="reference"),
        answered(make_run(FAST, "i0", 0), "yes"),
        answered(make_run(FAST, "i0", 1), "no"),
    ]
    assert "shared_generation" not in BenchmarkReport(runs, META).diagnostics()["kind"].to_list()
    runs[-1] = answered(make_run(FAST, "i0", 1), "yes")
    assert "shared_generation" in BenchmarkReport(runs, META).diagnostics()["kind"].to_list()


def test_verdict_line_says_why_when_nothing_could_be_paired():
    runs = [make_run(REF, "i0", 0, role="reference"), make_run(FAST, "i0", 0), make_run(FAST, "i0", 1)]
    lines = BenchmarkReport(runs, META).table().splitlines()
    line = next(line for line in lines if line.startswith("  " + FAST) and "inconclusive" in line)
    assert "has no usable candidate runs" in line and "sits on the margin" not in line
