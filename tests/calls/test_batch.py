"""The judge through a Batch API, end to end on the simulated fleet: the verdicts of a batched race are the direct
race's at the batch price; a batch answer and a direct one serve each other from the cache; what a batch never ran
is sent again alone; a batch outlives the process that submitted it; the swap check, judge noise, panels, a budget
and a rejudge all batch.

The sim answers a batched request as it answers the same request sent alone (its labels travel in the
``custom_id``), so "the same verdicts" is an exact check here, not a statistical one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._calls.session import mount
from gradebench._race.rejudge import estimate_rejudge
from gradebench.jobs import OrderAgent, load_inputs
from gradebench.sim import BatchOptions, SimFleet, start_server

from ..batch_child import race

ROOT = Path(__file__).resolve().parent.parent.parent
CANDIDATES = ["sim/swift", "sim/steady", "sim/flaky"]


def bench(catalog: gb.Catalog, cache: Path, *, inputs: int = 3, batch: bool = True, **kw: Any) -> gb.Benchmark:
    kw.setdefault("controls", 0)  # the counts below are the runs' verdicts (test_controls judges the controls)
    made = gb.Benchmark(
        OrderAgent,
        runs=kw.pop("runs", 2),
        catalog=catalog,
        grade="standard",
        cache=cache,
        progress=False,
        judge_batch=batch,
        **kw,
    )
    return made.set_spec(candidates=kw.pop("candidates", CANDIDATES)).set_inputs(load_inputs("orders")[:inputs])


def judged(report: gb.BenchmarkReport) -> pl.DataFrame:
    """Each candidate run's verdict, in a fixed order (what two races must agree on)."""
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    return runs.select("run_id", "score", "accuracy", "work", "reason", "judge_path").sort("run_id")


def judge_calls(report: gb.BenchmarkReport) -> pl.DataFrame:
    return report.calls.filter(pl.col("role") == Role.JUDGE)


def chat_requests(fleet: SimFleet, role: str = "judge") -> int:
    return sum(
        1 for r in fleet.requests if r.path.endswith("/chat/completions") and r.headers.get("x-gradebench-role") == role
    )


async def until(condition: Any, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.002)):
        if condition():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("timed out waiting")


def noted(notes: Path) -> bool:
    """Whether a batch note with its batch's id is on disk."""
    return any(json.loads(p.read_text()).get("batch_id") for p in notes.glob("*.json"))


# ---------------------------------------------------------------------------------------------- the race, batched


async def test_a_batched_race_gives_the_direct_verdicts_at_half_the_judge_price(tmp_path: Path) -> None:
    direct_fleet, batch_fleet = SimFleet(latency_scale=0), SimFleet(latency_scale=0)
    direct = bench(direct_fleet.catalog(), tmp_path / "direct", batch=False)
    await direct.run()
    batched = bench(batch_fleet.catalog(), tmp_path / "batched")
    await batched.run()
    a, b = direct.report(), batched.report()

    assert judged(b).equals(judged(a))  # the same verdicts, run for run
    assert a.runs["score"].drop_nulls().len() == b.runs["score"].drop_nulls().len() > 10
    calls_a, calls_b = judge_calls(a), judge_calls(b)
    assert calls_b["input_tokens"].to_list() == calls_a["input_tokens"].to_list()
    assert calls_b["cost"].sum() == pytest.approx(calls_a["cost"].sum() / 2, rel=0.02)  # the sim's prompt cache
    assert set(calls_b["price_source"]) == {"catalog batch -50%"} and set(calls_a["price_source"]) == {"catalog"}
    assert b.meta.spec.judge_batch is True and a.meta.spec.judge_batch is False
    # one batch held every verdict; no verdict went to chat/completions; the candidates were not batched
    (only,) = batch_fleet.batch.batches.values()
    assert only.status == "completed" and only.counts["total"] == calls_b.height
    assert chat_requests(batch_fleet) == 0 and chat_requests(batch_fleet, "candidate") > 0
    assert "batch_resent" not in b.diagnostics()["kind"].to_list()
    assert not list((tmp_path / "batched" / "batches").glob("*.json"))  # collected: no note left


