"""What a large report holds while it is built and written: frames made a part at a time and never copied into one,
``calls.parquet`` written in parts bounded by their bodies, and what every run and call would otherwise hold a copy
of held once (the race's id, the empty list of tool results)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

import gradebench as gb
from gradebench._records import codec
from gradebench._records.call import Call
from gradebench._records.codec import frame, frames, pack
from gradebench._report import report as report_module
from gradebench.sim import SimFleet

SCHEMA = {"n": pl.Int64(), "body": pl.String()}


def test_a_frame_of_many_parts_keeps_them_as_chunks_not_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "FRAME_CHUNK", 10)
    rows = [{"n": i, "body": "x" * i} for i in range(35)]
    made = frame(iter(rows), SCHEMA)
    assert made.n_chunks() == 4  # a copy into one chunk holds the frame twice at its peak
    assert made.to_dicts() == rows
    assert frame([], SCHEMA).columns == ["n", "body"]  # no rows: still every column


def test_parts_are_cut_by_their_weight_as_well_as_their_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "FRAME_CHUNK", 100)
    rows = [{"n": i, "body": "y" * (1000 if i % 5 == 0 else 10)} for i in range(40)]
    parts = list(frames(iter(rows), SCHEMA, weigh=lambda row: len(row["body"]), most_weight=1500))
    weights = [part["body"].str.len_chars().sum() for part in parts]
    # a part closes on the row that takes it to the bound: at most the bound and one row more
    assert len(parts) > 1 and all(w < 1500 + 1000 for w in weights)
    assert pl.concat(parts).to_dicts() == rows
    assert [p.height for p in frames(iter(rows), SCHEMA)] == [40]  # unweighed: by count alone
    with pytest.raises(ValueError, match="weigh and most_weight go together"):
        list(frames(iter(rows), SCHEMA, weigh=lambda row: 1))  # a weight with no bound would close every row


async def test_calls_parquet_is_written_in_parts_bounded_by_their_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = SimFleet(latency_scale=0, record=False).catalog()

    async def long_question(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer in one line."""
        return (await seat.chat([{"role": "user", "content": "context " * 5000 + input["id"]}])).text

    bench = gb.Benchmark(
        long_question, runs=6, catalog=catalog, grade="standard", cache=tmp_path / "c", progress=False, controls=0
    )
    bench.set_spec(candidates=["sim/swift"])
    await bench.set_input({"id": "q"}).run()
    report = bench.report()
    monkeypatch.setattr(report_module, "CALLS_PART_CHARS", 100_000)  # each call's request is ~40,000 characters
    report.to_parquet(tmp_path / "out")
    written = pq.ParquetFile(tmp_path / "out" / "calls.parquet")
    groups = [written.metadata.row_group(i).num_rows for i in range(written.num_row_groups)]
    calls = report.call_facts().height
    assert sum(groups) == calls and max(groups) <= 3 < calls  # by their bodies; by count alone, one part of all
    back = gb.BenchmarkReport.read_parquet(tmp_path / "out")
    assert back.calls.equals(report.calls)


async def test_a_races_runs_and_calls_share_what_each_would_otherwise_copy(tmp_path: Path) -> None:
    catalog = SimFleet(latency_scale=0, record=False).catalog()

    async def one_call(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer in one line."""
        return (await seat.chat([{"role": "user", "content": f"Question {input['id']}: one line."}])).text

    bench = gb.Benchmark(
        one_call, runs=5, catalog=catalog, grade="standard", cache=tmp_path / "c", progress=False, controls=0
    )
    bench.set_spec(candidates=["sim/swift"])
    await bench.set_input({"id": "q"}).run()
    runs = bench.report().to_runs()
    assert len({id(r.benchmark_id) for r in runs}) == 1  # one text for the race's id, not one made for each run
    calls = [c for r in runs for c in r.calls] + [c for r in runs if r.verdict for c in r.verdict.calls]
    assert len(calls) >= 10 and all(_shared_empty(c.tool_results) for c in calls)  # no empty list kept for each call


def _shared_empty(results: Any) -> bool:
    return type(results) is tuple and not results  # the one empty tuple: a list would be 56 bytes a call


def test_a_call_without_tool_results_holds_the_shared_empty_tuple() -> None:
    fields: dict[str, Any] = dict(run_id="r", seq=0, role="candidate", entry="e", request_packed=pack("{}"))
    assert _shared_empty(Call(**fields).tool_results)
    assert _shared_empty(Call(**fields, tool_results=[]).tool_results)
    asked = [{"id": "t1", "name": "lookup", "arguments": "{}", "result": "3"}]
    assert Call(**fields, tool_results=asked).tool_results == asked
    row = Call(**fields).to_row()
    assert row["tool_results"] == "[]"  # the calls frame's text is as before
