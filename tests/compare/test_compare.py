"""Drift between two races: `gb.compare` on the sim fleet serving a changed entry, what else differs said, the CLI, and
the false "changed" rate measured by simulation against a known truth (no change)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.vocab import Role, Stopped
from gradebench._calls.session import mount, mounted, origin
from gradebench._cli.main import main
from gradebench._compare.compare import DIFFERENCES_SCHEMA, ENTRIES_SCHEMA
from gradebench._compare.pairing import MIN_INPUTS
from gradebench._compare.stats import expanded_tail, paired_change
from gradebench._records.records import Run
from gradebench._stats.t import t_quantile
from gradebench.jobs import OrderAgent, load_inputs

from ..sizes import Size, sized

INPUTS = 26
RUNS = 2
DRIFT = {"sim/squint": "sim/swift", "sim/flaky": {"failure_rate": 0.7}}
"""The after race's fleet: sim/squint now answers as sim/swift does (skips tools), sim/flaky fails more (503s)."""


@contextlib.contextmanager
def sim_catalog(drift: dict[str, Any] | None = None) -> Iterator[gb.Catalog]:
    """The sim fleet as a catalog (drifted or not), mounted for the block; what was mounted before comes back after,
    so no other test's races reach a drifted fleet."""
    was = mounted().get(origin(gb.sim.DEFAULT_BASE_URL))
    try:
        yield gb.sim.catalog(latency_scale=0, drift=drift)
    finally:
        mount(gb.sim.DEFAULT_BASE_URL, was)


def race(cache: Path, salt: str, drift: dict[str, Any] | None = None, n: int = INPUTS) -> gb.BenchmarkReport:
    with sim_catalog(drift) as catalog:
        bench = gb.Benchmark(
            OrderAgent, runs=RUNS, catalog=catalog, grade="standard", salt=salt, cache=cache, progress=False
        )
        bench.set_inputs(load_inputs("orders")[:n]).run_sync()
        return bench.report()


@pytest.fixture(scope="module")
def races(tmp_path_factory: pytest.TempPathFactory) -> dict[str, gb.BenchmarkReport]:
    """One race, the same job raced again with a fresh salt on the drifted fleet, and again with the first salt on
    the drifted fleet (every answer then comes from the cache)."""
    cache = tmp_path_factory.mktemp("compare-cache")
    return {
        "before": race(cache, "before"),
        "after": race(cache, "after", DRIFT),
        "cached": race(cache, "before", DRIFT),
    }


def row(comparison: gb.results.Comparison, entry: str) -> Any:
    return next(r for r in comparison.rows if r.entry == entry)


# --------------------------------------------------------------------------------------------------- end to end


def test_the_drifted_entry_is_flagged_changed_with_its_sign_and_the_others_not(races: dict) -> None:
    comparison = gb.compare(races["before"], races["after"])
    squint = row(comparison, "sim/squint")
    assert squint.status == "changed" and squint.change < 0 and squint.hi < 0
    assert not squint.failures_changed
    assert squint.sentence.startswith("sim/squint scores ") and " lower [" in squint.sentence
    assert squint.sentence.endswith("(same judge, 26 inputs): the provider may have changed the model")
    for entry in ("sim/steady", "sim/swift", "sim/chatty"):
        assert row(comparison, entry).status == "no change detected", row(comparison, entry).sentence
    assert comparison.changed == ["sim/squint", "sim/flaky"]
    assert row(comparison, "sim/steady").is_reference
    # five entries compared: each interval at 99%, so the five hold together at 95%
    assert all(r.level == pytest.approx(0.99) for r in comparison.rows)
    assert comparison.entries.schema == ENTRIES_SCHEMA and comparison.entries.height == 5
    assert comparison.differences.schema == DIFFERENCES_SCHEMA
    again = gb.compare(races["before"], races["after"])
    assert again.entries.equals(comparison.entries)  # seeded: the same bounds every time


