"""Admission control through the real openai client: 429s waited out by time, the adaptive pace, hard errors fast,
and errors an endpoint sends as a 200."""

from __future__ import annotations

import asyncio
import json
import random

import httpx2
import pytest

import gradebench as gb
from gradebench._calls.admission import AdaptiveRate, backoff_s, retry_after_s
from gradebench._calls.session import Session
from gradebench.jobs import OrderAgent, load_inputs

from ..conftest import Scripted, SeatKeyForTests, completion, make_seat, scripted_catalog

HI = [{"role": "user", "content": "hi"}]
FAST = {"rpm": 60_000}  # paced, but far from any wait a test would notice


def limited(message: str = "slow down", **headers: str) -> httpx2.Response:
    return httpx2.Response(
        429,
        json={"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}},
        headers={"retry-after-ms": "10", **headers},
    )


def error_in_200(code: object, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------------------------------ 429s


async def test_a_burst_of_429s_is_waited_out_past_max_retries() -> None:
    endpoint = Scripted([limited() for _ in range(3)] + [completion("ok")])
    seat = make_seat(scripted_catalog(endpoint, max_retries=1, **FAST), "acme/pick")
    reply = await seat.chat(HI)
    assert reply.text == "ok"
    assert len(endpoint.requests) == 4  # max_retries=1 would have allowed 2
    assert [r.headers["x-stainless-retry-count"] for r in endpoint.requests] == ["0"] * 4  # none was the SDK's retry
    assert seat.calls[-1].error is None


async def test_time_spent_waiting_out_429s_is_not_the_models_latency() -> None:
    endpoint = Scripted([limited(**{"retry-after-ms": "400"}), completion("ok")])
    seat = make_seat(scripted_catalog(endpoint, **FAST), "acme/pick")
    reply = await seat.chat(HI)
    # the 400 ms the provider asked for is the rate limit's, not the model's: latency is the answering request's
    assert reply.text == "ok" and reply.calls[0].latency_s < 0.4


async def test_a_429_that_never_ends_fails_once_the_budget_is_spent() -> None:
    endpoint = Scripted(lambda body, req: limited("Rate limit reached for requests"))
    seat = make_seat(scripted_catalog(endpoint, rate_limit_wait_s=0.05, **FAST), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat(HI)
    error = info.value
    attempts = len(endpoint.requests)
    assert attempts >= 2 and error.status == 429 and error.attempts == attempts
    message = str(error)
    assert message.startswith(f"acme/pick: HTTP 429 after {attempts} attempts over ")
    assert "still rate limited past rate_limit_wait_s=0.05" in message
    assert message.endswith(": Rate limit reached for requests")
    assert seat.calls[-1].error == message


async def test_a_retry_after_beyond_the_budget_fails_at_once() -> None:
    endpoint = Scripted(
        lambda body, req: httpx2.Response(
            429, json={"error": {"message": "come back tomorrow"}}, headers={"retry-after": "3600"}
        )
    )
    seat = make_seat(scripted_catalog(endpoint, rate_limit_wait_s=60, **FAST), "acme/pick")
    with pytest.raises(gb.CallError, match=r"HTTP 429 after 1 attempt over .* asked to wait 3600 s more: come back"):
        await seat.chat(HI)
    assert len(endpoint.requests) == 1


async def test_a_spent_quota_is_not_waited_for() -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    endpoint = Scripted(lambda b, req: httpx2.Response(429, json=body, headers={"retry-after-ms": "10"}))
    seat = make_seat(scripted_catalog(endpoint, max_retries=3, **FAST), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat(HI)
    assert str(info.value) == "acme/pick: HTTP 429 after 1 attempt: You exceeded your current quota"
    assert len(endpoint.requests) == 1


async def test_429s_then_a_503_count_every_attempt() -> None:
    answers = [
        limited(),
        limited(),
        httpx2.Response(503, json={"error": {"message": "overloaded"}}, headers={"retry-after-ms": "1"}),
    ]
    endpoint = Scripted(lambda body, req: answers.pop(0) if answers else httpx2.Response(503, json={}))
    seat = make_seat(scripted_catalog(endpoint, max_retries=0, **FAST), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat(HI)
    assert str(info.value) == "acme/pick: HTTP 503 after 3 attempts: overloaded"


# ------------------------------------------------------------------------------------------------- the adaptive pace


def test_a_429_halves_the_pace_and_successes_win_it_back_slowly() -> None:
    clock = Clock()
    rate = AdaptiveRate(120, clock=clock)
    assert rate.rpm == 120
    sent = clock.now
    clock.now += 0.1
    rate.limited(sent_at=sent)
    assert rate.rpm == 60
    rate.limited(sent_at=sent)  # answered a request sent before the cut: the same overshoot
    assert rate.rpm == 60
    rate.limited(sent_at=clock.now, cut=False)  # a call's retry meeting a 429 again: early, not faster
    assert rate.rpm == 60
    for _ in range(5):
        rate.succeeded()
    assert rate.rpm == pytest.approx(60 + 5 * 60 / 25)  # additive: a twenty-fifth of the cut per success
    for _ in range(100):
        rate.succeeded()
    assert rate.rpm == 120  # never above the catalog's rpm
    clock.now += 1
    rate.limited(sent_at=clock.now)
    assert rate.rpm == 60  # a later overshoot cuts again


def test_a_429_holds_every_start_for_its_retry_after_and_drops_the_burst() -> None:
    clock = Clock()
    rate = AdaptiveRate(600, clock=clock)  # 10 a second, burst 10
    assert [rate.start() for _ in range(3)] == [0.0, 0.0, 0.0]
    rate.limited(sent_at=clock.now, retry_after=2.0)
    assert rate.start() == pytest.approx(2.0)
    clock.now += 2.0
    assert rate.start() == 0.0  # the bucket refilled while held, but only to a burst of one now
    assert rate.start() == pytest.approx(60 / 300)  # at the halved pace: 5 a second


def test_an_unpaced_entry_starts_from_the_observed_rate() -> None:
    clock = Clock()
    rate = AdaptiveRate(None, clock=clock)
    assert rate.rpm is None and rate.ceiling is None
    for _ in range(20):  # 20 starts over 2 s: 600 a minute
        assert rate.start() == 0.0
        clock.now += 0.1
    rate.limited(sent_at=clock.now)
    assert rate.rpm == pytest.approx(300)
    for _ in range(1000):
        rate.succeeded()
    assert rate.rpm > 600  # no ceiling: it keeps probing until the provider says no again


def test_an_unpaced_entry_starts_from_the_providers_stated_limit() -> None:
    clock = Clock()
    rate = AdaptiveRate(None, clock=clock)
    rate.start()
    rate.limited(sent_at=clock.now, limit_rpm=500)
    assert rate.rpm == pytest.approx(250)


def test_retry_after_forms_and_backoff() -> None:
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 9.0  # the longer ask holds
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "1"}) == 1.5
    assert retry_after_s({"retry-after": "1.5"}) == 1.5
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412480.0) == 30.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
    assert retry_after_s({"retry-after": "-3"}) == 0.0
    rng = random.Random(0)
    waits = [backoff_s(n, rng) for n in range(1, 10)]
    assert all(0.75 * min(30, 0.5 * 2 ** (n - 1)) <= w <= min(30, 0.5 * 2 ** (n - 1)) for n, w in enumerate(waits, 1))
    assert waits[-1] <= 30


# -------------------------------------------------------------------------------------------------- hard errors


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_hard_errors_fail_fast(status: int) -> None:
    endpoint = Scripted(lambda body, req: httpx2.Response(status, json={"error": {"message": f"no ({status})"}}))
    seat = make_seat(scripted_catalog(endpoint, max_retries=3, **FAST), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat(HI)
    assert str(info.value) == f"acme/pick: HTTP {status} after 1 attempt: no ({status})"
    assert info.value.attempts == 1 and len(endpoint.requests) == 1


async def test_a_503_is_retried_by_the_sdk_max_retries_times() -> None:
    endpoint = Scripted(
        lambda body, req: httpx2.Response(
            503, json={"error": {"message": "overloaded"}}, headers={"retry-after-ms": "1"}
        )
    )
    seat = make_seat(scripted_catalog(endpoint, max_retries=2, **FAST), "acme/pick")
    with pytest.raises(gb.CallError, match="^acme/pick: HTTP 503 after 3 attempts: overloaded$"):
        await seat.chat(HI)
    assert [r.headers["x-stainless-retry-count"] for r in endpoint.requests] == ["0", "1", "2"]


async def test_a_5xx_the_endpoint_says_not_to_retry_counts_one_attempt() -> None:
    endpoint = Scripted(
        lambda body, req: httpx2.Response(500, json={"error": {"message": "bug"}}, headers={"x-should-retry": "false"})
    )
    seat = make_seat(scripted_catalog(endpoint, max_retries=2, **FAST), "acme/pick")
    with pytest.raises(gb.CallError, match="^acme/pick: HTTP 500 after 1 attempt: bug$"):
        await seat.chat(HI)


# ------------------------------------------------------------------------------------------ errors sent as a 200


async def test_a_200_with_error_429_is_waited_out() -> None:
    endpoint = Scripted(
        [
            httpx2.Response(200, json=error_in_200(429, "Rate limited upstream"), headers={"retry-after-ms": "10"}),
            completion("ok"),
        ]
    )
    seat = make_seat(scripted_catalog(endpoint, max_retries=0, **FAST), "acme/pick")
    assert (await seat.chat(HI)).text == "ok"
    assert len(endpoint.requests) == 2


async def test_a_200_with_error_502_is_retried_by_the_sdk_and_then_succeeds() -> None:
    endpoint = Scripted(
        [
            httpx2.Response(200, json=error_in_200(502, "Upstream boom"), headers={"retry-after-ms": "1"}),
            completion("ok"),
        ]
    )
    seat = make_seat(scripted_catalog(endpoint, max_retries=2, **FAST), "acme/pick")
    assert (await seat.chat(HI)).text == "ok"
    assert [r.headers["x-stainless-retry-count"] for r in endpoint.requests] == ["0", "1"]


async def test_a_persistent_200_with_error_502_fails_with_the_providers_message() -> None:
    def answer(body, request):
        if request.headers["x-gradebench-role"] == "judge":
            return completion('{"accuracy": 6, "work": 2, "reason": "close"}')
        if body["model"] == "other-1":
            return httpx2.Response(200, json=error_in_200(502, "Upstream boom"), headers={"retry-after-ms": "1"})
        return completion(json.dumps({"a": 1}))

    async def echo_job(input: dict, seat: gb.Seat) -> dict:
        """Answer with a JSON object."""
        return json.loads((await seat.chat([{"role": "user", "content": input["q"]}])).text)

    endpoint = Scripted(answer)
    catalog = scripted_catalog(endpoint, max_retries=2, **FAST)
    bench = gb.Benchmark(echo_job, runs=1, catalog=catalog, grade="standard", progress=False)
    await bench.set_input({"id": "x", "q": "?"}).run()
    failed = bench.report().runs.filter(entry="acme/other")
    assert failed["ok"].to_list() == [False]
    assert failed["error"][0] == "CallError: acme/other: HTTP 200 with error 502 after 3 attempts: Upstream boom"
    assert sum(b["model"] == "other-1" for b in endpoint.bodies) == 3


async def test_a_200_with_an_error_code_that_is_not_a_status_fails_fast() -> None:
    endpoint = Scripted(lambda body, req: error_in_200("invalid_prompt", "The prompt was flagged"))
    seat = make_seat(scripted_catalog(endpoint, max_retries=3, **FAST), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat(HI)
    assert str(info.value) == "acme/pick: HTTP 200 with error 'invalid_prompt' after 1 attempt: The prompt was flagged"
    assert info.value.status == 502 and len(endpoint.requests) == 1


async def test_a_completion_that_mentions_error_is_left_alone() -> None:
    answer = completion('{"error": "none", "status": 200}')
    answer["error"] = None  # some servers send a null error beside the choices
    endpoint = Scripted([answer])
    seat = make_seat(scripted_catalog(endpoint, **FAST), "acme/pick")
    assert json.loads((await seat.chat(HI)).text) == {"error": "none", "status": 200}


# ------------------------------------------------------------------------------------------------- the sim fleet


async def test_sim_mini_burst_meets_429s_and_every_call_gets_through() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    catalog = fleet.catalog()  # server-side limit on: 120 rpm in simulated time
    async with Session(catalog, gb.results.CallCache(), concurrency=32) as session:
        seats = [
            session.seat(
                catalog["sim/mini"], SeatKeyForTests(run_id=f"r{i}", benchmark_id="b", salt_parts={"input": str(i)})
            )
            for i in range(12)
        ]
        replies = await asyncio.gather(*(s.chat([{"role": "user", "content": f"q{i}"}]) for i, s in enumerate(seats)))
    assert all(r.text for r in replies)
    statuses = [q.status for q in fleet.requests]
    assert 429 in statuses  # 8 at once (the entry's max_concurrency) against a server burst of 4
    assert session.admission.rate(catalog["sim/mini"]).rpm < catalog["sim/mini"].rpm  # the pace came down


async def test_sim_small_grade_race_converges() -> None:
    catalog = gb.sim.catalog(latency_scale=0.05)
    bench = gb.Benchmark(OrderAgent, catalog=catalog, grade="small", runs=1, progress=False)
    await bench.set_inputs(load_inputs("orders")[:5]).run()  # raises when a reference run fails
    runs = bench.report().runs
    assert runs.filter(role="reference")["ok"].all()
    errors = [e for e in runs["error"].to_list() if e]
    assert not [e for e in errors if "429" in e], errors
