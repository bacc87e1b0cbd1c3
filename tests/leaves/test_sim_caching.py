"""Prompt caching in the simulated fleet, as OpenAI documents it, seen through the real openai client."""

from __future__ import annotations

import asyncio
import dataclasses

import openai
import pytest

import gradebench as gb
from gradebench.sim import SimFleet
from gradebench.sim._profiles import PROFILES
from gradebench.sim._prompt_cache import PromptCache, prompt_text
from tests.leaves.test_sim import WEATHER_TOOL, client_for

SYSTEM = "Answer in the house style: short sentences, plain words, no lists. " * 180  # 12,060 chars: 3,015 tokens


def chat(system: str, question: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


async def usage(client: openai.AsyncOpenAI, model: str = "sim-steady-1", **kw) -> tuple[int, int]:
    """(prompt_tokens, cached_tokens) of one completion."""
    r = await client.chat.completions.create(model=model, **kw)
    assert r.usage is not None and r.usage.prompt_tokens_details is not None
    cached = r.usage.prompt_tokens_details.cached_tokens
    assert cached is not None and 0 <= cached < r.usage.prompt_tokens  # the last token is always computed
    assert cached == 0 or (cached >= 1024 and cached % 128 == 0)
    return r.usage.prompt_tokens, cached


@pytest.fixture
def fleet() -> SimFleet:
    return SimFleet(latency_scale=0, seed=7)


async def test_a_shared_long_prefix_is_served_from_cache_in_128_token_steps(fleet):
    client = client_for(fleet)
    prompt, first = await usage(client, messages=chat(SYSTEM, "What time do you open?"))
    assert first == 0 and prompt > 3000
    _, second = await usage(client, messages=chat(SYSTEM, "Do you deliver on Sundays?"))
    # Shared: the system message (4 chars of framing + its text) and the user message's framing, then they differ.
    shared_tokens = (4 + len(SYSTEM) + 4) // 4
    assert second == shared_tokens // 128 * 128 == 2944
    again, third = await usage(client, messages=chat(SYSTEM, "Do you deliver on Sundays?"))
    assert third == (again - 1) // 128 * 128  # the same prompt again: all of it but the last token, to a step


async def test_the_field_is_present_and_zero_when_nothing_was_cached(fleet):
    r = await client_for(fleet).chat.completions.create(
        model="sim-steady-1", messages=[{"role": "user", "content": "hi"}]
    )
    assert r.usage.prompt_tokens_details.cached_tokens == 0
    assert r.usage.completion_tokens_details.reasoning_tokens == 0
    raw = r.model_dump()["usage"]
    assert raw["prompt_tokens_details"]["cached_tokens"] == 0


async def test_under_1024_tokens_nothing_is_cached(fleet):
    client = client_for(fleet)
    short = "Keep it short. " * 260  # 3,900 chars: under 1024 tokens in all
    for _ in range(3):
        prompt, cached = await usage(client, messages=chat(short, "Same question"))
        assert prompt < 1024 and cached == 0
    # A long prompt whose shared part is under 1024 tokens: no hit either.
    lead = "Keep it short. " * 200  # 3,000 chars shared
    for tail in ("one " * 400, "two " * 400):
        prompt, cached = await usage(client, messages=chat(lead, tail))
        assert prompt > 1024 and cached == 0


async def test_each_model_has_its_own_cache(fleet):
    client = client_for(fleet)
    assert (await usage(client, "sim-steady-1", messages=chat(SYSTEM, "a")))[1] == 0
    assert (await usage(client, "sim-swift-1", messages=chat(SYSTEM, "b")))[1] == 0  # steady's prefix is not swift's
    assert (await usage(client, "sim-swift-1", messages=chat(SYSTEM, "c")))[1] == 2944
    assert (await usage(client, "sim-steady-1", messages=chat(SYSTEM, "d")))[1] == 2944


async def test_prompt_cache_key_keeps_prefixes_apart(fleet):
    # Modelled as a namespace: a keyed request reads and writes only its key's prefixes; unkeyed ones share their own.
    client = client_for(fleet)
    assert (await usage(client, messages=chat(SYSTEM, "a"), prompt_cache_key="tenant-a"))[1] == 0
    assert (await usage(client, messages=chat(SYSTEM, "b"), prompt_cache_key="tenant-b"))[1] == 0
    assert (await usage(client, messages=chat(SYSTEM, "c")))[1] == 0
    assert (await usage(client, messages=chat(SYSTEM, "d"), prompt_cache_key="tenant-a"))[1] == 2944
    assert (await usage(client, messages=chat(SYSTEM, "e"), prompt_cache_key="tenant-b"))[1] == 2944
    assert (await usage(client, messages=chat(SYSTEM, "f")))[1] == 2944


async def test_tools_lead_the_prompt_so_a_tool_loop_shares_them(fleet):
    client = client_for(fleet)
    tool = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "description": "Forecast. " * 500}}
    short = [{"role": "user", "content": "Oslo"}]
    assert (await usage(client, messages=short, tools=[tool]))[1] == 0
    later = [*short, {"role": "user", "content": "and Bergen?"}]
    _, cached = await usage(client, messages=later, tools=[tool])
    assert cached >= 1024  # the tools and the first message are the shared prefix
    other = {**tool, "function": {**tool["function"], "description": "Outlook. " * 500}}
    assert (await usage(client, messages=later, tools=[other]))[1] == 0  # other tools: another prompt from the start