def test_a_drop_made_of_failures_is_said_apart_from_the_model(races: dict) -> None:
    comparison = gb.compare(races["before"], races["after"])
    flaky = row(comparison, "sim/flaky")
    assert flaky.status == "changed" and flaky.change < 0  # failed runs count as 0 in the verdict
    assert flaky.failures_changed and flaky.failed_after > flaky.failed_before
    assert flaky.finished_lo < 0 < flaky.finished_hi  # the runs that finished score as before
    assert flaky.causes == ["its failures: among the runs that finished it scores about the same"]
    assert "the provider may have changed the model" not in flaky.sentence
    said = [s for s in comparison.sentences() if s.startswith("sim/flaky failed ")]
    assert (
        len(said) == 1 and "HTTP 503" in said[0] and "among the runs that finished it scores about the same" in said[0]
    )
    assert not row(comparison, "sim/squint").failures_changed


def test_a_rerun_with_the_same_salt_is_the_cache_and_says_so(races: dict) -> None:
    comparison = gb.compare(races["before"], races["cached"])  # the drifted fleet, but nothing was asked of it
    assert comparison.changed == []
    assert {r.status for r in comparison.rows} == {"not re-asked"}
    first = comparison.sentences()[0]
    assert first.startswith("the after race is the before race from the cache: nothing was re-asked")
    assert comparison.differences.filter(kind="cache")["weight"].to_list() == ["warn"]
    assert "no entry compared" in comparison.table()


def test_the_same_runs_judged_again_are_the_judges_change(races: dict) -> None:
    before = races["before"]
    meta = before.meta.with_spec(rubric="Be strict.")
    harsher = [_scored(r, -1) for r in before.to_runs()]
    comparison = gb.compare(before, gb.BenchmarkReport(harsher, meta))
    kinds = comparison.differences["kind"].to_list()
    assert "rubric" in kinds and "cache" in kinds
    assert comparison.sentences()[0].startswith("the after report judges the before race's runs again")
    for r in comparison.rows:
        assert r.status == "changed" and r.change < 0
        assert r.causes[0] == "the same runs judged again: the change is the judge's"
        assert "the provider" not in r.sentence and "(the same runs judged again, 26 inputs)" in r.sentence


