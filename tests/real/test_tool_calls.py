"""A job with a tool call through a real chat template: the random-weights model on llama.cpp, whose Qwen2.5 template
renders the tools and whose grammar makes the call valid for the schema (the model opens ``<tool_call>`` every reply;
its arguments are random within the schema). The job is plain openai code on ``seat.openai``: the report records the
call the server parsed, the result the code sent back, and a call that ``max_tokens`` cut short as what it is."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

import gradebench as gb

from .test_server_behaviours import catalog

pytestmark = pytest.mark.real

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "order_status",
            "description": "Look an order up.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "integer"},
                    "kind": {"type": "string", "enum": ["status", "refund"]},
                },
                "required": ["order_id", "kind"],
            },
        },
    }
]


def order_desk(max_tokens: int) -> Any:
    async def order_desk(input: dict, seat: gb.Seat) -> str:
        """Look the order up with the tool, then say its status."""
        messages: list[Any] = [{"role": "user", "content": f"What is the status of order {input['order_id']}?"}]
        first = await seat.openai.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS, parallel_tool_calls=False, max_tokens=max_tokens
        )
        message = first.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message)
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            result = {"order_id": arguments["order_id"], "status": "shipped"}
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        final = await seat.openai.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=8)
        return final.choices[0].message.content or ""

    return order_desk


async def race(servers: dict[str, Any], max_tokens: int) -> gb.BenchmarkReport:
    bench = gb.Benchmark(
        order_desk(max_tokens),
        runs=1,
        catalog=catalog(servers, "random", "random-small"),
        grade="standard",
        progress=False,
    )
    # the default concurrency: the random server is sent no more than its 2 slots at once (its /props)
    bench.set_inputs([{"id": "o1", "order_id": 1042}, {"id": "o2", "order_id": 7}]).set_spec(controls=0)
    await bench.run()
    return bench.report()


async def test_a_tool_call_through_the_chat_template_is_recorded_with_its_result(real_servers: dict[str, Any]) -> None:
    report = await race(real_servers, max_tokens=200)
    assert report.runs["ok"].all(), report.runs["error"].to_list()
    asked = report.calls.filter((pl.col("role") != "judge") & (pl.col("seq") == 0))
    assert asked.height == report.runs.height and (asked["finish_reason"] == "tool_calls").all()
    for call in asked.iter_rows(named=True):
        records = json.loads(call["tool_results"])
        assert records, "no tool call recorded"
        for record in records:
            arguments = record["arguments"]
            assert record["name"] == "order_status" and isinstance(arguments["order_id"], int)
            assert arguments["kind"] in ("status", "refund")  # the server's grammar held the model to the schema
            assert record["result"] == {"order_id": arguments["order_id"], "status": "shipped"}  # what the code sent
    run_id = asked["run_id"][0]
    kinds = [event["kind"] for event in report.transcript(run_id)]
    assert "tool_call" in kinds or any("tool" in kind for kind in kinds), kinds


async def test_a_tool_call_cut_by_max_tokens_is_text_and_truncated(real_servers: dict[str, Any]) -> None:
    report = await race(real_servers, max_tokens=6)
    asked = report.calls.filter(pl.col("role") != "judge")
    assert (asked["finish_reason"] == "length").all() and (asked["output_tokens"] == 6).all()
    assert all(json.loads(results) == [] for results in asked["tool_results"])  # no call parsed from a cut one
    outputs = report.runs["output"].to_list()
    assert all(output.startswith('"<tool_call>') for output in outputs), outputs
    flagged = report.diagnostics().filter(pl.col("kind") == "truncated")
    assert set(report.runs["run_id"]) <= set(flagged["run_id"])
