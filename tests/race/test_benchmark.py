"""The benchmark's flow against a scripted endpoint: rows, failures, scorer, judge, admission and retries."""

from __future__ import annotations

import asyncio
import json
import time

import httpx2
import pytest

import gradebench as gb
from gradebench._calls.admission import RateBucket
from gradebench._calls.session import mount

from ..conftest import Scripted, completion, scripted_catalog

VERDICT = '{"accuracy": 6, "work": 2, "reason": "close to the reference"}'


async def echo_job(input: dict, seat: gb.Seat) -> dict:
    """Answer the question with a JSON object."""
    reply = await seat.chat([{"role": "user", "content": input["q"]}])
    return json.loads(reply.text)


def answers(candidate: dict[str, object]) -> Scripted:
    """Candidates answer by model id (a dict value, or an httpx2.Response); the judge always gives VERDICT."""

    def answer(body, request):
        if request.headers["x-gradebench-role"] == "judge":
            return completion(VERDICT)
        value = candidate[body["model"]]
        return value(body) if callable(value) else completion(json.dumps(value))

    return Scripted(answer)


def bench_for(endpoint: Scripted, *, runs: int = 2, **entry) -> gb.Benchmark:
    catalog = scripted_catalog(endpoint, **entry)  # no negative controls: these cases count the judge's requests
    bench = gb.Benchmark(echo_job, runs=runs, catalog=catalog, grade="standard", progress=False, controls=0)
    return bench.set_inputs([{"id": "q1", "q": "one?"}, {"id": "q2", "q": "two?"}])


async def test_returns_reference_outputs_and_reports_every_run() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint)
    out = await bench.run()
    assert out == [{"a": 1}, {"a": 1}]  # the reference's answers, unchanged, in input order
    report = bench.report()
    assert bench.metadata[gb.Benchmark.REPORT] is report
    runs = report.runs
    assert runs.height == 2 + 2 * 2 * 2  # references + inputs x entries x repeats
    assert runs.filter(role="reference")["entry"].to_list() == ["acme/pick", "acme/pick"]
    candidates = runs.filter(role="candidate")
    assert set(candidates["score"].to_list()) == {8}
    assert candidates["judge_entry"].unique().to_list() == ["acme/judge"]
    assert candidates["judge_path"].unique().to_list() == ["schema"]
    assert report.models["entry"].to_list() == ["acme/pick", "acme/other"]
    assert len(set(runs["run_id"].to_list())) == runs.height
    assert not any("acme" in r or "pick" in r for r in runs["run_id"].to_list())  # run ids are opaque


async def test_failed_candidate_is_a_row_and_the_race_finishes() -> None:
    endpoint = answers(
        {"pick-1": {"a": 1}, "other-1": lambda body: httpx2.Response(500, json={"error": {"message": "kaput"}})}
    )
    bench = bench_for(endpoint)
    await bench.run()
    failed = bench.report().runs.filter(entry="acme/other")
    assert failed["ok"].to_list() == [False] * 4
    assert failed["error"][0] == "CallError: acme/other: HTTP 500 after 1 attempt: kaput"
    assert bench.report().runs.filter(entry="acme/pick", role="candidate")["ok"].all()
    kinds = bench.report().diagnostics()["kind"].to_list()
    assert "failed" in kinds


async def test_failing_reference_raises_its_own_exception_after_logging(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = answers({"pick-1": lambda body: completion("this is not JSON"), "other-1": {"a": 2}})
    bench = bench_for(endpoint)
    with caplog.at_level("INFO", logger="gradebench"), pytest.raises(json.JSONDecodeError):
        await bench.run()
    assert not bench.report().runs["ok"].any()
    assert bench.report().runs["role"].unique().to_list() == ["reference"]
    assert any("acme/pick" in r.getMessage() and "benchmark" in r.getMessage() for r in caplog.records)
    assert all(req.headers["x-gradebench-role"] == "reference" for req in endpoint.requests)


async def test_scorer_values_and_errors_are_rows() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint).set_spec(scorer=lambda out, ref: 1.0 if out == ref else 0.0)
    await bench.run()
    cands = bench.report().runs.filter(role="candidate")
    assert cands.filter(entry="acme/pick")["scorer"].to_list() == [1.0] * 4
    assert cands.filter(entry="acme/other")["scorer"].to_list() == [0.0] * 4

    def broken(out, ref):
        raise KeyError("decision")

    await bench.set_spec(scorer=broken).rejudge()
    cands = bench.report().runs.filter(role="candidate")
    assert cands["scorer"].is_null().all()
    assert cands["scorer_error"].unique().to_list() == ["KeyError: 'decision'"]


