"""Thinking models in the simulated fleet: sim/sage as DeepSeek's thinking mode, and an OpenRouter-shaped flavour."""

from __future__ import annotations

import dataclasses
import math

import openai
import pytest

from gradebench.sim import Profile, SimFleet
from gradebench.sim._profiles import PROFILES
from gradebench.sim._prompt_cache import prompt_text
from gradebench.sim._reasoning import DEEPSEEK_MISSING
from tests.leaves.test_sim import POLICY, WEATHER_TOOL, ask_city, client_for, labels

SAGE = "sim-sage-1"


@pytest.fixture
def fleet() -> SimFleet:
    POLICY.seen.clear()
    return SimFleet(latency_scale=0, seed=7)


def passed_back(message) -> dict:
    """The assistant message as a client that replays every field the provider returned sends it back."""
    return message.model_dump(exclude_none=True)


def dropped(message) -> dict:
    """The assistant message as a client that replays only role, content and tool calls sends it back."""
    turn = passed_back(message)
    return {k: turn[k] for k in ("role", "content", "tool_calls") if k in turn}


def tool_result(call) -> dict:
    return {"role": "tool", "tool_call_id": call.id, "content": '{"city": "Oslo", "rain": true, "temp_c": 12}'}


async def test_sage_thinks_and_counts_it_as_output(fleet):
    client = client_for(fleet)
    ask = {"model": SAGE, "messages": [{"role": "user", "content": "Summarise the lighthouse story."}]}
    r = await client.chat.completions.create(**ask, extra_headers=labels("r1"))
    message = r.choices[0].message
    thought = passed_back(message)["reasoning_content"]
    assert isinstance(thought, str) and "lighthouse" in thought and "sage" not in thought
    details = r.usage.completion_tokens_details
    assert 0 < details.reasoning_tokens <= r.usage.completion_tokens
    assert details.reasoning_tokens == math.ceil(len(thought) / 4)
    assert r.usage.completion_tokens == details.reasoning_tokens + math.ceil(len(message.content) / 4)
    again = await client.chat.completions.create(**ask, extra_headers=labels("r1"))
    assert passed_back(again.choices[0].message)["reasoning_content"] == thought  # deterministic, like the answer


async def test_models_without_the_quirk_do_not_think(fleet):
    r = await client_for(fleet).chat.completions.create(
        model="sim-oracle-1", messages=[{"role": "user", "content": "hi"}]
    )
    assert "reasoning_content" not in passed_back(r.choices[0].message)
    assert r.usage.completion_tokens_details.reasoning_tokens == 0