def test_compare_reads_report_folders_and_the_cli_prints_table_and_sentences(
    races: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = races["before"].to_parquet(tmp_path / "a")
    b = races["after"].to_parquet(tmp_path / "b")
    from_folders = gb.compare(a, b)
    assert from_folders.entries.equals(gb.compare(races["before"], races["after"]).entries)
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("order-agent: before on ")
    assert "sim/squint    changed" in out and "- sim/squint scores " in out and "- sim/flaky failed " in out
    html = from_folders._repr_html_()
    assert "<table>" in html and "sim/squint" in html and "<li>" in html


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        ("missing", "runs.parquet"),
        ("garbled", "runs.parquet"),
        ("bad-json", "meta.json"),
        ("bad-field", "meta.json"),
        ("not-a-folder", "nowhere"),
    ],
)
def test_a_bad_folder_exits_2_naming_the_file(
    races: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str], breakage: str, named: str
) -> None:
    good = races["before"].to_parquet(tmp_path / "good")
    bad = races["after"].to_parquet(tmp_path / "bad")
    if breakage == "missing":
        (bad / "runs.parquet").unlink()
    elif breakage == "garbled":
        (bad / "runs.parquet").write_bytes(b"not parquet at all")
    elif breakage == "bad-json":
        (bad / "meta.json").write_text("{nope")
    elif breakage == "bad-field":
        meta = json.loads((bad / "meta.json").read_text())
        (bad / "meta.json").write_text(json.dumps({**meta, "jobb": "x"}))
    else:
        bad = tmp_path / "nowhere"
    assert main(["compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gradebench: error: after: ") and named in err and "Traceback" not in err


# ----------------------------------------------------------------------------------- what differs, said or refused


def _scored(run: Run, by: float) -> Run:
    """The run with its judge's accuracy moved by ``by`` (kept within 0..7)."""
    if run.verdict is None or run.verdict.accuracy is None or run.role != Role.CANDIDATE:
        return run
    accuracy = min(7.0, max(0.0, run.verdict.accuracy + by))
    return dataclasses.replace(run, verdict=dataclasses.replace(run.verdict, accuracy=accuracy))


def _report(report: gb.BenchmarkReport, runs: list[Run] | None = None, **meta: Any) -> gb.BenchmarkReport:
    return gb.BenchmarkReport(report.to_runs() if runs is None else runs, report.meta.replace(**meta))


def test_two_different_jobs_are_refused(races: dict) -> None:
    other = _report(races["after"], job="selecting-agent")
    with pytest.raises(ValueError, match=r"different jobs \(order-agent before, selecting-agent after\)"):
        gb.compare(races["before"], other)


def test_one_job_raced_from_two_folders_is_one_job(races: dict) -> None:
    """A run records a job found beside its config with its folder: the same job from a laptop and from CI compares."""
    before = _report(races["before"], job="/home/ana/quotes/quotejob:quote")
    after = _report(races["after"], job="/builds/ci/quotes/quotejob:quote")
    assert "job" not in gb.compare(before, after).differences["kind"].to_list()
    with pytest.raises(ValueError, match="different jobs"):
        gb.compare(before, _report(races["after"], job="/builds/ci/quotes/quotejob:other"))


def test_no_input_in_common_is_refused(races: dict) -> None:
    after = races["after"]
    inputs = {f"x-{k}": v for k, v in after.meta.inputs.items()}
    runs = [dataclasses.replace(r, input_id=f"x-{r.input_id}") for r in after.to_runs()]
    with pytest.raises(ValueError, match="no input in common"):
        gb.compare(races["before"], _report(after, runs, inputs=inputs))


def test_a_changed_judge_is_said_and_explains_a_change(races: dict) -> None:
    after = _report(races["after"], judge_entry="sim/sage", judge_params={"temperature": 0.5})
    comparison = gb.compare(races["before"], after)
    warnings = comparison.differences.filter(weight="warn")["kind"].to_list()
    assert warnings[:2] == ["judge", "judge_params"]
    squint = row(comparison, "sim/squint")
    assert squint.status == "changed" and "the judging changed" in squint.sentence
    assert squint.causes[0].startswith("the judge changed (sim/oracle \u2192 sim/sage)")
    assert "the provider may have changed" not in squint.sentence


def test_the_judges_model_and_fixed_prompt_are_read_from_its_requests(races: dict, tmp_path: Path) -> None:
    folder = races["after"].to_parquet(tmp_path / "after")
    calls = pl.read_parquet(folder / "calls.parquet")
    judge = pl.col("role") == "judge"
    calls = calls.with_columns(
        pl.when(judge)
        .then(pl.col("request").str.replace("You are a blind judge.", "You are a judge.", literal=True))
        .otherwise(pl.col("request"))
        .str.replace('"model": "sim-oracle-1"', '"model": "sim-oracle-2"', literal=True)
        .alias("request")
    )
    calls.write_parquet(folder / "calls.parquet")
    comparison = gb.compare(races["before"], folder)
    found = {d["kind"]: d["sentence"] for d in comparison.differences.iter_rows(named=True)}
    assert found["judge_model"].startswith("the judge sim/oracle is another model (sim-oracle-1 before, sim-oracle-2")
    assert found["judge_prompt"].startswith("the judge's fixed prompt differs")


def test_the_input_set_entries_in_one_race_and_runs_per_input_are_said(races: dict) -> None:
    before, after = races["before"], races["after"]
    inputs = dict(list(after.meta.inputs.items())[2:])
    first = next(iter(inputs))
    inputs[first] = {**inputs[first], "message": "something else entirely"}
    runs = [r for r in after.to_runs() if r.input_id in inputs and r.entry != "sim/chatty"]
    comparison = gb.compare(before, _report(after, runs, inputs=inputs, spec=after.meta.spec.replace(runs=3)))
    said = comparison.differences.filter(kind="inputs")["sentence"].item()
    assert said.startswith("compared on the 23 inputs both raced; left out: 2 inputs only before (ord-01, ord-02)")
    assert f"1 input that share an id but not their content ({first})" in said
    assert row(comparison, "sim/squint").n_inputs == 23
    chatty = row(comparison, "sim/chatty")
    assert chatty.status == "only before" and chatty.sentence == "sim/chatty was raced only before"
    assert comparison.differences.filter(kind="runs")["sentence"].item().startswith("runs per input and entry: 2")
    assert row(comparison, "sim/squint").level == pytest.approx(1 - 0.05 / 4)  # chatty takes no share


def test_an_entrys_catalog_terms_are_held_to_account(races: dict) -> None:
    after = races["after"]
    terms = {name: dict(t) for name, t in after.meta.entries.items()}
    terms["sim/swift"].update(price_in=0.2, params={"temperature": 0.9})
    runs = [dataclasses.replace(r, model="sim-squint-2") if r.entry == "sim/squint" else r for r in after.to_runs()]
    comparison = gb.compare(races["before"], _report(after, runs, entries=terms))
    by_kind = {(d["kind"], d["entry"]): d for d in comparison.differences.iter_rows(named=True)}
    assert by_kind[("entry_prices", "sim/swift")]["weight"] == "note"
    assert "price_in 0.1 \u2192 0.2" in by_kind[("entry_prices", "sim/swift")]["sentence"]
    assert by_kind[("entry_params", "sim/swift")]["weight"] == "warn"
    assert by_kind[("entry_model", "sim/squint")]["weight"] == "warn"
    squint = row(comparison, "sim/squint")
    assert squint.sentence.endswith("the catalog names another model (sim-squint-1 \u2192 sim-squint-2)")
    assert row(comparison, "sim/swift").causes == ['it was sent other params (params {} \u2192 {"temperature": 0.9})']


def test_a_report_without_catalog_terms_says_prices_are_not_compared(races: dict) -> None:
    comparison = gb.compare(_report(races["before"], entries={}), races["after"])
    said = comparison.differences.filter(kind="entry_terms")["sentence"].item()
    assert said.startswith("the before report does not record its entries' catalog terms")


def test_a_race_stopped_early_is_compared_on_its_complete_inputs(races: dict) -> None:
    after = races["after"]
    cut = {"ord-01", "ord-02", "ord-03"}
    runs = [r for r in after.to_runs() if not (r.entry == "sim/chatty" and r.input_id in cut and r.repeat == 1)]
    comparison = gb.compare(races["before"], _report(after, runs, stopped=Stopped.CANCELLED))
    assert row(comparison, "sim/chatty").n_inputs == INPUTS - 3
    assert row(comparison, "sim/swift").n_inputs == INPUTS
    said = comparison.differences.filter(kind="stopped")["sentence"].item()
    assert said.startswith("the after race stopped early (cancelled): each entry is compared on the inputs where all")


def test_runs_the_judge_gave_no_score_are_left_out_and_counted(races: dict) -> None:
    after = races["after"]
    unjudged = {r.run_id for r in after.to_runs() if r.entry == "sim/chatty" and r.ok}
    unjudged = set(sorted(unjudged)[:5])
    failed = gb.results.JudgeScore(accuracy=None, work=None, judge_entry="sim/oracle", error="no valid verdict")
    runs = [dataclasses.replace(r, verdict=failed) if r.run_id in unjudged else r for r in after.to_runs()]
    chatty = row(gb.compare(races["before"], _report(after, runs)), "sim/chatty")
    assert chatty.unjudged == 5 and chatty.runs_after == INPUTS * RUNS
    assert chatty.sentence.endswith("; the judge gave no score to 5 runs, left out")


def test_a_change_on_too_few_inputs_is_not_called_a_change(races: dict) -> None:
    keep = sorted(races["after"].meta.inputs)[: MIN_INPUTS - 1]
    runs = [_scored(r, -5) for r in races["after"].to_runs() if r.input_id in keep]
    inputs = {k: v for k, v in races["after"].meta.inputs.items() if k in keep}
    comparison = gb.compare(races["before"], _report(races["after"], runs, inputs=inputs))
    assert {r.status for r in comparison.rows} == {"too few inputs"} and comparison.changed == []
    assert row(comparison, "sim/swift").sentence.startswith(
        f"sim/swift: {MIN_INPUTS - 1} inputs compared, too few to say whether it changed (a change needs at least 12"
    )


def test_a_changed_reference_entry_says_every_score_leans_on_it(races: dict) -> None:
    runs = [_scored(r, -4) if r.entry == "sim/steady" else r for r in races["after"].to_runs()]
    steady = row(gb.compare(races["before"], _report(races["after"], runs)), "sim/steady")
    assert steady.status == "changed" and steady.change < 0
    assert steady.sentence.endswith(
        ": it is also the reference, whose transcripts every score is measured against, so the other entries' changes "
        "may be its"
    )


def test_bad_arguments_raise_naming_them(races: dict) -> None:
    with pytest.raises(ValueError, match="level must be in"):
        gb.compare(races["before"], races["after"], level=1.0)
    with pytest.raises(TypeError, match="before must be a BenchmarkReport or a report folder"):
        gb.compare(42, races["after"])  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------- the sim's drift


def test_a_drifted_entry_keeps_its_catalog_and_the_others_answer_as_before() -> None:
    with sim_catalog() as plain:
        pass
    with sim_catalog(DRIFT) as drifted:
        pass
    assert [dataclasses.asdict(e) for e in plain.entries] == [dataclasses.asdict(e) for e in drifted.entries]
    fleet = gb.sim.SimFleet(latency_scale=0, drift=DRIFT)
    assert fleet.drift == {"sim/squint": "sim/swift", "sim/flaky": "sim/flaky (changed)"}
    fleet.set_drift(None)
    assert fleet.drift == {}


@pytest.mark.parametrize(
    ("drift", "message"),
    [
        ({"sim/nope": "sim/swift"}, "drift: no simulated entry 'sim/nope'"),
        ({"sim/squint": "sim/nope"}, "drift['sim/squint']: no simulated entry 'sim/nope'"),
        ({"sim/squint": {"price_in": 1.0}}, "'price_in' is not a behaviour field"),
        ({"sim/squint": {"skip_rate": 1.5}}, "skip_rate must be a probability in [0, 1], got 1.5"),
        ({"sim/squint": {"reasoning": "telepathy"}}, "reasoning must be one of"),
        ({"sim/squint": 3}, "must be an entry name, a Profile or a mapping"),
    ],
)
def test_a_bad_drift_raises_naming_it(drift: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        gb.sim.SimFleet(drift=drift)
    assert message in str(raised.value)


async def test_the_drift_is_served_through_the_same_http_path() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0, drift={"sim/steady": "sim/prose"})  # now answers schemas in prose
    async with await gb.sim.start_server(fleet=fleet) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        schema = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}, "strict": True}}
        asked = {"messages": [{"role": "user", "content": "Say hi as JSON."}], "response_format": schema}
        drifted = await client.chat.completions.create(model="sim-steady-1", **asked)  # type: ignore[call-overload]
        other = await client.chat.completions.create(model="sim-squint-1", **asked)  # type: ignore[call-overload]
        await client.close()
    assert drifted.model == "sim-steady-1"  # the same name on the wire
    json.loads(other.choices[0].message.content or "")  # an undrifted entry still honours the schema
    assert "```json" in (drifted.choices[0].message.content or "")  # sim/prose's habit, behind sim/steady's name


