"""The simulated fleet, always through the real openai client (in-process transport or loopback sockets)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re

import httpx2
import openai
import pytest

from gradebench._calls.session import mounted, origin
from gradebench.sim import IdealMessage, SimFleet, ToolRequest, register_policy, start_server
from gradebench.sim import _grader as sim_judge
from gradebench.sim import catalog as sim_catalog

BASE = "http://sim.gradebench.invalid/v1"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "sim_test_weather",
        "description": "Forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
FORECAST = {"city": "Oslo", "rain": True, "temp_c": 12}
MARKER = "[sim-test-weather]"


class WeatherPolicy:
    """Look the forecast up, then answer whether to take an umbrella. Records what it was shown."""

    name = "sim-test-weather"

    def __init__(self) -> None:
        self.seen: list[object] = []

    def matches(self, messages, tools) -> bool:
        by_tool = any(t.get("function", {}).get("name") == "sim_test_weather" for t in tools)
        return by_tool or any(MARKER in str(m.get("content")) for m in messages if m.get("role") == "system")

    def next_message(self, messages, tools) -> IdealMessage:
        results = [m for m in messages if m.get("role") == "tool"]
        if not results:
            city = next(m["content"] for m in messages if m.get("role") == "user")
            return IdealMessage(tool_calls=(ToolRequest(name="sim_test_weather", arguments={"city": city}),))
        raw = results[-1]["content"]
        data = json.loads(raw) if raw is not None else None
        self.seen.append(data)
        if data is None:  # skipped: guess the common case, as a model that did not look would
            answer = {"umbrella": False, "temp_c": 20, "reason": "Usually dry; I did not check."}
        else:
            reason = f"The forecast for {data['city']} says rain is {data['rain']} at {data['temp_c']} degrees."
            answer = {"umbrella": data["rain"], "temp_c": data["temp_c"], "reason": reason}
        return IdealMessage(content=json.dumps(answer))


POLICY = register_policy(WeatherPolicy())


@pytest.fixture
def fleet() -> SimFleet:
    POLICY.seen.clear()
    return SimFleet(latency_scale=0, seed=7)


def client_for(fleet: SimFleet, retries: int = 2) -> openai.AsyncOpenAI:
    """The real openai client on the in-process transport; the default retries ride out the rare simulated 503."""
    http = httpx2.AsyncClient(transport=fleet.transport())
    return openai.AsyncOpenAI(base_url=BASE, api_key="x", http_client=http, max_retries=retries)


async def create_ok(client: openai.AsyncOpenAI, **kw):
    """A completion, or None when the attempt drew the profile's 1% simulated 503."""
    try:
        return await client.chat.completions.create(**kw)
    except openai.InternalServerError as exc:
        assert exc.status_code == 503
        return None


def labels(run: str, seq: int = 0, attempt: int = 0) -> dict[str, str]:
    return {"x-gradebench-run": run, "x-gradebench-seq": str(seq), "x-gradebench-attempt": str(attempt)}


def ask_city(city: str = "Oslo") -> list[dict]:
    return [{"role": "user", "content": city}]


