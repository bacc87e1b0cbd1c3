"""Spending less for the same verdict: the estimate's arithmetic, the hard budget, the race to a verdict."""

from __future__ import annotations

import hashlib
import json
import math

import httpx2
import polars as pl
import pytest

import gradebench as gb
from gradebench._race.budget import HEADROOM
from gradebench._race.costs import CHARS_PER_TOKEN, JUDGE_OUTPUT_TOKENS
from gradebench.testing import ScriptedEndpoint, completion

from ..conftest import Scripted


async def answer_job(input: dict, seat: gb.Seat) -> dict:
    """Answer with a JSON object."""
    return json.loads((await seat.chat([{"role": "user", "content": f"Question {input['id']}?"}])).text)


def judge_usage(body: dict) -> tuple[int, int]:
    """What the scripted judge bills: the prompt's characters / 4 (schema first, 4 characters of framing a message)
    and the estimate's verdict length, so an exact estimate is checkable."""
    chars = sum(len(m["content"]) + 4 for m in body["messages"])
    if body.get("response_format"):
        chars += len(json.dumps(body["response_format"], sort_keys=True, separators=(",", ":")))
    return max(1, math.ceil(chars / CHARS_PER_TOKEN)), JUDGE_OUTPUT_TOKENS


WORDS = {"pick": "alpha", "twin": "gamma", "third": "sigma", "good": "kappa", "bad": "omega", "edge": "delta"}
"""What each model answers (a word of its own: the judge's prompt has every model name redacted)."""


def billing_answer(scores: dict[str, tuple[int, int]] | None = None):
    """Candidates answer ``{"a": <their word>}`` for 100/20 tokens; the judge bills as `judge_usage` and scores by
    the candidate's answer (``scores``: model -> (accuracy, work); default 7/3)."""
    by_word = {WORDS[m]: score for m, score in (scores or {}).items()}

    def answer(body: dict, request: httpx2.Request) -> dict:
        if request.headers["x-gradebench-role"] == "judge":
            candidate = body["messages"][1]["content"].split('role="candidate"', 1)[1]
            word = next((w for w in by_word if w in candidate), None)
            accuracy, work = by_word.get(word or "", (7, 3))
            reply = completion(json.dumps({"accuracy": accuracy, "work": work, "reason": "scripted"}))
            reply["usage"] = dict(zip(("prompt_tokens", "completion_tokens"), judge_usage(body), strict=True))
            return reply
        return completion(json.dumps({"a": WORDS[body["model"]]}), tokens=(100, 20))

    return answer


def billing(scores: dict[str, tuple[int, int]] | None = None) -> Scripted:
    return Scripted(billing_answer(scores))


def catalog(endpoint: ScriptedEndpoint, models: list[str], **fields) -> gb.Catalog:
    base = {"base_url": endpoint.base_url, "price_in": 1.0, "price_out": 2.0, "max_retries": 0, **fields}
    entries = [gb.Entry(name=f"acme/{m}", model=m, grade="standard", **base) for m in models]
    entries.append(gb.Entry(name="acme/judge", model="judge", grade="large", **{**base, "price_in": 5.0}))
    return gb.Catalog(
        entries,
        grades=["standard", "large"],
        picks={"standard": f"acme/{models[0]}"},
        ceiling="acme/judge",
        source="spend test",
    )


def spent(report: gb.BenchmarkReport, role: str | None = None) -> float:
    calls = report.calls.filter(~report.calls["cache_hit"])
    if role is not None:
        calls = calls.filter(calls["role"] == role)
    return float(calls["cost"].sum())


# -------------------------------------------------------------------------------------------------------- estimate


async def test_the_estimate_is_the_spend_when_runs_look_like_the_reference(tmp_path) -> None:
    endpoint = billing()
    bench = gb.Benchmark(
        answer_job,
        runs=2,
        catalog=catalog(endpoint, ["pick", "twin"]),
        grade="standard",
        cache=tmp_path,
        progress=False,
    )
    bench.set_inputs([{"id": f"q{i}"} for i in range(3)])
    before = await bench.estimate()
    # every input answers alike, so two negative controls are planted (another input's answer needs a different one)
    assert (before.controls.controls, before.controls.judge_calls) == (2, 2)
    assert (before.runs, before.cached_runs, before.calls, before.judge_calls) == (12, 0, 12, 12 + 2)
    assert before.candidates_cost == pytest.approx(12 * (100 * 1.0 + 20 * 2.0) / 1e6)
    assert [e.entry for e in before.entries] == ["acme/pick", "acme/twin"] and before.currency == "USD"
    assert "estimate: 12 runs" in str(before) and before.frame().height == 2
    sent = len(endpoint.requests)
    assert {r.headers["x-gradebench-role"] for r in endpoint.requests} == {"reference"}  # only the references ran
    await bench.run()
    report = bench.report()
    # the twin answers with its own model id: its transcript is as long as the reference's, so the judge bills alike
    assert spent(report, "candidate") == pytest.approx(before.candidates_cost)
    assert spent(report, "judge") == pytest.approx(before.judge_cost, rel=0.01)
    assert len([r for r in endpoint.requests[sent:] if r.headers["x-gradebench-role"] == "reference"]) == 0
    again = await bench.estimate()  # everything is in the cache now: free
    assert (again.cached_runs, again.calls, again.judge_calls, again.cost) == (12, 0, 0, 0.0)