async def test_batch_and_direct_answers_serve_each_other_from_the_cache(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    first = bench(catalog, tmp_path / "cache")
    await first.run()
    again = bench(catalog, tmp_path / "cache", batch=False)  # the direct race asks the same keys
    await again.run()
    report = again.report()
    assert judged(report).equals(judged(first.report()))
    assert report.runs["spent_now"].sum() == 0 and judge_calls(report)["cache_hit"].all()
    # a hit keeps what the call cost when it was made: the batch price
    assert set(judge_calls(report)["price_source"]) == {"catalog batch -50%"}
    assert judge_calls(report)["cost"].sum() == pytest.approx(judge_calls(first.report())["cost"].sum())

    other = SimFleet(latency_scale=0)
    direct = bench(other.catalog(), tmp_path / "other", batch=False)
    await direct.run()
    batched = bench(other.catalog(), tmp_path / "other")  # a batched rerun of a direct race sends no batch
    await batched.run()
    assert not other.batch.batches and batched.report().runs["spent_now"].sum() == 0


async def test_a_rerun_from_the_cache_costs_nothing_and_submits_nothing(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0)
    made = bench(fleet.catalog(), tmp_path / "cache")
    await made.run()
    spent = made.report().runs["spent_now"].sum()
    await made.run()
    assert spent > 0 and made.report().runs["spent_now"].sum() == 0
    assert len(fleet.batch.batches) == 1


# --------------------------------------------------------------------------------- what a batch did not answer


async def test_requests_that_fail_inside_a_batch_are_sent_again_alone(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(error_rate=0.3))
    made = bench(fleet.catalog(), tmp_path / "cache")
    await made.run()
    report = made.report()
    (only,) = fleet.batch.batches.values()
    failed = only.counts["failed"]
    assert 0 < failed < only.counts["total"] and only.error_file_id is not None
    calls = judge_calls(report)
    assert calls["error"].null_count() == calls.height  # every verdict landed
    assert (calls["price_source"] == "catalog").sum() == failed == chat_requests(fleet)  # sent alone: full price
    assert (calls["price_source"] == "catalog batch -50%").sum() == only.counts["completed"]
    (said,) = report.diagnostics().filter(pl.col("kind") == "batch_resent").iter_rows(named=True)
    assert said["entry"] == "sim/oracle" and said["detail"].startswith(f"{failed} verdict requests sent alone")
    direct = bench(SimFleet(latency_scale=0).catalog(), tmp_path / "direct", batch=False)
    await direct.run()
    assert judged(report).equals(judged(direct.report()))


@pytest.mark.parametrize("reached", [0, 4])
async def test_an_expired_batch_sends_what_it_did_not_reach_alone(tmp_path: Path, reached: int) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(expire_after=reached))
    made = bench(fleet.catalog(), tmp_path / "cache")
    await made.run()
    (only,) = fleet.batch.batches.values()
    assert only.status == "expired" and only.counts["completed"] == reached
    calls = judge_calls(made.report())
    assert (calls["price_source"] == "catalog batch -50%").sum() == reached
    assert chat_requests(fleet) == calls.height - reached and calls["error"].null_count() == calls.height
    said = made.report().diagnostics().filter(pl.col("kind") == "batch_resent")["detail"].to_list()
    assert len(said) == 1 and said[0].startswith(f"{calls.height - reached} verdict requests sent alone at the full")


async def test_a_cancelled_batch_sends_what_it_did_not_run_alone(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))
    catalog = fleet.catalog()
    made = bench(catalog, tmp_path / "cache")
    racing = asyncio.create_task(made.run())
    await until(lambda: any(b.looks >= 3 for b in fleet.batch.batches.values()))
    (only,) = fleet.batch.batches.values()
    client = openai.AsyncOpenAI(base_url=catalog["sim/oracle"].base_url, api_key="x", http_client=_sim_http())
    cancelled = await client.batches.cancel(only.id)  # the user cancels it (the dashboard, a script)
    assert cancelled.status == "cancelling"
    only.options = dataclasses.replace(only.options, polls=2 * (only.looks - 1))  # about half of it has run
    await racing
    assert only.status == "cancelled" and 0 < only.counts["completed"] < only.counts["total"]
    calls = judge_calls(made.report())
    assert chat_requests(fleet) == only.counts["total"] - only.counts["completed"]
    assert calls["error"].null_count() == calls.height


