"""`benchmarks/peer.py`, the side-by-side benchmark against Inspect AI: its flags, and its loopback server's counts
of the requests each tool makes (the check that both do the same work), over real HTTP with the openai client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import openai
import pytest

from gradebench.sim import start_server

from ..scripts import benchmark

ROOT = Path(__file__).parents[2]


peer = benchmark("peer")


def test_flags_default_to_the_published_size_and_take_a_small_one():
    default = peer.parser().parse_args([])
    assert (default.n, default.rounds, default.latency_ms, default.concurrency) == (2000, 3, 50.0, 100)
    assert default.inspect_python is None
    small = peer.parser().parse_args(["--n", "200", "--rounds", "2", "--latency-ms", "0", "--inspect-python", "/x/py"])
    assert (small.n, small.rounds, small.latency_ms, small.inspect_python) == (200, 2, 0.0, "/x/py")


async def counts_each_models_requests(base_url: str, ask) -> None:
    """Requests as each tool sends them; the counts that ``ask("_stats")`` reads back, and their reset."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="peer", max_retries=0)
    question = [{"role": "user", "content": peer.PROMPT.format(i=7)}]
    for _ in range(3):
        answer = await client.chat.completions.create(model=peer.RUNNER_MODEL, messages=question)
        assert answer.choices[0].message.content == peer.ANSWER
    verdict = await client.chat.completions.create(
        model=peer.JUDGE_MODEL, messages=question, response_format={"type": "json_object"}
    )
    assert json.loads(verdict.choices[0].message.content or "")["accuracy"] == 7  # gradebench's schema
    grade = await client.chat.completions.create(
        model=peer.JUDGE_MODEL, messages=[{"role": "user", "content": [{"type": "text", "text": "abc"}]}]
    )
    assert (grade.choices[0].message.content or "").endswith("GRADE: C")  # Inspect's model_graded_qa
    await client.close()
    stats = await ask("_stats")
    assert stats[peer.RUNNER_MODEL]["requests"] == 3
    assert stats[peer.RUNNER_MODEL]["prompt_chars"] == 3 * len(peer.PROMPT.format(i=7))
    assert stats[peer.JUDGE_MODEL]["requests"] == 2
    assert stats[peer.JUDGE_MODEL]["prompt_chars"] == len(peer.PROMPT.format(i=7)) + 3
    assert await ask("_reset") == {} and await ask("_stats") == {}


async def test_the_server_counts_each_models_requests_and_answers_each_tools_judge_in_its_shape():
    server = await start_server(fleet=peer.CountingModels(0.0))  # the loopback server, in this process
    try:
        async with httpx2.AsyncClient() as http:

            async def ask(what: str) -> dict:
                url = f"{server.base_url}/{what}"
                return (await (http.get(url) if what == "_stats" else http.post(url))).json()

            await counts_each_models_requests(server.base_url, ask)
    finally:
        await server.close()


@pytest.mark.slow
async def test_the_server_process_counts_what_the_benchmark_reads():
    server = peer.Server(0.0)  # its own process, as in the benchmark (it imports gradebench: seconds)
    try:

        async def ask(what: str) -> dict:
            return await asyncio.to_thread(server.ask, what)

        await counts_each_models_requests(server.base_url, ask)
    finally:
        server.stop()


def test_work_that_differs_between_the_tools_is_named():
    def race(runner: int, judge: int, chars: float) -> dict:
        return {
            peer.RUNNER_MODEL: {"requests": runner, "prompt_chars_per_request": 34.0},
            peer.JUDGE_MODEL: {"requests": judge, "prompt_chars_per_request": chars},
        }

    def side(runner: int, judge: int, chars: float = 2464.0, cached: int = 0) -> dict:
        rejudge = {peer.JUDGE_MODEL: {"requests": judge, "prompt_chars_per_request": chars}}
        cached_work = {peer.JUDGE_MODEL: {"requests": cached, "prompt_chars_per_request": chars}} if cached else {}
        return {"race": race(runner, judge, chars), "race_no_latency": {}, "cached": cached_work, "rejudge": rejudge}

    assert peer.same_work({"gradebench": side(201, 200), "inspect": side(200, 200)}, 200) == []
    problems = peer.same_work({"gradebench": side(201, 200), "inspect": side(200, 199, 1000.0, cached=3)}, 200)
    assert "inspect's race made 199 requests to judge-1, not 200" in problems
    assert "inspect's cached rerun made 3 requests" in problems
    assert any("prompt sizes to judge-1 differ" in p for p in problems)
