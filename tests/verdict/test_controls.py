"""Negative controls: planted wrong answers judged blind among the runs, and the verdicts a fooled judge voids.

A control is the reference transcript of its input with the final answer replaced (another input's answer, an empty
answer, the answer cut in half). These cases check that nothing in the judge's request tells a control from a real
run, that no figure of the candidates counts one, that a judge which scores them like right answers voids every
verdict (a skimming sim judge, a scripted one that gives about 4 + 3 to everything), that a good judge does not (by
simulation, seeds and counts below), and that the estimate, the budget, a stop, rejudging and parquet keep them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.numbers import money
from gradebench._base.protocol import ROLE_HEADER, RUN_HEADER, section, transcripts
from gradebench._base.vocab import ControlKind, Role
from gradebench._calls.session import mount
from gradebench._cli import main as _cli
from gradebench._race import controls as race_controls
from gradebench._race.rejudge import estimate_rejudge
from gradebench._records.planted import (
    KINDS,
    ControlPlant,
    altered,
    argued_at_length,
    empty_like,
    halved,
    plant_controls,
)
from gradebench._stats.ppi import MIN_LABELS
from gradebench._verdict.controls import ControlOutcome, ControlScore
from gradebench.jobs import OrderAgent, SelectingAgent, load_inputs
from gradebench.sim import DEFAULT_BASE_URL, PROFILES, SimFleet

from ..conftest import Scripted, completion, scripted_catalog
from ..sizes import Size, sized

ORACLE = next(p for p in PROFILES if p.name == "sim/oracle")
SKIM = dataclasses.replace(ORACLE, name="sim/skim", model="sim-skim-1", judge_skims=True)
"""A weak judge: the oracle's twin that checks the tool calls and never reads the answer."""


def fleet_catalog(*, record: bool = True) -> tuple[SimFleet, gb.Catalog]:
    """The simulated fleet with the skimming judge beside the oracle (the ceiling stays sim/oracle)."""
    fleet = SimFleet(profiles=[*PROFILES, SKIM], latency_scale=0, record=record)
    return fleet, fleet.catalog()


def order_race(catalog: gb.Catalog, tmp_path: Path, *, inputs: int = 8, runs: int = 1, **kw: Any) -> gb.Benchmark:
    kw.setdefault("candidates", ["sim/steady", "sim/swift", "sim/nano"])
    bench = gb.Benchmark(
        OrderAgent, runs=runs, catalog=catalog, grade="standard", cache=tmp_path / "cache", progress=False, **kw
    )
    return bench.set_inputs(load_inputs("orders")[:inputs])


def split_user(user: str) -> tuple[str, str]:
    """A reference-first judge prompt's user message: (up to the end of the reference transcript, the rest)."""
    cut = user.index("</transcript>\n") + len("</transcript>\n")
    return user[:cut], user[cut:]


def input_of(body: dict[str, Any]) -> str:
    """The id of the input a judge request is about, read from its ``<input>`` section."""
    return json.loads(section(body["messages"][1]["content"], "input") or "{}")["id"]


def candidate_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    shown = dict(transcripts(body["messages"][1]["content"]))
    return [json.loads(line) for line in (shown[Role.CANDIDATE] or "").splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------------------- blindness


async def test_a_controls_judge_request_is_a_candidates_in_every_byte_but_its_answer(tmp_path: Path) -> None:
    fleet, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path)
    await bench.run()
    report = bench.report()
    controls = report.controls
    assert sorted(controls["entry"].to_list()) == sorted(f"(control: {k})" for k in KINDS[:3])  # the default three
    assert controls["input_id"].n_unique() == 3 and set(controls["role"]) == {"control"}
    ids = set(controls["run_id"])
    judged = [r for r in fleet.requests if r.headers[ROLE_HEADER] == "judge"]
    planted = [r for r in judged if r.headers[RUN_HEADER] in ids]
    real = [r for r in judged if r.headers[RUN_HEADER] not in ids]
    assert len(planted) == 3 and len(real) == 3 * 8
    reference = {r["input_id"]: r["run_id"] for r in report.runs.filter(role="reference").iter_rows(named=True)}
    for request in planted:
        body, user = request.body, request.body["messages"][1]["content"]
        text = json.dumps(body).lower()
        assert "control" not in text and "planted" not in text  # nothing names it
        assert re.fullmatch(r"[0-9a-f]{12}", request.headers[RUN_HEADER])  # an opaque id, like any run's
        input_id = input_of(body)
        twin = next(r for r in real if input_of(r.body) == input_id)  # a candidate's verdict on the same input
        assert set(request.headers) == set(twin.headers)  # the same labels, the same values but the run id
        own_values = ("content-length", RUN_HEADER)
        assert {k: v for k, v in request.headers.items() if k not in own_values} == {
            k: v for k, v in twin.headers.items() if k not in own_values
        }
        assert {k: v for k, v in body.items() if k != "messages"} == {
            k: v for k, v in twin.body.items() if k != "messages"
        }
        assert body["messages"][0] == twin.body["messages"][0]  # the same system rules
        shared, own = split_user(user)
        assert shared == split_user(twin.body["messages"][1]["content"])[0]  # the input's one prefix, labels included
        twin_own = split_user(twin.body["messages"][1]["content"])[1]
        assert own.splitlines()[-1] == twin_own.splitlines()[-1]  # the same closing line, the same labels
        assert own.startswith("<checked_in_code>\n") and twin_own.startswith("<checked_in_code>\n")
        # the candidate transcript is this input's reference transcript, tool results and all, up to the answer
        ref_events = report.transcript(reference[input_id])
        events = candidate_events(body)
        tools = [e for e in events if e["kind"].startswith("tool")]
        assert tools == [e for e in ref_events if e["kind"].startswith("tool")]
        assert events[-1]["kind"] == "answer" and events[-1] != ref_events[-1]
        assert events == report.transcript(next(iter(controls.filter(input_id=input_id)["run_id"])))


