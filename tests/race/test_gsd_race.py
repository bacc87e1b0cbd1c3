"""The group-sequential race to a verdict (``runs="gsd"``): its draws and waves, its stops, the report it makes."""

from __future__ import annotations

import hashlib
import json
import re

import httpx2
import pytest

import gradebench as gb
from gradebench._cli.main import _runs
from gradebench._records.meta import ReportMeta
from gradebench._records.spec import MAX_RUNS_PER_INPUT, RaceSpec
from gradebench._verdict.gsd import RACES, LookRace
from gradebench._verdict.racestate import Landed, Unit
from gradebench.testing import completion

from ..conftest import Scripted
from .test_spend import WORDS, answer_job, catalog

IDS = [f"q{i}" for i in range(20)]


# ------------------------------------------------------------------------------------------------- the race state


def race(max_runs: int = 40, seed: str = "s") -> LookRace:
    return LookRace(["acme/pick", "acme/a", "acme/b"], "acme/pick", IDS, margin=1.0, max_runs=max_runs, seed=seed)


def test_units_come_in_cycles_and_waves_end_at_the_looks() -> None:
    state = race()
    assert state.looks == [5, 10, 15, 20, 25, 30, 35, 40]
    waves = [state.next_wave() for _ in range(8)]  # no scores landed: nobody stops, each wave runs to the next look
    assert [len(w) for w in waves] == [5 * 3] * 8 and state.next_wave() == []
    assert [u for n, u in waves[0] if n == "acme/pick"] == state.units[:5]  # the reference entry on every unit
    assert {n for n, _ in waves[0]} == {"acme/pick", "acme/a", "acme/b"}
    cycle, again = [u.input_id for u in state.units[:20]], [u.input_id for u in state.units[20:]]
    assert sorted(cycle) == sorted(IDS) and all(u.repeat == 0 for u in state.units[:20])  # every input once,
    assert sorted(again) == sorted(IDS) and all(u.repeat == 1 for u in state.units[20:])  # then again, reshuffled
    assert again != cycle


def test_the_draws_are_seeded_and_auto_is_the_same_race() -> None:
    def draws(seed: str) -> list[Unit]:
        return [u for _, u in race(seed=seed).next_wave()]

    assert draws("s") == draws("s") != draws("t")
    # runs="auto" is another name for this race: the same class, the same draws, the same reading of its report
    assert RACES[gb.vocab.Design.AUTO] is RACES[gb.vocab.Design.GROUP_SEQUENTIAL] is LookRace