# --------------------------------------------------------------------------------- the statistics, by simulation

SKIPS = (0.02, 0.25, 0.03, 0.02, 0.03)
"""Five entries' tool-skip rates (as the sim's standard grade): a skip costs 3 points of 10."""


def _simulated_race(rng: np.random.Generator, n: int, difficulty: np.ndarray, shift: float = 0.0) -> list[dict]:
    """Per entry, per input, ``RUNS`` scores: inputs differ in difficulty (a skip is likelier on some), and a flawed
    reference run on an input (15%) costs every entry 3 points there in that race: the noise the pairing must carry.
    ``shift`` raises the first entry's skip rate (the drift)."""
    flawed = rng.random(n) < 0.15
    race = []
    for e, skip in enumerate(SKIPS):
        rate = np.minimum(1.0, (skip + (shift if e == 0 else 0.0)) * difficulty)
        scores = {}
        for i in range(n):
            x = 10 - 3 * rng.binomial(3, rate[i], RUNS) - 4 * (rng.random(RUNS) < 0.06) - (rng.random(RUNS) < 0.3)
            scores[f"i{i:02d}"] = np.clip(x - 3 * flawed[i], 0, 10).astype(float)
        race.append(scores)
    return race


def _flags(n_sims: int, n: int, level: float, shift: float = 0.0, seed: int = 7) -> np.ndarray:
    """Per simulated comparison and entry: +1 changed up, -1 changed down, 0 not, at the simultaneous ``level``."""
    rng = np.random.default_rng(seed)
    each = 1 - (1 - level) / len(SKIPS)
    out = np.zeros((n_sims, len(SKIPS)), dtype=int)
    for k in range(n_sims):
        difficulty = rng.gamma(1.0, 1.0, n) * 2
        before, after = _simulated_race(rng, n, difficulty), _simulated_race(rng, n, difficulty, shift)
        for e in range(len(SKIPS)):
            change = paired_change(before[e], after[e], level=each, resamples=2000, seed=k)
            out[k, e] = 0 if not change.settled else (1 if change.mean > 0 else -1)
    return out


