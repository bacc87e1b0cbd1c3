"""The judge's batches in the providers' documented shapes, over loopback HTTP through the real clients: OpenAI's files
and batches (the openai SDK's own resources), Anthropic's message batches; the simulated fleet's Batch API as the
openai client sees it; and `gradebench.testing`'s scripted endpoint, which serves batches for a user's own tests.

The documented-shape servers (`tests.batch_providers`) answer in the reverse of the order they were asked in, and
each verdict depends on its own request, so a verdict matched to the wrong request would show.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.protocol import batch_custom_id, batch_labels
from gradebench._base.vocab import Role
from gradebench._calls.session import mounted, origin
from gradebench.sim import BatchOptions, SimFleet, start_server
from gradebench.testing import ScriptedEndpoint, completion

from ..batch_providers import AnthropicBatchAPI, OpenAIBatchAPI
from ..loopback import JUDGE, QUESTION, answers, catalog, entry
from ..providers import Fleet, OpenAIEndpoint

CUSTOM_ID = re.compile(r"^gb-[0-9a-f]{12}-\d+-\d+-\d+-[0-9a-f]+$")


def verdict_for(body: dict[str, Any]) -> dict[str, Any]:
    """A verdict that depends on the request (its prompt's digest): a verdict given to the wrong request shows."""
    prompt = "".join(str(m.get("content")) for m in body["messages"])
    digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    return {"accuracy": digest % 8, "work": digest % 4, "reason": f"judged {digest % 1000}"}


def openai_judge(body: dict[str, Any], *, rejects_schema: bool = False) -> tuple[int, dict[str, Any]]:
    if rejects_schema and "response_format" in body:
        error = OpenAIEndpoint.error(400, "response_format json_schema is not supported", param="response_format")
        return 400, json.loads(error.content)
    text = json.dumps(verdict_for(body))
    return 200, OpenAIEndpoint.completion(text, model=body["model"], prompt_tokens=900, completion_tokens=40)


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    server = await start_server(host="127.0.0.1", port=0, fleet=app)
    try:
        yield server.base_url
    finally:
        await server.close()
        for _ in range(200):  # as tests.providers.serve: the handlers see their sockets close before the loop ends
            if not server._writers:
                break
            await asyncio.sleep(0.001)


def one_question_catalog(base_url: str, **judge: Any) -> gb.Catalog:
    cat = catalog(
        base_url, entry("acme/ref", "ref-1", base_url), entry("acme/alt", "alt-1", base_url), reference="acme/ref"
    )
    made = [e if e.name != JUDGE else dataclasses.replace(e, batch_poll_s=0.0, **judge) for e in cat.entries]
    return gb.Catalog(made, grades=cat.grades, picks=cat.picks, ceiling=cat.ceiling_name, judge_params=cat.judge_params)


async def ask(cat: gb.Catalog, tmp_path: Path, **kw: Any) -> gb.BenchmarkReport:
    async def job(input: dict[str, Any], seat: gb.Seat) -> str:
        """Answer the customer's question in one sentence."""
        return (await seat.chat([{"role": "user", "content": input["question"]}])).text

    questions = [{**QUESTION, "id": f"q{i}", "question": f"{QUESTION['question']} [case {i}]"} for i in range(3)]
    kw.setdefault("controls", 0)  # the counts below are the runs' verdicts (test_controls judges the controls)
    bench = gb.Benchmark(job, catalog=cat, grade="standard", runs=2, cache=tmp_path / "cache", progress=False, **kw)
    await bench.set_inputs(questions).run()
    return bench.report()


def verdicts_of(report: gb.BenchmarkReport) -> list[tuple[Any, ...]]:
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE).sort("run_id")
    return list(runs.select("run_id", "accuracy", "work", "reason").iter_rows())


# ------------------------------------------------------------------------------------------------------- OpenAI