def test_a_report_raced_by_the_retired_betting_race_is_read_only_at_the_looks_its_entry_reached() -> None:
    # an older runs="auto" race stopped an entry between looks (here after 13 units, looks every 5): its verdict is
    # read at looks 1 and 2, never at look 3 on the same 13 units against look 3's lower boundary
    units = [Unit(f"q{i % 10}", i // 10) for i in range(20)]
    scores: dict[tuple[str, Unit], float | None] = {("acme/pick", u): 7.0 for u in units}
    scores |= {("acme/a", u): 6.5 + (int(u.input_id[1:]) % 3) / 2 for u in units[:13]}
    found = Landed(scores=scores, flaws={}, entries=["acme/a"], units=units, stops={})
    meta = ReportMeta(
        reference_entry="acme/pick", spec=RaceSpec(runs="auto", max_runs=40), inputs={f"q{i}": {} for i in range(10)}
    )
    read = LookRace.reading(found, "acme/a", meta)
    assert read.n_pairs == 10 and "look 2 of 8" in read.reason


def score_of(entry: str, unit: Unit, bases: dict[str, float]) -> float:
    """A seeded score around an entry's base: varies from unit to unit, as a judge's does."""
    noise = int(hashlib.sha256(f"{entry}{unit}".encode()).hexdigest(), 16) % 3 - 1
    return bases[entry] + noise


def raced(bases: dict[str, float], max_runs: int = 40) -> LookRace:
    state = LookRace(list(bases), "acme/pick", IDS, margin=1.0, max_runs=max_runs, seed="s")
    while not state.done and (wave := state.next_wave()):
        state.land({(n, u): score_of(n, u, bases) for n, u in wave})
    return state


def test_entries_stop_settled_futile_or_at_max_runs() -> None:
    state = raced({"acme/pick": 8.0, "acme/good": 8.0, "acme/bad": 3.0, "acme/edge": 7.0})
    stops = state.stops()
    assert stops["acme/bad"] == "settled: worse at look 2 of 8 after 10 runs"  # look 1 has 5 inputs: too few
    assert stops["acme/good"] == "settled: as good at look 4 of 8 after 20 runs"  # as good from half the units
    assert stops["acme/edge"].startswith(("futile at look", "max_runs: 40 runs made"))
    assert state.verdict("acme/edge").verdict == "inconclusive"


def test_a_flawed_entry_is_never_stopped_as_good() -> None:
    bases = {"acme/pick": 8.0, "acme/good": 8.0}
    state = LookRace(list(bases), "acme/pick", IDS, margin=1.0, max_runs=40, seed="s")
    while not state.done and (wave := state.next_wave()):
        state.land({(n, u): score_of(n, u, bases) for n, u in wave}, flawed={"acme/good"})
    assert state.stops()["acme/good"] == "max_runs: 40 runs made" and len(state.units) == 40


def test_the_budget_stops_every_entry_still_racing() -> None:
    state = race()
    state.next_wave()
    state.stop_all("budget: the next runs would not fit")
    assert state.done and set(state.stops().values()) == {"budget: the next runs would not fit"}
    assert state.next_wave() == []


# ---------------------------------------------------------------------------------------- a race on a scripted fleet


def noisy_fleet(bases: dict[str, int]) -> Scripted:
    """Candidates answer their word and a nonce from their run id; the judge scores each run its model's accuracy
    ``bases[model]`` plus −1, 0 or +1 by the nonce: scores that vary from run to run, as a real judge's do."""
    by_word = {WORDS[m]: base for m, base in bases.items()}

    def answer(body: dict, request: httpx2.Request) -> dict:
        if request.headers["x-gradebench-role"] == "judge":
            candidate = body["messages"][1]["content"].split('role="candidate"', 1)[1]
            word = next(w for w in by_word if w in candidate)
            nonce = int(re.search(r"nonce (\d+)", candidate).group(1))  # type: ignore[union-attr]
            accuracy = max(0, min(7, by_word[word] + nonce % 3 - 1))
            return completion(json.dumps({"accuracy": accuracy, "work": 3, "reason": "scripted"}))
        nonce = int(hashlib.sha256(request.headers["x-gradebench-run"].encode()).hexdigest(), 16) % 1000
        return completion(json.dumps({"a": f"{WORDS[body['model']]} nonce {nonce}"}), tokens=(100, 20))

    return Scripted(answer)


def fleet() -> gb.Catalog:
    return catalog(noisy_fleet({"pick": 6, "good": 6, "bad": 1, "edge": 5}), ["pick", "good", "bad", "edge"])


def gsd_bench(tmp_path, cat: gb.Catalog | None = None, **options) -> gb.Benchmark:
    cat = cat or fleet()
    options.setdefault("controls", 0)  # the scripted judge reads each run's nonce, which a planted control lacks
    bench = gb.Benchmark(
        answer_job, runs="gsd", max_runs=40, catalog=cat, grade="standard", cache=tmp_path, progress=False, **options
    )
    return bench.set_inputs([{"id": i} for i in IDS])


async def test_a_group_sequential_race_settles_the_clear_entries_at_a_look(tmp_path) -> None:
    cat = fleet()
    bench = gsd_bench(tmp_path, cat)
    await bench.run()
    report = bench.report()
    models = {r["entry"]: r for r in report.models.iter_rows(named=True)}
    assert models["acme/bad"]["verdict"] == "worse" and models["acme/good"]["verdict"] == "as good"
    assert models["acme/bad"]["stopped"] == "settled: worse at look 2 of 8 after 10 runs"
    assert models["acme/good"]["runs"] < 40 and models["acme/bad"]["runs"] == 10
    assert models["acme/edge"]["verdict"] == "inconclusive"
    assert report.meta.spec.design is gb.vocab.Design.GROUP_SEQUENTIAL and report.meta.spec.design.to_verdict
    assert len(report.meta.units) == models["acme/pick"]["runs"]
    assert "repeated upper bound" in models["acme/bad"]["verdict_reason"]
    table = report.table()
    assert "raced to a verdict in 8 looks (at most 40 runs an entry)" in table
    assert "8 looks at 5, 10, 15, 20, 25, 30, 35, 40 paired units" in table
    assert "as good: O'Brien–Fleming boundary, one-sided 97.5%, from 50% of the units" in table
    assert "worse: Pocock boundary, one-sided 95%, from the first look" in table
    assert "settled: worse at look 2 of 8 after 10 runs" in table
    back = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "out"))
    assert back.models.equals(report.models)  # the verdicts are read again from the runs and the units' order
    again = gsd_bench(tmp_path, cat)
    await again.run()
    assert again.report().runs["spent_now"].sum() == 0  # a rerun draws the same units: every run from the cache


