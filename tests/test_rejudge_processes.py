"""Two rejudges of one report on one cache, started at once, each in a process of its own (`gradebench.rejudge_report`
in the test's process or in `tests/rejudge_child.py`, and the `gradebench rejudge` command): the second waits for the
first's hold on that report's judging, then is served its verdicts from the cache, so each verdict is paid once — one
request sent alone, or one batch — and both reports agree. The judge is the simulated fleet served over loopback in the
test's process, which holds the first rejudge mid-way until the second has shown what it does, and counts what it was
asked. One of the two runs in the test's process where it can (the first, held; or the second, waiting, when the first
is killed): a process of its own pays gradebench's import, and the cache's hold is between open files, not processes."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb
from gradebench.jobs import OrderAgent, load_inputs
from gradebench.sim import BatchOptions, SimFleet, start_server

from .rejudge_child import RUBRIC
from .test_processes import WAIT_S, finished, said, until

ROOT = Path(__file__).resolve().parent.parent


def judge_request(request: httpx2.Request) -> bool:
    return request.url.path.endswith("/chat/completions") and request.headers.get("x-gradebench-role") == "judge"


def batch_create(request: httpx2.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith("/batches")


class Holding(SimFleet):
    """The simulated fleet, holding every request ``holds`` picks after the first it answers until released (so a
    rejudge is under way, paying, while another starts); keeps every body it was sent (with the judge-noise replica it
    asks for: a replica's body is its run's), to see one sent twice."""

    def __init__(self, holds: Callable[[httpx2.Request], bool], *, answer_first: bool):
        super().__init__(latency_scale=0)
        self.holds, self.answer_first = holds, answer_first
        self.picked: list[tuple[str, bytes]] = []
        self.release = asyncio.Event()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if self.holds(request):
            self.picked.append((request.headers.get("x-gradebench-sample", ""), await request.aread()))
            if len(self.picked) > 1 or not self.answer_first:
                await self.release.wait()
        return await super().handle(request)

    @property
    def held(self) -> int:
        return 0 if self.release.is_set() else len(self.picked) - self.answer_first

    def asked_twice(self) -> bool:
        return len(self.picked) != len(set(self.picked))


async def raced(folder: Path, inputs: slice = slice(0, 3)) -> Path:
    """A small race's report, written to ``folder`` (raced in-process on a cache of its own: the rejudges below pay
    for their verdicts)."""
    catalog, cache = gb.sim.catalog(latency_scale=0), folder / "race-cache"
    bench = gb.Benchmark(OrderAgent, runs=1, catalog=catalog, grade="standard", cache=cache, progress=False)
    bench = bench.set_spec(candidates=["sim/swift", "sim/steady"]).set_inputs(load_inputs("orders")[inputs])
    await bench.run()
    bench.report().to_parquet(folder / "report")
    return folder / "report"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The race every rejudge below starts from, raced once for the module (each test only reads it)."""
    return asyncio.run(raced(tmp_path_factory.mktemp("raced")))


async def command(base_url: str, report: Path, cache: Path, out: Path) -> asyncio.subprocess.Process:
    """``gradebench rejudge`` with a new rubric, its catalog the fleet at ``base_url`` (`tests/served_sim.py`)."""
    argv = ["rejudge", str(report), "--rubric", RUBRIC, "--catalog", "tests.served_sim:catalog"]
    argv += ["--cache", str(cache), "--out", str(out)]
    return await process(["-m", "gradebench", *argv], GRADEBENCH_TEST_SIM_URL=base_url)


async def here(base_url: str, report: Path, cache: Path, out: Path, *, batch: bool) -> None:
    """What `child` runs, in the test's process."""
    catalog = gb.sim.catalog(base_url=base_url, latency_scale=0)
    made = gb.BenchmarkReport.read_parquet(report)
    judging = gb.JudgeSpec(rubric=RUBRIC, batch=batch)
    (await gb.rejudge_report(made, catalog, judging, cache=cache, progress=False)).to_parquet(out)


async def child(base_url: str, report: Path, cache: Path, out: Path, *, batch: bool) -> asyncio.subprocess.Process:
    """`gradebench.rejudge_report` with a new rubric (`tests/rejudge_child.py`), ``batch``: through the Batch API."""
    argv = ["-m", "tests.rejudge_child", base_url, str(report), str(cache), str(out), "1" if batch else "0"]
    return await process(argv)