def _sim_http() -> Any:
    import httpx2

    from gradebench._calls.session import mounted, origin

    return httpx2.AsyncClient(transport=mounted()[origin(gb.sim.DEFAULT_BASE_URL)])


async def test_a_batch_that_cannot_be_submitted_fails_each_verdict_saying_why(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    judge = dataclasses.replace(catalog["sim/oracle"], base_url="http://no-batches.gradebench.invalid/v1")
    import httpx2

    def no_batches(request: httpx2.Request) -> httpx2.Response:
        if "/files" in request.url.path:
            return httpx2.Response(404, json={"error": {"message": "Not found", "type": "invalid_request_error"}})
        return httpx2.Response(500)

    mount(judge.base_url, httpx2.MockTransport(no_batches))
    entries = [judge if e.name == judge.name else e for e in catalog.entries]
    rebuilt = gb.Catalog(entries, grades=catalog.grades, picks=catalog.picks, ceiling=catalog.ceiling_name)
    made = bench(rebuilt, tmp_path / "cache", inputs=1, runs=1)
    await made.run()
    errors = made.report().runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"].drop_nulls().to_list()
    assert errors and all("the batch could not be submitted" in e and "404" in e for e in errors)
    assert not list((tmp_path / "cache" / "batches").glob("*.json"))


# ------------------------------------------------------------------------------------- a batch outlives its race


async def test_a_stopped_race_picks_up_its_batch_when_run_again(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))
    catalog = fleet.catalog()
    racing = asyncio.create_task(bench(catalog, tmp_path / "cache").run())
    notes = tmp_path / "cache" / "batches"
    await until(lambda: noted(notes))
    racing.cancel()  # a notebook stopped while its batch runs
    with pytest.raises(asyncio.CancelledError):
        await racing
    (only,) = fleet.batch.batches.values()
    assert only.status == "in_progress" and len(list(notes.glob("*.json"))) == 1
    only.options = dataclasses.replace(only.options, polls=1)  # ... and the provider finishes it overnight

    again = bench(catalog, tmp_path / "cache")
    await again.run()
    report = again.report()
    assert len(fleet.batch.batches) == 1 and chat_requests(fleet) == 0  # collected, not asked again
    assert not list(notes.glob("*.json"))
    calls = judge_calls(report)
    assert not calls["cache_hit"].any() and set(calls["price_source"]) == {"catalog batch -50%"}
    direct = bench(SimFleet(latency_scale=0).catalog(), tmp_path / "direct", batch=False)
    await direct.run()
    assert judged(report).equals(judged(direct.report()))


async def _stopped_with_a_note(fleet: SimFleet, cache: Path) -> Path:
    """A race stopped while its batch runs: the note it left."""
    racing = asyncio.create_task(bench(fleet.catalog(), cache).run())
    notes = cache / "batches"
    await until(lambda: noted(notes))
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing
    (note,) = notes.glob("*.json")
    return note


@pytest.mark.parametrize("found", [True, False])
async def test_a_batch_noted_while_it_was_being_created_is_found_by_its_tag(tmp_path: Path, found: bool) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))
    note = await _stopped_with_a_note(fleet, tmp_path / "cache")
    (only,) = fleet.batch.batches.values()
    only.options = fleet.batch.with_options(polls=1)  # it finishes, and so would a new one
    noted = {**json.loads(note.read_text()), "batch_id": None}  # the process died before it noted the id
    if not found:  # ... and before the batch was made: no batch carries its tag
        noted["tag"] = "gb-0000000000000000"
        note.unlink()
        note = note.with_name("gb-0000000000000000.json")
    note.write_text(json.dumps(noted))
    again = bench(fleet.catalog(), tmp_path / "cache")
    await again.run()
    assert len(fleet.batch.batches) == (1 if found else 2) and chat_requests(fleet) == 0
    assert judge_calls(again.report())["error"].null_count() == judge_calls(again.report()).height
    assert not list(note.parent.glob("*.json"))