async def test_a_tool_turn_without_its_reasoning_content_is_a_400(fleet):
    client = client_for(fleet)
    first = await client.chat.completions.create(model=SAGE, messages=ask_city(), tools=[WEATHER_TOOL])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and passed_back(message)["reasoning_content"]
    (call,) = message.tool_calls

    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(
            model=SAGE, messages=[*ask_city(), dropped(message), tool_result(call)], tools=[WEATHER_TOOL]
        )
    assert info.value.status_code == 400
    assert info.value.body == {
        "message": DEEPSEEK_MISSING,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
    assert DEEPSEEK_MISSING == "The `reasoning_content` in the thinking mode must be passed back to the API."

    second = await client.chat.completions.create(
        model=SAGE, messages=[*ask_city(), passed_back(message), tool_result(call)], tools=[WEATHER_TOOL]
    )
    assert second.choices[0].finish_reason == "stop" and "umbrella" in second.choices[0].message.content
    assert [q.status for q in fleet.requests] == [200, 400, 200]


async def test_a_turn_without_tool_calls_may_drop_its_reasoning(fleet):
    client = client_for(fleet)
    first = await client.chat.completions.create(model=SAGE, messages=[{"role": "user", "content": "hi"}])
    later = [{"role": "user", "content": "hi"}, dropped(first.choices[0].message), {"role": "user", "content": "more"}]
    r = await client.chat.completions.create(model=SAGE, messages=later)
    assert r.choices[0].message.content


async def test_max_tokens_bounds_thinking_and_answer_together(fleet):
    client = client_for(fleet)
    long = [{"role": "user", "content": "hi " * 40}]
    r = await client.chat.completions.create(model=SAGE, messages=long, max_tokens=4)
    assert r.choices[0].finish_reason == "length" and r.choices[0].message.content == ""
    assert r.usage.completion_tokens == r.usage.completion_tokens_details.reasoning_tokens == 4


def test_reasoning_passed_back_on_a_tool_turn_is_read_again_as_prompt():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    turn = {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "I need f."}
    assert prompt_text({"messages": [turn]}).endswith("I need f.")
    answer = {"role": "assistant", "content": "", "reasoning_content": "ignored"}  # DeepSeek drops it on other turns
    assert "ignored" not in prompt_text({"messages": [answer]})


def test_a_profile_names_a_known_flavour():
    sage = next(p for p in PROFILES if p.model == SAGE)
    assert sage.reasoning == "deepseek"
    with pytest.raises(ValueError, match="reasoning must be one of"):
        dataclasses.replace(sage, reasoning="telepathy")


# ------------------------------------------------------------------------------------------------------ openrouter


@pytest.fixture
def router() -> SimFleet:
    POLICY.seen.clear()
    sage = next(p for p in PROFILES if p.model == SAGE)
    quiet = dataclasses.replace(sage, reasoning="openrouter", failure_rate=0.0)
    assert isinstance(quiet, Profile)
    return SimFleet(latency_scale=0, seed=7, profiles=[quiet])


async def test_openrouter_reasoning_details_must_come_back_unchanged(router):
    client = client_for(router, retries=0)
    first = await client.chat.completions.create(model=SAGE, messages=ask_city(), tools=[WEATHER_TOOL])
    turn = passed_back(first.choices[0].message)
    (detail,) = turn["reasoning_details"]
    assert turn["reasoning"] == detail["text"] and detail["type"] == "reasoning.text" and detail["signature"]
    assert first.usage.completion_tokens_details.reasoning_tokens == math.ceil(len(turn["reasoning"]) / 4)
    result = tool_result(first.choices[0].message.tool_calls[0])

    ok = await client.chat.completions.create(model=SAGE, messages=[*ask_city(), turn, result], tools=[WEATHER_TOOL])
    assert ok.choices[0].finish_reason == "stop"

    edited = {**turn, "reasoning_details": [{**detail, "text": detail["text"] + " (edited)"}]}
    with pytest.raises(openai.BadRequestError, match="Invalid `signature`"):
        await client.chat.completions.create(model=SAGE, messages=[*ask_city(), edited, result], tools=[WEATHER_TOOL])

    bare = {k: v for k, v in turn.items() if k not in ("reasoning", "reasoning_details")}
    with pytest.raises(openai.BadRequestError, match="must be passed back with its reasoning_details"):
        await client.chat.completions.create(model=SAGE, messages=[*ask_city(), bare, result], tools=[WEATHER_TOOL])

    # A tool loop closed by a later user message may drop its details (as Anthropic's thinking behind OpenRouter).
    closed = [*ask_city(), bare, result, passed_back(ok.choices[0].message), {"role": "user", "content": "Bergen?"}]
    assert (await client.chat.completions.create(model=SAGE, messages=closed)).choices[0].message.content


async def test_a_tool_job_races_a_thinking_reference_because_the_seat_replays_its_reasoning(tmp_path):
    import gradebench as gb
    from gradebench.jobs import OrderAgent, load_inputs

    bench = gb.Benchmark(
        OrderAgent, runs=1, catalog=gb.sim.catalog(latency_scale=0), grade="large", cache=tmp_path, progress=False
    )
    bench.set_spec(candidates=["sim/sage"]).set_inputs(load_inputs("orders")[:2])
    await bench.run()  # sim/sage answers 400 to a tool turn replayed without its reasoning_content
    runs = bench.report().runs
    assert runs["ok"].all() and (runs["reasoning_tokens"] > 0).all()
    assert runs.filter(role="candidate")["score"].drop_nulls().len() == 2
