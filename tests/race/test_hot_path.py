"""What a call costs on the hot path, and what it does not do twice: its body is encoded once (the record's text
goes on the wire as it is), a body in the spool file is not compressed, and the table is not laid out for a log that
would not show it; the judge parses a run's call bodies once for both orders, and a server's URL is parsed once."""

from __future__ import annotations

import datetime
import gc
import logging
import tracemalloc
import weakref
from types import SimpleNamespace
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._calls import servers
from gradebench._records import spool as spool_module
from gradebench._records.call import Call
from gradebench._records.codec import PACK_FROM, SPOOLED_PACK_FROM, pack, unpack
from gradebench._records.spool import Spool, body_bytes
from gradebench.sim import SimFleet

from ..loopback import QUESTION, catalog, entry
from ..providers import JudgeEndpoint, OpenAIEndpoint, serve


class RawEndpoint(OpenAIEndpoint):
    """An OpenAI endpoint that also keeps each request's bytes as they came."""

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.raw: list[bytes] = []

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.raw.append(request.content)
        return await super().handle(request)


def answer_with(**params: Any) -> Any:
    async def answer(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer the customer's question in one sentence."""
        return (await seat.chat([{"role": "user", "content": input["question"]}], **params)).text

    return answer


async def race_on(endpoint: RawEndpoint, tmp_path: Any, job: Any) -> gb.BenchmarkReport:
    async with serve({"mid-1": endpoint, "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("acme/mid", "mid-1", base_url), reference="acme/mid")
        bench = gb.Benchmark(job, catalog=cat, grade="standard", runs=1, cache=tmp_path, progress=False, controls=0)
        await bench.set_input(QUESTION).run()
    return bench.report()


async def test_a_request_goes_on_the_wire_as_the_bytes_its_record_keeps(tmp_path) -> None:
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    report = await race_on(endpoint, tmp_path, answer_with(temperature=0.5))
    kept = report.calls.filter(pl.col("role") != "judge")["request"].to_list()
    assert len(endpoint.raw) == len(kept) >= 1
    assert sorted(endpoint.raw) == sorted(text.encode() for text in kept)  # encoded once: the record's text was sent
    assert endpoint.bodies[0]["temperature"] == 0.5 and endpoint.bodies[0]["messages"][0]["content"].startswith("Order")


async def test_a_body_that_is_not_plain_json_is_still_encoded_by_the_sdk(tmp_path) -> None:
    # a value JSON cannot hold is written as its str in the record, but the SDK sends a date as ISO text
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    when = datetime.datetime(2026, 12, 2, 8, 30)
    report = await race_on(endpoint, tmp_path, answer_with(metadata={"asked_at": when}))
    (call,) = report.calls_for(report.runs["run_id"][0], role="reference")
    assert call.request["metadata"] == {"asked_at": "2026-12-02 08:30:00"}
    assert endpoint.bodies[0]["metadata"] == {"asked_at": "2026-12-02T08:30:00"}
    assert endpoint.raw[0] != call.request_json.encode()


async def test_the_table_is_laid_out_only_for_a_log_that_shows_it(tmp_path, monkeypatch, caplog) -> None:
    laid_out: list[int] = []
    table = gb.BenchmarkReport.table

    def counted(self: gb.BenchmarkReport, width: int | None = None) -> str:
        laid_out.append(1)
        return table(self, width)

    monkeypatch.setattr(gb.BenchmarkReport, "table", counted)
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    logging.getLogger("gradebench").setLevel(logging.WARNING)
    try:
        await race_on(endpoint, tmp_path / "quiet", answer_with())
    finally:
        logging.getLogger("gradebench").setLevel(logging.NOTSET)
    assert laid_out == []
    with caplog.at_level(logging.INFO, logger="gradebench"):
        report = await race_on(endpoint, tmp_path / "told", answer_with())
    assert laid_out == [1] and report.table() in caplog.text


def test_a_body_in_the_spool_file_is_compressed_only_when_long() -> None:
    store = spool_module.spool()
    assert store.writable
    judge_sized = "{" + "x" * 3000 + "}"  # a judge's request of a small race: 3 kB
    before = store.size
    kept = pack(judge_sized)
    assert body_bytes(kept)[:1] == b"=" and store.size == before + len(judge_sized) + 1
    assert unpack(kept) == judge_sized
    long = "{" + "y" * SPOOLED_PACK_FROM + "}"
    kept = pack(long.encode())
    assert body_bytes(kept)[:1] == b"z" and len(kept) < 1000 and unpack(kept) == long


def test_a_body_that_stays_on_the_heap_is_compressed_as_before(tmp_path, monkeypatch, caplog) -> None:
    broken = Spool(str(tmp_path / "no such folder"))  # the spool cannot be written: bodies stay in memory
    assert not broken.writable
    monkeypatch.setattr(spool_module, "spool", lambda: broken)
    monkeypatch.setattr("gradebench._records.codec.spool", lambda: broken)
    text = "{" + "x" * PACK_FROM + "}"
    kept = pack(text)
    assert isinstance(kept, bytes) and kept[:1] == b"z" and unpack(kept) == text


@pytest.fixture(autouse=True)
def _quiet_log_level():
    yield
    logging.getLogger("gradebench").setLevel(logging.NOTSET)


def test_a_spooled_body_keeps_a_handle_of_80_bytes(tmp_path) -> None:
    store = Spool(str(tmp_path))
    store.TAIL = 1  # every body straight to the file: what is measured is the handles alone
    bodies = [bytes([i % 256]) * 600 for i in range(1000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        handles = [store.put(body) for body in bodies]
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [h.bytes() for h in handles[::97]] == bodies[::97] and len(handles[5]) == 600
    assert kept / len(handles) < 100  # the handle and one int for where and how long (three fields cost 112 + 8)
    store.close()


async def test_the_verdicts_of_a_race_keep_one_copy_of_the_judges_params(tmp_path) -> None:
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    async with serve({"mid-1": endpoint, "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("acme/mid", "mid-1", base_url), reference="acme/mid")
        bench = gb.Benchmark(answer_with(), catalog=cat, grade="standard", runs=3, cache=tmp_path, progress=False)
        await bench.set_input(QUESTION).run()
    verdicts = [r.verdict for r in bench.report().to_runs() if r.verdict is not None]
    assert len(verdicts) >= 3 and all(v.params is verdicts[0].params for v in verdicts)
    assert verdicts[0].params == dict(bench.report().meta.judge_params)


async def test_a_race_leaves_no_reference_cycles_per_call_for_the_collector(tmp_path) -> None:
    # garbage in cycles waits for a full collection, which a large process makes rarely: it grew a race by ~1 MB per
    # 1,000 runs (a nested function that calls itself, made for every response read and every grading)
    async def one_call(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer in one line."""
        return (await seat.chat([{"role": "user", "content": f"Question {input['id']}: one line."}])).text

    def race(runs: int, cache: str) -> gb.Benchmark:
        catalog = SimFleet(latency_scale=0, record=False).catalog()  # its log of requests is a test seam
        bench = gb.Benchmark(
            one_call, runs=runs, catalog=catalog, grade="standard", cache=tmp_path / cache, progress=False, controls=0
        )
        bench.set_spec(candidates=["sim/swift"])
        return bench.set_input({"id": "q"})

    async def cyclic_after(runs: int) -> int:
        gc.collect()
        gc.disable()
        try:
            await race(runs, f"runs{runs}").run()
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            # not the weak references sqlite keeps to its cursors: it prunes them every 200, whatever the race's size
            return sum(not isinstance(found, weakref.ref) for found in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()

    await race(2, "warm").run()  # what is made once (imports, caches) is not the race's per call
    few, many = await cyclic_after(10), await cyclic_after(70)
    assert many - few < 20, (few, many)  # 120 calls and 60 verdicts more: a cycle per call would be 120 objects


async def test_the_judge_parses_each_call_of_a_run_once_for_both_orders(tmp_path, monkeypatch) -> None:
    # a verdict lays out the run's transcript and the names to redact from its calls' bodies, kept packed: parsing
    # them once for both (and once for both orders), not once for each, is a few microseconds on every call
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    parsed: dict[tuple[str, str], int] = {}

    def counting(name: str) -> property:
        read = getattr(Call, name).fget

        def counted(call: Call) -> Any:
            if call.role is Role.CANDIDATE:
                parsed[call.run_id, name] = parsed.get((call.run_id, name), 0) + 1
            return read(call)

        return property(counted)

    monkeypatch.setattr(Call, "request", counting("request"))
    monkeypatch.setattr(Call, "response", counting("response"))
    async with serve({"mid-1": endpoint, "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("acme/mid", "mid-1", base_url), reference="acme/mid")
        bench = gb.Benchmark(
            answer_with(), catalog=cat, grade="standard", runs=3, cache=tmp_path, progress=False, controls=0
        )
        await bench.set_spec(judge_swap=True).set_input(QUESTION).run()
    judged = [r for r in bench.report().to_runs() if r.role is Role.CANDIDATE and r.verdict is not None]
    assert len(judged) == 3 and all(r.verdict.score is not None for r in judged)
    assert parsed and set(parsed.values()) == {1}, parsed


async def test_a_servers_base_url_is_parsed_once_not_on_every_call(tmp_path, monkeypatch) -> None:
    # whether a server is local is asked before every model call (its cap of requests at once): parsing its URL each
    # time cost ~0.013 ms a call, over 1% of gradebench's own work on one
    endpoint = RawEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."))
    urls: list[str] = []

    def counted(url: str) -> httpx2.URL:
        urls.append(url)
        return httpx2.URL(url)

    monkeypatch.setattr(servers, "httpx2", SimpleNamespace(URL=counted))
    async with serve({"mid-1": endpoint, "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("acme/mid", "mid-1", base_url), reference="acme/mid")
        bench = gb.Benchmark(answer_with(), catalog=cat, grade="standard", runs=5, cache=tmp_path, progress=False)
        await bench.set_input(QUESTION).run()
    assert len(endpoint.raw) >= 6  # the reference and five runs, each asked first whether its server is local
    assert len(urls) == len(set(urls)) <= 2, urls  # the candidates' and the judge's base URLs, at most once each