async def test_a_batch_the_provider_does_not_know_is_asked_again_in_a_new_one(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))
    note = await _stopped_with_a_note(fleet, tmp_path / "cache")
    note.write_text(json.dumps({**json.loads(note.read_text()), "batch_id": "batch_of_another_account"}))
    fleet.batch.with_options(polls=1)
    again = bench(fleet.catalog(), tmp_path / "cache")
    await again.run()
    assert len(fleet.batch.batches) == 2 and chat_requests(fleet) == 0
    assert [b.status for b in fleet.batch.batches.values()] == ["in_progress", "completed"]
    assert judge_calls(again.report())["error"].null_count() == judge_calls(again.report()).height


async def test_a_killed_process_leaves_its_batch_to_the_next_one(tmp_path: Path) -> None:
    from gradebench import jobs  # noqa: F401  (the server answers the example jobs by their policies)

    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))
    cache, notes = tmp_path / "cache", tmp_path / "cache" / "batches"
    async with await start_server(fleet=fleet) as server:
        first = await _child(server.base_url, cache, batch=True)
        await until(lambda: any(b.looks >= 2 for b in fleet.batch.batches.values()))  # noted, and looked at
        assert noted(notes)
        first.kill()  # kill -9 while it waits for its batch
        await first.wait()
        (only,) = fleet.batch.batches.values()
        assert only.status == "in_progress"
        only.options = dataclasses.replace(only.options, polls=1)

        # the next races need no process of their own: they run here (no import of gradebench paid again)
        collected = json.loads(await race(server.base_url, str(cache), batch=True))
        assert len(fleet.batch.batches) == 1 and chat_requests(fleet) == 0
        assert collected["judge_spent"] > 0 and collected["judge_cached"] == 0 and not list(notes.glob("*.json"))
        rerun = json.loads(await race(server.base_url, str(cache), batch=True))
        assert rerun["spent"] == 0 and rerun["judge_cached"] == rerun["judge_calls"]
        direct = json.loads(await race(server.base_url, str(tmp_path / "direct"), batch=False))
    assert collected["digest"] == rerun["digest"] == direct["digest"]


async def _child(base_url: str, cache: Path, *, batch: bool) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADEBENCH_SIM_LATENCY_SCALE": "0"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.batch_child",
        base_url,
        str(cache),
        "1" if batch else "0",
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


# ------------------------------------------------------------------------- every way of judging, batched


async def test_the_swap_check_a_panel_and_judge_noise_batch_as_they_judge_alone(tmp_path: Path) -> None:
    def panel(fleet: SimFleet, cache: Path, batch: bool) -> gb.Benchmark:
        made = bench(fleet.catalog(), cache, inputs=2, runs=1, batch=batch, judges=["sim/oracle", "sim/sage"])
        return made.set_spec(judge_swap=True)

    direct_fleet, batch_fleet = SimFleet(latency_scale=0), SimFleet(latency_scale=0)
    direct, batched = panel(direct_fleet, tmp_path / "d", False), panel(batch_fleet, tmp_path / "b", True)
    await direct.run()
    await batched.run()
    assert judged(batched.report()).equals(judged(direct.report()))
    kept = ["run_id", "judge_entry", "score", "accuracy", "work", "reason", "judge_path", "swap_gap"]
    each = [r.report().verdicts.select(kept).sort("run_id", "judge_entry") for r in (batched, direct)]
    assert each[0].equals(each[1]) and each[0].height == 2 * 6 and each[0]["swap_gap"].null_count() == 0
    models = sorted(b.lines[0]["body"]["model"] for b in batch_fleet.batch.batches.values())
    assert models == ["sim-oracle-1", "sim-sage-1"]  # one model a batch: one batch per judge
    assert all(b.counts["total"] == 2 * 2 * 3 for b in batch_fleet.batch.batches.values())  # both orders

    noisy = await batched.judge_noise(k=2)
    quiet = await direct.judge_noise(k=2)
    assert noisy.noise.sort("run_id")["replicas"].to_list() == quiet.noise.sort("run_id")["replicas"].to_list()
    assert len(batch_fleet.batch.batches) == 4  # the replicas: a batch per judge again