def after_lookup(result: object = FORECAST) -> list[dict]:
    """The second turn: the model asked for the forecast and got it."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "sim_test_weather", "arguments": '{"city":"Oslo"}'},
    }
    return [
        {"role": "user", "content": "Oslo"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)},
    ]


async def test_completion_shape_and_usage(fleet):
    client = client_for(fleet)
    prompt = "Summarise the plot of a short story about a lighthouse keeper."
    r = await client.chat.completions.create(model="sim-steady-1", messages=[{"role": "user", "content": prompt}])
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{20,}", r.id)
    assert re.fullmatch(r"fp_[0-9a-f]+", r.system_fingerprint)
    assert r.object == "chat.completion" and r.model == "sim-steady-1"
    choice = r.choices[0]
    assert choice.finish_reason == "stop" and choice.message.tool_calls is None
    assert choice.message.content.startswith("Simulated answer") and "lighthouse" in choice.message.content
    assert "steady" not in choice.message.content  # answers reach the blind judge: they never name the model
    assert r.usage.completion_tokens == math.ceil(len(choice.message.content) / 4)
    assert r.usage.prompt_tokens >= math.ceil(len(prompt) / 4)
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    models = await client.models.list()
    assert {m.id for m in models.data} >= {"sim-steady-1", "sim-oracle-1", "sim-mini-1"}
    assert [q.status for q in fleet.requests] == [200, 200]
    assert fleet.requests[0].body["model"] == "sim-steady-1"
    assert fleet.requests[0].headers["authorization"] == "<redacted>"
    fleet.reset()
    assert fleet.requests == []


async def test_json_object_generic_answer(fleet):
    r = await client_for(fleet).chat.completions.create(
        model="sim-mini-1", messages=[{"role": "user", "content": "hello"}], response_format={"type": "json_object"}
    )
    assert isinstance(json.loads(r.choices[0].message.content), dict)


async def test_same_request_same_answer_other_run_other_sample(fleet):
    client = client_for(fleet)

    async def final(run: str) -> str:
        r = await client.chat.completions.create(
            model="sim-pico-1", messages=after_lookup(), tools=[WEATHER_TOOL], extra_headers=labels(run)
        )
        return r.choices[0].message.content

    first, again = await final("run-a"), await final("run-a")
    assert first == again
    samples = {await final(f"run-{i}") for i in range(12)}
    assert len(samples) > 1  # pico gets ~40% of answers wrong, each in its own way


async def test_tool_call_shape_and_swift_skips_at_its_rate(fleet):
    client = client_for(fleet, retries=0)
    skipped = guessed = 0
    for i in range(200):
        r = await create_ok(
            client, model="sim-swift-1", messages=ask_city(), tools=[WEATHER_TOOL], extra_headers=labels(f"r{i}")
        )
        if r is None:
            continue
        choice = r.choices[0]
        if choice.finish_reason == "tool_calls":
            (call,) = choice.message.tool_calls
            assert re.fullmatch(r"call_[0-9a-f]+", call.id) and call.type == "function"
            assert call.function.name == "sim_test_weather"
            assert json.loads(call.function.arguments) == {"city": "Oslo"}
        else:
            skipped += 1
            guessed += json.loads(choice.message.content)["temp_c"] == 20  # answered blind, from the guess
    assert 30 <= skipped <= 75  # skip_rate 0.25 of 200
    assert guessed >= 0.8 * skipped  # swift's accuracy 0.94 perturbs a few
    # A skipped call never reaches the job: the fleet saw exactly the requests made, nothing on the side.
    assert len(fleet.requests) == 200


async def test_skip_sticks_within_a_run(fleet):
    client = client_for(fleet, retries=0)
    for i in range(100):
        r = await create_ok(
            client, model="sim-swift-1", messages=ask_city(), tools=[WEATHER_TOOL], extra_headers=labels(f"s{i}")
        )
        if r is not None and r.choices[0].finish_reason == "stop":
            break
    else:
        pytest.fail("swift never skipped")
    later = await client_for(fleet).chat.completions.create(
        model="sim-swift-1", messages=ask_city(), tools=[WEATHER_TOOL], extra_headers=labels(f"s{i}", seq=3)
    )
    assert later.choices[0].finish_reason == "stop"


async def test_no_tools_never_calls_tools(fleet):
    messages = [{"role": "system", "content": f"{MARKER} forecaster"}, *ask_city()]
    r = await client_for(fleet).chat.completions.create(model="sim-steady-1", messages=messages)
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == "stop"
    assert json.loads(r.choices[0].message.content)["temp_c"] == 20


async def test_squint_misreads_tool_results(fleet):
    client = client_for(fleet, retries=0)
    answered = 0
    for i in range(200):
        r = await create_ok(
            client, model="sim-squint-1", messages=after_lookup(), tools=[WEATHER_TOOL], extra_headers=labels(f"m{i}")
        )
        answered += r is not None
    misread = sum(seen != FORECAST for seen in POLICY.seen)
    assert len(POLICY.seen) == answered and 35 <= misread <= 90  # misread_rate 0.30
    assert all(isinstance(s, dict) and set(s) == set(FORECAST) for s in POLICY.seen)


async def test_finish_reason_length(fleet):
    r = await client_for(fleet).chat.completions.create(
        model="sim-steady-1", messages=[{"role": "user", "content": "word " * 50}], max_tokens=3
    )
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3 and len(r.choices[0].message.content) <= 12


async def test_flaky_fails_at_its_rate_per_attempt(fleet):
    client = client_for(fleet, retries=0)
    failed = 0
    for i in range(200):
        try:
            await client.chat.completions.create(
                model="sim-flaky-1", messages=[{"role": "user", "content": f"q{i}"}], extra_headers=labels(f"f{i}")
            )
        except openai.InternalServerError as exc:
            assert exc.status_code == 503 and "simulated overload" in str(exc)
            failed += 1
    assert 45 <= failed <= 95  # failure_rate 0.35 of 200


async def test_flaky_503_is_retried_by_the_sdk(fleet):
    client = client_for(fleet, retries=0)

    async def attempt(run: str, retry: int) -> bool:
        headers = {**labels(run), "x-stainless-retry-count": str(retry)}  # the SDK leaves an explicit count alone
        return (
            await create_ok(client, model="sim-flaky-1", messages=ask_city("retry"), extra_headers=headers) is not None
        )

    # A request whose first attempt fails and whose first retry succeeds (the roll differs per retry count).
    for i in range(200):
        run = f"x{i}"
        if not await attempt(run, 0) and await attempt(run, 1):
            break
    fleet.reset()
    r = await client_for(fleet, retries=2).chat.completions.create(
        model="sim-flaky-1", messages=ask_city("retry"), extra_headers=labels(run)
    )
    assert r.choices[0].message.content
    assert [(q.status, q.headers["x-stainless-retry-count"]) for q in fleet.requests] == [(503, "0"), (200, "1")]


async def test_mini_rate_limit_429_with_retry_after():
    # The simulated clock at half speed: a token every 1 s of real time (120 rpm), so neither the burst's spread
    # nor the wait between the burst and the retried call below comes near a refill, short of a one-second stall.
    scale = 2
    fleet = SimFleet(latency_scale=scale, seed=1)
    client = client_for(fleet, retries=0)

    async def one(i: int):
        try:
            return await client.chat.completions.create(
                model="sim-mini-1", messages=[{"role": "user", "content": f"b{i}"}], max_tokens=2
            )
        except openai.RateLimitError as exc:
            return exc

    burst = [asyncio.ensure_future(one(i)) for i in range(10)]
    while not any(t.done() and isinstance(t.result(), openai.RateLimitError) for t in burst):  # refused on arrival
        await asyncio.sleep(0.001)
    # The SDK honours retry-after-ms and gets through on its own: sent while the burst's answers are still under way.
    r = await client_for(fleet, retries=3).chat.completions.create(
        model="sim-mini-1", messages=[{"role": "user", "content": "after"}], max_tokens=2
    )
    after = [q.status for q in fleet.requests if q.body and q.body["messages"][0]["content"] == "after"]
    assert r.choices[0].message.content and after[0] == 429 and after[-1] == 200
    results = await asyncio.gather(*burst)
    limited = [r for r in results if isinstance(r, openai.RateLimitError)]
    failed = [r for r in results if isinstance(r, openai.InternalServerError)]  # mini fails 1% of attempts
    assert 4 <= len(results) - len(limited) - len(failed) <= 5 and limited  # burst 4
    for exc in limited:
        assert exc.status_code == 429
        assert int(exc.response.headers["retry-after"]) >= 1
        assert 0 < int(exc.response.headers["retry-after-ms"]) <= 500 * scale  # a token every 0.5 s of its clock


async def test_errors_unknown_model_bad_json_stream(fleet):
    client = client_for(fleet)
    with pytest.raises(openai.NotFoundError) as info:
        await client.chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 404 and "gpt-nope" in str(info.value)
    with pytest.raises(openai.BadRequestError, match="streaming not supported by the sim"):
        await client.chat.completions.create(
            model="sim-steady-1", messages=[{"role": "user", "content": "x"}], stream=True
        )
    async with httpx2.AsyncClient(transport=fleet.transport()) as raw:
        bad = await raw.post(
            f"{BASE}/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert bad.status_code == 400 and "error" in bad.json()


# ----------------------------------------------------------------------------------------------------------- judge


def events(*, called: bool = True, answer: dict | None = None, result: dict = FORECAST, error: str | None = None):
    out = [{"kind": "user", "content": "Oslo"}]
    if called:
        out.append({"kind": "tool_call", "name": "sim_test_weather", "arguments": {"city": "Oslo"}})
        out.append({"kind": "tool_result", "name": "sim_test_weather", "result": result})
    if error:
        out.append({"kind": "error", "error": error})
    else:
        default = {"umbrella": True, "temp_c": 12, "reason": "The forecast for Oslo says rain at 12 degrees."}
        out.append({"kind": "answer", "output": answer or default})
    return out


def judge_prompt(reference: list[dict], candidate: list[dict], *, candidate_first: bool = False) -> str:
    """The very prompt the real judge sends (the sim must read it with no side channel)."""
    from gradebench._judge.prompt import build_judge_messages

    messages = build_judge_messages(
        instructions="Say whether to take an umbrella.",
        input="Oslo",
        rubric="Look the forecast up before answering.",
        reference=reference,
        candidate=candidate,
        candidate_first=candidate_first,
    )
    # a line that is not JSON inside a transcript is ignored
    return messages[1]["content"].replace('role="reference">\n', 'role="reference">\nnot json, ignored\n')


SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"accuracy": {"type": "integer"}, "work": {"type": "integer"}, "reason": {"type": "string"}},
            "required": ["accuracy", "work", "reason"],
            "additionalProperties": False,
        },
    },
}


def test_judge_scores_without_noise():
    rng = random.Random(0)
    same = sim_judge.judge(judge_prompt(events(), events()), rng)
    assert (same.accuracy, same.work) == (7, 3) and "matches the reference" in same.reason
    skipped = sim_judge.judge(judge_prompt(events(), events(called=False)), rng)
    assert skipped.accuracy <= 4 and "skipped sim_test_weather" in skipped.reason
    wrong = {"umbrella": False, "temp_c": 12, "reason": "The forecast for Oslo says no rain at 12 degrees."}
    misread = sim_judge.judge(judge_prompt(events(), events(answer=wrong)), rng)
    assert misread.accuracy <= 4 and "umbrella" in misread.reason and "tool results were the same" in misread.reason
    failed = sim_judge.judge(judge_prompt(events(), events(error="boom")), rng)
    assert (failed.accuracy, failed.work) == (0, 0)
    terse = sim_judge.judge(
        judge_prompt(events(), events(answer={"umbrella": True, "temp_c": 12, "reason": "Rain."})), rng
    )
    assert terse.accuracy == 7 and terse.work == 1


def test_judge_plain_text_answers():
    def text(answer: str) -> list[dict]:
        return [{"kind": "user", "content": "Pick one."}, {"kind": "answer", "output": answer}]

    def score(ref: str, cand: str):
        return sim_judge.judge(judge_prompt(text(ref), text(cand)), random.Random(0))

    assert score("B", "B. This follows directly from the information.").accuracy == 7  # padded, same answer
    assert score("B", "C").accuracy == 3 and "differs" in score("B", "C").reason
    long = "The answer is B because the passage says so in the second paragraph"
    cut = score(long, "The answer is B because")
    assert (cut.accuracy, cut.work) == (7, 2)


async def test_judge_through_the_client(fleet):
    client = client_for(fleet)
    system = {"role": "system", "content": "You are a strict grader."}

    async def ask(model: str, candidate: list[dict], **kw) -> str:
        messages = [system, {"role": "user", "content": judge_prompt(events(), candidate)}]
        r = await client.chat.completions.create(model=model, messages=messages, **kw)
        return r.choices[0].message.content

    pure = json.loads(await ask("sim-oracle-1", events(), response_format=SCHEMA))
    assert pure == {"accuracy": 7, "work": 3, "reason": "The candidate matches the reference."}
    low = json.loads(await ask("sim-oracle-1", events(called=False), response_format=SCHEMA))
    assert low["accuracy"] <= 4 and "skipped" in low["reason"]
    prose = await ask("sim-prose-1", events(), response_format=SCHEMA)
    block = re.search(r"```json\n(.*?)\n```", prose, re.S)
    assert not prose.lstrip().startswith("{") and block and json.loads(block.group(1))["work"] == 3
    fenced = await ask("sim-oracle-1", events())  # no schema asked: prose with a fenced block
    assert "```json" in fenced


# ------------------------------------------------------------------------------------------------ catalog, server


def test_sim_catalog(monkeypatch):
    monkeypatch.setenv("GRADEBENCH_SIM_LATENCY_SCALE", "0")
    fleet = SimFleet()
    catalog = fleet.catalog()
    assert fleet.latency_scale == 0
    assert mounted()[origin(BASE)].handler == fleet.handle  # served in-process, not from the catalog
    assert all(e.simulated and e.base_url == BASE for e in catalog)
    assert catalog.pick("standard").name == "sim/steady" and catalog.ceiling().name == "sim/oracle"
    assert [e.name for e in catalog.of_grade("small")] == ["sim/pico", "sim/mini", "sim/nano"]
    assert catalog["sim/mini"].rpm is None  # with no simulated time there is no rate to keep
    paced_fleet = SimFleet(latency_scale=1)  # on the simulated clock the client paces at the server's limit
    paced = paced_fleet.catalog()
    assert paced["sim/mini"].rpm == paced_fleet.profile("sim-mini-1").server_rpm
    assert sim_catalog(latency_scale=0.5)["sim/mini"].rpm == 2 * paced["sim/mini"].rpm
    assert {e.model for e in catalog} == set(fleet.profiles)
    remote = sim_catalog(latency_scale=0, base_url="http://127.0.0.1:9/v1")
    assert remote["sim/sage"].base_url == "http://127.0.0.1:9/v1"


async def test_loopback_server_with_sync_client():
    server = await start_server("127.0.0.1", 0, latency_scale=0)
    try:
        assert server.port > 0 and server.base_url == f"http://127.0.0.1:{server.port}/v1"

        def call() -> tuple[str, str]:
            with openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:
                first = client.chat.completions.create(model="sim-sage-1", messages=[{"role": "user", "content": "hi"}])
                tools = client.chat.completions.create(model="sim-sage-1", messages=ask_city(), tools=[WEATHER_TOOL])
                return first.choices[0].message.content, tools.choices[0].finish_reason

        text, finish = await asyncio.to_thread(call)
        assert text.startswith("Simulated answer") and finish == "tool_calls"
        assert [q.status for q in server.fleet.requests] == [200, 200]
    finally:
        await server.close()
