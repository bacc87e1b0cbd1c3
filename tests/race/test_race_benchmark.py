"""`benchmarks/race.py`, the overhead and memory benchmark: a small race of it, over one input or several, and the
figures its memory child writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..scripts import benchmark

bench_race = benchmark("race")


@pytest.mark.parametrize("inputs", [1, 4])
def test_the_benchmarks_race_spreads_its_runs_over_its_inputs(tmp_path: Path, inputs: int) -> None:
    _, bench = bench_race.race(8, 0.0, 4, tmp_path / "cache", "salt", inputs)
    runs = bench.report().runs
    candidates = runs.filter(runs["role"] == "candidate")
    assert candidates.height == 8 and candidates["input_id"].n_unique() == inputs
    assert runs.filter(runs["role"] == "reference").height == inputs  # each input its own reference run


def test_inputs_that_do_not_divide_the_runs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--inputs 3 does not divide 8 runs"):
        bench_race.race(8, 0.0, 4, tmp_path / "cache", "salt", 3)


def test_the_memory_child_races_writes_and_reads_back(tmp_path: Path) -> None:
    made = bench_race.race_and_write(8, 4, tmp_path / "report", 2)
    assert made["peak_rss_mb"] > 0 and made["write_s"] >= 0
    read = bench_race.read_back(tmp_path / "report")
    assert read["runs"] == 10  # 8 candidate runs and the two inputs' references