async def test_a_race_stopped_by_the_budget_rests_on_its_complete_looks(tmp_path) -> None:
    cat = fleet()
    probe = gsd_bench(tmp_path / "probe", cat)
    await probe.run()
    runs = probe.report().runs
    spent = float(runs["spent_now"].sum() + runs["judge_cost"].fill_null(0).sum())
    bench = gsd_bench(tmp_path / "race", cat, budget=spent * 1.1)  # measured: stops in the third wave
    await bench.run()
    report = bench.report()
    assert report.meta.stopped == "budget"
    tested = [r for r in report.models.iter_rows(named=True) if r["verdict"] is not None]
    assert {r["n_pairs"] for r in tested} == {10}  # every verdict rests on look 2 (10 units) ...
    bad = next(r for r in tested if r["entry"] == "acme/bad")
    assert bad["verdict"] == "worse" and bad["stopped"] == "settled: worse at look 2 of 8 after 10 runs"
    cut = [r for r in tested if r["entry"] != "acme/bad"]
    assert cut and all(r["runs"] > 10 for r in cut)  # ... though the others ran past it: runs no look read
    for row in cut:  # look 2 settles neither: "as good" waits for half the units
        assert row["verdict"] == "inconclusive" and "on the looks complete before the stop" in row["verdict_reason"]
        assert row["stopped"] == "budget: the next runs would not fit"


def test_a_stopped_race_replays_to_its_last_complete_look() -> None:
    from gradebench._verdict.gsd import completed_looks

    bases = {"acme/pick": 8.0, "acme/a": 7.0}
    state = LookRace(list(bases), "acme/pick", IDS, margin=1.0, max_runs=40, seed="s")
    scores = {}
    for _ in range(2):
        wave = state.next_wave()
        scores.update({(n, u): score_of(n, u, bases) for n, u in wave})
        state.land({key: scores[key] for key in wave})
    cut = state.next_wave()[:7]  # the third wave stopped after 7 runs
    scores.update({(n, u): score_of(n, u, bases) for n, u in cut})
    units, _ = completed_looks(scores, list(bases), "acme/pick", IDS, margin=1.0, max_runs=40, seed="s")
    assert units == state.units[:10]


# ------------------------------------------------------------------------------------------------ the spec's word


def test_runs_gsd_is_a_design_of_its_own() -> None:
    spec = RaceSpec(runs="gsd")
    assert spec.design is gb.vocab.Design.GROUP_SEQUENTIAL and spec.most_runs(5) == MAX_RUNS_PER_INPUT * 5
    assert RaceSpec(runs="gsd", max_runs=7).most_runs(5) == 7 and RaceSpec(runs="auto").design is gb.vocab.Design.AUTO
    assert not gb.vocab.Design.FIXED.to_verdict and gb.vocab.Design.AUTO.to_verdict
    assert RaceSpec.from_dict({"runs": "gsd"}) == spec and spec.to_dict()["runs"] == "gsd"
    assert _runs("gsd") == "gsd" and _runs("auto") == "auto" and _runs("3") == 3
    with pytest.raises(ValueError, match="runs must be an integer >= 1, 'gsd' or 'auto', got 'GSD'"):
        RaceSpec(runs="GSD")  # type: ignore[arg-type]
    assert ReportMeta.from_dict(ReportMeta(spec=spec).to_dict()).spec.design is gb.vocab.Design.GROUP_SEQUENTIAL