def test_prompt_text_is_what_the_sim_bills():
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Oslo"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {}}]},
        ],
        "tools": [WEATHER_TOOL],
    }
    text = prompt_text(body)
    assert text.startswith('[{"function":') and "<sy>Be brief.<us>Oslo<as>" in text
    assert text.endswith('[{"function":{},"id":"c1","type":"function"}]')


async def test_a_prefix_is_recorded_on_arrival_before_the_simulated_latency():
    # The first request writes a long answer, the second a one-token one: the second arrives later but finishes first,
    # and still hits the first's prefix, because the first recorded it on arrival (not when its answer was done).
    steady = next(p for p in PROFILES if p.model == "sim-steady-1")
    slow_writer = dataclasses.replace(steady, jitter_ms=0, ms_per_token=50, failure_rate=0)
    fleet = SimFleet(latency_scale=0.05, seed=7, profiles=[slow_writer])  # 30 ms + 2.5 ms per output token
    client = client_for(fleet, retries=0)
    done: list[str] = []

    async def one(question: str, delay: float, **kw) -> int:
        await asyncio.sleep(delay)
        cached = (await usage(client, messages=chat(SYSTEM, question), **kw))[1]
        done.append(question)
        return cached

    first, second = await asyncio.gather(one("a long answer", 0), one("a short one", 0.005, max_tokens=1))
    assert done == ["a short one", "a long answer"]
    assert (first, second) == (0, 2944)


async def test_prefixes_expire_after_minutes_of_simulated_inactivity():
    now = [0.0]
    fleet = SimFleet(latency_scale=0, seed=7)
    fleet.prompt_cache.clock = lambda: now[0]
    client = client_for(fleet)
    assert (await usage(client, messages=chat(SYSTEM, "a")))[1] == 0
    now[0] = 299.0
    assert (await usage(client, messages=chat(SYSTEM, "b")))[1] == 2944  # a hit refreshes the prefix
    now[0] = 299.0 + 299.0
    assert (await usage(client, messages=chat(SYSTEM, "c")))[1] == 2944
    now[0] += 301.0
    assert (await usage(client, messages=chat(SYSTEM, "d")))[1] == 0  # 5 minutes idle: gone (and recorded again)
    assert (await usage(client, messages=chat(SYSTEM, "e"), prompt_cache_retention="24h"))[1] == 2944
    now[0] += 3600.0
    assert (await usage(client, messages=chat(SYSTEM, "f")))[1] == 2944  # "24h" retention outlived the hour


def test_the_fleet_clock_is_simulated_time():
    assert SimFleet(latency_scale=0).clock() == 0.0  # frozen at scale 0: nothing ever expires in tests
    fast = SimFleet(latency_scale=0.001)
    start = fast.clock()
    assert fast.clock() >= start
    assert fast.prompt_cache.clock == fast.clock


def test_the_store_is_bounded_least_recently_used_first():
    cache = PromptCache(max_prefixes=40)
    texts = [f"{i:04d}" + "x" * 8000 for i in range(12)]  # 2001 tokens: 8 boundaries each (1024 .. 1920)
    for text in texts:
        assert cache.serve("m", text) == 0
    assert len(cache) == 40  # the last five prompts' prefixes
    assert cache.serve("m", texts[0]) == 0  # evicted
    assert cache.serve("m", texts[-1]) == 1920
    with pytest.raises(ValueError, match="max_prefixes must be >= 1, got 0"):
        PromptCache(max_prefixes=0)
    cache.clear()
    assert len(cache) == 0


def test_sim_catalog_prices_cached_input_at_a_tenth():
    catalog = gb.sim.catalog(latency_scale=0)
    for entry in catalog:
        assert entry.price_cached_in == pytest.approx(entry.price_in / 10), entry.name
    steady = catalog["sim/steady"]
    assert steady.cost(3000, 0, cached_input_tokens=2944) == pytest.approx((56 * 0.40 + 2944 * 0.04) / 1e6)
