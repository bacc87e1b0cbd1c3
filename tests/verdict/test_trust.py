"""Judge trust and the verdict on the simulated fleet, where the profiles make the right answer known."""

from __future__ import annotations

import json

import polars as pl
import pytest

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs


def race(catalog: gb.Catalog, *, inputs: int = 6, runs: int = 2, **kw) -> gb.Benchmark:
    bench = gb.Benchmark(OrderAgent, runs=runs, catalog=catalog, progress=False, **kw)
    return bench.set_inputs(load_inputs("orders")[:inputs])


def judge_requests(fleet: gb.sim.SimFleet, since: int = 0) -> list:
    return [r for r in fleet.requests[since:] if r.headers.get("x-gradebench-role") == "judge"]


async def test_the_tool_skipping_entry_is_never_as_good_and_a_cheap_weak_one_is_worse() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    bench = race(catalog, inputs=12, runs=3, also=["small"])
    await bench.run()
    models = bench.report().models
    verdict = dict(zip(models["entry"], models["verdict"], strict=True))
    assert verdict["sim/steady"] is None  # the reference entry is not tested against itself
    assert verdict["sim/swift"] in ("worse", "inconclusive")  # skips a tool call a quarter of the time
    assert verdict["sim/pico"] == "worse"  # the small grade's guesser: the job needs its grade
    assert {"sim/pico", "sim/mini", "sim/nano"} <= set(models["entry"])  # also=["small"] raced them too
    swift = models.filter(entry="sim/swift").row(0, named=True)
    assert swift["n_pairs"] == 36 and swift["n_inputs"] == 12 and swift["margin"] == 1.0
    assert swift["lower"] <= swift["mean_diff"] <= swift["upper"]
    assert swift["cost_ratio"] == pytest.approx(
        swift["cost_per_run"] / models.filter(entry="sim/steady")["cost_per_run"][0]
    )
    pick = bench.report().recommend()
    assert pick is not None and "as good as sim/steady" in pick.sentence
    table = bench.report().table()
    assert "verdict vs sim/steady" in table and "recommendation:" in table


async def test_the_tool_diff_is_in_the_rows_and_in_the_judge_prompt() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = race(catalog, inputs=8, runs=3)
    bench.set_spec(candidates=["sim/steady", "sim/swift"])
    await bench.run()
    runs = bench.report().runs.filter(role="candidate")
    assert runs["tool_missing"].null_count() == 0 and runs["tool_diff"].null_count() == 0
    skipped = runs.filter((pl.col("entry") == "sim/swift") & (pl.col("tool_missing") > 0))
    assert skipped.height > 0 and skipped["tool_diff"].str.contains("missing").all()
    prompts = [r.body["messages"][1]["content"] for r in judge_requests(fleet)]
    assert all("<checked_in_code>" in p for p in prompts)
    assert any("skipped" in p for p in prompts)


async def test_judge_noise_rejudges_only_and_fills_the_floor() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = race(catalog)
    bench.set_spec(candidates=["sim/steady", "sim/swift", "sim/squint"])
    await bench.run()
    before = len(fleet.requests)
    report = await bench.judge_noise(k=4, sample=9)
    new = fleet.requests[before:]
    assert new and {r.headers["x-gradebench-role"] for r in new} == {"judge"}
    assert {r.headers["x-gradebench-sample"] for r in new} == {"1", "2", "3", "4"}  # distinct draws
    assert report.noise.height == 9 and report.noise["replicas"].list.len().to_list() == [4] * 9
    assert report.meta.judge_noise_k == 4
    floor = report.models.filter(pl.col("floor_std").is_not_null())
    assert floor.height >= 2 and (floor["floor_moved"] <= 1).all()
    bands = [layer for layer in gb.charts.cost_quality(report).to_dict()["layer"] if layer["mark"]["type"] == "rect"]
    assert len(bands) == 2  # the margin zone and the judge's noise floor
    chosen = report.noise["run_id"].to_list()[:2]
    again = await bench.judge_noise(k=2, sample=chosen)
    assert sorted(again.noise["run_id"].to_list()) == sorted(chosen)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        await bench.judge_noise(k=0)
    with pytest.raises(ValueError, match="not judged candidate runs"):
        await bench.judge_noise(sample=["nope"])


async def test_the_swap_check_judges_both_orders_blind() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = race(catalog, inputs=4).set_spec(candidates=["sim/steady", "sim/swift"]).set_spec(judge_swap=True)
    await bench.run()
    judged = judge_requests(fleet)
    assert len(judged) == (2 * 4 * 2 + 3) * 2  # every run and the three negative controls, in both orders
    firsts = []
    for r in judged:
        user = r.body["messages"][1]["content"]
        firsts.append(user.index('role="candidate"') < user.index('role="reference"'))
        text = json.dumps({k: v for k, v in r.body.items() if k != "model"}).lower()
        assert not any(name in text for name in ("sim/steady", "sim/swift", "sim-steady-1", "sim-swift-1"))
    assert firsts.count(True) == firsts.count(False)
    runs = bench.report().runs.filter(role="candidate")
    assert runs["swap_gap"].null_count() == 0 and runs["judge_attempts"].min() == 2
    assert bench.report().models["swap_gap_mean"].null_count() == 0
    assert bench.report().meta.spec.judge_swap is True


async def test_margin_transcripts_and_judge_prompts_from_the_report() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    bench = race(catalog, inputs=8, runs=3).set_spec(candidates=["sim/steady", "sim/chatty", "sim/swift"])
    await bench.run()
    report = bench.report()
    wide, strict = report.with_margin(3.0), report.with_margin(0.1)
    assert wide.meta.spec.margin == 3.0 and report.meta.spec.margin == 1.0  # a new report; the old one is unchanged
    order = {"worse": 0, "inconclusive": 1, "as good": 2}
    for entry in ("sim/chatty", "sim/swift"):
        verdicts = [r.models.filter(entry=entry)["verdict"][0] for r in (strict, report, wide)]
        assert [order[v] for v in verdicts] == sorted(order[v] for v in verdicts), verdicts  # wider margin, kinder
    with pytest.raises(ValueError, match="margin must be >= 0"):
        report.with_margin(-1)
    run_id = report.runs.filter(entry="sim/swift")["run_id"][0]
    events = report.transcript(run_id)
    assert events[0]["kind"] in ("system", "user") and events[-1]["kind"] in ("answer", "error")
    prompts = report.judge_prompts(run_id)
    assert len(prompts) >= 1 and "<checked_in_code>" in prompts[0][1]["content"]
    with pytest.raises(KeyError, match="no run 'nope'"):
        report.transcript("nope")