async def test_a_race_to_a_verdict_batches_each_wave_and_draws_as_the_direct_race(tmp_path: Path) -> None:
    made = {}
    for batch in (False, True):
        fleet = SimFleet(latency_scale=0)
        made[batch] = bench(fleet.catalog(), tmp_path / str(batch), inputs=6, runs="auto", max_runs=12, batch=batch)
        await made[batch].run()
    a, b = made[False].report(), made[True].report()
    assert a.meta.units == b.meta.units and a.meta.stops == b.meta.stops and judged(a).equals(judged(b))
    waves = len({(r["input_id"], r["repeat"]) for r in b.runs.filter(pl.col("role") == Role.CANDIDATE).to_dicts()})
    assert 2 <= len(fleet.batch.batches) <= waves  # a batch a wave: each wave waits for its verdicts


async def test_a_rejudge_goes_in_one_batch_at_the_batch_price(tmp_path: Path) -> None:
    fleet = SimFleet(latency_scale=0)
    made = bench(fleet.catalog(), tmp_path / "cache", batch=False)
    await made.run()
    rubric = "A good answer names the order's status."
    judging = gb.JudgeSpec(rubric=rubric)
    direct_estimate = await estimate_rejudge(made.report(), fleet.catalog(), judging, cache=made.cache)
    estimate = await estimate_rejudge(made.report(), fleet.catalog(), judging.replace(batch=True), cache=made.cache)
    assert estimate.cost == pytest.approx(direct_estimate.cost / 2) and estimate.cached == 0
    made.set_spec(judge_batch=True)
    again = await made.rejudge(judging)
    (only,) = fleet.batch.batches.values()
    assert only.counts["total"] == judge_calls(again).filter(~pl.col("cache_hit")).height
    assert again.meta.spec.judge_batch is True


async def test_a_budget_with_a_batched_judge_spends_in_steps_and_buys_more_runs(tmp_path: Path) -> None:
    def spent(report: gb.BenchmarkReport) -> float:
        return report.runs["spent_now"].sum() + judge_calls(report).filter(~pl.col("cache_hit"))["cost"].sum()

    made = {}
    for batch in (False, True):
        fleet = SimFleet(latency_scale=0)
        made[batch] = bench(fleet.catalog(), tmp_path / str(batch), inputs=4, budget=0.05, batch=batch)
        await made[batch].run()
        assert spent(made[batch].report()) <= 0.05 and made[batch].report().meta.stopped == "budget"
    # a run's reservation settles only when its verdict lands: the race goes a batch at a time, never stuck
    assert len(fleet.batch.batches) >= 2
    candidates = [made[b].report().runs.filter(pl.col("role") == Role.CANDIDATE).height for b in (False, True)]
    assert candidates[1] > candidates[0]  # the batch price leaves money for more runs


# ----------------------------------------------------------------------------------------------- configuration


def test_the_batch_fields_of_a_catalog_are_checked_naming_the_field(tmp_path: Path) -> None:
    base = {"grades": ["large"], "ceiling": "a/j", "picks": {"large": "a/j"}}
    entry = {"name": "a/j", "model": "j-1", "grade": "large", "base_url": "http://x.invalid/v1"}
    entry |= {"price_in": 1.0, "price_out": 2.0}
    made = gb.Catalog.from_dict({**base, "entries": [{**entry, "batch": "anthropic", "batch_discount": 0.4}]})
    assert made["a/j"].batch == "anthropic" and made["a/j"].cost(10**6, 0, batch=True) == pytest.approx(0.6)
    for bad, field in ({"batch": "azure"}, "batch"), ({"batch_discount": 1.5}, "batch_discount"):
        with pytest.raises(gb.CatalogError) as caught:
            gb.Catalog.from_dict({**base, "entries": [{**entry, **bad}]})
        assert caught.value.field == field and field in str(caught.value)
    with pytest.raises(gb.CatalogError, match="'batch' must be one of openai, anthropic, openrouter"):
        gb.Catalog([gb.Entry(**entry, batch="azure")], grades=["large"], picks={}, ceiling="a/j")


