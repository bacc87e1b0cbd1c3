"""End to end on the simulated fleet, through the real openai client: salting, caching, rejudge, blindness, secrets."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import polars as pl
import pytest

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs

# what a rerun must reproduce; wall time, cache flags and spend are about this execution, not the result
VOLATILE = ["wall_now_s", "cached", "spent_now"]  # what this time took and spent; the run's own wall time is kept


async def one_liner(input: dict, seat: gb.Seat) -> str:
    """Write one line about the topic."""
    return (await seat.chat([{"role": "user", "content": f"Write one line about {input['topic']}."}])).text


def order_bench(catalog: gb.Catalog, *, runs: int = 2, salt: str = "", inputs: int = 2, **kw) -> gb.Benchmark:
    bench = gb.Benchmark(OrderAgent, runs=runs, catalog=catalog, grade="standard", salt=salt, progress=False, **kw)
    return bench.set_inputs(load_inputs("orders")[:inputs]).set_spec(candidates=["sim/steady", "sim/swift"])


async def test_repeats_differ_and_a_rerun_is_served_from_the_cache() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = gb.Benchmark(one_liner, runs=3, catalog=catalog, grade="standard", progress=False)
    bench.set_input({"id": "t1", "topic": "autumn rain"}).set_spec(candidates=["sim/steady"])
    await bench.run()
    first = bench.report()
    outputs = first.runs.filter(role="candidate")["output"].to_list()
    assert len(set(outputs)) == 3, outputs  # three repeats, three samples: the salt keeps them apart

    fleet = fleet
    before = len(fleet.requests)
    await bench.run()
    assert len(fleet.requests) == before  # not one HTTP request
    again = bench.report()
    assert again.runs.drop(VOLATILE).equals(first.runs.drop(VOLATILE))
    assert again.runs["cached"].all() and again.runs["spent_now"].sum() == 0
    assert again.runs["cost"].sum() == pytest.approx(first.runs["cost"].sum())  # cost of the run is kept

    bench.set_spec(salt="fresh")
    await bench.run()
    assert len(fleet.requests) > before
    new_outputs = bench.report().runs.filter(role="candidate")["output"].to_list()
    assert set(new_outputs) != set(outputs)


async def test_the_nth_call_of_a_run_gets_its_own_answer() -> None:
    async def ask_twice(input: dict, seat: gb.Seat) -> list[str]:
        """Answer the same question twice."""
        messages = [{"role": "user", "content": "Name one colour."}]
        return [(await seat.chat(messages)).text, (await seat.chat(messages)).text]

    catalog = gb.sim.catalog(latency_scale=0)
    bench = gb.Benchmark(ask_twice, runs=1, catalog=catalog, grade="standard", progress=False)
    bench.set_input({"id": "c"}).set_spec(candidates=["sim/steady"])
    first, second = await bench.run()
    assert first != second
    calls = bench.report().calls.filter(role="reference")
    assert calls["seq"].to_list() == [0, 1] and calls["generation_id"].n_unique() == 2


async def test_rejudge_on_the_sim_makes_only_judge_requests() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = order_bench(catalog)
    await bench.run()
    before = len(fleet.requests)
    report = await bench.rejudge(gb.JudgeSpec(rubric="Refund only after both the lookup and the policy check."))
    new = fleet.requests[before:]
    assert new and {r.headers["x-gradebench-role"] for r in new} == {"judge"}
    assert {r.body["model"] for r in new} == {catalog.ceiling().model}
    assert report.runs.filter(role="candidate")["score"].null_count() == 0


async def test_rejudge_from_parquet(tmp_path: Path) -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = order_bench(catalog)
    await bench.run()
    bench.report().to_parquet(tmp_path / "race")
    stored = gb.BenchmarkReport.read_parquet(tmp_path / "race")
    before = len(fleet.requests)
    same = await gb.rejudge_report(stored, catalog, progress=False)
    assert len(fleet.requests) == before  # same rubric, same judge: every verdict is a cache hit
    assert same.runs.drop(VOLATILE).equals(bench.report().runs.drop(VOLATILE))
    await gb.rejudge_report(stored, catalog, gb.JudgeSpec(judge="sim/sage"), progress=False)
    roles = {r.headers["x-gradebench-role"] for r in fleet.requests[before:]}
    assert roles == {"judge"}


async def test_the_judge_is_blind() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    bench = order_bench(catalog, runs=2, inputs=3)
    bench.set_spec(candidates=gb.Benchmark.candidates(catalog, "standard"))
    await bench.run()
    requests = fleet.requests
    judged = [r for r in requests if r.headers.get("x-gradebench-role") == "judge"]
    assert judged
    secrets = {e.name for e in catalog} | {e.model for e in catalog}
    for r in requests:
        if r.headers.get("x-gradebench-role") != "judge" and r.body:
            secrets.add(r.body["model"])
    runs = bench.report().calls.filter(pl.col("role") != "judge")
    for response in runs["response"].drop_nulls().to_list():
        body = json.loads(response)
        secrets |= {body["id"], body.get("system_fingerprint") or body["id"]}
    for r in judged:
        body = {k: v for k, v in r.body.items() if k != "model"}  # the judge's own model id is the one allowed
        text = (json.dumps(body) + json.dumps(r.headers)).lower()
        leaked = [s for s in secrets if s.lower() in text]
        assert not leaked, leaked


async def test_the_api_key_is_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    canary = "sk-canary-7f3a9c1e5b"
    monkeypatch.setenv("GB_CANARY_KEY", canary)
    fleet = gb.sim.SimFleet(latency_scale=0)
    sim = fleet.catalog()
    keyed = [dataclasses.replace(e, api_key_env="GB_CANARY_KEY") for e in sim]
    catalog = gb.Catalog(keyed, grades=sim.grades, picks=sim.picks, ceiling=sim.ceiling_name)
    cache_dir, out_dir = tmp_path / "cache", tmp_path / "out"
    bench = order_bench(catalog, cache=cache_dir)
    bench.set_spec(candidates=gb.Benchmark.candidates(catalog, "standard"))  # sim/flaky fails some runs: errors too
    with caplog.at_level(logging.DEBUG):
        await bench.run()
        await bench.rejudge(gb.JudgeSpec(rubric="stricter"))
        bench.report().to_parquet(out_dir)
    assert fleet.requests[0].headers["authorization"] == "<redacted>"  # the key did travel, to the endpoint only
    seen = [p for p in [*cache_dir.rglob("*"), *out_dir.rglob("*")] if p.is_file()]
    assert any(p.name == "runs.parquet" for p in seen) and any(p.suffix == ".db" for p in seen)
    for path in seen:
        assert canary.encode() not in path.read_bytes(), path
    assert canary not in caplog.text
    assert canary not in repr(bench.report().runs.to_dicts()) + repr(bench.report().calls.to_dicts())


async def test_unset_key_skips_the_entry_and_the_report_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GB_UNSET_KEY", raising=False)
    sim = gb.sim.catalog(latency_scale=0)
    entries = [dataclasses.replace(e, api_key_env="GB_UNSET_KEY") if e.name == "sim/swift" else e for e in sim]
    catalog = gb.Catalog(entries, grades=sim.grades, picks=sim.picks, ceiling=sim.ceiling_name)
    assert "sim/swift" not in gb.Benchmark.candidates(catalog, "standard")
    bench = gb.Benchmark(OrderAgent, runs=1, catalog=catalog, grade="standard", progress=False)
    await bench.set_inputs(load_inputs("orders")[:1]).run()
    report = bench.report()
    assert report.meta.skipped == {"sim/swift": "environment variable GB_UNSET_KEY is not set"}
    assert "sim/swift" not in report.runs["entry"].to_list()
    assert "GB_UNSET_KEY" in report.table()


async def test_a_killed_race_resumes_from_the_cache(tmp_path: Path) -> None:
    import asyncio

    # The same race on a fresh cache: how many requests a whole race makes (the sim is deterministic).
    whole_fleet = gb.sim.SimFleet(latency_scale=0)
    whole = order_bench(whole_fleet.catalog(), salt="k", runs=3, inputs=3, cache=tmp_path / "other")
    await whole.run()
    total = len(whole_fleet.requests)

    fleet = gb.sim.SimFleet(latency_scale=0.02)
    catalog = fleet.catalog()
    bench = order_bench(catalog, salt="k", runs=3, inputs=3)
    task = asyncio.create_task(bench.run())
    while len(fleet.requests) < total // 2:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    before_kill = len(fleet.requests)
    partial = bench.report()  # the runs judged before the kill
    assert partial.meta.stopped and partial.runs.height < 3 + 2 * 3 * 3
    await bench.run()
    resumed = len(fleet.requests) - before_kill
    # Every answer that reached the cache before the kill is reused; only calls cut off in flight are asked again.
    assert total <= before_kill + resumed <= total + 10
    assert resumed < total
    same = ["run_id", "entry", "ok", "output", "score", "reason", "calls", "input_tokens", "output_tokens", "cost"]
    assert bench.report().runs.select(same).equals(whole.report().runs.select(same))  # latencies differ by design