async def test_rejudge_calls_only_the_judge() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint)
    await bench.run()
    before = len(endpoint.requests)
    report = await bench.rejudge(gb.JudgeSpec(rubric="A stricter rubric."))
    new = endpoint.requests[before:]
    assert len(new) == 8 and {r.headers["x-gradebench-role"] for r in new} == {"judge"}
    assert report.meta.spec.rubric == "A stricter rubric."
    assert all("A stricter rubric." in json.loads(r.content)["messages"][1]["content"] for r in new)
    again = len(endpoint.requests)
    await bench.rejudge(gb.JudgeSpec(rubric="A stricter rubric."))
    assert len(endpoint.requests) == again  # the same judge prompts are cache hits


async def test_run_sync_works_inside_a_running_loop() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint, runs=1)
    assert asyncio.get_running_loop() is not None
    assert bench.run_sync() == [{"a": 1}, {"a": 1}]


def test_run_sync_in_a_plain_script() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    assert bench_for(endpoint, runs=1).set_inputs([{"id": "x", "q": "?"}]).run_sync() == {"a": 1}


async def test_retry_after_is_honoured() -> None:
    seen: list[float] = []

    def answer(body, request):
        seen.append(time.monotonic())
        if len(seen) == 1:
            return httpx2.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after-ms": "400"})
        return completion('{"a": 1}') if request.headers["x-gradebench-role"] != "judge" else completion(VERDICT)

    bench = bench_for(Scripted(answer), runs=1, max_retries=2).set_inputs([{"id": "x", "q": "?"}])
    bench.set_spec(candidates=["acme/pick"])
    assert await bench.run() == {"a": 1}
    assert seen[1] - seen[0] >= 0.4  # the SDK waited as long as the endpoint asked


async def test_per_entry_concurrency_limit_is_respected() -> None:
    in_flight = {"now": 0, "max": 0}

    async def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if request.headers["x-gradebench-role"] == "judge":
            return httpx2.Response(200, json=completion(VERDICT))
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        await asyncio.sleep(0.01)
        in_flight["now"] -= 1
        return httpx2.Response(200, json=completion(json.dumps({"m": body["model"]})))

    endpoint = Scripted([])
    catalog = scripted_catalog(endpoint, max_concurrency=2)
    mount(endpoint.base_url, httpx2.MockTransport(answer))  # an async handler, to hold requests in flight
    bench = gb.Benchmark(echo_job, runs=6, catalog=catalog, grade="standard", progress=False)
    bench.set_input({"id": "x", "q": "?"}).set_spec(candidates=["acme/other"])
    await bench.run()
    assert in_flight["max"] == 2


async def test_rate_bucket_spaces_requests() -> None:
    bucket = RateBucket(600, burst=1)  # 10 a second
    started = time.monotonic()
    for _ in range(4):
        await bucket.acquire()
    assert time.monotonic() - started >= 0.29


def test_misuse_raises_with_the_value() -> None:
    catalog = scripted_catalog(Scripted([]))
    with pytest.raises(ValueError, match="runs must be an integer >= 1, 'gsd' or 'auto', got 0"):
        gb.Benchmark(echo_job, runs=0, catalog=catalog, grade="standard")
    with pytest.raises(ValueError, match="grade must be one of"):
        gb.Benchmark(echo_job, catalog=catalog, grade="tiny")
    bench = gb.Benchmark(echo_job, catalog=catalog, grade="standard")
    with pytest.raises(ValueError, match="repeated: \\['a'\\]"):
        bench.set_inputs([{"id": "a"}, {"id": "a"}])
    with pytest.raises(KeyError, match="no entry named 'acme/nope'"):
        bench.set_spec(candidates=["acme/nope"])
    with pytest.raises(RuntimeError, match="run\\(\\) first"):
        bench.report()
    with pytest.raises(ValueError, match="no instructions"):

        async def undocumented(input, seat):
            return 1

        gb.Benchmark(undocumented, catalog=catalog, grade="standard")