async def test_the_estimates_wall_time_takes_each_entrys_latency_and_says_which_are_guesses(tmp_path) -> None:
    import dataclasses

    endpoint = billing()
    base = catalog(endpoint, ["pick", "good", "edge"])
    timed = {"acme/pick": None, "acme/good": 2.0, "acme/edge": None, "acme/judge": 3.0}
    entries = [dataclasses.replace(e, latency_s=timed[e.name], max_concurrency=1) for e in base.entries]
    cat = gb.Catalog(entries, grades=base.grades, picks=base.picks, ceiling=base.ceiling_name, source="spend test")
    bench = gb.Benchmark(answer_job, runs=2, catalog=cat, grade="standard", cache=tmp_path / "c", progress=False)
    made = await bench.set_inputs([{"id": f"i{k}", "q": f"question {k}"} for k in range(3)]).estimate()
    slow = next(e for e in made.entries if e.entry == "acme/good")
    # six one-call runs, one at a time (max_concurrency 1): 6 × 2 s, its verdicts 6 × 3 s on a lane of 2 workers
    assert slow.wall_s == pytest.approx(max(6 * 2.0, (6 * 2.0 + 6 * 3.0) / 2))
    assert made.wall_s >= slow.wall_s
    note = made.notes[-1]
    assert "acme/edge" in note and "guesses" in note and "acme/good" not in note and "judge" not in note


async def test_a_verdict_after_the_first_of_an_input_is_priced_with_the_cached_prefix(tmp_path) -> None:
    endpoint = billing()
    cat = catalog(endpoint, ["pick", "twin"], price_cached_in=0.1)
    bench = gb.Benchmark(answer_job, runs=3, catalog=cat, grade="standard", cache=tmp_path, progress=False)
    estimate = await bench.set_input({"id": "q0", "pad": "x" * 6000}).estimate()  # a judge prompt past 1024 tokens
    judge = [e for e in estimate.entries]
    assert sum(e.judge_cached_tokens for e in judge) > 0  # 5 of the 6 verdicts of the input reuse the prefix
    full = estimate.entries[0].judge_cost / 1  # the first entry's first verdict pays in full
    assert estimate.entries[1].judge_cost < full  # the second entry's verdicts all come after the first


async def test_later_verdicts_are_priced_with_all_they_share_with_earlier_ones(tmp_path) -> None:
    # Runs that make the reference's tool calls give judge prompts that are the same bytes up to the model's own
    # words: a provider serves the later verdicts of an input that much, far past the part shared by every run.
    from gradebench.jobs import OrderAgent, load_inputs

    catalog = gb.sim.SimFleet(latency_scale=0, record=False).catalog()
    bench = gb.Benchmark(OrderAgent, runs=4, catalog=catalog, grade="standard", cache=tmp_path, progress=False)
    bench.set_spec(candidates=["sim/steady", "sim/squint"]).set_inputs(load_inputs("orders")[:2])
    estimate = await bench.estimate()
    await bench.run()
    judge = bench.report().calls.filter(pl.col("role") == "judge")
    controls = estimate.controls  # the negative controls' verdicts share their input's prefix too
    predicted = sum(e.judge_cached_tokens for e in estimate.entries) + controls.judge_cached_tokens
    assert predicted == pytest.approx(judge["cached_input_tokens"].sum(), rel=0.1)
    predicted = sum(e.judge_input_tokens for e in estimate.entries) + controls.judge_input_tokens
    assert predicted == pytest.approx(judge["input_tokens"].sum(), rel=0.1)


# ---------------------------------------------------------------------------------------------------------- budget