async def process(argv: list[str], **env: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def second_waits_or_pays(second: asyncio.subprocess.Process, fleet: Holding, enough: Callable[[], bool]) -> str:
    """What the second process said up to saying it waits; or, as soon as it asks what the first asks (``enough``),
    an empty string: it did not wait."""
    waiting = asyncio.create_task(said(second, "waiting for it"))
    await until(lambda: waiting.done() or enough())
    if not waiting.done():
        waiting.cancel()
        return ""
    return waiting.result()


async def both_done(*processes: asyncio.subprocess.Process) -> None:
    for code, _, err in [await finished(p) for p in processes]:
        assert code == 0, err


def verdicts(out: Path) -> pl.DataFrame:
    runs = pl.read_parquet(out / "runs.parquet").filter(pl.col("role") == "candidate")
    return runs.select("run_id", "score", "reason").sort("run_id")


def judge_calls(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "calls.parquet").filter(pl.col("role") == "judge")


def judge_bodies(fleet: SimFleet) -> list[str]:
    """Every judge request the fleet answered sent alone, as sent (with the judge-noise replica it asks for)."""
    return [
        r.headers.get("x-gradebench-sample", "") + repr(r.body)
        for r in fleet.requests
        if r.path.endswith("/chat/completions") and r.headers.get("x-gradebench-role") == "judge"
    ]


async def test_two_rejudges_of_one_report_pay_each_verdict_once_and_agree(tmp_path: Path, report: Path) -> None:
    fleet = Holding(judge_request, answer_first=True)
    cache, one, two = tmp_path / "cache", tmp_path / "one", tmp_path / "two"
    async with await start_server(fleet=fleet) as server:
        try:  # the first calls rejudge_report here, the second is the command
            first = asyncio.create_task(here(server.base_url, report, cache, one, batch=False))
            await until(lambda: fleet.held >= 1 or first.done())  # the first is judging: one verdict paid, more asked
            second = await command(server.base_url, report, cache, two)
            waited = await second_waits_or_pays(second, fleet, fleet.asked_twice)
        finally:
            fleet.release.set()
        await first
        await both_done(second)
    sent = judge_bodies(fleet)
    assert len(sent) == len(set(sent)), "a verdict was asked twice"
    assert "another process is rejudging report" in waited and "with sim/oracle" in waited
    paid = judge_calls(one).filter(~pl.col("cache_hit"))
    assert len(sent) == paid.height > 0
    assert judge_calls(two)["cache_hit"].all()  # the second paid nothing: it was served the first's verdicts
    assert verdicts(one).equals(verdicts(two))


async def test_two_batched_rejudges_of_one_report_submit_one_batch_and_agree(tmp_path: Path, report: Path) -> None:
    fleet = Holding(batch_create, answer_first=False)  # the first's batch is created once the second has started
    cache, one, two = tmp_path / "cache", tmp_path / "one", tmp_path / "two"
    async with await start_server(fleet=fleet) as server:
        try:
            first = asyncio.create_task(here(server.base_url, report, cache, one, batch=True))
            await until(lambda: fleet.held >= 1 or first.done())  # the first is creating its batch
            second = await child(server.base_url, report, cache, two, batch=True)
            waited = await second_waits_or_pays(second, fleet, lambda: len(fleet.picked) >= 2)
        finally:
            fleet.release.set()
        await first
        await both_done(second)
    assert len(fleet.batch.batches) == 1, "a second batch was submitted"
    assert "another process is rejudging report" in waited
    (only,) = fleet.batch.batches.values()
    assert not judge_bodies(fleet)  # nothing sent alone
    assert only.counts["total"] == judge_calls(one).filter(~pl.col("cache_hit")).height > 0
    assert judge_calls(two)["cache_hit"].all()
    assert verdicts(one).equals(verdicts(two))


async def test_a_waiting_rejudge_takes_up_the_batch_of_a_first_killed_while_it_runs(
    tmp_path: Path, report: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=10**9))  # its batch runs until the test lets it end
    cache, two = tmp_path / "cache", tmp_path / "two"
    async with await start_server(fleet=fleet) as server:
        first = await child(server.base_url, report, cache, tmp_path / "one", batch=True)
        await until(lambda: any(b.looks >= 2 for b in fleet.batch.batches.values()))  # noted with its id
        second = asyncio.create_task(here(server.base_url, report, cache, two, batch=True))
        await until(lambda: "waiting for it" in caplog.text or second.done())
        first.kill()  # kill -9 while its batch runs: its hold goes with it, its note stays
        await first.wait()
        (only,) = fleet.batch.batches.values()
        only.options = dataclasses.replace(only.options, polls=1)
        await asyncio.wait_for(second, WAIT_S)
    assert "another process is rejudging report" in caplog.text
    assert len(fleet.batch.batches) == 1 and not judge_bodies(fleet)  # the second collected the first's batch
    paid = judge_calls(two).filter(~pl.col("cache_hit"))
    assert only.counts["total"] == paid.height > 0 and paid["error"].null_count() == paid.height
    assert not list((cache / "batches").glob("*.json"))  # collected: its note is dropped