async def test_inputs_from_a_dataframe_get_stable_ids() -> None:
    import polars as pl

    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    frame = pl.DataFrame({"q": ["one?", "two?"], "lang": ["en", "fr"]})
    bench = bench_for(endpoint, runs=1).set_inputs(frame)
    await bench.run()
    ids = bench.report().runs.filter(role="reference")["input_id"].to_list()
    assert len(set(ids)) == 2
    again = bench_for(endpoint, runs=1).set_inputs(frame.reverse())
    await again.run()
    assert set(again.report().runs.filter(role="reference")["input_id"].to_list()) == set(ids)  # content, not position
    assert again.report().meta.inputs[ids[0]] in ({"q": "one?", "lang": "en"}, {"q": "two?", "lang": "fr"})


async def test_a_run_past_its_timeout_is_a_failed_row() -> None:
    class Slow(gb.Job):
        """Take too long."""

        timeout_s = 3  # far above what the pick's run takes even on a loaded machine: only the hanging one fails

        async def run(self, input, seat):
            if seat.entry.name == "acme/other":
                await asyncio.sleep(60)  # as good as hanging: without the timeout the test fails, a minute on
            return await echo_job(input, seat)

    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = gb.Benchmark(Slow, runs=1, catalog=scripted_catalog(endpoint), grade="standard", progress=False)
    await bench.set_input({"id": "x", "q": "?"}).run()
    slow = bench.report().runs.filter(entry="acme/other")
    assert slow["error"].to_list() == ["TimeoutError: acme/other: the run took longer than the job's timeout_s=3"]
    pick = bench.report().runs.filter(entry="acme/pick")
    assert pick.height >= 1 and pick["ok"].all()


async def test_listeners_hear_every_run_land_and_get_judged(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint)
    heard: list[gb.results.RaceEvent] = []
    bench.subscribe(heard.append)

    def broken(event: gb.results.RaceEvent) -> None:
        raise RuntimeError("listener bug")

    unsubscribe = bench.subscribe(broken)
    await bench.run()
    kinds = [e.kind for e in heard]
    assert kinds.count("reference") == 2 and kinds.count("landed") == 8 and kinds.count("judged") == 8
    assert all(e.run.verdict is not None for e in heard if e.kind == "judged")
    assert {e.planned for e in heard if e.kind != "reference"} == {8}
    assert "a race listener raised" in caplog.text
    unsubscribe()
    heard.clear()
    caplog.clear()
    await bench.run()
    assert len(heard) == 18 and "a race listener raised" not in caplog.text


# ------------------------------------------------------------------------------------------------- real-endpoint rules


async def test_a_failed_run_is_not_judged_and_scores_zero_everywhere() -> None:
    endpoint = answers(
        {"pick-1": {"a": 1}, "other-1": lambda body: httpx2.Response(500, json={"error": {"message": "kaput"}})}
    )
    bench = bench_for(endpoint)
    await bench.run()
    judged = [r for r in endpoint.requests if r.headers["x-gradebench-role"] == "judge"]
    assert len(judged) == 4  # acme/pick's 4 runs only: no judge call (and no judge cost) for a failed run
    report = bench.report()
    failed = report.runs.filter(entry="acme/other")
    assert failed["score"].to_list() == [0.0] * 4 and failed["judge_cost"].to_list() == [0.0] * 4
    other = report.models.filter(entry="acme/other").row(0, named=True)
    assert other["score_mean"] == 0.0 and other["judged"] == 0  # the mean, the interval and the verdict agree


async def test_a_key_echoed_by_a_provider_reaches_no_row_log_file_or_judge(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path
) -> None:
    key = "sk-canary-echo-9876543210"
    monkeypatch.setenv("ACME_KEY", key)

    def answer(body, request):
        if request.headers["x-gradebench-role"] == "judge":
            return completion(VERDICT)
        if body["model"] == "other-1":
            return httpx2.Response(401, json={"error": {"message": f"Incorrect API key provided: {key}"}})
        return completion(json.dumps({"a": f"echo {key}"}))

    endpoint = Scripted(answer)
    bench = bench_for(endpoint, api_key_env="ACME_KEY")
    with caplog.at_level("INFO", logger="gradebench"):
        await bench.run()
    report = bench.report()
    report.to_parquet(tmp_path / "out")
    texts = [report.runs.write_csv(), report.calls.write_csv(), caplog.text]
    texts += [p.read_bytes().decode("latin-1") for p in (tmp_path / "out").iterdir()]
    texts += [
        json.dumps(b)
        for b, r in zip(endpoint.bodies, endpoint.requests, strict=True)
        if r.headers["x-gradebench-role"] == "judge"
    ]
    assert all(key not in text for text in texts)
    assert "[redacted]" in report.runs.filter(entry="acme/other")["error"][0]