async def test_openai_batches_in_the_documented_shape_answer_as_requests_sent_alone(tmp_path: Path) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIBatchAPI(fleet, openai_judge)
    async with serving(api) as base_url:
        batched = await ask(one_question_catalog(base_url), tmp_path / "b", judge_batch=True)
    judge = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    async with serving(
        Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": judge})
    ) as url:
        direct = await ask(one_question_catalog(url), tmp_path / "d")

    assert verdicts_of(batched) == verdicts_of(direct) and len(verdicts_of(batched)) == 2 * 3 * 2
    (lines,) = api.uploads
    assert api.purposes == ["batch"]

    def canonical(bodies: list[dict[str, Any]]) -> list[str]:
        return sorted(json.dumps(b, sort_keys=True) for b in bodies)

    assert canonical([line["body"] for line in lines]) == canonical(judge.bodies)  # the bodies requests alone carry
    assert all(CUSTOM_ID.match(line["custom_id"]) and len(line["custom_id"]) <= 64 for line in lines)
    (created,) = api.creates
    assert created["completion_window"] == "24h" and created["endpoint"] == "/v1/chat/completions"
    assert created["metadata"]["gradebench"].startswith("gb-")
    calls = batched.calls.filter(pl.col("role") == Role.JUDGE)
    assert set(calls["price_source"]) == {"catalog batch -50%"}
    assert calls["cost"].sum() == pytest.approx(direct.calls.filter(pl.col("role") == Role.JUDGE)["cost"].sum() / 2)


async def test_a_judge_that_refuses_the_schema_in_a_batch_is_asked_in_prose_in_the_next(tmp_path: Path) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIBatchAPI(fleet, lambda body: openai_judge(body, rejects_schema=True))
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url, batch="openai"), tmp_path)
    first, second = api.uploads
    assert all("response_format" in line["body"] for line in first)
    assert all("response_format" not in line["body"] for line in second) and len(second) == len(first)
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert set(runs["judge_path"]) == {"fallback"} and set(runs["judge_schema"]) == {"rejected"}
    assert runs["judge_error"].null_count() == runs.height


# ---------------------------------------------------------------------------------------------------- Anthropic


def anthropic_judge(params: dict[str, Any]) -> dict[str, Any]:
    prompt = params["messages"][0]["content"]
    if "output_config" in params and "[case 2]" in prompt:  # one input's verdicts: the schema refused
        return AnthropicBatchAPI.errored("invalid_request_error", "output_config.format: schema not supported")
    if "output_config" in params and "[case 1]" in prompt:  # another's: overloaded, never run
        return AnthropicBatchAPI.errored("overloaded_error", "Overloaded")
    body = {"messages": [{"role": "system", "content": params["system"]}, *params["messages"]]}
    text = json.dumps(verdict_for(body))
    return AnthropicBatchAPI.message(text, model=params["model"], input_tokens=600, cache_read=300)


async def test_anthropic_message_batches_in_the_documented_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-123")
    # what Anthropic's batch never ran goes alone to its OpenAI-compatible chat completions, as a direct verdict would
    alone = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": alone})
    api = AnthropicBatchAPI(fleet, anthropic_judge, key="sk-ant-test-123")
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY")
        report = await ask(cat, tmp_path)

    assert all(h["anthropic-version"] == "2023-06-01" and h["x-api-key"] == "sk-ant-test-123" for h in api.headers)
    first = api.creates[0]["requests"]
    assert len(first) == 12 and all(len(r["custom_id"]) <= 64 and CUSTOM_ID.match(r["custom_id"]) for r in first)
    params = first[0]["params"]
    assert params["model"] == "judge-1" and isinstance(params["max_tokens"], int) and params["temperature"] == 0
    assert [m["role"] for m in params["messages"]] == ["user"] and params["system"].strip()
    assert params["output_config"]["format"]["type"] == "json_schema" and "prompt_cache_key" not in params
    assert params["output_config"]["format"]["schema"]["required"] == ["accuracy", "work", "reason"]
    # the refused schema (a 400, as sent alone): asked again in prose, in a second batch; the overloaded: sent alone
    second = api.creates[1]["requests"]
    assert len(api.creates) == 2 and len(second) == 4 and all("output_config" not in r["params"] for r in second)
    assert len(alone.bodies) == 4 and all("[case 1]" in b["messages"][-1]["content"] for b in alone.bodies)

    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs["judge_error"].null_count() == runs.height == 12
    calls = report.calls.filter(pl.col("role") == Role.JUDGE)
    batched = calls.filter(pl.col("price_source") == "catalog batch -50%")
    assert batched.height == 8 and calls.filter(pl.col("price_source") == "catalog").height == 4
    assert calls.filter(pl.col("error").str.contains("HTTP 400 in batch")).height == 4
    assert set(batched["input_tokens"]) == {900} and set(batched["cached_input_tokens"]) == {300}
    for row in batched.iter_rows(named=True):  # each verdict is its own request's
        assert json.loads(json.loads(row["response"])["choices"][0]["message"]["content"]) == verdict_for(
            json.loads(row["request"])
        )