@sized(100, 400)
def test_unchanged_models_are_rarely_called_changed(size: Size) -> None:
    """400 comparisons of unchanged models (16 inputs × 2 runs, five entries, fresh salts): a false "changed" on some
    entry in about 5% of them (measured 6.2% on 1,500; here at most 9%), and on one entry about 1% (at most 2.5%)."""
    flags = _flags(size.n, 16, 0.95)
    family = float(np.mean(np.any(flags != 0, axis=1)))
    per_entry = float(np.mean(flags != 0))
    assert family <= size.at_most(0.09), family
    assert per_entry <= size.at_most(0.025, flags.size), per_entry
    assert per_entry > 0.0  # the test can fail the other way: a test that never says "changed" says nothing


@sized(200, 600)
def test_one_entry_at_its_own_95_percent_is_wrong_about_5_percent_of_the_time(size: Size) -> None:
    """Without the other entries' share of the level: 600 comparisons, false "changed" within 2.5%-8% (nominal 5%)."""
    rng = np.random.default_rng(11)
    false = 0
    for k in range(size.n):
        difficulty = rng.gamma(1.0, 1.0, 16) * 2
        before, after = _simulated_race(rng, 16, difficulty)[1], _simulated_race(rng, 16, difficulty)[1]
        false += paired_change(before, after, level=0.95, resamples=2000, seed=k).settled
    assert size.at_least(0.025) <= false / size.n <= size.at_most(0.08) and false > 0, false / size.n