async def test_the_label_bias_check_judges_a_control_in_both_orders_like_any_run(tmp_path: Path) -> None:
    fleet, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path, candidates=["sim/steady"]).set_spec(judge_swap=True)
    await bench.run()
    ids = set(bench.report().controls["run_id"])
    orders = [candidate_first(r.body) for r in fleet.requests if r.headers.get(RUN_HEADER) in ids]
    assert sorted(orders) == [False] * 3 + [True] * 3
    assert bench.report().controls["swap_gap"].null_count() == 0


async def test_another_inputs_answer_brings_that_inputs_reasoning_when_the_judge_reads_reasoning(
    tmp_path: Path,
) -> None:
    fleet = SimFleet(latency_scale=0)  # the built-in fleet: sim/sage is the large grade's pick
    bench = gb.Benchmark(OrderAgent, runs=1, catalog=fleet.catalog(), grade="large", cache=tmp_path, progress=False)
    bench.set_spec(candidates=["sim/sage"], judge_reasoning=True).set_inputs(load_inputs("orders")[:3])
    await bench.run()  # sim/sage thinks before it answers (DeepSeek's reasoning_content)
    report = bench.report()
    other = report.meta.controls[0]
    assert other.kind is ControlKind.OTHER_ANSWER and other.donor is not None
    shown = report.transcript(other.run_id)
    donor = report.runs.filter(role="reference", input_id=other.donor)["run_id"][0]
    donor_calls = report.calls_for(donor)
    thought = donor_calls[-1].message["reasoning_content"]
    assert thought and {"kind": "reasoning", "content": thought} in candidate_events(
        next(r.body for r in fleet.requests if r.headers.get(RUN_HEADER) == other.run_id)
    )
    assert shown[-1] == {"kind": "answer", "output": json.loads(report.runs.filter(run_id=donor)["output"][0])}


def candidate_first(body: dict[str, Any]) -> bool:
    user = body["messages"][1]["content"]
    return user.index('role="candidate"') < user.index('role="reference"')


# ------------------------------------------------------------------------------------------ never a candidate


async def test_controls_are_no_entry_and_leave_every_figure_of_the_candidates_as_it_was(tmp_path: Path) -> None:
    fleet, catalog = fleet_catalog()
    without = order_race(catalog, tmp_path / "a", controls=0)
    await without.run()
    before = len(fleet.requests)
    same_cache = order_race(catalog, tmp_path / "a")  # the same race, the same cache: the real runs' keys are unchanged
    await same_cache.run()
    new = fleet.requests[before:]
    assert [r.headers[ROLE_HEADER] for r in new] == ["judge"] * 3  # the three controls' verdicts, nothing else
    plain, checked = without.report(), same_cache.report()
    assert checked.runs.drop("cached", "spent_now", "wall_now_s").equals(
        plain.runs.drop("cached", "spent_now", "wall_now_s")
    )
    assert checked.runs.filter(role="candidate")["cached"].all()
    keep = [c for c in plain.models.columns if c not in ("spent_now",)]
    assert checked.models.select(keep).equals(plain.models.select(keep))  # means, costs, verdicts, intervals
    assert not any("control" in e for e in checked.models["entry"])
    assert checked.runs.filter(pl.col("role") == "control").height == 0  # kept in a frame of their own
    assert plain.controls.height == 0 and "controls" not in plain.table()
    assert plain.meta.controls == [] and plain.meta.spec.controls == 0
    # charts and the estimate name the candidates only
    for chart in (gb.charts.cost_quality(checked), gb.charts.score_distribution(checked)):
        assert "(control" not in json.dumps(chart.to_dict())
    estimate = await order_race(catalog, tmp_path / "b").estimate()
    assert [e.entry for e in estimate.entries] == ["sim/steady", "sim/swift", "sim/nano"]
    assert estimate.controls.controls == 3 and "controls" in str(estimate)


async def test_the_judge_cost_counts_the_controls_verdicts_and_the_calls_frame_holds_them(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path)
    estimate = await bench.estimate()
    await bench.run()
    report = bench.report()
    ids = set(report.controls["run_id"])
    calls = report.calls.filter(pl.col("run_id").is_in(list(ids)))
    assert calls.height == 3 and set(calls["role"]) == {"judge"}  # a control makes no call of its own
    assert report.controls["cost"].to_list() == [0.0] * 3  # and so costs nothing but its verdict
    control_cost = float(calls["cost"].sum())
    assert report.controls["judge_cost"].sum() == pytest.approx(control_cost)
    judge_total = float(report.calls.filter(role="judge")["cost"].sum())
    assert f"judge {money(judge_total)}" in report.totals()  # the judge cost shown includes them
    # of an input's verdicts one pays its whole prompt, and the estimate counts that one among the candidates': the
    # controls, often first, are taken to be served their input's prefix; the judge's total is what the race spent
    assert estimate.controls.judge_calls == 3 and estimate.controls.judge_cached_tokens > 0
    assert estimate.judge_cost == pytest.approx(judge_total, rel=0.1)
    assert estimate.judge_cost == pytest.approx(
        sum(e.judge_cost for e in estimate.entries) + estimate.controls.judge_cost
    )
    again = await bench.estimate()
    assert (again.controls.cached, again.controls.judge_calls, again.controls.judge_cost) == (3, 0, 0.0)


