"""The spool: a race's call bodies live in a file, not the heap, and read back byte for byte."""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import gc
import logging
import multiprocessing
import os
import pickle
import threading
import tracemalloc
from pathlib import Path

import pytest

import gradebench as gb
from gradebench._records import codec as _codec
from gradebench._records import spool as _spool
from gradebench._records.records import Call
from gradebench._records.spool import Spool, Spooled
from gradebench._report import report as _report


def _small_spool(tmp_path: Path, tail: int = 64) -> Spool:
    store = Spool(str(tmp_path))
    store.TAIL = tail  # written to the file every few bodies, so both the tail and the file are read from
    return store


def test_a_body_reads_back_from_the_tail_and_from_the_file(tmp_path: Path) -> None:
    store = _small_spool(tmp_path)
    bodies = [bytes([i % 251]) * (10 + 7 * i) for i in range(40)]
    handles = [store.put(b) for b in bodies]
    handles.append(store.put(b"last"))
    bodies.append(b"last")
    assert all(isinstance(h, Spooled) for h in handles)
    assert store.size == sum(map(len, bodies))
    assert [h.bytes() for h in handles] == bodies  # type: ignore[union-attr]
    assert 0 < store._written < store.size  # some on disk, the last ones still in the tail


def test_a_spooled_body_is_equal_to_its_bytes_and_pickles_as_them(tmp_path: Path) -> None:
    store = _small_spool(tmp_path)
    one, same, other = store.put(b"=abc" * 100), store.put(b"=abc" * 100), store.put(b"=xyz" * 100)
    assert one == same and one == b"=abc" * 100 and one != other
    assert hash(one) == hash(same)
    assert pickle.loads(pickle.dumps(one)) == b"=abc" * 100
    assert type(pickle.loads(pickle.dumps(one))) is bytes  # another process gets the bytes, not an offset


def test_a_call_keeps_its_long_bodies_spooled_and_reads_them_back() -> None:
    words = " ".join(f"word{i * 7919 % 10007}" for i in range(400))  # long and not all one letter: packed > 256 B
    request = {"model": "m", "messages": [{"role": "user", "content": "é " + words}]}
    response = {"choices": [{"message": {"role": "assistant", "content": words}}]}
    call = Call.from_bodies(request=request, response=response, run_id="r", seq=0, role="candidate", entry="e")
    assert isinstance(call.request_packed, Spooled) and isinstance(call.response_packed, Spooled)
    assert call.request == request and call.response == response
    short = Call.from_bodies(request={"m": 1}, response=None, run_id="r", seq=0, role="candidate", entry="e")
    assert type(short.request_packed) is bytes  # a short body costs less kept than its handle saves
    again = pickle.loads(pickle.dumps(call))
    assert again == call and again.request == request