async def test_candidates_may_be_entries_or_names() -> None:
    bench = bench_for(answers({"pick-1": {"a": 1}, "other-1": {"a": 2}}))
    bench.set_spec(candidates=bench.catalog.candidates("standard"))
    assert bench.entries == ["acme/pick", "acme/other"]
    bench.set_spec(candidates=[bench.catalog["acme/other"], "acme/pick"])
    assert bench.entries == ["acme/other", "acme/pick"]
    with pytest.raises(TypeError, match="entry name or an Entry"):
        bench.set_spec(candidates=[3])


def test_inputs_that_are_not_json_are_refused_by_name() -> None:
    bench = bench_for(answers({}))

    class Order:
        pass

    with pytest.raises(ValueError, match=r"input 1 \(id 'b'\) is not JSON"):
        bench.set_inputs([{"id": "a", "q": "x"}, {"id": "b", "q": Order()}])
    with pytest.raises(ValueError, match="input 0 is not JSON"):
        bench.set_inputs([{"q": float("nan")}])


def test_run_sync_raises_the_job_exception_without_a_loop_error_chained() -> None:
    async def broken(input: dict, seat: gb.Seat) -> dict:
        """Fail."""
        raise KeyError("missing field")

    bench = gb.Benchmark(broken, runs=1, catalog=scripted_catalog(answers({})), grade="standard", progress=False)
    bench.set_input({"q": "x"})
    with pytest.raises(KeyError) as caught:
        bench.run_sync()
    assert caught.value.__context__ is None  # no "no running event loop … During handling" before it


# ------------------------------------------------------------------------------------------ judging again, a JudgeSpec

JUDGED = ["run_id", "role", "entry", "score", "accuracy", "work", "reason", "judge_entry", "swap_gap", "scorer"]
"""What a rejudge decides of each run (beside what it cost, which the cache changes)."""


def exact(output, reference) -> float:
    return 1.0 if output == reference else 0.0


async def test_a_rejudge_with_a_judge_spec_gives_the_report_the_old_keywords_gave() -> None:
    from gradebench._race.rejudge import estimate_rejudge

    bench = bench_for(answers({"pick-1": {"a": 1}, "other-1": {"a": 2}}))
    await bench.run()
    report, catalog, cache = bench.report(), bench.catalog, bench.cache
    judging = gb.JudgeSpec(rubric="A stricter rubric.", judge="acme/judge", scorer=exact)
    estimated = await estimate_rejudge(report, catalog, judging, cache=cache)
    new = await gb.rejudge_report(report, catalog, judging, cache=cache, progress=False)
    said = r"rejudge_report\(rubric=..., judge=..., scorer=...\) is deprecated; use rejudge_report\(report, catalog, "
    with pytest.warns(DeprecationWarning, match=said + r"JudgeSpec\(rubric=..., judge=..., scorer=...\)\)"):
        old = await gb.rejudge_report(
            report, catalog, rubric="A stricter rubric.", judge="acme/judge", scorer=exact, cache=cache, progress=False
        )
    assert old.runs.select(JUDGED).equals(new.runs.select(JUDGED)) and old.meta.spec == new.meta.spec
    assert old.calls.filter(role="judge")["cache_hit"].all()  # the very prompts the new form sent: served cached
    assert (
        new.meta.spec.rubric == "A stricter rubric." and new.runs.filter(role="candidate")["scorer"].is_not_null().all()
    )
    again = await estimate_rejudge(report, catalog, judging, cache=cache)
    assert estimated.judge_calls == 8 and again.cached == again.runs == 8 and again.cost == 0
    with pytest.warns(
        DeprecationWarning, match=r"estimate_rejudge\(rubric=..., judge=..., scorer=...\) is deprecated"
    ) as said:
        assert again == await estimate_rejudge(
            report, catalog, rubric="A stricter rubric.", judge="acme/judge", scorer=exact, cache=cache
        )
    assert said[0].filename == __file__  # the warning points at the call to change
    with pytest.warns(DeprecationWarning, match=r"judge_noise_report\(judge_batch=...\) is deprecated"):
        noisy = await gb.judge_noise_report(report, catalog, k=1, judge_batch=False, cache=cache, progress=False)
    assert noisy.noise.height == 8