def test_batch_prices_come_from_the_price_database_where_it_has_a_batch_rate() -> None:
    priced = gb.Entry(name="o/mini", model="gpt-4o-mini", grade="s", base_url="x", price_in=None, price_out=None)
    priced = dataclasses.replace(priced, provider="openai")
    assert priced.cost(10**6, 10**6, batch=True) == pytest.approx(priced.cost(10**6, 10**6) / 2)
    assert priced.batch_price_source.endswith(" batch") and priced.batch_price_source.startswith("genai-prices")
    told = dataclasses.replace(priced, batch_discount=0.25)  # the entry's own discount wins
    assert told.cost(10**6, 10**6, batch=True) == pytest.approx(told.cost(10**6, 10**6) * 0.75)
    assert told.batch_price_source.endswith("batch -25%")
    proxied = dataclasses.replace(priced, model="openai/gpt-4o-mini", provider="openrouter")  # no batch rate
    assert proxied.batch_price_source.endswith("batch -50%")
    assert proxied.cost(1000, 1000, batch=True) == pytest.approx(proxied.cost(1000, 1000) / 2)


def test_judge_batch_is_a_spec_field_a_run_config_key_and_a_report_keeps_it(tmp_path: Path) -> None:
    from gradebench._cli.runconfig import load_config

    config = tmp_path / "run.toml"
    config.write_text('job = "order-agent"\ninputs = "example:orders"\njudge_batch = true\n')
    assert load_config(config).spec.judge_batch is True
    config.write_text('job = "order-agent"\ninputs = "example:orders"\njudge_batch = "yes"\n')
    with pytest.raises(gb.ConfigError, match="judge_batch"):
        load_config(config)
    spec = gb.RaceSpec(judge_batch=True)
    assert gb.RaceSpec.from_dict(spec.to_dict()) == spec


def test_the_demo_and_a_rejudge_batch_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gradebench._cli.main import main

    out = tmp_path / "demo"
    assert main(["demo", "--judge-batch", "--runs", "1", "--inputs", "2", "--out", str(out)]) == 0
    assert "judged by sim/oracle through its Batch API" in capsys.readouterr().out
    assert json.loads((out / "meta.json").read_text())["spec"]["judge_batch"] is True
    calls = pl.read_parquet(out / "calls.parquet").filter(pl.col("role") == Role.JUDGE)
    assert set(calls["price_source"]) == {"catalog batch -50%"}
    again = tmp_path / "again"
    assert main(["rejudge", str(out), "--rubric", "Name the order's status.", "--out", str(again)]) == 0
    assert json.loads((again / "meta.json").read_text())["spec"]["judge_batch"] is True  # as the report's race judged
    rejudged = pl.read_parquet(again / "calls.parquet").filter((pl.col("role") == Role.JUDGE) & ~pl.col("cache_hit"))
    assert rejudged.height > 0 and set(rejudged["price_source"]) == {"catalog batch -50%"}


async def test_a_batch_is_cut_at_the_most_requests_its_api_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradebench._calls.batch.api import OpenAIBatches

    monkeypatch.setattr(OpenAIBatches, "max_requests", 4)  # OpenAI's is 50,000: the race holds its batch open till then
    fleet = SimFleet(latency_scale=0)
    made = bench(fleet.catalog(), tmp_path / "cache")
    await made.run()
    sizes = sorted(b.counts["total"] for b in fleet.batch.batches.values())
    assert sum(sizes) == judge_calls(made.report()).height and max(sizes) == 4 and len(sizes) >= 4
    direct = bench(SimFleet(latency_scale=0).catalog(), tmp_path / "direct", batch=False)
    await direct.run()
    assert judged(made.report()).equals(judged(direct.report()))