@pytest.mark.parametrize("trouble", ["none", "failures and retries"])
async def test_the_budget_is_never_exceeded(tmp_path, trouble: str) -> None:
    answers = billing_answer()
    served = {"n": 0, "candidate": 0, "500": 0, "429": 0}

    def answer(body: dict, request: httpx2.Request):
        served["n"] += 1
        if trouble != "none" and request.headers["x-gradebench-role"] == "candidate":
            served["candidate"] += 1
            if body["model"] == "twin" and served["n"] % 3 == 0:
                served["500"] += 1
                return httpx2.Response(500, json={"error": {"message": "boom"}})  # a failed run: no cost
            if served["candidate"] in (4, 8, 12):  # 429s, waited out (each one halves the entry's pace)
                served["429"] += 1
                return httpx2.Response(429, json={"error": {"message": "slow"}}, headers={"retry-after-ms": "1"})
        return answers(body, request)

    endpoint = Scripted(answer)
    cat = catalog(endpoint, ["pick", "twin", "third"])
    probe = gb.Benchmark(answer_job, runs=4, catalog=cat, grade="standard", cache=tmp_path / "probe", progress=False)
    whole = (await probe.set_inputs([{"id": f"q{i}"} for i in range(5)]).estimate()).cost
    limit = whole / 3  # room for about a third of the race
    bench = gb.Benchmark(
        answer_job, runs=4, catalog=cat, grade="standard", cache=tmp_path / "race", budget=limit, progress=False
    )
    await bench.set_inputs([{"id": f"q{i}"} for i in range(5)]).run()
    report = bench.report()
    assert spent(report) <= limit
    # ... and used: the race stopped only when the next run's reservation did not fit with no run in flight
    runs = report.runs.filter(role="candidate")
    dearest = (runs["spent_now"].fill_null(0) + runs["judge_cost"].fill_null(0)).max()
    assert spent(report) > limit - HEADROOM * dearest  # a run reserves HEADROOM x its cost (estimated exactly here)
    assert report.meta.stopped == "budget" and report.meta.spec.budget == limit
    assert 0 < runs.height < 5 * 3 * 4
    assert set(runs["entry"]) == {"acme/pick", "acme/twin", "acme/third"}  # runs made in plan order, input by input
    if trouble != "none":
        assert served["500"] and served["429"] and not runs["ok"].all()
    assert "STOPPED: the budget" in report.table()
    assert set(report.meta.stops.values()) == {"budget: the next runs would not fit"}


def test_a_budget_needs_one_currency() -> None:
    endpoint = billing()
    cat = catalog(endpoint, ["pick", "twin"])
    euro = gb.Catalog(
        [*(e if e.name != "acme/twin" else gb.Entry(**{**e.__dict__, "currency": "EUR"}) for e in cat)],
        grades=cat.grades,
        picks=cat.picks,
        ceiling=cat.ceiling_name,
    )
    bench = gb.Benchmark(answer_job, runs=1, catalog=euro, grade="standard", budget=1.0, progress=False)
    with pytest.raises(ValueError, match=r"a budget needs one currency.*acme/twin \(EUR\)"):
        bench.set_input({"id": "q"}).run_sync()
    with pytest.raises(ValueError, match="budget must be a number > 0"):
        gb.Benchmark(answer_job, catalog=cat, grade="standard", budget=0)


# ------------------------------------------------------------------------------------------------ race to a verdict


async def test_runs_auto_is_the_group_sequential_race(tmp_path) -> None:
    # runs="auto" names the group-sequential race: the same units, stops and verdicts as runs="gsd", from its cache
    endpoint = billing({"pick": (7, 3), "good": (7, 3), "bad": (2, 0)})
    cat = catalog(endpoint, ["pick", "good", "bad"])
    inputs = [{"id": f"q{i}"} for i in range(20)]

    async def raced(runs: str) -> gb.BenchmarkReport:
        bench = gb.Benchmark(  # no negative controls: this judge scores the model, never the answer
            answer_job,
            runs=runs,
            max_runs=40,
            catalog=cat,
            grade="standard",
            cache=tmp_path,
            progress=False,
            controls=0,
        )
        await bench.set_inputs(inputs).run()
        return bench.report()

    gsd, auto = await raced("gsd"), await raced("auto")
    assert auto.meta.spec.design == "auto" and auto.meta.units == gsd.meta.units
    assert auto.runs["spent_now"].sum() == 0  # every run was in the cache the gsd race filled
    columns = ["entry", "verdict", "runs", "stopped", "verdict_reason"]
    assert auto.models.select(columns).equals(gsd.models.select(columns))
    assert "raced to a verdict in 8 looks (at most 40 runs an entry)" in auto.table()
    back = gb.BenchmarkReport.read_parquet(auto.to_parquet(tmp_path / "out"))
    assert back.models.equals(auto.models)  # the verdicts are read again from the runs and the units' order


def test_the_draws_are_seeded() -> None:
    from gradebench._verdict.gsd import RACES

    def draws(seed: str) -> list:
        race = RACES[gb.vocab.Design.AUTO](
            ["a", "b"], "a", [f"q{i}" for i in range(5)], margin=1.0, max_runs=32, seed=seed
        )
        return [u for _, u in race.next_wave()]

    assert draws("s") == draws("s") != draws("t")
    digest = hashlib.sha256(b"").hexdigest()  # a seed is any text
    assert len(draws(digest)) == 8  # the first look at 4 units, each on the reference entry and b
