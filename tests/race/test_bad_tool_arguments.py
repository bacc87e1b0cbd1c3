"""Tool-call arguments that do not match the tool's JSON schema, over loopback HTTP (a real llama.cpp server's grammar
holds a parsed call to the schema, so only a server without one sends these): a wrong type, a missing required field
and arguments that are not JSON at all. The run records each bad call as the model sent it, the tool is not run, the
model and the judge are told what was wrong — the tool and the field — and nothing crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

import gradebench as gb

from ..loopback import ANSWER, QUESTION, bench_of, catalog, entry
from ..providers import JudgeEndpoint, OpenAIEndpoint, serve

looked_up: list[dict[str, Any]] = []


@gb.tool
def lookup(order_id: str, days: int) -> dict:
    """Look up an order.

    Args:
        order_id: The order, e.g. A-1001.
        days: Days since it was delivered.
    """
    looked_up.append({"order_id": order_id, "days": days})
    return {"order_id": order_id, "refundable": days <= 30}


def bad_calls() -> list[dict[str, Any]]:
    wrong_type = OpenAIEndpoint.tool_call("lookup", {"order_id": "A-1001", "days": "three"}, id="call_type")
    missing = OpenAIEndpoint.tool_call("lookup", {"days": 3}, id="call_missing")
    not_json = {"id": "call_text", "type": "function", "function": {"name": "lookup", "arguments": "order A-1001, 3 d"}}
    return [wrong_type, missing, not_json]


def tool_model() -> OpenAIEndpoint:
    """Three bad tool calls in its first reply, then the answer."""

    def answer(body: dict[str, Any], request: Any) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return OpenAIEndpoint.completion(ANSWER)
        return OpenAIEndpoint.completion(None, tool_calls=bad_calls())

    return OpenAIEndpoint(answer)


async def refund_job(input: dict, seat: gb.Seat) -> str:
    """Answer the customer's refund question, looking the order up."""
    reply = await seat.chat([{"role": "user", "content": input["question"]}], tools=[lookup])
    return reply.text


async def test_tool_arguments_the_schema_refuses_are_recorded_and_named_to_the_model_and_the_judge(
    tmp_path: Path,
) -> None:
    looked_up.clear()
    judge = JudgeEndpoint("schema")
    fleet = {"ref-1": tool_model(), "cand-1": tool_model(), "judge-1": judge}
    async with serve(fleet) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/cand", "cand-1", base_url), reference="acme/ref"
        )
        bench = bench_of(refund_job, cat, tmp_path, candidates=["acme/cand"], inputs=[QUESTION])
        await bench.run()
    report = bench.report()
    assert looked_up == []  # no bad call ran the tool
    [run] = report.runs.filter(pl.col("entry") == "acme/cand").to_dicts()
    assert run["ok"] and json.loads(run["output"]) == ANSWER
    # the report's calls hold each bad call as the model sent it, beside what was wrong with it
    [first] = report.calls.filter((pl.col("entry") == "acme/cand") & (pl.col("seq") == 0))["tool_results"].to_list()
    first = json.loads(first) if isinstance(first, str) else first
    results = {r["id"]: r for r in first}
    assert results["call_type"]["arguments"] == {"order_id": "A-1001", "days": "three"}
    assert results["call_type"]["error"] == (
        "invalid arguments for tool 'lookup': days: Input should be a valid integer, unable to parse string as an "
        "integer, got 'three'"
    )
    assert results["call_missing"]["error"] == "invalid arguments for tool 'lookup': order_id: Field required"
    assert results["call_text"]["arguments"] == "order A-1001, 3 d"  # kept as the model sent it
    assert results["call_text"]["error"].startswith("invalid arguments for tool 'lookup': not valid JSON")
    # the model was told, in the tool messages of its next request
    sent_back = [m for m in fleet["cand-1"].bodies[1]["messages"] if m["role"] == "tool"]
    assert [json.loads(m["content"])["error"] for m in sent_back] == [r["error"] for r in first]
    # and the judge reads the bad calls and what was wrong with them
    prompt = json.dumps([b["messages"] for b in judge.bodies])
    assert "days: Input should be a valid integer" in prompt and "order_id: Field required" in prompt
    assert report.models.filter(pl.col("entry") == "acme/cand")["verdict_basis"].to_list() != ["unmeasured"]