async def test_a_rejudge_by_another_judge_or_of_another_report_does_not_wait(
    tmp_path: Path, report: Path, caplog: pytest.LogCaptureFixture
) -> None:
    made = gb.BenchmarkReport.read_parquet(report)
    other = gb.BenchmarkReport.read_parquet(await raced(tmp_path / "other", slice(3, 5)))
    mine = set(made.runs["run_id"])

    def its_judging(request: httpx2.Request) -> bool:  # the first rejudge's verdicts alone: by its judge, of its runs
        return (
            judge_request(request)
            and b"sim-oracle-1" in request.content
            and request.headers["x-gradebench-run"] in mine
        )

    fleet = Holding(its_judging, answer_first=True)
    async with await start_server(fleet=fleet) as server:
        catalog = gb.sim.catalog(base_url=server.base_url, latency_scale=0)

        def rejudge(made: gb.BenchmarkReport, judge: str | None = None) -> Any:
            judging = gb.JudgeSpec(rubric=RUBRIC, judge=judge)
            return gb.rejudge_report(made, catalog, judging, cache=tmp_path / "cache", progress=False)

        held = asyncio.create_task(rejudge(made))
        try:
            await until(lambda: fleet.held >= 1)
            by_another = await asyncio.wait_for(rejudge(made, "sim/sage"), 60)
            of_another = await asyncio.wait_for(rejudge(other), 60)
            assert not held.done()  # both were judged while the first still held its own
        finally:
            fleet.release.set()
        first = await held
    assert "waiting for it" not in caplog.text
    assert [r.meta.judge_entry for r in (first, by_another, of_another)] == ["sim/oracle", "sim/sage", "sim/oracle"]
    assert judge_calls_of(by_another)["cache_hit"].not_().all() and judge_calls_of(of_another)["cache_hit"].not_().all()


def judge_calls_of(report: gb.BenchmarkReport) -> pl.DataFrame:
    return report.calls.filter(pl.col("role") == "judge")


async def test_two_judge_noise_measures_of_one_report_on_one_cache_pay_each_replica_once_and_agree(
    tmp_path: Path, report: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Two measures at once in one process: the hold is a lock on a file of the cache folder, taken by each through an
    # open file of its own, so the second waits on the first as a second process does (no subprocess's import paid).
    made = gb.BenchmarkReport.read_parquet(report)
    fleet = Holding(judge_request, answer_first=True)
    async with await start_server(fleet=fleet) as server:
        catalog = gb.sim.catalog(base_url=server.base_url, latency_scale=0)

        def measure() -> Any:
            return gb.judge_noise_report(made, catalog, k=2, cache=tmp_path / "cache", progress=False)

        first = asyncio.create_task(measure())
        try:
            await until(lambda: fleet.held >= 1)  # the first is judging: one replica paid, more asked
            second = asyncio.create_task(measure())
            await until(lambda: "waiting for it" in caplog.text or fleet.asked_twice() or second.done())
            assert not fleet.asked_twice() and not second.done()
        finally:
            fleet.release.set()
        one, two = await first, await second
    assert "another process is measuring the judge noise of report" in caplog.text and "with sim/oracle" in caplog.text
    sent = judge_bodies(fleet)
    assert len(sent) == len(set(sent)) == 2 * made.runs.filter(role="candidate").height > 0  # each replica once
    assert one.noise.height > 0 and one.noise.equals(two.noise)
