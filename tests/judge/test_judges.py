"""A second judge from another family: the entry's family, the judge_family diagnostic, and a panel of judges.

The simulated fleet makes the truth known. Its families: atlas (sim/oracle, sim/prose), borealis (sim/sage, sim/steady,
sim/swift, sim/mini), cirrus (the rest). In the biased fleet below the borealis models write in a house style (a
signature sentence closes their explanations) and sim/sage, as a judge, adds 3 points of accuracy to an answer in that
style: it favours its own family, and nothing else about it changes. So sim/sage − sim/oracle is truly positive on
sim/steady and sim/swift only, and zero on every other entry but for the judges' own noise.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import gradebench as gb
from gradebench._catalog.openrouter import build_catalog
from gradebench._catalog.writing import catalog_toml
from gradebench._cli.runconfig import load_config
from gradebench._judge.agreement import JudgePair, judge_agreement
from gradebench._judge.panel import PANEL_INCOMPLETE, VERDICTS_FILE, VERDICTS_SCHEMA
from gradebench._records.meta import ReportMeta
from gradebench._report.diagnostics import judge_family
from gradebench._stats.kappa import kappa
from gradebench.jobs import OrderAgent, load_inputs

from ..catalog.test_openrouter import GRADES, LISTED, PICK
from ..one_judge_digest import race_digests
from ..sizes import Size, sized

PANEL = ["sim/oracle", "sim/sage"]
STYLE = "Every fact above was checked against the tools."
"""The borealis house style in the biased fleet."""

BEFORE = {
    # tests/one_judge_digest.py run with the release before panels of judges on the path (its commit b29824a); the
    # html, models and table since the fixed design reads the two-sided 95% interval (the same race with the
    # one-sided paired.py gives b29824a's digests for all three); the runs, models, html and table since the runs
    # frame has `endpoint_error` and a judge-only "as good" says it is unconfirmed; the html, models and table since
    # each bound lies at least z pseudo-pair standard errors from the mean (gradebench._stats.adjusted): on these 8
    # and 4 inputs the percentile bootstrap was narrower (sim/flaky's [−0.43, 0.00] is now [−0.51, 0.23]); every
    # verdict is the same; the table and the page lead with what the judge-only verdicts are worth (_verdict/worth.py)
    "order": {
        "calls": "fab364623dfa4d09",
        "diagnostics": "bfa5c543b6277577",
        "estimate": "ce3dbc1649e62d5d",
        "html": "4d4e5e05b2519c32",
        "meta": "63978fb9bd4bd0cc",
        "models": "50cd42f7bce8c638",
        "runs": "db91630df5fed5f2",
        "table": "f0c3e677f7563f45",
    },
    "selecting": {
        "calls": "9fca3aa1424a01ae",
        "diagnostics": "674e514e8387c81f",
        "html": "0a8ea686dab44caf",
        "meta": "138cfcb8af025ecf",
        "models": "ea6eb67a1be7782b",
        "runs": "80bf836ae1cca9ba",
        "table": "e1476f80f911761d",
    },
}


def biased_fleet(*, preference: int = 3, sage_failures: float = 0.0) -> gb.sim.SimFleet:
    """The built-in fleet, its borealis models writing in one house style and sim/sage favouring it by
    ``preference`` points as a judge (failing ``sage_failures`` of its calls, with no retry)."""
    profiles = []
    for p in gb.sim.PROFILES:
        if p.family == "borealis":
            p = dataclasses.replace(p, signature=STYLE, self_preference=preference if p.name == "sim/sage" else 0)
        if p.name == "sim/sage" and sage_failures:
            p = dataclasses.replace(p, failure_rate=sage_failures, max_retries=0)
        profiles.append(p)
    return gb.sim.SimFleet(latency_scale=0, profiles=profiles)


def race(catalog: gb.Catalog, tmp: Path, *, inputs: int = 12, runs: int = 2, **kw) -> gb.Benchmark:
    kw.setdefault("candidates", ["sim/steady", "sim/swift", "sim/squint"])
    bench = gb.Benchmark(OrderAgent, runs=runs, catalog=catalog, grade="standard", cache=tmp, progress=False, **kw)
    return bench.set_inputs(load_inputs("orders")[:inputs])


@pytest.fixture(scope="module")
def panel_race(tmp_path_factory: pytest.TempPathFactory) -> gb.Benchmark:
    """12 inputs × 2 runs of sim/steady, sim/swift and sim/squint, judged by sim/oracle and the biased sim/sage."""
    import asyncio

    bench = race(biased_fleet().catalog(), tmp_path_factory.mktemp("panel"), judges=PANEL)
    asyncio.run(bench.run())
    return bench


# ---------------------------------------------------------------------------------------------------------- family


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-5-mini", "openai"),
        ("gpt-4o-2024-08-06", "openai"),
        ("o3-mini", "openai"),
        ("o1", "openai"),
        ("o4-mini-high", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("gemini-2.5-pro", "google"),
        ("gemma2-9b-it", "google"),
        ("llama3.1:8b", "meta"),
        ("meta-llama/Llama-3.3-70B-Instruct", "meta"),
        ("accounts/fireworks/models/llama-v3p1-70b-instruct", "meta"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("qwen/qwen3-32b", "qwen"),
        ("mistral-large-latest", "mistral"),
        ("mixtral-8x7b-32768", "mistral"),
        ("codestral-2501", "mistral"),
        ("deepseek-chat", "deepseek"),
        ("x-ai/grok-4", "xai"),
        ("moonshotai/kimi-k2-instruct", "moonshotai"),  # an OpenRouter id: vendor/model
        ("mistralai/some-new-model", "mistral"),  # a vendor spelt otherwise than its family
        ("openrouter/auto", None),  # a router: who makes its answers is not known
        ("hf.co/bartowski/SomeModel-GGUF", None),  # a re-packager is not the maker
        ("olmo-2-13b", None),
        ("sim-oracle-1", None),
        ("mid-2026-10", None),
    ],
)
def test_a_family_is_told_from_the_model_id(model: str, family: str | None) -> None:
    assert gb.family_of(model) == family
    assert gb.Entry(name="x", model=model, grade="g", base_url="http://h/v1").family == family


def test_a_family_from_a_makers_provider_never_from_a_host_and_a_given_one_wins() -> None:
    def entry(**kw) -> gb.Entry:
        return gb.Entry(**{"name": "x", "model": "house-alias-7", "grade": "g", "base_url": "http://h/v1", **kw})

    assert entry(provider="anthropic").family == "anthropic"
    assert entry(provider="x-ai").family == "xai"
    assert entry(provider="groq").family is None  # groq serves other makers' models
    assert entry(provider="openrouter").family is None
    assert entry(model="llama-3.3-70b-versatile", provider="groq").family == "meta"  # the id first
    assert entry(model="gpt-5", family="Acme Labs ").family == "acme labs"  # given: kept (trimmed, lower case)


def test_the_catalog_file_takes_a_family_and_names_a_bad_one(tmp_path: Path) -> None:
    def load(extra: str) -> gb.Catalog:
        path = tmp_path / "catalog.toml"
        path.write_text(
            'grades = ["standard"]\nceiling = "a/one"\n[picks]\nstandard = "a/one"\n[[entries]]\nname = "a/one"\n'
            f'model = "gpt-5-mini"\ngrade = "standard"\nbase_url = "http://h/v1"\nprice_in = 1\nprice_out = 2\n{extra}'
        )
        return gb.Catalog.load(path)

    assert load("")["a/one"].family == "openai"  # unset: told from the model id
    assert load('family = "tuned-in-house"\n')["a/one"].family == "tuned-in-house"
    for bad in ('family = ""\n', "family = 3\n", 'family = "  "\n'):
        with pytest.raises(gb.CatalogError, match="entry 'a/one': field 'family'") as caught:
            load(bad)
        assert caught.value.field == "family"


def test_the_sim_fleets_families() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    families = {e.name: e.family for e in catalog}
    assert set(families.values()) == {"atlas", "borealis", "cirrus"}
    judge = catalog.ceiling()
    assert judge.name == "sim/oracle"
    assert [n for n, f in families.items() if f == judge.family] == ["sim/oracle", "sim/prose"]  # large only
    assert {n for n, f in families.items() if f == families["sim/sage"]} == {
        "sim/sage",
        "sim/steady",
        "sim/swift",
        "sim/mini",
    }


def test_an_openrouter_catalog_has_the_vendors_families_and_its_file_keeps_them() -> None:
    catalog, models = build_catalog({m["id"]: m for m in LISTED}, grades=GRADES, pick=PICK, api_key_env=None)
    families = {e.model: e.family for e in catalog}
    assert families == {"qwen/qwen3-32b": "qwen", "meta-llama/llama-3.3-70b-instruct": "meta", "openai/gpt-5": "openai"}
    text = catalog_toml(catalog, models)
    assert 'family = "meta"' in text
    again = gb.Catalog.from_dict(tomllib.loads(text))
    assert {e.name: e.family for e in again} == {e.name: e.family for e in catalog}


# -------------------------------------------------------------------------------------------- judge_family flag


async def test_a_one_judge_race_flags_the_judges_own_entry_and_family_and_says_how_to_measure(tmp_path) -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    bench = gb.Benchmark(OrderAgent, runs=1, catalog=catalog, grade="large", cache=tmp_path, progress=False)
    await bench.set_inputs(load_inputs("orders")[:2]).run()
    report = bench.report()
    assert report.meta.families["sim/oracle"] == "atlas" and report.meta.families["sim/sage"] == "borealis"
    flags = report.diagnostics().filter(kind="judge_family")
    detail = dict(zip(flags["entry"], flags["detail"], strict=True))
    assert set(detail) == {"sim/oracle", "sim/prose"}  # sim/sage, the reference, is of another family
    assert "judges its own entry's runs" in detail["sim/oracle"]
    assert "family atlas, as sim/prose is" in detail["sim/prose"] and "may be inflated" in detail["sim/prose"]
    assert all("judges=[...]" in d for d in detail.values())  # no second judge: how to measure it
    assert "Panickssery" in detail["sim/prose"]


def test_nothing_is_said_of_a_family_that_is_not_known() -> None:
    meta = ReportMeta(
        judge_entry="j",
        reference_entry="ref",
        candidates=["ref", "same", "unknown"],
        families={"j": "openai", "same": "openai"},
    )
    assert [row["entry"] for row in judge_family(meta)] == ["same"]
    unknown_judge = meta.replace(families={"same": "openai", "ref": "openai"})
    assert judge_family(unknown_judge) == []  # the judge's family is unknown: no flag, true or false
    assert judge_family(meta.replace(families={})) == []
    reference = judge_family(meta.replace(families={"j": "meta", "ref": "meta"}))
    assert [r["entry"] for r in reference] == ["ref"] and "is the reference" in reference[0]["detail"]
    one_family = meta.replace(families={"j": "meta", "k": "meta"}, spec=gb.RaceSpec(judges=["j", "k"]))
    (row,) = judge_family(one_family)
    assert row["entry"] == "(judges)" and "all of family meta" in row["detail"]


# --------------------------------------------------------------------------------------------- a panel of judges


def test_a_panel_judges_every_run_with_each_judge_and_scores_their_mean(panel_race: gb.Benchmark) -> None:
    report = panel_race.report()
    assert report.meta.spec.judges == tuple(PANEL) and report.meta.judges == PANEL
    assert [e.name for e in panel_race.judges] == PANEL and panel_race.judge_entry.name == "sim/oracle"
    verdicts = report.verdicts
    assert verdicts.schema == pl.Schema(VERDICTS_SCHEMA)
    runs = report.runs.filter(pl.col("role") == "candidate")
    judged = runs.filter(pl.col("ok"))
    assert verdicts.height == 2 * judged.height
    assert verdicts.group_by("run_id").agg(pl.col("judge_entry").sort())["judge_entry"].to_list() == [PANEL] * (
        judged.height
    )
    means = verdicts.group_by("run_id").agg(pl.col("score").mean(), pl.col("accuracy").mean(), pl.col("work").mean())
    both = judged.join(means, on="run_id", suffix="_panel")
    for name in ("score", "accuracy", "work"):
        assert (both[name] - both[f"{name}_panel"]).abs().max() < 1e-12, name
    assert set(judged["judge_entry"]) == {"sim/oracle + sim/sage"}
    assert judged["reason"].str.contains("sim/oracle: ").all() and judged["reason"].str.contains(" | sim/sage: ").all()
    calls = report.calls.filter(pl.col("role") == "judge")
    each = judged.height + report.controls.height  # the negative controls are judged by every judge of the panel too
    assert report.controls.height == 3 and report.controls["judge_entry"].to_list() == ["sim/oracle + sim/sage"] * 3
    assert calls.group_by("entry").len().sort("entry")["len"].to_list() == [each, each]
    cost = calls.group_by("run_id").agg(pl.col("cost").sum())  # a run's judge cost is both judges'
    assert (
        judged.join(cost, on="run_id")["judge_cost"] - judged.join(cost, on="run_id")["cost_right"]
    ).abs().max() < 1e-12


def test_the_panels_agreement_shows_the_biased_judge_and_whom_it_favours(panel_race: gb.Benchmark) -> None:
    report = panel_race.report()
    found = report.judge_agreement()
    assert found is not None and found.judges == tuple(PANEL) and found.incomplete == 0
    (pair,) = found.pairs
    assert (pair.first, pair.second) == tuple(PANEL)
    assert pair.kappa is not None and pair.kappa_lo is not None and pair.kappa_hi is not None
    assert pair.kappa_lo <= pair.kappa <= pair.kappa_hi < 1  # they disagree where the bias bites
    # the truth: sim/sage over-scores its own family's answers, and only theirs
    assert pair.by_entry["sim/swift"] > 0.5
    assert abs(pair.by_entry["sim/squint"]) < 0.3
    assert pair.diff_lo is not None and pair.diff_lo > 0  # overall it scores higher, and the interval says so
    swift = pair.difference_of("sim/swift", ["sim/squint"])
    assert swift is not None and swift > 0.5
    table = report.table()
    assert "judges sim/oracle + sim/sage" in table.splitlines()[0]
    assert "judges: sim/oracle and sim/sage agree" in table and "weighted κ" in table
    assert "by entry, sim/sage − sim/oracle: sim/steady" in table and "sim/swift +" in table
    assert "(family of sim/sage)" in table
    swift_line = next(line for line in table.splitlines() if line.startswith("  sim/swift ") and "paired" in line)
    assert "judges: sim/sage +" in swift_line and "vs sim/oracle" in swift_line  # beside the verdict's notes
    html = report._repr_html_()
    assert "weighted κ" in html and "judges sim/oracle + sim/sage" in html


def test_the_family_flag_quotes_what_the_other_judge_measured(panel_race: gb.Benchmark) -> None:
    flags = panel_race.report().diagnostics().filter(kind="judge_family")
    detail = dict(zip(flags["entry"], flags["detail"], strict=True))
    assert set(detail) == {"sim/steady", "sim/swift"}  # sim/sage's family; sim/oracle's has no entry here
    assert "sim/steady is the reference" in detail["sim/steady"]
    assert "measured: sim/sage scores sim/swift's runs" in detail["sim/swift"]
    said = float(detail["sim/swift"].split("sim/swift's runs ")[1].split(" ")[0])
    pair = panel_race.report().judge_agreement().pairs[0]  # type: ignore[union-attr]
    assert said == pytest.approx(pair.difference_of("sim/swift", ["sim/squint"]), abs=0.005)
    assert "higher, against sim/oracle" in detail["sim/swift"]


def test_the_views_and_the_html_page_show_the_panel(panel_race: gb.Benchmark, tmp_path: Path) -> None:
    from gradebench.widgets._views import Views

    report = panel_race.report()
    views = Views()
    views.show(report, lambda what, exc: pytest.fail(f"{what}: {exc}"))
    assert "weighted κ" in views.models_table.value and "judges: sim/sage +" in views.models_table.value
    assert "judges sim/oracle + sim/sage" in views.runs_table.value
    assert "judge_family" in views.diagnostics_table.value
    page = report.to_html(tmp_path / "report.html").read_text()
    assert "weighted κ" in page and "judge_family" in page


def test_a_panel_report_round_trips_and_a_one_judge_report_leaves_no_verdicts_file(
    panel_race: gb.Benchmark, tmp_path: Path
) -> None:
    report = panel_race.report()
    out = report.to_parquet(tmp_path / "panel")
    assert (out / VERDICTS_FILE).is_file()
    back = gb.BenchmarkReport.read_parquet(out)
    assert back.verdicts.equals(report.verdicts) and back.runs.equals(report.runs) and back.calls.equals(report.calls)
    assert back.table() == report.table()
    assert back.diagnostics().equals(report.diagnostics())
    back.to_parquet(tmp_path / "again")
    for name in ("runs.parquet", "calls.parquet", VERDICTS_FILE, "meta.json"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    # a one-judge report written over it must not lend it the panel's verdicts
    plain = gb.BenchmarkReport(
        [r if r.verdict is None else dataclasses.replace(r, verdict=r.verdict.panel[0]) for r in report.to_runs()],
        report.meta.with_spec(judges=None).replace(judge_entry="sim/oracle"),
    )
    plain.to_parquet(out)
    assert not (out / VERDICTS_FILE).exists()
    assert gb.BenchmarkReport.read_parquet(out).verdicts.height == 0


async def test_a_saved_panel_race_reruns_with_the_same_judges_from_the_cache(panel_race: gb.Benchmark) -> None:
    report = panel_race.report()
    again = gb.Benchmark.from_report(report, panel_race.catalog, cache=panel_race.cache, progress=False)
    assert again.spec.judges == tuple(PANEL)
    await again.run()
    assert again.report().runs["cached"].all()
    assert again.report().calls.filter(pl.col("role") == "judge")["cache_hit"].all()
    assert again.report().verdicts.equals(report.verdicts)
    rejudged = await panel_race.rejudge()
    assert rejudged.meta.judges == PANEL and rejudged.verdicts.height == report.verdicts.height
    assert rejudged.calls.filter(pl.col("role") == "judge")["cache_hit"].all()  # the same prompts: cached
    alone = await panel_race.rejudge(gb.JudgeSpec(judge="sim/oracle"))
    assert alone.meta.judges == ["sim/oracle"] and alone.meta.spec.judges is None and alone.verdicts.height == 0
    assert alone.judge_agreement() is None


async def test_the_noise_floor_of_a_panel_is_of_its_mean_and_stands_beside_the_agreement(tmp_path) -> None:
    bench = race(biased_fleet().catalog(), tmp_path, inputs=4, runs=1, judges=PANEL)
    await bench.run()
    noisy = await bench.judge_noise(k=2, sample=4)
    judge_calls = noisy.noise["replicas"].list.len().sum()
    assert judge_calls == 8  # two replicas of 4 runs, each replica a panel's mean
    line = next(line for line in noisy.table().splitlines() if line.startswith("judges: sim/oracle and"))
    assert "judge noise ±" in line and "for comparison" in line


# ------------------------------------------------------------------------------------- what the panel costs


async def test_the_estimate_and_the_budget_count_every_judge(tmp_path) -> None:
    catalog = biased_fleet().catalog()
    one = await race(catalog, tmp_path, inputs=12, runs=1).estimate()
    sage = await race(catalog, tmp_path, inputs=12, runs=1, judge="sim/sage").estimate()
    both = await race(catalog, tmp_path, inputs=12, runs=1, judges=PANEL).estimate()
    assert both.judge_calls == one.judge_calls + sage.judge_calls == 2 * one.judge_calls
    assert both.judge_cost == pytest.approx(one.judge_cost + sage.judge_cost)
    assert both.candidates_cost == pytest.approx(one.candidates_cost)
    assert both.judge_entry == "sim/oracle + sim/sage"
    assert "every run is judged by each of 2 judges: sim/oracle + sim/sage" in str(both)
    # the race spends what the estimate said, both judges' calls included (a fresh fleet: a cold prompt cache)
    bench = race(biased_fleet().catalog(), tmp_path / "race", inputs=12, runs=1, judges=PANEL)
    await bench.run()
    judge_calls = bench.report().calls.filter(pl.col("role") == "judge")
    assert judge_calls.height == both.judge_calls
    assert judge_calls["cost"].sum() == pytest.approx(both.judge_cost, rel=0.25)
    # under one budget a panel makes fewer runs than one judge: the budget pays every verdict twice
    limit = both.cost / 2
    made = {}
    for name, judging in (("one", {}), ("panel", {"judges": PANEL})):
        capped = race(biased_fleet().catalog(), tmp_path / name, inputs=12, runs=1, budget=limit, **judging)
        await capped.run()
        report = capped.report()
        assert report.calls.filter(~pl.col("cache_hit"))["cost"].sum() <= limit  # every call spent now, judges' too
        assert report.meta.stopped == "budget"
        made[name] = report.runs.filter(pl.col("role") == "candidate").height
    assert made["panel"] < 0.8 * made["one"], made


# ------------------------------------------------------------------------------------------ a judge that fails


async def test_a_run_only_part_of_the_panel_judged_is_unjudged_and_said_to_be(tmp_path) -> None:
    bench = race(biased_fleet(sage_failures=0.3).catalog(), tmp_path, inputs=10, runs=2, judges=PANEL)
    await bench.run()
    report = bench.report()
    runs = report.runs.filter((pl.col("role") == "candidate") & pl.col("ok"))
    half = runs.filter(pl.col("judge_error").is_not_null())
    assert 0 < half.height < runs.height  # sim/sage failed on some runs, not all
    assert half["score"].is_null().all() and half["accuracy"].is_null().all()  # never a half-judged mean
    assert half["judge_error"].str.starts_with(PANEL_INCOMPLETE).all()
    assert half["judge_error"].str.contains("sim/sage gave none").all()
    assert half["judge_error"].str.contains("sim/oracle scored").all()
    kept = report.verdicts.filter(pl.col("run_id").is_in(half["run_id"].to_list()))
    assert set(kept.filter(pl.col("score").is_not_null())["judge_entry"]) == {"sim/oracle"}  # kept, not counted
    whole = runs.filter(pl.col("judge_error").is_null())
    assert whole["score"].is_not_null().all()
    models = report.models.filter(entry="sim/swift").row(0, named=True)
    swift = whole.filter(entry="sim/swift")
    assert models["judged"] == swift.height and models["score_mean"] == pytest.approx(swift["score"].mean())
    table = report.table()
    assert f"JUDGE FAILED on {half.height} of {runs.height} runs" in table
    assert f"judges: {half.height} runs judged by only part of the panel" in table
    assert report.judge_agreement().incomplete == half.height  # type: ignore[union-attr]
    assert report.judge_agreement().pairs[0].runs == whole.height  # type: ignore[union-attr]
    kinds = report.diagnostics()["kind"].to_list()
    assert kinds.count("judge_error") == half.height
    assert "without usage" not in table  # a judge call that failed cost nothing: it is no cost unknown


# --------------------------------------------------------------------------------------- one judge, as before


async def test_a_one_judge_race_reports_byte_for_byte_as_before(tmp_path) -> None:
    assert await race_digests(str(tmp_path / "cache")) == BEFORE


async def test_a_one_judge_race_has_no_panel_and_one_named_judge_is_the_default_race(tmp_path) -> None:
    plain = race(gb.sim.catalog(latency_scale=0), tmp_path / "a", inputs=3, runs=1)
    await plain.run()
    named = race(gb.sim.catalog(latency_scale=0), tmp_path / "b", inputs=3, runs=1, judges=["sim/oracle"])
    await named.run()  # a fleet of its own: the same prompt cache as the first race met
    assert named.spec.judges is None and named.spec.judge == "sim/oracle"  # one name is judge
    a, b = plain.report(), named.report()
    assert a.meta.spec.judges is None and a.verdicts.height == 0 and a.judge_agreement() is None
    # which verdict of an input lays the cached prefix down first is timing, and so is its judge_cost
    timing = ("wall_s", "wall_now_s", "latency_s", "judge_cost")
    assert a.runs.drop(timing).equals(b.runs.drop(timing))
    assert a.meta.families == {
        "sim/oracle": "atlas",
        "sim/steady": "borealis",
        "sim/swift": "borealis",
        "sim/squint": "cirrus",
    }
    out = a.to_parquet(tmp_path / "out")
    assert not (out / VERDICTS_FILE).exists()
    assert json.loads((out / "meta.json").read_text())["spec"]["judges"] is None


# ------------------------------------------------------------------------------------------------ the spec


def test_the_spec_checks_its_judges() -> None:
    assert gb.RaceSpec(judges=["a", "b"]).judges == ("a", "b")
    assert gb.RaceSpec(judges=["a"]) == gb.RaceSpec(judge="a")
    for bad, said in (
        ({"judges": []}, "judges must name at least one entry"),
        ({"judges": "a"}, "judges must be a list of entry names"),
        ({"judges": ["a", "a"]}, "judges names 'a' twice"),
        ({"judges": ["a", "b"], "judge": "c"}, "give one of them"),
    ):
        with pytest.raises(ValueError, match=said):
            gb.RaceSpec(**bad)
    with pytest.raises(ValueError, match="field 'judges'"):
        gb.RaceSpec.from_dict({"judges": "a"})
    spec = gb.RaceSpec(judges=["a", "b"])
    assert gb.RaceSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_a_benchmark_takes_judges_and_refuses_bad_ones(tmp_path) -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    bench = race(catalog, tmp_path, judges=PANEL)
    assert [e.name for e in bench.lineup.judges] == PANEL
    bench.set_spec(judge="sim/prose")  # one judge replaces the panel
    assert bench.spec.judges is None and [e.name for e in bench.judges] == ["sim/prose"]
    bench.set_spec(judges=PANEL)  # and a panel the one judge
    assert bench.spec.judge is None and bench.spec.judges == tuple(PANEL)
    with pytest.raises(KeyError, match="no entry named 'sim/nobody'"):
        race(catalog, tmp_path, judges=["sim/oracle", "sim/nobody"])
    with pytest.raises(ValueError, match="judges must be a list"):
        race(catalog, tmp_path, judges="sim/oracle")
    twin = dataclasses.replace(catalog["sim/oracle"], name="sim/oracle-again")
    doubled = gb.Catalog(
        [*catalog.entries, twin], grades=catalog.grades, picks=catalog.picks, ceiling=catalog.ceiling_name
    )
    with pytest.raises(ValueError, match="one model on one endpoint"):
        race(doubled, tmp_path, judges=["sim/oracle", "sim/oracle-again"])


def test_a_run_config_takes_judges(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('job = "order-agent"\ninputs = "example:orders"\njudges = ["sim/oracle", "sim/sage"]\n')
    assert load_config(path).spec.judges == tuple(PANEL)
    path.write_text('job = "order-agent"\ninputs = "example:orders"\njudges = "sim/oracle"\n')
    with pytest.raises(gb.ConfigError, match="field 'judges'"):
        load_config(path)


# ------------------------------------------------------------------------------------------------ statistics


def test_kappa_is_one_for_the_same_scores_none_without_spread_and_near_zero_for_independent_ones() -> None:
    a = np.array([3.0, 7.0, 10.0, 5.0])
    assert kappa(a, a) == pytest.approx(1.0)
    assert kappa(np.full(4, 7.0), np.full(4, 7.0)) is None
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 11, 5000).astype(float), rng.integers(0, 11, 5000).astype(float)
    assert abs(kappa(x, y)) < 0.05  # type: ignore[arg-type]
    assert kappa(x, x + 2) < kappa(x, x)  # type: ignore[operator]  # a shift is disagreement too


def _panel_frame(rng: np.random.Generator, *, inputs: int, runs: int, shift: float, noise: float) -> pl.DataFrame:
    """Two judges' scores of the same runs: an input effect and a run effect (both judges see them), each judge's
    own noise, and the second judge ``shift`` higher."""
    rows = []
    for i in range(inputs):
        u = rng.normal(0, 1.0)
        for k in range(runs):
            t = u + rng.normal(0, 1.0)
            run = f"r{i}-{k}"
            for judge, offset in (("a", 0.0), ("b", shift)):
                score = t + offset + rng.normal(0, noise)
                rows.append({"run_id": run, "entry": "e", "input_id": f"i{i}", "judge_entry": judge, "score": score})
    return pl.DataFrame(rows)


@sized(150, 600)
@pytest.mark.parametrize("inputs", [8, 20])
def test_the_agreement_intervals_cover_the_truth_by_simulation(inputs: int, size: Size) -> None:
    """600 simulated panels of ``inputs`` inputs × 4 runs (seed 11): the truth is κ = 2·2 / (2·2 + 2·0.8² + 0.5²)
    and a mean difference of 0.5; each 95% interval must cover it in at least 93% of them. Measured over 2000
    panels: κ 94.6% at 8 inputs, 95.3% at 20, 95.2% at 40 (the jackknife alone: 93.0%, 94.0%, 94.5%); the difference
    94.5% at each. More worlds, 8 and 16 inputs: `benchmarks/agreement_coverage.py`."""
    rng = np.random.default_rng(11)
    truth_kappa = 2 * 2.0 / (2 * 2.0 + 2 * 0.8**2 + 0.5**2)
    covered = {"kappa": 0, "diff": 0}
    trials = size.n
    for _ in range(trials):
        found = judge_agreement(_panel_frame(rng, inputs=inputs, runs=4, shift=0.5, noise=0.8), ["a", "b"])
        assert found is not None
        pair = found.pairs[0]
        assert pair.kappa_lo is not None and pair.kappa_hi is not None
        assert pair.diff_lo is not None and pair.diff_hi is not None
        covered["kappa"] += pair.kappa_lo <= truth_kappa <= pair.kappa_hi
        covered["diff"] += pair.diff_lo <= 0.5 <= pair.diff_hi
    rates = {k: v / trials for k, v in covered.items()}
    assert rates["kappa"] >= size.at_least(0.93) and rates["diff"] >= size.at_least(0.93), rates


def test_how_well_judges_agree_is_said_only_as_far_as_the_interval_carries_it() -> None:
    def pair(lo: float, hi: float) -> JudgePair:
        return JudgePair(
            first="a", second="b", runs=40, kappa=(lo + hi) / 2, kappa_lo=lo, kappa_hi=hi, **dict.fromkeys(DIFF, 0.0)
        )

    assert pair(0.82, 0.95).agreement_word() == "agree well"
    assert pair(0.65, 0.95).agreement_word() == "agree at least fairly"
    assert pair(0.2, 0.55).agreement_word() == "agree poorly"
    assert "read the runs they disagree on" in pair(0.2, 0.55).sentence()
    assert pair(0.3, 0.9).agreement_word() == "cannot be said to agree or not: too few runs"


DIFF = ("mean_diff", "diff_lo", "diff_hi")


def test_a_judge_that_gives_every_run_one_score_is_named_and_its_kappa_is_0() -> None:
    frame = _panel_frame(np.random.default_rng(5), inputs=8, runs=3, shift=0.0, noise=0.5)
    frame = frame.with_columns(
        pl.when(pl.col("judge_entry") == "b").then(7.0).otherwise(pl.col("score")).alias("score")
    )
    found = judge_agreement(frame, ["a", "b"])
    assert found is not None
    pair = found.pairs[0]
    assert pair.kappa == 0.0 and pair.one_score == {"b": 7.0}
    assert pair.sentence().startswith(
        "b gave one score (7) to every run whatever the answer: it cannot tell runs apart"
    )
    flat = frame.with_columns(pl.lit(7.0).alias("score"))
    both = judge_agreement(flat, ["a", "b"])
    assert both is not None and both.pairs[0].kappa is None
    assert both.pairs[0].sentence() == "a and b cannot be compared (neither judge's scores vary)"


def test_no_interval_over_too_few_inputs() -> None:
    found = judge_agreement(_panel_frame(np.random.default_rng(3), inputs=4, runs=3, shift=0.0, noise=0.5), ["a", "b"])
    assert found is not None
    pair = found.pairs[0]
    assert pair.kappa is not None and pair.kappa_lo is None and pair.diff_lo is None
    assert "cannot be said to agree or not: too few inputs: weighted κ" in pair.sentence()
    assert "[" not in pair.sentence().split("κ")[1].split(";")[0]
