"""What a real llama.cpp server does that a user's race meets, each asserted on what the report shows: a prompt longer
than the context, every slot busy, a model stopped at once, tool-call arguments the schema refuses, and prompt tokens
served from the server's prompt cache."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb

from .conftest import RANDOM_CTX, SMALL_CTX

pytestmark = pytest.mark.real

JUDGE_PARAMS = {"temperature": 0, "max_tokens": 60}
"""The random-weights judge's verdicts are gibberish inside the schema: kept short."""

SYSTEM = "Label the support ticket: billing, bug or feature. Answer the label only."


def catalog(servers: dict[str, Any], reference: str, candidate: str, **fields: Any) -> gb.Catalog:
    """A reference on one server and a candidate on another (``fields`` are the candidate's), judged by the
    random-weights model (fast; these tests read the calls and the runs, not the verdicts)."""
    common = {"price_in": 1.0, "price_out": 2.0, "max_retries": 0, "timeout_s": 120.0}

    def entry(name: str, server: str, grade: str, **more: Any) -> gb.Entry:
        return gb.Entry(name=name, model=server, grade=grade, base_url=servers[server].base_url, **{**common, **more})

    entries = [
        entry("local/reference", reference, "standard"),
        entry("local/candidate", candidate, "standard", **fields),
        entry("local/judge", "random", "large"),
    ]
    picks = {"standard": "local/reference", "large": "local/judge"}
    return gb.Catalog(
        entries,
        grades=["standard", "large"],
        picks=picks,
        ceiling="local/judge",
        source="real",
        judge_params=JUDGE_PARAMS,
    )


def classifier(**params: Any) -> Any:
    async def triage(input: dict, seat: gb.Seat) -> str:
        """Label the support ticket as billing, bug or feature; answer with the label only."""
        response = await seat.openai.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": input["text"]}],
            **params,
        )
        return response.choices[0].message.content or ""

    return triage


async def race(
    servers: dict[str, Any], servers_used: tuple[str, str], job: Any, inputs: list[dict], **fields: Any
) -> gb.BenchmarkReport:
    """``job`` raced on ``inputs`` once, the reference on the first server and the candidate on the second."""
    races = catalog(servers, *servers_used, **fields)
    bench = gb.Benchmark(job, runs=1, catalog=races, grade="standard", progress=False)
    bench.set_inputs(inputs).set_spec(controls=0, concurrency=1)
    await bench.run()
    return bench.report()


