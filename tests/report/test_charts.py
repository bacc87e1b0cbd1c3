"""gradebench.charts: the Pareto front, chart specs (built, not looked at), offline saving and offline widgets."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import altair as alt
import ipywidgets
import polars as pl
import pytest

import gradebench as gb
from gradebench import charts
from gradebench._records.records import Call, JudgeScore, Run
from gradebench._report.models import MODELS_SCHEMA
from gradebench._report.report import BenchmarkReport

META = {
    "benchmark_id": "b1",
    "job": "refund-desk",
    "grade": "standard",
    "reference_entry": "acme/ref",
    "judge_entry": "acme/judge",
}


def models_frame(*rows: tuple[str, float | None, float | None]) -> pl.DataFrame:
    """A models frame from (entry, cost_per_run, score_mean) rows; the other columns null."""
    data = [{"entry": e, "cost_per_run": c, "score_mean": s, "latency_s_mean": c} for e, c, s in rows]
    return pl.DataFrame([{name: row.get(name) for name in MODELS_SCHEMA} for row in data], schema=MODELS_SCHEMA)


def run(
    entry: str,
    input_id: str,
    repeat: int,
    *,
    cost: float = 0.001,
    score: tuple[int, int] | None = (6, 3),
    ok: bool = True,
    simulated: bool = False,
    judge_error: str | None = None,
) -> Run:
    run_id = f"{entry}-{input_id}-{repeat}"
    call = Call.from_bodies(
        run_id=run_id,
        seq=0,
        role="candidate",
        entry=entry,
        request={"messages": []},
        response=None if not ok else {"id": run_id},
        input_tokens=100,
        output_tokens=20,
        latency_s=0.5 + repeat,
        cost=cost,
        error=None if ok else "503 from the endpoint",
    )
    verdict = None
    if ok and (score is not None or judge_error):
        accuracy, work = score if score is not None else (None, None)
        verdict = JudgeScore(accuracy=accuracy, work=work, reason="fine", judge_entry="acme/judge", error=judge_error)
    return Run(
        benchmark_id="b1",
        job="refund-desk",
        input_id=input_id,
        run_id=run_id,
        role="candidate",
        entry=entry,
        model=entry.split("/")[1] + "-1",
        grade="standard",
        simulated=simulated,
        repeat=repeat,
        currency="USD",
        ok=ok,
        error=None if ok else "503 from the endpoint",
        output={"decision": "refund"},
        calls=[call],
        wall_s=1.0,
        verdict=verdict,
    )


@pytest.fixture
def report() -> BenchmarkReport:
    """acme/ref (reference), acme/cheap (free, worse), acme/dear (dearer, better), acme/worse (dominated),
    sim/tiny (simulated) and acme/down (every run failed)."""
    plan = {
        "acme/ref": (0.002, [(6, 3), (7, 3)]),
        "acme/cheap": (0.0, [(4, 2), (5, 2)]),
        "acme/dear": (0.01, [(7, 3), (7, 3)]),
        "acme/worse": (0.003, [(3, 1), (4, 1)]),
        "sim/tiny": (0.001, [(5, 2), (6, 2)]),
    }
    runs = [run("acme/ref", "i1", 0, cost=0.002)]
    runs[0] = replace(runs[0], role="reference", verdict=None)
    for entry, (cost, scores) in plan.items():
        sim = entry.startswith("sim/")
        runs += [run(entry, "i1", k, cost=cost, score=s, simulated=sim) for k, s in enumerate(scores)]
    runs.append(run("acme/worse", "i1", 2, cost=0.003, ok=False))
    runs.append(run("acme/ref", "i1", 2, cost=0.002, score=None, judge_error="no valid verdict"))
    runs += [run("acme/down", "i1", k, cost=0.0005, ok=False) for k in range(2)]
    return BenchmarkReport(runs, META)


def data_of(spec: dict[str, Any], layer: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows a layer draws (its own data, else the top level's), resolving named datasets."""
    data = layer.get("data") or spec["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def layers_with(spec: dict[str, Any], mark: str) -> list[dict[str, Any]]:
    def kind(layer: dict[str, Any]) -> str:
        return layer["mark"] if isinstance(layer["mark"], str) else layer["mark"]["type"]

    return [layer for layer in spec["layer"] if kind(layer) == mark]


# ------------------------------------------------------------------------------------------------------ pareto front


def test_pareto_front_known_answer_with_ties_and_zero_cost():
    models = models_frame(
        ("free", 0.0, 5.0),
        ("free-worse", 0.0, 4.0),  # beaten by free: same cost, lower score
        ("mid-a", 0.001, 7.0),
        ("mid-b", 0.001, 7.0),  # tied with mid-a on both: both stay
        ("pricey-worse", 0.002, 6.0),  # beaten by mid-a: cheaper and better
        ("top", 0.003, 9.0),
        ("top-dearer", 0.004, 9.0),  # beaten by top: same score, dearer
        ("unjudged", 0.0001, None),  # no score: left out
    )
    assert charts.pareto_front(models) == ["free", "mid-a", "mid-b", "top"]
    assert charts.pareto_front(models_frame()) == []
    assert charts.pareto_front(models_frame(("only", 0.5, 2.0))) == ["only"]


def test_pareto_front_on_latency(report: BenchmarkReport):
    assert charts.pareto_front(report.models) == ["acme/cheap", "sim/tiny", "acme/ref", "acme/dear"]
    assert set(charts.pareto_front(report.models, x="latency_s_mean")) <= set(report.models["entry"])


# ------------------------------------------------------------------------------------------------------------ specs


def test_cost_quality_spec(report: BenchmarkReport):
    chart = charts.cost_quality(report)
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()
    title = spec["title"]
    assert "refund-desk" in title["text"] and "standard" in title["text"]
    assert any("drawn at" in line and "log axis has no zero" in line for line in title["subtitle"])  # acme/cheap
    # every run of acme/down failed: it scores 0, but what it costs to answer is unknown (nobody paid for an answer),
    # so it is not drawn on the cost axis, and the title says why
    assert any("acme/down" in line and "no run succeeded" in line for line in title["subtitle"])

    points = layers_with(spec, "point")[0]
    x = points["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["title"] == "cost per run (USD, log)"
    assert points["encoding"]["y"]["scale"]["domain"] == [0, 10]
    rows = {r["entry"]: r for r in data_of(spec, points)}
    assert rows["acme/cheap"]["cost_per_run"] == 0 and rows["acme/cheap"]["x"] > 0  # clamped, not dropped
    assert "drawn at" in rows["acme/cheap"]["plotted"] and rows["acme/ref"]["plotted"] == "as measured"

    bars = layers_with(spec, "errorbar")[0]
    assert bars["encoding"]["y"]["field"] == "score_lo" and bars["encoding"]["y2"]["field"] == "score_hi"

    # the reference: its own shape, a black outline, and a label saying so
    assert points["encoding"]["shape"]["field"] == "role"
    assert points["encoding"]["stroke"]["condition"][0]["test"] == "datum.is_reference"
    assert rows["acme/ref"]["role"] == "reference" and rows["acme/ref"]["label"] == "acme/ref (reference)"
    assert rows["sim/tiny"]["label"] == "sim/tiny (sim)"  # simulated entries say so
    labels = layers_with(spec, "text")[0]
    assert labels["encoding"]["text"]["field"] == "label"
    assert all(isinstance(r["lx"], float) for r in rows.values() if r["score_mean"] is not None and r["x"] is not None)

    step = layers_with(spec, "line")[0]
    assert step["mark"]["interpolate"] == "step-before"  # up, then across: through front points only
    assert [r["entry"] for r in data_of(spec, step)] == charts.pareto_front(report.models)

    tips = {t["field"]: t for t in points["encoding"]["tooltip"]}
    for field in (
        "entry",
        "model",
        "grade",
        "runs",
        "ok_rate",
        "score_mean",
        "score_lo",
        "score_hi",
        "accuracy_mean",
        "work_mean",
        "scorer_mean",
        "calls_mean",
        "input_tokens_mean",
        "output_tokens_mean",
        "latency_s_mean",
        "wall_s_mean",
        "cost_per_run",
        "currency",
        "plotted",
        "verdict",
        "lower",
        "cost_ratio",
        "floor_std",
    ):
        assert field in tips, field

    # colours: by verdict against the reference entry
    colour = points["encoding"]["color"]
    assert colour["field"] == "verdict_shown"
    shown = {r["verdict_shown"] for r in rows.values()}
    assert set(colour["scale"]["domain"]) == shown and "reference" in shown
    assert rows["acme/ref"]["verdict_shown"] == "reference"
    assert colour["legend"]["values"] == [v for v in colour["scale"]["domain"] if v != "reference"]  # not a verdict
    for name, row in rows.items():
        if name != "acme/ref":
            assert row["verdict_shown"] == (row["verdict"] or "not tested")
    # the "as good" zone: from the reference's mean score down by the margin
    band = data_of(spec, layers_with(spec, "rect")[0])[0]
    ref_mean = rows["acme/ref"]["score_mean"]
    assert band["hi"] == ref_mean and band["lo"] == pytest.approx(max(0, ref_mean - 1.0))


def test_latency_quality_spec(report: BenchmarkReport):
    spec = charts.latency_quality(report).to_dict()
    points = layers_with(spec, "point")[0]
    assert points["encoding"]["x"]["title"] == "latency per run (s, log)"
    step = layers_with(spec, "line")[0]
    assert [r["entry"] for r in data_of(spec, step)] == charts.pareto_front(report.models, x="latency_s_mean")
    assert "latency vs quality" in spec["title"]["text"]


def test_score_distribution_spec(report: BenchmarkReport):
    spec = charts.score_distribution(report).to_dict()
    rows = data_of(spec, layers_with(spec, "circle")[0])
    candidates = report.runs.filter(pl.col("role") == "candidate")
    assert len(rows) == candidates.height
    status = {(r["entry"], r["repeat"]): r["status"] for r in rows}
    assert status[("acme/worse", 2)] == "failed" and status[("acme/ref", 2)] == "no verdict"
    assert status[("acme/dear", 0)] == "judged"
    unscored = [r for r in rows if r["status"] != "judged"]
    assert unscored and all(abs(r["x"] - charts.FAILED_X) < 0.5 for r in unscored)
    crosses = layers_with(spec, "point")[0]
    assert crosses["mark"]["shape"] == "cross" and crosses["mark"]["color"] == "#d62728"  # runs without a score
    assert crosses["transform"] == [{"filter": "datum.status == 'failed'"}]
    rings = layers_with(spec, "point")[1]  # the judge gave no verdict: not a failure, not a 0
    assert rings["transform"] == [{"filter": "datum.status == 'no verdict'"}] and rings["mark"]["filled"] is False
    y = layers_with(spec, "circle")[0]["encoding"]["y"]
    assert y["sort"] == ["acme/ref (reference)", "acme/cheap", "acme/dear", "acme/worse", "sim/tiny (sim)", "acme/down"]
    assert {r["label"] for r in rows if r["entry"] == "acme/ref"} == {"acme/ref (reference)"}
    assert {r["label"] for r in rows if r["entry"] == "sim/tiny"} == {"sim/tiny (sim)"}


def step_segments(points: list[tuple[float, float]], how: str) -> list[tuple[tuple[float, float], ...]]:
    """The segments a step line through ``points`` (sorted by x) draws: across then up, or up then across."""
    segments = []
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        corner = (x1, y0) if how == "step-after" else (x0, y1)
        segments += [((x0, y0), corner), (corner, (x1, y1))]
    return segments


def on_segment(p: tuple[float, float], seg: tuple[tuple[float, float], ...]) -> bool:
    (x0, y0), (x1, y1) = seg
    return min(x0, x1) <= p[0] <= max(x0, x1) and min(y0, y1) <= p[1] <= max(y0, y1)


def test_the_pareto_step_line_passes_only_through_front_points():
    # acme/b scores as acme/a does and costs more; acme/d costs what acme/c does and scores less: both beaten
    plan = {
        "acme/a": (0.001, [(5, 3)] * 2),
        "acme/b": (0.002, [(5, 3)] * 2),
        "acme/c": (0.004, [(6, 3)] * 2),
        "acme/d": (0.004, [(5, 3), (6, 3)]),
    }
    runs = [replace(run("acme/a", "i1", 9), role="reference", verdict=None)]
    runs += [run(e, "i1", k, cost=c, score=s) for e, (c, scores) in plan.items() for k, s in enumerate(scores)]
    report = BenchmarkReport(runs, {**META, "reference_entry": "acme/a"})
    spec = charts.cost_quality(report).to_dict()
    step = layers_with(spec, "line")[0]
    front = [(r["x"], r["score_mean"]) for r in data_of(spec, step)]
    assert [r["entry"] for r in data_of(spec, step)] == ["acme/a", "acme/c"]
    others = [(r["x"], r["score_mean"]) for r in data_of(spec, layers_with(spec, "point")[0])]
    others = [p for p in others if p not in front]
    assert others  # acme/b and acme/d
    crossed = [p for p in others for seg in step_segments(front, step["mark"]["interpolate"]) if on_segment(p, seg)]
    assert crossed == []
    # across-then-up would have run through both beaten entries
    assert {p for p in others for seg in step_segments(front, "step-after") if on_segment(p, seg)} == set(others)


async def sim_report(job: type, inputs: str, n: int, *, scorer: bool = False) -> BenchmarkReport:
    from gradebench.jobs import load_inputs

    bench = gb.Benchmark(job, runs=2, catalog=gb.sim.catalog(latency_scale=0), grade="standard", progress=False)
    bench.set_inputs(load_inputs(inputs)[:n])
    if scorer:
        bench.set_spec(scorer=job.scorer)
    await bench.run()
    return bench.report()


async def test_scorer_agreement_needs_scorer_values(report: BenchmarkReport):
    from gradebench.jobs import SelectingAgent

    with pytest.raises(ValueError, match="the report has no scorer values"):
        charts.scorer_agreement(report)
    scored = await sim_report(SelectingAgent, "selections", 2, scorer=True)
    spec = charts.scorer_agreement(scored).to_dict()
    points = layers_with(spec, "point")[0]
    rows = data_of(spec, points)
    assert len(rows) == scored.runs.filter(pl.col("scorer").is_not_null() & pl.col("score").is_not_null()).height
    for r in rows:
        flagged = (r["scorer"] >= 0.5 and r["score"] < 7) or (r["scorer"] < 0.5 and r["score"] >= 7)
        assert (r["agreement"] != "agree") == flagged
    assert points["encoding"]["color"]["field"] == "entry"
    assert any("disagree" in line for line in spec["title"]["subtitle"])


def test_empty_report_says_no_runs():
    empty = BenchmarkReport([], META)
    for build in (charts.cost_quality, charts.latency_quality, charts.score_distribution, charts.scorer_agreement):
        spec = build(empty).to_dict()
        assert spec["data"]["values"][0]["text"].startswith("no runs"), build.__name__
        assert "refund-desk" in spec["title"]["text"]


# ------------------------------------------------------------------------------------------------------- save, show


async def test_save_chart_offline(tmp_path):
    from gradebench.jobs import OrderAgent

    chart = charts.cost_quality(await sim_report(OrderAgent, "orders", 2))
    svg = charts.save_chart(chart, tmp_path / "c.svg")
    assert svg == tmp_path / "c.svg" and svg.read_text().startswith("<svg")
    png = charts.save_chart(chart, tmp_path / "deep" / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = charts.save_chart(chart, str(tmp_path / "c.html")).read_text()
    assert "vegaEmbed" in html and "sim/steady" in html
    assert not re.findall(r"<script[^>]*\bsrc=", html)  # everything inlined
    assert "cdn.jsdelivr" not in html and "unpkg" not in html and "esm.sh" not in html
    with pytest.raises(ValueError, match=r"c\.pdf"):
        charts.save_chart(chart, tmp_path / "c.pdf")


def test_save_empty_report(tmp_path):
    out = charts.save_chart(charts.score_distribution(BenchmarkReport([], META)), tmp_path / "e.svg")
    assert "no runs" in out.read_text()


def test_offline_widget_in_a_container(report: BenchmarkReport):
    chart = charts.cost_quality(report)
    widget = charts.offline_widget(chart)
    assert isinstance(widget, alt.JupyterChart) and isinstance(widget, ipywidgets.DOMWidget)
    assert alt.JupyterChart._is_offline
    # the Vega bundle inlined, not imports from a CDN
    assert "esm.sh" not in widget._esm and not re.search(r"""(import|from)\s*\(?["']https?://""", widget._esm)
    assert len(widget._esm) > 100_000
    assert widget.spec["layer"] and widget.spec["title"] == chart.to_dict()["title"]
    tabs = ipywidgets.Tab(children=[widget, charts.offline_widget(charts.score_distribution(report))])
    assert len(tabs.children) == 2


def test_save_a_widget(report: BenchmarkReport, tmp_path):
    widget = charts.offline_widget(charts.latency_quality(report))
    assert charts.save_chart(widget, tmp_path / "w.svg").read_text().startswith("<svg")


def test_enable_offline():
    before = alt.renderers.active
    try:
        charts.enable_offline()
        assert alt.renderers.active == "jupyter" and alt.renderers.options == {"offline": True}
        assert alt.JupyterChart._is_offline and "esm.sh" not in alt.JupyterChart._esm
        assert "esm.sh" in alt.jupyter.jupyter_chart.load_js_src()  # what the online default would have loaded
    finally:
        alt.renderers.enable(before)


def test_public_names():
    assert charts.__all__ == sorted(charts.__all__)
    assert gb.charts is charts


def test_a_failed_run_is_told_apart_from_a_judged_zero():
    runs = [replace(run("acme/ref", "i1", 9), role="reference", verdict=None)]
    runs += [run("acme/x", "i1", 0, score=(0, 0)), run("acme/x", "i1", 1, ok=False), run("acme/x", "i1", 2)]
    report = BenchmarkReport(runs, META)
    frame = report.runs.filter(pl.col("role") == "candidate").sort("repeat")
    assert frame["score"].to_list()[:2] == [0.0, 0.0] and frame["ok"].to_list()[:2] == [True, False]  # both 0
    spec = charts.score_distribution(report).to_dict()
    rows = {r["repeat"]: r for r in data_of(spec, layers_with(spec, "circle")[0])}
    assert rows[0]["status"] == "judged" and abs(rows[0]["x"]) < 0.5  # a dot at 0
    assert rows[1]["status"] == "failed" and abs(rows[1]["x"] - charts.FAILED_X) < 0.5  # a red cross, apart
    assert rows[1]["why"] == "503 from the endpoint"
    labels = layers_with(spec, "circle")[0]["encoding"]["x"]["axis"]["labelExpr"]
    assert "not judged" in labels and not re.search(r"'no score'", labels)
    assert any("red cross, the run failed (it counts as 0 in the mean)" in line for line in spec["title"]["subtitle"])


def test_every_run_failed():
    failed = BenchmarkReport([run("acme/a", "i1", k, ok=False) for k in range(2)], META)
    for build in (charts.cost_quality, charts.latency_quality, charts.score_distribution):
        spec = build(failed).to_dict()  # builds, says why nothing is drawn
        assert "refund-desk" in spec["title"]["text"], build.__name__
    assert charts.latency_quality(failed).to_dict()["data"]["values"][0]["text"].startswith("no judged runs")
    with pytest.raises(ValueError, match="no scorer values"):
        charts.scorer_agreement(failed)


def test_the_core_does_not_import_charts():
    import subprocess
    import sys

    code = "import sys, gradebench; assert 'gradebench.charts' not in sys.modules; gradebench.charts.pareto_front"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_large_race_draws_a_fixed_sample_of_each_entry_and_every_run_not_judged(monkeypatch: pytest.MonkeyPatch):
    """Points beyond `POINTS_PER_ENTRY` an entry are left out of the chart's data (a race of 200,000 runs would hold
    every one inline), the runs no judge scored first; the mean layer and the subtitle still speak of every run."""
    from gradebench._report import charts as drawing

    monkeypatch.setattr(drawing, "POINTS_PER_ENTRY", 5)  # where the charts read it
    runs = [replace(run("acme/ref", "i1", 99), role="reference", verdict=None)]
    runs += [run("acme/x", f"i{k % 4}", k, score=(k % 8, k % 4)) for k in range(20)]
    runs += [run("acme/x", "i9", 20, ok=False), run("acme/x", "i9", 21, score=None, judge_error="no verdict")]
    runs += [run("acme/y", "i1", k) for k in range(3)]  # under the cap: every run drawn
    report = BenchmarkReport(runs, META)
    spec = charts.score_distribution(report).to_dict()
    rows = data_of(spec, layers_with(spec, "circle")[0])
    drawn = [r for r in rows if r["entry"] == "acme/x"]
    assert len(drawn) == 5 and {"failed", "no verdict"} <= {r["status"] for r in drawn}
    assert len([r for r in rows if r["entry"] == "acme/y"]) == 3
    assert any("8 of 25 runs drawn (at most 5 an entry" in line for line in spec["title"]["subtitle"])
    means = {m["entry"]: m["score_mean"] for m in data_of(spec, layers_with(spec, "tick")[0])}
    assert means["acme/x"] == report.models.filter(entry="acme/x")["score_mean"].item()  # every run's mean
    again = charts.score_distribution(report).to_dict()
    assert data_of(again, layers_with(again, "circle")[0]) == rows  # the same sample each time