# --------------------------------------------------------------------------------------------------- the void


async def test_a_judge_that_never_reads_the_answer_voids_every_verdict(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = order_race(
        catalog, tmp_path, judge="sim/skim", inputs=12, runs=2, candidates=["sim/steady", "sim/chatty", "sim/nano"]
    )
    await bench.run()
    report = bench.report()
    check = report.controls_outcome()
    assert check.void and check.complete and check.mean == pytest.approx(10.0, abs=1.0)
    tested = report.models.filter(pl.col("verdict").is_not_null())
    assert tested.height == 2 and set(tested["verdict"]) == {"inconclusive"} and tested["verdict_held"].all()
    assert all(
        r.startswith("void: the judge cannot tell a wrong answer from a right one") for r in tested["verdict_reason"]
    )
    assert tested["more_runs"].null_count() == 2  # more runs of the same judge settle nothing
    table = report.table()
    assert "JUDGE CANNOT TELL A WRONG ANSWER FROM A RIGHT ONE" in table.splitlines()[1]
    pick = report.recommend()
    assert pick is not None and pick.entry == "sim/steady" and pick.sentence.startswith("no verdict on order-agent")
    assert "is as good" not in pick.sentence and "no cheaper entry" not in pick.sentence
    kinds = set(report.diagnostics()["kind"])
    assert "control_scored_high" in kinds
    page = (report.to_html(tmp_path / "r.html")).read_text()
    assert "JUDGE CANNOT TELL A WRONG ANSWER FROM A RIGHT ONE" in page and "Negative controls" in page
    # the same runs without the controls' evidence: this judge would have settled verdicts
    blind = gb.BenchmarkReport(
        [r for r in report.to_runs() if r.role is not Role.CONTROL],
        report.meta.replace(controls=[]).with_spec(margin=1.5),  # 12 inputs × 2 runs: at margin 1 nothing settles
    )
    assert blind.models.filter(entry="sim/chatty")["verdict"][0] == "as good"  # that is what it would have said
    # labels stand where the judge cannot: a verdict they correct holds whatever the judge's bias, and says it rests
    # on them; one they cannot correct (too few labels) stays void, and so does the recommendation then
    candidates = report.runs.filter(pl.col("role") == Role.CANDIDATE)["run_id"].to_list()
    labelled = report.with_labels(gb.sim.human_labels(report, candidates))
    relabelled = labelled.models.filter(pl.col("verdict").is_not_null())
    assert set(relabelled["verdict_basis"]) == {"label-corrected"}
    assert all(r.startswith("the judge alone is void (the negative controls): this verdict rests on your labels")
               for r in relabelled["verdict_reason"])  # fmt: skip
    lines = [line for line in labelled.table().splitlines() if line.startswith("  sim/chatty ")]
    assert lines and "void:" not in lines[0]
    assert "JUDGE CANNOT TELL A WRONG ANSWER FROM A RIGHT ONE" in labelled.table()  # the judge is what it is
    assert not labelled.recommend().sentence.startswith("no verdict")
    assert labelled.agreement.height == 4  # three entries and all of them
    few = report.with_labels(gb.sim.human_labels(report, candidates[:6]))
    kept = few.models.filter(pl.col("verdict").is_not_null())
    assert set(kept["verdict_basis"]) == {"judge-only"} and set(kept["verdict"]) == {"inconclusive"}
    assert all(r.startswith("void: ") for r in kept["verdict_reason"])
    assert few.recommend().sentence.startswith("no verdict on order-agent")
    # a race to a verdict is voided the same way
    auto = order_race(catalog, tmp_path / "auto", judge="sim/skim", inputs=12, runs="auto", max_runs=24)
    await auto.run()
    assert (
        set(auto.report().models["verdict"].drop_nulls()) == {"inconclusive"} and auto.report().controls_outcome().void
    )


def test_the_command_line_exits_4_after_writing_everything_when_the_controls_void_the_verdicts(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path, judge="sim/skim", candidates=["sim/steady"])
    assert _cli._race(bench, None, tmp_path / "out") == 4  # as when the judge failed: nobody should trust it as is
    assert gb.BenchmarkReport.read_parquet(tmp_path / "out").controls_outcome().void


def weak_judge(body: dict[str, Any], request: httpx2.Request) -> dict[str, Any]:
    """About 4 + 3 to everything, as a weak judge model on a llama.cpp server gave: 3, 4 or 5 accuracy by a hash of
    the request (so no two runs need get the same score), 3 work, whatever it read."""
    if request.headers[ROLE_HEADER] == "judge":
        accuracy = 3 + hashlib.sha256(request.content).digest()[0] % 3
        return completion(json.dumps({"accuracy": accuracy, "work": 3, "reason": "Looks fine."}))
    number = int(json.loads(body["messages"][-1]["content"])["n"])
    wrong = body["model"] == "other-1" and number % 2  # the cheaper entry is wrong on half the inputs
    return completion(json.dumps({"answer": number * 2 + (1 if wrong else 0), "why": f"twice {number}"}))


async def double(input: dict, seat: gb.Seat) -> dict:
    """Double the number."""
    return json.loads((await seat.chat([{"role": "user", "content": json.dumps(input)}])).text)


async def test_a_judge_that_gives_about_4_plus_3_to_everything_voids_what_it_would_have_called_as_good() -> None:
    endpoint = Scripted(weak_judge)
    bench = gb.Benchmark(double, runs=2, catalog=scripted_catalog(endpoint), grade="standard", progress=False)
    await bench.set_inputs([{"id": f"n{i}", "n": i} for i in range(12)]).run()
    report = bench.report()
    scores = report.runs.filter(role="candidate")["score"]
    assert scores.n_unique() > 1  # not one score for every run: the same-score check would not catch it
    check = report.controls_outcome()
    assert check.void and abs(check.mean - check.yardstick) < 1
    assert report.models.filter(entry="acme/other")["verdict"][0] == "inconclusive"
    blind = gb.BenchmarkReport(
        [r for r in report.to_runs() if r.role is not Role.CONTROL], report.meta.replace(controls=[])
    )
    assert blind.models.filter(entry="acme/other")["verdict"][0] == "as good"  # wrong on half its inputs, yet


async def test_a_good_judge_keeps_its_verdicts_and_says_how_far_below_it_put_the_controls(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path, inputs=12, runs=2)
    await bench.run()
    report = bench.report()
    check = report.controls_outcome()
    assert check.clean and not check.void and check.self_agreement
    assert check.yardstick - check.mean > 4  # far below the reference's self-agreement
    line = next(x for x in report.table().splitlines() if x.startswith("controls"))
    assert "below the reference's self-agreement" in line
    assert line.endswith(
        f"leniency under ~{check.unnoticed:.1f} points on wrong answers would go unnoticed by these 3 controls"
    )
    assert "the entries score" in line
    assert "verdict_reason" in report.models.columns
    assert not any((r or "").startswith("void") for r in report.models["verdict_reason"])
    assert "Negative controls" in report.to_html(tmp_path / "r.html").read_text()
    html = report._repr_html_()
    assert "would go unnoticed by these 3 controls" in html
    assert "tells a wrong answer from a right one" not in report.table()  # a claim the controls cannot make


@sized(3, 12)
@pytest.mark.parametrize(("judge", "voids"), [("sim/oracle", False), ("sim/skim", True)])
async def test_over_seeded_races_a_good_judge_never_voids_and_a_skimming_one_always_does(
    tmp_path: Path, judge: str, voids: bool, size: Size
) -> None:
    # 12 races per judge, each on 8 order inputs drawn with random.Random(r), salt f"controls-{r}", one run of three
    # entries: the oracle (noise 0.1) never comes near the line, the skimming judge always reaches it
    import random

    _, catalog = fleet_catalog(record=False)
    orders = load_inputs("orders")
    found, gaps = 0, []
    for r in range(size.n):
        bench = gb.Benchmark(
            OrderAgent,
            runs=1,
            catalog=catalog,
            grade="standard",
            judge=judge,
            salt=f"controls-{r}",
            cache=tmp_path / str(r),
            progress=False,
        )
        bench.set_spec(candidates=["sim/steady", "sim/swift", "sim/nano"]).set_inputs(
            random.Random(r).sample(orders, 8)
        )
        await bench.run()
        check = bench.report().controls_outcome()
        assert check.complete
        found += check.void
        gaps.append(check.yardstick - check.mean)
    assert found == (size.n if voids else 0)
    if judge == "sim/oracle":
        assert min(gaps) > 3  # a margin of 1 is far from the line
    else:
        assert max(gaps) < 1


# ----------------------------------------------------------------------------------------------------- the rule


def check_of(
    scores: dict[ControlKind, float | None], *, yardstick: float | None = 9.0, asked: int = 3
) -> ControlOutcome:
    controls = tuple(
        ControlScore(run_id=f"c{i}", kind=k, input_id=f"i{i}", score=s) for i, (k, s) in enumerate(scores.items())
    )
    return ControlOutcome(asked=asked, controls=controls, margin=1.0, yardstick=yardstick, self_agreement=True)


def test_the_void_rule_is_the_margin_line_on_the_mean_and_on_each_kind_wrong_in_substance() -> None:
    other, empty, half = ControlKind.OTHER_ANSWER, ControlKind.EMPTY, ControlKind.HALF
    assert check_of({other: 8.0, empty: 8.0, half: 8.0}).void  # the mean reaches 9 − 1
    below = check_of({other: 7.9, empty: 7.9, half: 8.0})
    assert below.mean < 8 and not below.void and below.clean
    assert check_of({other: 8.0, empty: 0.0, half: 2.0}).void  # another input's answer alone passes as good
    assert check_of({other: 1.0, empty: 8.5, half: 2.0}).void  # so does an empty answer
    assert not check_of({other: 1.0, empty: 1.0, half: 9.5}).void  # half an answer may keep the substance
    assert not check_of({other: 8.0, empty: 8.0, half: 8.0}, yardstick=None).void  # nothing right to compare with
    unjudged = check_of({other: 3.0, empty: None, half: 4.0})
    assert not unjudged.void and not unjudged.clean and not unjudged.complete  # no claim from what was not judged
    assert "too few judged" in unjudged.sentence()
    assert check_of({other: 9.5, empty: None, half: None}).void  # a void from the ones judged stands
    assert check_of({other: 8.0, empty: 0.0, half: 0.0}).fooled_by == ("another input's answer",)
    assert check_of({}, asked=0).sentence() is None


def lenient_outcome(rng: random.Random, world: str, count: int, leniency: float) -> ControlOutcome:
    """One race's controls in a simulated world: each kind's score drawn around its mean with the world's spread
    (within 0..10), plus ``leniency`` (up to 10), against a yardstick of 8.6 at margin 1."""
    means, spread = LENIENCY_WORLDS[world]
    controls = []
    for i in range(count):
        kind = KINDS[i % 3]  # the default three kinds, which the worlds give means
        score = min(10.0, min(10.0, max(0.0, rng.gauss(means[i % 3], spread))) + leniency)
        controls.append(ControlScore(run_id=f"c{i}", kind=kind, input_id=f"i{i}", score=score))
    return ControlOutcome(asked=count, controls=tuple(controls), margin=1.0, yardstick=8.6, self_agreement=True)


LENIENCY_WORLDS = {
    "kinds apart": ((4.3, 0.1, 4.0), 1.5),  # like the fleet's oracle: an empty answer far below the other two
    "kinds alike": ((3.0, 3.0, 3.0), 2.5),  # every kind alike, a shaky hand
    "near the line": ((6.0, 2.0, 6.5), 1.0),  # a judge that already gives wrong answers most of the points
}
"""Per-kind mean scores (another input's answer, an empty answer, half) and the spread around them."""


@pytest.mark.parametrize("world", list(LENIENCY_WORLDS))
def test_the_stated_unnoticed_leniency_is_what_a_lenient_judge_gets_past_the_controls(world: str) -> None:
    """The figure the sentence states is where a lenient judge is caught: a judge adding L to every wrong answer is
    flagged in about half the races when L is the typical stated figure, seldom 1.5 below, mostly 1.5 above; and a
    leniency of the margin, which moves a verdict by the margin, is flagged in under a third of races, so the three
    controls cannot rule it out. Seeds 0 and 1, 1,000 races a point, 3 controls (measured in the controls module)."""
    import statistics

    rng = random.Random(0)
    typical = statistics.median(lenient_outcome(rng, world, 3, 0.0).unnoticed or 0.0 for _ in range(1000))

    def flagged(leniency: float) -> float:
        rng = random.Random(1)
        return sum(lenient_outcome(rng, world, 3, max(0.0, leniency)).void for _ in range(1000)) / 1000

    assert 0.4 <= flagged(typical) <= 0.65
    assert flagged(typical - 1.5) <= 0.3 and flagged(typical + 1.5) >= 0.75
    assert flagged(1.0) <= 0.3  # leniency of the margin mostly passes: a judge-only "as good" is unconfirmed
    for check in (lenient_outcome(random.Random(s), world, 3, 0.0) for s in range(20)):
        if check.unnoticed is not None:  # on these very controls, exactly: just under passes, just over voids
            bumped = [
                dataclasses.replace(c, score=min(10.0, (c.score or 0) + check.unnoticed - 0.01)) for c in check.controls
            ]
            assert not dataclasses.replace(check, controls=tuple(bumped)).void
            over = [(c.score or 0) + check.unnoticed + 0.01 for c in check.controls]
            if max(over) <= 10:  # a control capped at 10 rises by less, so more leniency passes unnoticed
                bumped = [dataclasses.replace(c, score=o) for c, o in zip(check.controls, over, strict=True)]
                assert dataclasses.replace(check, controls=tuple(bumped)).void
            assert check.unconfirmed().startswith("by the judge alone, unconfirmed: ")  # whatever the controls show


def test_a_judge_only_as_good_is_never_confirmed_by_the_controls_and_says_why() -> None:
    other, empty, half = ControlKind.OTHER_ANSWER, ControlKind.EMPTY, ControlKind.HALF
    far = check_of({other: 2.0, empty: 0.0, half: 4.0})  # the line is 8; another input's answer sits 6 below it
    assert far.unnoticed == pytest.approx(6.0)
    assert "leniency under ~6.0 points on wrong answers would go unnoticed by these 3 controls" in (
        far.sentence() or ""
    )
    assert "more than the margin 1" in far.unconfirmed() and f"label at least {MIN_LABELS} runs" in far.unconfirmed()
    near = check_of({other: 7.5, empty: 0.0, half: 4.0})
    assert near.unnoticed == pytest.approx(0.5)  # a leniency of the margin would have voided, yet:
    assert "within ~0.5 points of where a run passes as good" in near.unconfirmed()
    assert "no planted wrong answers" in check_of({}, asked=0).unconfirmed()
    assert "not all judged" in check_of({other: 2.0, empty: None, half: 4.0}).unconfirmed()


async def swayed_race(tmp_path: Path) -> gb.BenchmarkReport:
    """sim/windy (cheap, verbose, wrong more often than not) against sim/steady under sim/swayed, 16 inputs × 4."""
    catalog = gb.sim.swayed_catalog(latency_scale=0)
    bench = gb.Benchmark(
        OrderAgent,
        runs=4,
        catalog=catalog,
        grade="standard",
        candidates=["sim/steady", "sim/windy"],
        cache=tmp_path / "cache",
        progress=False,
    )
    await bench.set_inputs(load_inputs("orders")[:16]).run()
    return bench.report()


async def test_the_swayed_judges_as_good_for_windy_is_named_unconfirmed_never_recommended(tmp_path: Path) -> None:
    report = await swayed_race(tmp_path)
    check = report.controls_outcome()
    assert check.clean and check.unnoticed is not None and check.unnoticed > check.margin
    windy = report.models.filter(entry="sim/windy").row(0, named=True)
    assert windy["verdict"] == "as good" and windy["verdict_basis"] == "judge-only"  # the column keeps its value
    assert "by the judge alone, unconfirmed" in windy["verdict_reason"]
    pick = report.recommend()
    assert pick is not None and pick.entry == "sim/steady" and pick.cost_ratio is None  # nothing recommended
    assert pick.sentence.startswith("not a finding: sim/windy is as good as sim/steady")
    assert "by the judge alone, unconfirmed" in pick.sentence and f"label at least {MIN_LABELS} runs" in pick.sentence
    table = report.table()
    line = next(x for x in table.splitlines() if x.startswith("  sim/windy ") and "paired runs" in x)
    assert "by the judge alone, unconfirmed" in line
    said = next(x for x in table.splitlines() if x.startswith("controls"))
    assert said.endswith(
        f"leniency under ~{check.unnoticed:.1f} points on wrong answers would go unnoticed by these 3 controls"
    )


async def test_a_label_corrected_as_good_still_recommends(tmp_path: Path) -> None:
    report = await swayed_race(tmp_path)
    candidates = report.runs.filter(role="candidate")
    agreeing = dict(zip(candidates["run_id"], candidates["score"], strict=True))  # a person who agrees with the judge
    labelled = report.with_labels(agreeing)
    windy = labelled.models.filter(entry="sim/windy").row(0, named=True)
    assert windy["verdict"] == "as good" and windy["verdict_basis"] == "label-corrected"
    assert "unconfirmed" not in (windy["verdict_reason"] or "")
    pick = labelled.recommend()
    assert pick is not None and pick.entry == "sim/windy" and pick.sentence.startswith("sim/windy is as good")


async def test_a_wider_margin_lets_a_weak_judge_void_what_a_narrow_one_kept(tmp_path: Path) -> None:
    endpoint = Scripted(lambda body, request: graded(body, request))
    bench = gb.Benchmark(double, runs=1, catalog=scripted_catalog(endpoint), grade="standard", progress=False)
    await bench.set_inputs([{"id": f"n{i}", "n": i} for i in range(8)]).run()
    report = bench.report()
    check = report.controls_outcome()
    assert (check.yardstick, check.mean) == (9.0, 7.0)  # wrong answers only 2 points down
    assert not check.void and not report.with_margin(1.5).controls_outcome().void
    wide = report.with_margin(2.0)  # now a run wrong every time passes as good: the verdicts are void
    assert wide.controls_outcome().void and set(wide.models["verdict"].drop_nulls()) == {"inconclusive"}
    blind = gb.BenchmarkReport(
        [r for r in report.to_runs() if r.role is not Role.CONTROL], wide.meta.replace(controls=[])
    )
    assert blind.models.filter(entry="acme/other")["verdict"][0] == "as good"


def graded(body: dict[str, Any], request: httpx2.Request) -> dict[str, Any]:
    """A judge that sees a wrong answer but takes only 2 points for it: 9 for a right answer, 7 for any other; the
    cheaper entry is wrong on one input in eight."""
    if request.headers[ROLE_HEADER] != "judge":
        number = int(json.loads(body["messages"][-1]["content"])["n"])
        wrong = body["model"] == "other-1" and number == 3
        return completion(json.dumps({"answer": number * 2 + wrong, "why": f"twice {number}"}))
    shown = dict(transcripts(body["messages"][1]["content"]))
    right = shown[Role.CANDIDATE] == shown[Role.REFERENCE]
    return completion(json.dumps({"accuracy": 6 if right else 4, "work": 3, "reason": "graded"}))


# ----------------------------------------------------------------------------------------- stops, budget, rejudge


async def test_a_race_stopped_before_a_control_was_judged_says_so_and_claims_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet, catalog = fleet_catalog()
    release = asyncio.Event()
    controls_judged: list[str] = []
    judge_control = race_controls.judge_control

    async def counted(*args: Any, **kwargs: Any) -> gb.results.Run:  # the race keeps the run in the same step
        run = await judge_control(*args, **kwargs)
        controls_judged.append(run.run_id)
        return run

    monkeypatch.setattr(race_controls, "judge_control", counted)

    async def stall_the_empty_answer(request: httpx2.Request) -> httpx2.Response:
        if request.headers.get(ROLE_HEADER) == "judge":
            shown = dict(transcripts(json.loads(await request.aread())["messages"][1]["content"]))
            if '"output": {}' in (shown.get(Role.CANDIDATE) or ""):
                await release.wait()  # only the planted empty answer reads so: its verdict never comes in time
        return await fleet.handle(request)

    mount(DEFAULT_BASE_URL, httpx2.MockTransport(stall_the_empty_answer))
    bench = order_race(catalog, tmp_path)
    judged: list[gb.results.RaceEvent] = []
    bench.subscribe(lambda e: judged.append(e) if e.kind == gb.vocab.EventKind.JUDGED else None)
    task = asyncio.ensure_future(bench.run())
    while len(judged) < 3 * 8 or len(controls_judged) < 2:  # every candidate run and the other two controls
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    report = bench.report()
    check = report.controls_outcome()
    assert report.meta.stopped == gb.vocab.Stopped.CANCELLED and len(report.meta.controls) == 3
    assert (check.planted, check.judged, check.complete, check.void, check.clean) == (3, 2, False, False, False)
    line = next(x for x in report.table().splitlines() if x.startswith("controls"))
    assert "1 not judged: the race stopped before it was judged" in line and "too few judged to say" in line
    assert "control_unjudged" in set(report.diagnostics()["kind"])
    release.set()
    again = await bench.rejudge()  # rejudging judges the planted controls, the missing one too
    assert again.controls_outcome().complete and again.controls_outcome().clean


async def test_a_budget_that_cannot_cover_the_controls_stops_the_race_and_says_they_were_not_judged() -> None:
    endpoint = Scripted(weak_judge)
    cheap = scripted_catalog(endpoint)
    entries = [dataclasses.replace(e, price_in=2000.0) if e.name == "acme/judge" else e for e in cheap]
    catalog = gb.Catalog(entries, grades=cheap.grades, picks=cheap.picks, ceiling=cheap.ceiling_name)
    bench = gb.Benchmark(double, runs=1, catalog=catalog, grade="standard", budget=0.2, progress=False)
    await bench.set_inputs([{"id": f"n{i}", "n": i} for i in range(4)]).run()
    report = bench.report()
    assert report.meta.stopped == gb.vocab.Stopped.BUDGET and report.controls.height == 0
    assert not any(r.headers[ROLE_HEADER] == "judge" for r in endpoint.requests)  # not one verdict was afforded
    check = report.controls_outcome()
    assert check.planted == 3 and check.judged == 0 and not check.void and not check.clean
    assert "3 not judged" in check.sentence() and "none got a verdict: no check of the judge" in check.sentence()


async def test_rejudging_with_a_stronger_judge_rejudges_the_controls_and_lifts_the_void(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = order_race(catalog, tmp_path, judge="sim/skim")
    await bench.run()
    assert bench.report().controls_outcome().void
    bench.report().to_parquet(tmp_path / "weak")
    read = gb.BenchmarkReport.read_parquet(tmp_path / "weak")
    assert read.controls_outcome() == bench.report().controls_outcome() and read.controls.equals(
        bench.report().controls
    )
    assert read.table() == bench.report().table()
    stronger = await gb.rejudge_report(
        read, catalog, gb.JudgeSpec(judge="sim/oracle"), cache=tmp_path / "cache", progress=False
    )
    assert set(stronger.controls["judge_entry"]) == {"sim/oracle"}
    assert stronger.controls_outcome().clean and not stronger.controls_outcome().void
    assert stronger.meta.controls == read.meta.controls
    estimate = await estimate_rejudge(stronger, catalog, cache=tmp_path / "cache")
    assert estimate.controls == 3 and estimate.controls_cached == 3 and estimate.judge_calls == 0


# ---------------------------------------------------------------------------------------------------- planting


def reference(input_id: str, output: Any) -> gb.results.Run:
    return gb.results.Run(
        benchmark_id="b",
        job="j",
        input_id=input_id,
        run_id=f"r-{input_id}",
        role=Role.REFERENCE,
        entry="acme/pick",
        model="pick-1",
        grade="standard",
        simulated=False,
        repeat=0,
        currency="USD",
        ok=True,
        output=output,
    )


def test_planting_is_seeded_keeps_the_first_controls_and_says_what_it_cannot_plant() -> None:
    refs = {k: reference(k, {"answer": k, "why": f"because {k}"}) for k in ("a", "b", "c", "d")}
    three, missed = plant_controls(refs, 3, benchmark_id="b", seed="s")
    assert [p.kind for p in three] == list(KINDS[:3]) and not missed
    assert len({p.input_id for p in three}) == 3  # one input each
    other = three[0]
    assert other.donor is not None and other.donor != other.input_id
    assert plant_controls(refs, 3, benchmark_id="b", seed="s")[0] == three  # seeded
    assert plant_controls(refs, 6, benchmark_id="b", seed="s")[0][:3] == three  # asking for more keeps the first
    assert plant_controls(refs, 3, benchmark_id="b", seed="t")[0] != three  # a new salt plants others
    alike = {k: reference(k, {"answer": 1}) for k in ("a", "b")}
    plants, missed = plant_controls(alike, 3, benchmark_id="b", seed="s")
    assert [p.kind for p in plants] == [ControlKind.EMPTY]  # every answer alike, and {"answer": 1} cannot be halved
    assert any("two inputs whose reference answers differ" in m for m in missed) and len(missed) == 2
    numbers = {"a": reference("a", 42)}
    assert [p.kind for p in plant_controls(numbers, 3, benchmark_id="b", seed="s")[0]] == [ControlKind.EMPTY]


def test_an_answer_is_cut_in_half_and_emptied_in_its_own_kind() -> None:
    assert halved("Refund approved: the order is within the window.") == "Refund approved: the"  # a word boundary
    assert halved("refund") == "ref" and halved("x") is None and halved(3) is None and halved(None) is None
    assert halved({"a": 1, "b": 2, "c": 3, "d": 4}) == {"a": 1, "b": 2}
    assert halved({"a": "one two three four"}) == {"a": "one two"} and halved({"a": 1}) is None
    assert halved([1, 2, 3]) == [1] and halved([]) is None
    assert (empty_like("x"), empty_like([1]), empty_like({"a": 1}), empty_like(7)) == ("", [], {}, None)


def test_an_answer_has_its_key_fact_changed_and_is_argued_at_length_in_its_own_kind() -> None:
    order = {"order_id": "A-1001", "decision": "refund", "refund_amount": 129.99, "reason": "Delivered 6 days ago."}
    assert altered(order) == {**order, "refund_amount": 130.99}  # a number before an id; the reason left alone
    assert altered({"ok": True, "n": 2}) == {"ok": False, "n": 2} and altered([3, 4]) == [4, 4]
    assert altered("Yes, it ships today.") == "No, it ships today." and altered("APPROVE") == "DENY"
    assert altered("There are 12 parcels.") == "There are 13 parcels." and altered("blue") is None
    assert altered({"reason": "because 3"}) is None and altered(None) is None and altered(0) == 1
    long = argued_at_length(order)
    assert long["refund_amount"] == 130.99 and len(long["reason"]) > 3 * len(order["reason"])
    assert long["reason"].startswith(order["reason"])
    assert argued_at_length({"n": 2}) is None  # nothing explains it: nothing to argue at length
    text = argued_at_length("Yes, the order ships.")
    assert text.startswith("No, the order ships.") and len(text) > 3 * len("No, the order ships.")
    refs = {k: reference(k, {"answer": k, "why": f"because {k}"}) for k in ("a", "b", "c", "d")}
    five, missed = plant_controls(refs, 5, benchmark_id="b", seed="s")
    assert [p.kind for p in five] == list(KINDS[:3]) and len(missed) == 2  # no number, flag or yes/no to change
    counted = {k: reference(k, {"answer": i, "reason": f"because {k}"}) for i, k in enumerate("abcde")}
    assert [p.kind for p in plant_controls(counted, 5, benchmark_id="b", seed="s")[0]][3:] == list(KINDS[3:])


async def test_five_controls_plant_every_kind_price_them_and_the_one_argued_at_length_catches_the_swayed_judge(
    tmp_path: Path,
) -> None:
    """The swayed judge lets a long-winded wrong answer pass 9 times in 10: the three default controls miss it (they
    are short), the answer argued at length does not (on this seeded race it scored like a right answer)."""
    catalog = gb.sim.swayed_catalog(latency_scale=0)
    bench = gb.Benchmark(
        OrderAgent,
        runs=2,
        catalog=catalog,
        grade="standard",
        candidates=["sim/steady", "sim/windy"],
        cache=tmp_path / "cache",
        controls=5,
        progress=False,
    )
    bench.set_inputs(load_inputs("orders")[:12])
    estimate = await bench.estimate()
    assert estimate.controls.judge_calls == 5  # each kind priced from the very prompt it is judged with
    await bench.run()
    report = bench.report()
    assert sorted(report.controls["entry"]) == sorted(f"(control: {k})" for k in KINDS)
    check = report.controls_outcome()
    assert check.void and check.fooled_by == ("that answer argued at length",)
    assert "the answer with its key fact changed" in (check.sentence() or "")
    assert report.models.filter(entry="sim/windy")["verdict"][0] == "inconclusive"
    assert (report.recommend() or pytest.fail("no recommendation")).sentence.startswith("no verdict")
    long = report.transcript(report.controls.filter(entry="(control: verbose)")["run_id"][0])
    assert "To set out the reasoning in full" in json.dumps(long[-1])


async def test_a_single_input_plants_what_it_can_and_a_text_job_is_planted_in_its_own_words(tmp_path: Path) -> None:
    _, catalog = fleet_catalog()
    bench = gb.Benchmark(SelectingAgent, runs=1, catalog=catalog, cache=tmp_path, progress=False)
    bench.set_spec(candidates=["sim/steady"]).set_input(load_inputs("selections")[0])
    await bench.run()
    report = bench.report()
    assert sorted(report.controls["entry"]) == ["(control: empty)", "(control: half)"]
    check = report.controls_outcome()
    assert check.asked == 3 and check.planted == 2
    assert "another input's answer needs two inputs whose reference answers differ" in check.sentence()
    half = report.transcript(report.controls.filter(entry="(control: half)")["run_id"][0])
    said = next(e for e in reversed(half) if e["kind"] == "assistant")["content"]
    full = next(e for e in reversed(report.transcript(report.reference["run_id"])) if e["kind"] == "assistant")[
        "content"
    ]
    assert full.startswith(said) and len(said) < len(full)  # the model's own words, cut


def test_a_report_written_before_controls_reads_back_with_none_and_claims_nothing(tmp_path: Path) -> None:
    report = gb.BenchmarkReport([], {"spec": {"grade": "standard", "margin": 1.0}, "job": "old"})
    assert report.meta.spec.controls == 0 and report.controls_outcome().sentence() is None
    out = report.to_parquet(tmp_path / "r")
    (out / "controls.parquet").unlink()  # as an older gradebench wrote it
    meta = json.loads((out / "meta.json").read_text())
    del meta["spec"]["controls"], meta["controls"]
    (out / "meta.json").write_text(json.dumps(meta))
    read = gb.BenchmarkReport.read_parquet(out)
    assert read.meta.spec.controls == 0 and read.controls.height == 0 and "controls" not in read.table()
    with pytest.raises(ValueError, match="controls must be an integer >= 0, got -1"):
        gb.Benchmark(double, catalog=scripted_catalog(Scripted(weak_judge)), grade="standard", controls=-1)
    with pytest.raises(ValueError, match="controls"):
        gb.RaceSpec.from_dict({"controls": "three"})
    assert ControlPlant(run_id="x", number=0, kind="empty", input_id="i").kind is ControlKind.EMPTY