async def test_a_prompt_over_the_context_fails_the_candidates_runs_saying_so(real_servers: dict[str, Any]) -> None:
    ticket = "The invoice is wrong. " * (SMALL_CTX // 8)  # 5 tokens a repeat: over a slot of the small server only
    report = await race(
        real_servers, ("random", "random-small"), classifier(max_tokens=4), [{"id": "t1", "text": ticket}]
    )
    assert report.runs.filter(pl.col("role") == "reference")["ok"].all()
    candidate = report.runs.filter(pl.col("entry") == "local/candidate")
    assert not candidate["ok"].any()
    [error] = candidate["error"].to_list()
    assert "HTTP 400" in error and "exceeds the available context size" in error, error
    [row] = report.models.filter(pl.col("entry") == "local/candidate").iter_rows(named=True)
    assert row["verdict_basis"] == "unmeasured" and "exceeds the available context size" in row["verdict_reason"]


async def test_a_reference_over_the_context_stops_the_race_naming_it(real_servers: dict[str, Any]) -> None:
    ticket = "The invoice is wrong. " * RANDOM_CTX  # far over a slot of either random-weights server
    with pytest.raises(gb.CallError) as raised:
        await race(real_servers, ("random", "random"), classifier(max_tokens=4), [{"id": "t1", "text": ticket}])
    said = " ".join([str(raised.value), *getattr(raised.value, "__notes__", [])])
    assert "local/reference" in said and "exceeds the available context size" in said and "'t1'" in said, said


async def test_a_model_stopped_at_once_is_reported_truncated(real_servers: dict[str, Any]) -> None:
    report = await race(
        real_servers, ("random", "smollm2"), classifier(max_tokens=1), [{"id": "t1", "text": "I was charged twice."}]
    )
    calls = report.calls.filter(pl.col("entry") == "local/candidate")
    assert (calls["finish_reason"] == "length").all()
    assert (calls["output_tokens"] == 1).all()
    runs = report.runs.filter(pl.col("entry") == "local/candidate")
    assert runs["ok"].all() and (runs["truncated"] == 1).all()
    flagged = report.diagnostics().filter(pl.col("kind") == "truncated")
    assert set(runs["run_id"]) <= set(flagged["run_id"])
    assert all("1 of 1 model calls stopped at the length limit" in d for d in flagged["detail"])


async def test_cached_prompt_tokens_are_priced_as_cached(real_servers: dict[str, Any]) -> None:
    shared = (
        SYSTEM
        + " "
        + " ".join(f"Rule {i}: tickets about topic {i} are labelled by their main request." for i in range(40))
    )

    async def triage(input: dict, seat: gb.Seat) -> str:
        """Label the support ticket as billing, bug or feature; answer with the label only."""
        response = await seat.openai.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": shared}, {"role": "user", "content": input["text"]}],
            max_tokens=4,
            temperature=0,
        )
        return response.choices[0].message.content or ""

    inputs = [{"id": "t1", "text": "I was charged twice."}, {"id": "t2", "text": "The app crashes."}]
    report = await race(real_servers, ("random", "smollm2"), triage, inputs, price_cached_in=0.25)
    calls = report.calls.filter(pl.col("entry") == "local/candidate").sort("cached_input_tokens")
    assert calls["cached_input_tokens"].max() > 100, calls.select("entry", "input_tokens", "cached_input_tokens")
    for call in calls.iter_rows(named=True):
        fresh = call["input_tokens"] - call["cached_input_tokens"]
        expected = (fresh * 1.0 + call["cached_input_tokens"] * 0.25 + call["output_tokens"] * 2.0) / 1e6
        assert call["cost"] == pytest.approx(expected, rel=1e-9)


@pytest.fixture
def slots_held(real_servers: dict[str, Any]) -> Iterator[None]:
    """Both slots of the SmolLM2 server busy generating, streamed, until the test is done: closing the streams then
    cancels the generations on the server."""
    url = real_servers["smollm2"].base_url + "/chat/completions"
    messages = [{"role": "user", "content": "Write a long story."}]
    body = {"messages": messages, "max_tokens": 3000, "ignore_eos": True, "stream": True}
    release, generating = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        with httpx2.stream("POST", url, json=body, timeout=600) as response:
            for n, _ in enumerate(response.iter_lines()):
                if n == 2:
                    generating.release()
                if release.is_set():
                    return

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for t in holders:
        t.start()
    try:
        for _ in holders:
            assert generating.acquire(timeout=120), "the holders never started generating"
        yield
    finally:
        release.set()
        for t in holders:
            t.join(timeout=60)


async def test_a_call_queued_behind_busy_slots_times_out_saying_so(
    real_servers: dict[str, Any], slots_held: None
) -> None:
    report = await race(
        real_servers,
        ("random", "smollm2"),
        classifier(max_tokens=4),
        [{"id": "t1", "text": "Charged twice."}],
        timeout_s=2.0,
    )
    runs = report.runs.filter(pl.col("entry") == "local/candidate")
    assert not runs["ok"].any()
    [error] = runs["error"].to_list()
    # the queue behind the busy slots counts against the call's deadline, and the report says so
    assert "no whole answer within timeout_s=2 s" in error, error
    [row] = report.models.filter(pl.col("entry") == "local/candidate").iter_rows(named=True)
    assert row["verdict_basis"] == "unmeasured" and "timeout_s=2" in row["verdict_reason"]