def test_bodies_put_from_many_threads_all_read_back(tmp_path: Path) -> None:
    store = _small_spool(tmp_path, tail=4096)
    got: dict[bytes, object] = {}

    def put(worker: int) -> None:
        for i in range(300):
            body = f"{worker}:{i}:".encode() * (1 + i % 9)
            got[body] = store.put(body)

    threads = [threading.Thread(target=put, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 1800
    assert all(h.bytes() == body for body, h in got.items())  # type: ignore[attr-defined]


def test_a_full_disk_keeps_bodies_in_memory_says_so_once_and_loses_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = _small_spool(tmp_path)
    before = [store.put(b"a" * 40) for _ in range(3)]

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with caplog.at_level(logging.WARNING, logger="gradebench"):
        during = [store.put(b"b" * 40) for _ in range(5)]
    assert [h.bytes() for h in before] == [b"a" * 40] * 3  # type: ignore[union-attr]
    assert all(h == b"b" * 40 for h in during)
    assert any(type(h) is bytes for h in during)  # kept as bytes once the file failed
    assert sum("cannot keep call bodies" in r.message for r in caplog.records) == 1


def test_no_temp_folder_to_write_keeps_every_body_in_memory_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gradebench"):
        store = Spool(str(tmp_path / "no such folder"))
        kept = [store.put(b"c" * 300) for _ in range(3)]
    assert kept == [b"c" * 300] * 3 and all(type(k) is bytes for k in kept)
    said = [r.message for r in caplog.records if "cannot keep call bodies" in r.message]
    assert len(said) == 1 and "no such folder" in said[0] and "TMPDIR" in said[0]


def _child_puts(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    handle = _spool.keep(b"=child " * 100)
    queue.put((os.getpid(), _spool.spool() is not _PARENT_SPOOL, handle.bytes()))  # type: ignore[union-attr]


_PARENT_SPOOL: Spool | None = None


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_writes_its_own_spool_and_the_parents_bodies_stay_whole() -> None:
    global _PARENT_SPOOL
    _PARENT_SPOOL = _spool.spool()
    mine = [_spool.keep(f"=parent {i} ".encode() * 60) for i in range(50)]
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
    child = multiprocessing.get_context("fork").Process(target=_child_puts, args=(queue,))
    child.start()
    pid, own, body = queue.get(timeout=30)
    child.join(30)
    assert pid != os.getpid() and own and body == b"=child " * 100
    later = [_spool.keep(f"=later {i} ".encode() * 60) for i in range(50)]
    assert [h.bytes() for h in mine] == [f"=parent {i} ".encode() * 60 for i in range(50)]  # type: ignore[union-attr]
    assert [h.bytes() for h in later] == [f"=later {i} ".encode() * 60 for i in range(50)]  # type: ignore[union-attr]


def _race(runs: int, cache: Path) -> gb.BenchmarkReport:
    async def one_call(input: dict, seat: gb.Seat) -> str:
        """Answer the question at length."""
        reply = await seat.chat([{"role": "user", "content": f"Question {input['id']}: " + "tell me more. " * 60}])
        return reply.text

    catalog = gb.sim.SimFleet(record=False).catalog()
    bench = gb.Benchmark(one_call, runs=runs, catalog=catalog, grade="standard", cache=cache, progress=False)
    bench.set_input({"id": "q"})
    asyncio.run(bench.run())
    report = bench.report()
    report.table()  # what a race ends with: the table, its diagnostics included
    return report


def _heap_per_run(cache: Path) -> tuple[float, int]:
    """Heap kept per run between a race of 40 runs and one of 160, and the largest judge request of the last run."""
    tracemalloc.start()
    try:
        kept = []
        for runs in (40, 160):
            report = _race(runs, cache / f"cache{runs}")
            gc.collect()
            kept.append((tracemalloc.get_traced_memory()[0], report))
        per_run = (kept[1][0] - kept[0][0]) / (kept[1][1].runs.height - kept[0][1].runs.height)
    finally:
        tracemalloc.stop()
    return per_run, max(len(c.request_json) for c in kept[1][1].calls_for(kept[1][1].runs["run_id"][-1]))


def test_a_races_long_bodies_are_spooled_and_its_table_builds_no_calls_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast slice of the heap measure below: in a small race every long body of every call, the judge's
    included, is a handle into the spool, and the report's table is made from the calls' facts alone."""

    def no_calls_frame(call: Call) -> dict:
        raise AssertionError("the table built the calls frame: every body of the race on the heap at once")

    monkeypatch.setattr(Call, "to_row", no_calls_frame)
    report = _race(3, tmp_path / "cache")  # the table is made here
    calls = [c for run_id in report.runs["run_id"] for c in report.calls_for(run_id)]
    assert {c.role for c in calls} == {"reference", "candidate", "judge"}
    judging = [c for c in calls if c.role == "judge"]
    assert len(judging) >= report.runs.height - 1  # a verdict per candidate run
    assert all(len(c.request_json) > 4000 for c in judging)  # a judge's request holds both transcripts
    kept = [b for c in calls for b in (c.request_packed, c.response_packed) if b is not None]
    assert all(isinstance(b, Spooled) for b in kept if len(b) >= _spool.SPOOL_FROM), [type(b) for b in kept]
    assert all(isinstance(c.request_packed, Spooled) for c in judging)


@pytest.mark.slow
def test_a_race_keeps_little_of_each_run_on_the_heap(tmp_path: Path) -> None:
    """Each run's bodies (a judge's request holds both transcripts: kilobytes) are spooled, and the report's own
    checks never build the calls frame: what a run keeps in Python is its records' small fields (the fleet keeps no
    log of its requests: that log is the test seam's, and grows with the race). Measured in a fresh process: what
    tests before it left in this one (a logger turned up, a registry filled) is not the race's."""
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        per_run, judge_request = pool.submit(_heap_per_run, tmp_path).result(timeout=300)
    assert judge_request > 4000  # the bodies a run would otherwise hold
    assert per_run < 4800, f"{per_run:.0f} bytes of heap kept per run"  # unspooled: over 6,000


def test_a_report_written_and_read_in_parts_is_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _race(6, tmp_path / "cache")
    monkeypatch.setattr(_codec, "FRAME_CHUNK", 4)  # calls.parquet written and read back four calls at a time
    monkeypatch.setattr(_report, "FRAME_CHUNK", 4)
    report.to_parquet(tmp_path / "out")
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / "out" / "calls.parquet").num_row_groups > 1
    back = gb.BenchmarkReport.read_parquet(tmp_path / "out")
    assert back.calls.equals(report.calls)
    assert back.runs.equals(report.runs)
    assert back.table() == report.table()


def test_a_full_spool_file_rotates_and_gives_its_disk_back_once_no_body_is_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import weakref

    monkeypatch.setattr(_spool, "ROTATE_AT", 4096)
    monkeypatch.setattr(_spool, "_spools", {})  # a fresh process's spools
    held = [_spool.keep(bytes([i]) * 1000) for i in range(12)]  # 12 kB: three files
    files = {id(h._spool): h._spool for h in held}  # type: ignore[union-attr]
    assert len(files) == 3
    assert [h.bytes() for h in held] == [bytes([i]) * 1000 for i in range(12)]  # type: ignore[union-attr]
    first = held[0]._spool  # type: ignore[union-attr]
    gone = weakref.ref(first)
    del first, files
    kept = held[5:]
    del held
    gc.collect()
    assert gone() is None  # no body held in the first file: it is closed, and the disk it took is free
    assert [h.bytes() for h in kept] == [bytes([i]) * 1000 for i in range(5, 12)]  # type: ignore[union-attr]