async def test_the_benchmark_rejudges_with_a_judge_spec_and_keeps_its_rubric_and_scorer() -> None:
    bench = bench_for(answers({"pick-1": {"a": 1}, "other-1": {"a": 2}}))
    await bench.run()
    new = await bench.rejudge(gb.JudgeSpec(rubric="A stricter rubric.", scorer=exact))
    assert bench.spec.rubric == "A stricter rubric." and bench.scorer is exact
    with pytest.warns(DeprecationWarning, match=r"Benchmark.rejudge\(rubric=...\) is deprecated; use bench.rejudge\("):
        old = await bench.rejudge(rubric="A stricter rubric.")  # the benchmark's scorer scores, as before
    assert old.runs.select(JUDGED).equals(new.runs.select(JUDGED))
    with pytest.warns(DeprecationWarning, match=r"Benchmark.rejudge_sync\(judge=...\) is deprecated"):
        alone = bench.rejudge_sync(judge="acme/judge")
    assert alone.runs.select(JUDGED).equals(new.runs.select(JUDGED))


async def test_a_rejudge_turns_on_the_label_bias_check_and_the_report_says_so() -> None:
    endpoint = answers({"pick-1": {"a": 1}, "other-1": {"a": 2}})
    bench = bench_for(endpoint)
    await bench.run()
    before = len(endpoint.requests)
    swapped = await gb.rejudge_report(bench.report(), bench.catalog, gb.JudgeSpec(swap=True), cache=bench.cache)
    assert len(endpoint.requests) - before == 8  # the first order is cached; only the swapped one is asked
    assert swapped.meta.spec.judge_swap is True and bench.report().meta.spec.judge_swap is False
    assert swapped.runs.filter(role="candidate")["swap_gap"].to_list() == [0.0] * 8


async def test_the_old_keywords_and_a_judge_spec_are_not_mixed_and_noise_reads_batch_alone() -> None:
    from gradebench._race.rejudge import estimate_rejudge

    bench = bench_for(answers({"pick-1": {"a": 1}, "other-1": {"a": 2}}))
    await bench.run()
    report, catalog = bench.report(), bench.catalog
    with pytest.raises(TypeError, match="not both"):
        await gb.rejudge_report(report, catalog, gb.JudgeSpec(), rubric="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'rubrik'"):
        await gb.rejudge_report(report, catalog, rubrik="x")
    with pytest.raises(TypeError, match="judging must be a JudgeSpec, got 'x'"):
        await estimate_rejudge(report, catalog, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="judging sets rubric, but the judge-noise floor is of the report's judges"):
        await gb.judge_noise_report(report, catalog, gb.JudgeSpec(rubric="x"))


# --------------------------------------------------------------------------------------- the setters kept for a release


@pytest.mark.parametrize(
    ("setter", "args", "changes"),
    [
        ("set_candidates", (["acme/other"],), {"candidates": ["acme/other"]}),
        ("set_rubric", ("Be strict.",), {"rubric": "Be strict."}),
        ("set_judge_swap", (), {"judge_swap": True}),
        ("set_judge_reasoning", (), {"judge_reasoning": True}),
        ("set_judge_batch", (), {"judge_batch": True}),
        ("set_judge_swap", (False,), {"judge_swap": False}),
        ("set_scorer", (exact,), {"scorer": exact}),
        ("set_scorer", (None,), {"scorer": "none"}),
    ],
)
def test_a_per_field_setter_warns_and_sets_the_field_as_set_spec_does(setter: str, args: tuple, changes: dict) -> None:
    endpoint = answers({})
    aliased, spec_set = bench_for(endpoint), bench_for(endpoint)
    field = next(iter(changes))
    with pytest.warns(
        DeprecationWarning, match=rf"Benchmark.{setter}\(.*\) is deprecated; use bench.set_spec\({field}="
    ):
        assert getattr(aliased, setter)(*args) is aliased
    spec_set.set_spec(**changes)
    assert aliased.spec == spec_set.spec and aliased.scorer is spec_set.scorer and aliased.entries == spec_set.entries


def test_set_spec_takes_a_scorer_in_code_or_a_spec_and_refuses_anything_else() -> None:
    bench = bench_for(answers({}))
    assert bench.set_spec(scorer=exact).scorer is exact and bench.spec.scorer == "exact"
    assert bench.set_spec(scorer="field_equals:a").spec.scorer == "field_equals:a"
    assert bench.set_spec(scorer="none").scorer is None
    with pytest.raises(TypeError, match="scorer must be a scorer spec or callable, got 3"):
        bench.set_spec(scorer=3)
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="scorer must be callable, got 'a'"):
        bench.set_scorer("a")  # type: ignore[attr-defined]