@sized(50, 200)
def test_a_drift_is_found_with_its_sign(size: Size) -> None:
    """One entry skips a tool call 20 points more often (about 1.8 points of 10 lower) on 26 inputs × 2 runs: found
    in most of 200 comparisons, always downwards, while the unchanged entries stay quiet."""
    flags = _flags(size.n, 26, 0.95, shift=0.2, seed=3)
    assert np.mean(flags[:, 0] == -1) >= size.at_least(0.7)
    assert not np.any(flags[:, 0] == 1)
    assert np.mean(flags[:, 1:] != 0) <= size.at_most(0.025, flags[:, 1:].size)


def test_the_expanded_interval_uses_students_t() -> None:
    assert t_quantile(0.975, 15) == pytest.approx(2.1314, abs=1e-3)
    assert t_quantile(0.995, 7) == pytest.approx(3.4995, abs=2e-3)
    assert expanded_tail(0.95, 16) < 0.025  # wider than the plain percentile interval
    with pytest.raises(ValueError, match="at least 2"):
        expanded_tail(0.95, 1)


def test_an_entry_the_judge_never_scored_after_has_nothing_to_compare(races: dict) -> None:
    failed = gb.results.JudgeScore(accuracy=None, work=None, judge_entry="sim/oracle", error="no valid verdict")
    runs = [
        dataclasses.replace(r, verdict=failed) if r.entry == "sim/chatty" and r.role == Role.CANDIDATE else r
        for r in races["after"].to_runs()
    ]
    chatty = row(gb.compare(races["before"], _report(races["after"], runs)), "sim/chatty")
    assert chatty.status == "not judged" and chatty.change is None
    assert chatty.sentence == f"sim/chatty: nothing to compare: the judge scored none of its {INPUTS * RUNS} runs after"


def test_reports_given_the_other_way_round_are_noted(races: dict) -> None:
    comparison = gb.compare(races["after"], races["before"])
    said = comparison.differences.filter(kind="order")["sentence"].item()
    assert said.startswith("the after race's answers (") and said.endswith("were they given the other way round?")
    assert gb.compare(races["before"], races["after"]).differences.filter(kind="order").height == 0
    squint = row(comparison, "sim/squint")
    assert squint.status == "changed" and squint.change > 0  # read backwards, the drift is a gain
