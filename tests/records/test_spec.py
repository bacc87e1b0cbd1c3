"""One race spec: every default and check in one place, filled by Benchmark's keywords, carried by the report's meta,
read back from meta.json (old ones too), and a saved report rerun from it in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import gradebench as gb
from gradebench._records.meta import ReportMeta
from gradebench._records.spec import DEFAULT_RUNS, MAX_RUNS_PER_INPUT
from gradebench.jobs import OrderAgent, SelectingAgent, load_inputs
from gradebench.testing import ScriptedEndpoint, completion

from ..conftest import scripted_catalog


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"runs": 0}, "runs must be an integer >= 1, 'gsd' or 'auto', got 0"),
        ({"runs": True}, "runs must be an integer >= 1, 'gsd' or 'auto'"),
        ({"runs": "many"}, "runs must be an integer >= 1, 'gsd' or 'auto'"),
        ({"max_runs": 0}, "max_runs must be an integer >= 1"),
        ({"budget": 0}, "budget must be a number > 0"),
        ({"budget": math.nan}, "budget must be a number > 0"),
        ({"budget": math.inf}, "budget must be a number > 0"),
        ({"margin": -1}, "margin must be >= 0"),
        ({"margin": math.nan}, "margin must be >= 0"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1"),
        ({"candidates": []}, "candidates must not be empty"),
        ({"also": "small"}, "also must be a list of names"),
    ],
)
def test_every_check_raises_naming_the_field(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gb.RaceSpec(**fields)


def test_defaults_are_the_specs_own() -> None:
    spec = gb.RaceSpec()
    assert spec.runs == DEFAULT_RUNS and spec.design is gb.vocab.Design.FIXED and spec.margin == 1.0
    assert spec.most_runs(5) == DEFAULT_RUNS * 5
    auto = gb.RaceSpec(runs="auto")
    assert auto.design is gb.vocab.Design.AUTO and auto.most_runs(5) == MAX_RUNS_PER_INPUT * 5
    assert gb.RaceSpec(runs="auto", max_runs=7).most_runs(5) == 7
    assert gb.RaceSpec(also=["small"]).also == ("small",)  # a list given is kept as a tuple: the spec is a value


def test_a_spec_round_trips_through_plain_values_and_names_a_bad_field() -> None:
    spec = gb.RaceSpec(job="order-agent", grade="standard", also=["small"], runs="auto", budget=2, judge_swap=True)
    assert gb.RaceSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(ValueError, match=r"run.toml: unknown field 'runz' \(did you mean 'runs'\?\)"):
        gb.RaceSpec.from_dict({"runz": 3}, source="run.toml")
    with pytest.raises(ValueError, match="run.toml: field 'runs': runs must be"):
        gb.RaceSpec.from_dict({"runs": 0}, source="run.toml")
    with pytest.raises(ValueError, match="field 'judge_swap'"):
        gb.RaceSpec.from_dict({"judge_swap": "yes"})


def test_the_lineup_is_the_spec_against_a_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = gb.sim.catalog()
    lineup = gb.RaceSpec(grade="standard", also=["small"]).lineup(catalog)
    assert lineup.reference.name == "sim/steady" and lineup.judge.name == "sim/oracle"
    assert [e.name for e in lineup.candidates] == [e.name for g in ("standard", "small") for e in catalog.of_grade(g)]
    with pytest.raises(ValueError, match="grade must be one of"):
        gb.RaceSpec(grade="huge").lineup(catalog)
    with pytest.raises(KeyError, match="sim/nope"):
        gb.RaceSpec(grade="standard", candidates=["sim/nope"]).lineup(catalog)
    with pytest.raises(KeyError, match="sim/nope"):
        gb.RaceSpec(grade="standard", judge="sim/nope").lineup(catalog)
    endpoint = ScriptedEndpoint(lambda body, request: completion("ok"))
    keyed = scripted_catalog(endpoint, api_key_env="GRADEBENCH_TEST_UNSET_KEY")
    monkeypatch.delenv("GRADEBENCH_TEST_UNSET_KEY", raising=False)
    skipped = gb.RaceSpec(grade="standard").lineup(keyed)
    assert not skipped.candidates and set(skipped.skipped) == {"acme/pick", "acme/other"}


def test_benchmark_keywords_fill_the_spec_and_the_job_fills_the_rest() -> None:
    catalog = gb.sim.catalog()
    bench = gb.Benchmark(OrderAgent, catalog=catalog, runs=2, margin=1.5, candidates=["sim/swift", "sim/steady"])
    spec = bench.spec
    assert (spec.runs, spec.margin, spec.candidates) == (2, 1.5, ("sim/swift", "sim/steady"))
    assert spec.grade == OrderAgent.grade and spec.rubric == OrderAgent.rubric  # the job's own where unset
    assert spec.job == "gradebench.jobs._order_agent:OrderAgent" and spec.catalog == "gradebench.sim:catalog"
    assert spec.scorer == "none"
    assert bench.entries == ["sim/swift", "sim/steady"]
    # a keyword left None keeps the given spec's value; one given replaces it
    kept = gb.Benchmark(OrderAgent, catalog=catalog, spec=gb.RaceSpec(runs=5, salt="s"), salt=None, margin=2)
    assert (kept.spec.runs, kept.spec.salt, kept.spec.margin) == (5, "s", 2.0)
    assert gb.Benchmark(SelectingAgent, catalog=catalog).spec.scorer == "job"  # the job's own scorer
    with pytest.raises(ValueError, match="runs must be an integer >= 1"):
        gb.Benchmark(OrderAgent, catalog=catalog, runs=0)
    with pytest.raises(ValueError, match="margin must be >= 0"):
        bench.set_spec(margin=-1)
    assert bench.spec.margin == 1.5  # a refused change changes nothing


async def test_the_reports_meta_carries_the_spec_that_made_it(tmp_path: Path) -> None:
    bench = gb.Benchmark(OrderAgent, catalog=gb.sim.catalog(), runs=1, candidates=["sim/steady"], progress=False)
    await bench.set_inputs(load_inputs("orders")[:2]).set_spec(judge_swap=True).run()
    report = bench.report()
    assert report.meta.spec == bench.spec and report.meta.spec.judge_swap
    assert report.meta.job == "order-agent" and report.meta.reference_entry == "sim/steady"
    back = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "r"))
    assert back.meta == report.meta
    assert report.with_margin(2.5).meta.spec.margin == 2.5 and report.meta.spec.margin == 1.0


def test_a_meta_json_written_before_the_spec_reads_back() -> None:
    old = {
        "benchmark_id": "fde95b517996",
        "job": "order-agent",
        "instructions": "Decide a customer's refund request.",
        "grade": "standard",
        "also": [],
        "margin": 1.0,
        "runs_per_entry": 3,
        "reference_entry": "sim/steady",
        "judge_entry": "sim/oracle",
        "judge_params": {"temperature": 0},
        "judge_swap": False,
        "judge_reasoning": False,
        "rubric": "A good answer looks the order up before deciding.",
        "scorer": None,
        "salt": "",
        "candidates": ["sim/steady", "sim/swift"],
        "skipped": {},
        "inputs": {"ord-01": {"id": "ord-01", "message": "Refund A-1001?", "order_id": "A-1001"}},
        "gradebench_version": "0.1.0",
        "stopped": None,
        "judge_noise_k": None,
        "design": "fixed",
        "units": [],
        "max_runs": None,
        "stops": {},
        "budget": None,
    }
    meta = ReportMeta.from_dict(old)
    assert (meta.spec.runs, meta.spec.design, meta.spec.grade, meta.spec.judge) == (
        3,
        "fixed",
        "standard",
        "sim/oracle",
    )
    assert meta.spec.rubric.startswith("A good answer") and meta.spec.job is None  # a rerun passes job=...
    assert meta.job == "order-agent" and meta.candidates == ["sim/steady", "sim/swift"] and meta.max_runs == 3
    raced = ReportMeta.from_dict({**old, "design": "auto", "runs_per_entry": None, "max_runs": 24, "stopped": True})
    assert raced.spec.runs == "auto" and raced.max_runs == 24 and raced.stopped is gb.vocab.Stopped.CANCELLED
    with pytest.raises(ValueError, match="field 'margin'"):
        ReportMeta.from_dict({**old, "margin": -2})


async def test_a_saved_report_reruns_in_one_line_from_the_cache(tmp_path: Path) -> None:
    bench = gb.Benchmark(
        OrderAgent, catalog=gb.sim.catalog(), runs=2, candidates=["sim/steady", "sim/swift"], salt="again"
    )
    await bench.set_inputs(load_inputs("orders")[:3]).run()
    saved = bench.report().to_parquet(tmp_path / "saved")

    again = gb.Benchmark.from_report(gb.BenchmarkReport.read_parquet(saved), progress=False)
    assert again.spec == bench.spec and again.inputs == bench.inputs
    await again.run()
    rerun = again.report()
    assert rerun.runs["cached"].all() and rerun.runs["spent_now"].sum() == 0  # every call served from the cache
    assert rerun.runs["output"].to_list() == bench.report().runs["output"].to_list()


def test_a_report_whose_job_or_scorer_was_code_says_what_to_pass() -> None:
    def make_job():
        async def local_job(input: dict, seat: gb.Seat) -> str:
            """Say hi."""
            return "hi"

        return local_job

    job = make_job()
    endpoint = ScriptedEndpoint(lambda body, request: completion("hi"))
    bench = gb.Benchmark(job, catalog=endpoint.catalog(), grade="standard", runs=1, progress=False)
    bench.set_input({"q": 1}).set_spec(scorer=lambda output, reference: 1.0)
    bench.run_sync()
    report = bench.report()
    assert report.meta.spec.job is None and report.meta.spec.catalog is None
    with pytest.raises(ValueError, match="pass job="):
        gb.Benchmark.from_report(report)
    with pytest.raises(ValueError, match="pass catalog="):
        gb.Benchmark.from_report(report, job=job)
    with pytest.raises(ValueError, match="was given as code: pass scorer="):
        gb.Benchmark.from_report(report, endpoint.catalog(), job=job)
    again = gb.Benchmark.from_report(report, endpoint.catalog(), job=job, scorer=None)
    assert again.scorer is None and again.spec.scorer == "none" and again.inputs == bench.inputs


# ------------------------------------------------------------------------------------------------ the judge spec


def test_a_judge_spec_left_unset_judges_as_the_report_did() -> None:
    unset = gb.JudgeSpec()
    assert (unset.rubric, unset.judge, unset.judges, unset.scorer) == (None, None, None, None)
    assert (unset.swap, unset.reasoning, unset.batch) == (None, None, None)
    assert gb.JudgeSpec(judges=["a"]) == gb.JudgeSpec(judge="a")  # one name is the one judge, as in a RaceSpec
    assert gb.JudgeSpec(judges=["a", "b"]).judges == ("a", "b")
    assert gb.JudgeSpec(judge="a").replace(judge=None, judges=["b", "c"]).judges == ("b", "c")
    with pytest.raises(AttributeError):
        unset.rubric = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rubric": 3}, "rubric must be text, got 3"),
        ({"judge": 3}, "judge must be text, got 3"),
        ({"judge": ""}, "judge must name an entry"),
        ({"swap": "yes"}, "swap must be True, False or None"),
        ({"reasoning": 1}, "reasoning must be True, False or None"),
        ({"batch": "true"}, "batch must be True, False or None"),
        ({"scorer": "field_equals:decision"}, "scorer must be a scorer in code"),
        ({"judges": "a"}, "judges must be a list of entry names"),
        ({"judges": []}, "judges must name at least one entry"),
        ({"judges": ["a", "a"]}, "judges names 'a' twice"),
        ({"judges": ["a", "b"], "judge": "c"}, "give one of them"),
    ],
)
def test_every_judge_spec_check_raises_naming_the_field(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gb.JudgeSpec(**fields)
    with pytest.raises(ValueError, match=message):
        gb.JudgeSpec().replace(**fields)  # checked again when changed