async def test_a_parameter_anthropic_cannot_take_fails_the_verdict_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", "k")
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = AnthropicBatchAPI(fleet, anthropic_judge, key="k")
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY")
        cat = gb.Catalog(
            cat.entries,
            grades=cat.grades,
            picks=cat.picks,
            ceiling=cat.ceiling_name,
            judge_params={"frequency_penalty": 0.5},
        )
        report = await ask(cat, tmp_path)
    errors = report.runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"].to_list()
    assert all("cannot go in a batch" in e and "'frequency_penalty'" in e for e in errors)
    assert not api.creates  # nothing was sent


# ------------------------------------------------------------------------------------------------- the sim's API


async def test_the_sims_batch_api_moves_through_its_statuses_for_the_openai_client() -> None:
    fleet = SimFleet(latency_scale=0, batch=BatchOptions(polls=2))
    fleet.catalog()
    client = openai.AsyncOpenAI(
        base_url=gb.sim.DEFAULT_BASE_URL,
        api_key="x",
        http_client=httpx2.AsyncClient(transport=mounted()[origin(gb.sim.DEFAULT_BASE_URL)]),
    )
    body = {"model": "sim-oracle-1", "messages": [{"role": "user", "content": "Say hello."}]}
    labels = {"x-gradebench-run": "0123456789ab", "x-gradebench-seq": "0", "x-gradebench-attempt": "0"}
    labels["x-gradebench-sample"] = "0"
    ids = [batch_custom_id(labels, hashlib.sha256(bytes([i])).hexdigest()) for i in range(3)]
    assert batch_labels(ids[0]) == {**labels, "x-gradebench-role": "judge"} and batch_labels("req-1") is None
    data = "".join(
        json.dumps({"custom_id": c, "method": "POST", "url": "/v1/chat/completions", "body": body}) + "\n" for c in ids
    )
    uploaded = await client.files.create(file=("in.jsonl", data.encode(), "application/jsonl"), purpose="batch")
    assert uploaded.purpose == "batch" and uploaded.bytes == len(data.encode())
    batch = await client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"k": "v"}
    )
    seen = [batch.status]
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        batch = await client.batches.retrieve(batch.id)
        seen.append(batch.status)
    assert list(dict.fromkeys(seen)) == ["validating", "in_progress", "finalizing", "completed"]
    assert batch.request_counts is not None and batch.request_counts.completed == 3 and batch.metadata == {"k": "v"}
    assert batch.output_file_id and batch.error_file_id is None
    out = [json.loads(x) for x in (await client.files.content(batch.output_file_id)).text.splitlines()]
    assert sorted(line["custom_id"] for line in out) == sorted(ids) and [x["custom_id"] for x in out] != ids
    assert all(line["response"]["status_code"] == 200 and line["error"] is None for line in out)
    listed = [b.id async for b in client.batches.list(limit=10)]
    assert listed == [batch.id]

    bad = await client.files.create(
        file=("bad.jsonl", b'{"custom_id": "a"}\nnot json\n', "application/jsonl"), purpose="batch"
    )
    failed = await client.batches.create(input_file_id=bad.id, endpoint="/v1/chat/completions", completion_window="24h")
    failed = await client.batches.retrieve(failed.id)
    assert failed.status == "failed" and failed.errors is not None
    assert [(e.code, e.line) for e in failed.errors.data or []] == [("invalid_url", 1), ("invalid_json_line", 2)]
    with pytest.raises(openai.NotFoundError):
        await client.batches.retrieve("batch_nope")


# ------------------------------------------------------------------------------------------- gradebench.testing


async def test_a_scripted_endpoint_serves_batches_for_a_users_own_tests(tmp_path: Path) -> None:
    endpoint = ScriptedEndpoint(lambda body, request: completion("Refund it."), verdict=(6, 2, "close enough"))

    async def job(input: dict[str, Any], seat: gb.Seat) -> str:
        """Decide the refund."""
        return (await seat.chat([{"role": "user", "content": input["message"]}])).text

    bench = gb.Benchmark(
        job, runs=2, catalog=endpoint.catalog(), grade="standard", cache=tmp_path, judge_batch=True, controls=0
    )
    bench.set_input({"message": "Refund order A-1?"}).set_spec(candidates=["test/candidate"])
    await bench.run()
    runs = bench.report().runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs["score"].to_list() == [8.0, 8.0] and runs["reason"].to_list() == ["close enough"] * 2
    (only,) = endpoint.batch.batches.values()
    assert only.status == "completed" and only.counts["total"] == 2
    assert sum(1 for r in endpoint.requests if r.headers.get("x-gradebench-role") == "judge") == 2  # lines, labelled
