"""gradebench.testing: the scripted endpoint users test their own jobs with, through the real client and race."""

from __future__ import annotations

import json

import httpx2
import pytest

import gradebench as gb
from gradebench.testing import ScriptedEndpoint, completion, verdict


@gb.tool
def lookup_order(order_id: str) -> dict:
    """Look an order up."""
    return {"order_id": order_id, "status": "delivered"}


async def desk(input: dict, seat: gb.Seat) -> dict:
    """Look the order up, then answer with JSON {"decision": ...}."""
    reply = await seat.chat([{"role": "user", "content": input["message"]}], tools=[lookup_order])
    return json.loads(reply.text)


async def test_a_tool_job_races_against_a_script_in_order(tmp_path) -> None:
    def script(body: dict, request: httpx2.Request) -> dict:  # runs in flight together: answer by the conversation
        if body["messages"][-1]["role"] == "tool":
            return completion('{"decision": "refund"}')
        return completion(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "A-1"}}])

    endpoint = ScriptedEndpoint(script, verdict=(5, 2, "close"))
    bench = gb.Benchmark(desk, runs=1, catalog=endpoint.catalog(), grade="standard", cache=tmp_path, progress=False)
    assert await bench.set_input({"message": "Refund A-1?"}).run() == {"decision": "refund"}
    runs = bench.report().runs.filter(role="candidate")
    assert runs["score"].to_list() == [7.0, 7.0] and runs["tool_calls"].to_list() == [1, 1]
    roles = [r.headers["x-gradebench-role"] for r in endpoint.requests]
    # the two runs' verdicts and two negative controls' (an empty answer, the answer cut in half)
    assert roles.count("judge") == 2 + 2 and roles.count("candidate") == 4 and roles.count("reference") == 2
    tool_turn = endpoint.bodies[1]["messages"][-1]
    assert tool_turn["role"] == "tool" and json.loads(tool_turn["content"])["status"] == "delivered"


async def test_a_script_that_runs_out_says_so_and_the_run_is_a_row(tmp_path) -> None:
    endpoint = ScriptedEndpoint([completion('{"decision": "deny"}')])  # the reference's answer, nothing for the rest
    bench = gb.Benchmark(desk, runs=1, catalog=endpoint.catalog(), grade="standard", cache=tmp_path, progress=False)
    await bench.set_input({"message": "Refund A-1?"}).run()
    failed = bench.report().runs.filter(role="candidate", ok=False)
    assert failed.height == 2 and all("HTTP" in e or "no answer left" in e for e in failed["error"].to_list())


async def test_answers_can_be_responses_and_usage_can_be_left_out(tmp_path) -> None:
    limited = httpx2.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after-ms": "5"})
    endpoint = ScriptedEndpoint([completion('{"decision": "deny"}', tokens=None), limited, completion('{"a": 1}')])
    catalog = endpoint.catalog()
    bench = gb.Benchmark(desk, runs=1, catalog=catalog, grade="standard", cache=tmp_path, progress=False)
    bench.set_spec(candidates=["test/candidate"])
    await bench.set_input({"message": "x"}).run()
    runs = bench.report().runs
    assert runs.filter(role="reference")["input_tokens"].to_list() == [None]  # unknown, not 0
    assert runs.filter(role="candidate")["ok"].to_list() == [True]  # the 429 was waited out
    assert (
        verdict(7, 3)["choices"][0]["message"]["content"] == '{"accuracy": 7, "work": 3, "reason": "scripted verdict"}'
    )
    assert [e.name for e in catalog] == ["test/reference", "test/candidate", "test/judge"]
    with pytest.raises(KeyError):
        catalog["acme/pick"]
