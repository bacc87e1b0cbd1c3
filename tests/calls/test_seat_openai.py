"""``seat.openai``: a job written against ``openai.AsyncOpenAI`` races unchanged.

Every case serves OpenAI's documented shapes on 127.0.0.1 (`tests.providers`), and the jobs are plain openai code: a
classifier, a tool loop that appends the SDK's own message objects, a streamed answer read chunk by chunk and one read
through the SDK's ``stream()`` helper. What a user relies on: the entry's model and parameters are what is sent, the
calls are recorded whole (tool calls with the results the code sent back, a stream as one completion), reruns come
from the cache, and a call that fails for good fails the run with gradebench's own reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench._judge.prompt import transcript_events

from ..loopback import ANSWER, catalog, entry, race, rows
from ..providers import OpenAIEndpoint, serve

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]
ORDERS = {"A-1001": {"status": "delivered", "days_ago": 3}}


async def classify(ticket: str, client: openai.AsyncOpenAI) -> str:
    """Production code as it is: one call, the label in the content."""
    response = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": "Label the ticket."}, {"role": "user", "content": ticket}],
        temperature=0,
        max_tokens=5,
    )
    return response.choices[0].message.content or ""


async def refund_agent(question: str, client: openai.AsyncOpenAI) -> str:
    """A tool loop as the openai docs write it: the SDK's message object goes back into the conversation."""
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        response = await client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message)
        for tool_call in message.tool_calls:
            found = ORDERS.get(json.loads(tool_call.function.arguments)["order_id"], {"error": "no such order"})
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": json.dumps(found)})


async def streamed(question: str, client: openai.AsyncOpenAI) -> dict[str, Any]:
    """A streamed answer read chunk by chunk, usage asked for at the end."""
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": question}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage = [], None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = chunk.usage.total_tokens
    return {"text": "".join(text), "total_tokens": usage}


def agent_server(tool_call: dict[str, Any] | None = None) -> OpenAIEndpoint:
    """Asks for lookup_order until it has the order's result, then answers with what the result said."""
    call = tool_call or OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"})

    def answer(body: dict[str, Any], request: Any) -> dict[str, Any]:
        results = [m for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return OpenAIEndpoint.completion(None, tool_calls=[call], finish_reason="tool_calls")
        order = json.loads(results[-1]["content"])
        return OpenAIEndpoint.completion(f"Delivered {order['days_ago']} days ago: refundable.")

    return OpenAIEndpoint(answer)


def judge_server() -> OpenAIEndpoint:
    verdict = {"accuracy": 7, "work": 3, "reason": "same answer, same tool call"}
    return OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion(json.dumps(verdict)))


def answer(report: gb.BenchmarkReport) -> Any:
    """The reference run's output."""
    return json.loads(rows(report, "acme/ref", "reference")[0]["output"])


def on_seat(code: Any) -> Any:
    """The job a user writes around their own function: ``seat.openai`` is the client."""

    async def job(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer the customer's question."""
        return await code(input["question"], client=seat.openai)

    return job


async def test_the_entrys_model_and_params_are_sent_and_the_codes_model_recorded(tmp_path: Path) -> None:
    server = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("refund"))
    async with serve({"ref-1": server, "cand-1": server, "judge-1": judge_server()}) as base_url:
        cat = catalog(
            base_url,
            entry("acme/ref", "ref-1", base_url, params={"seed": 7}),
            entry("acme/cand", "cand-1", base_url, rename_params={"max_tokens": "max_completion_tokens"}),
            reference="acme/ref",
        )
        report = await race(on_seat(classify), cat, tmp_path, candidates=["acme/cand"])
    sent = {b["model"]: b for b in server.bodies}
    assert set(sent) == {"ref-1", "cand-1"}  # never the gpt-4o-mini the code names
    assert sent["ref-1"]["seed"] == 7 and sent["ref-1"]["temperature"] == 0 and sent["ref-1"]["max_tokens"] == 5
    assert sent["cand-1"]["max_completion_tokens"] == 5 and "max_tokens" not in sent["cand-1"]
    assert answer(report) == "refund"
    calls = report.calls.filter(pl.col("role") != "judge")
    assert calls["asked_model"].to_list() == ["gpt-4o-mini", "gpt-4o-mini"]
    assert rows(report, "acme/cand")[0]["ok"] is True
    assert rows(report, "acme/cand")[0]["input_tokens"] == 19  # usage read as for seat.chat


async def test_a_tool_loop_in_openai_code_is_recorded_with_the_results_it_sent_back(tmp_path: Path) -> None:
    # a server that sends a tool call without an id (llama.cpp, Ollama): the code still gets one to answer with
    no_id = {"type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1001"}'}}
    async with serve({"ref-1": agent_server(), "cand-1": agent_server(no_id), "judge-1": judge_server()}) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/cand", "cand-1", base_url), reference="acme/ref"
        )
        report = await race(on_seat(refund_agent), cat, tmp_path, candidates=["acme/cand"])
    assert answer(report) == "Delivered 3 days ago: refundable."
    for name in ("acme/ref", "acme/cand"):
        run = rows(report, name, "reference" if name == "acme/ref" else "candidate")[0]
        assert run["ok"] is True and run["calls"] == 2 and run["tool_calls"] == 1
        calls = report.calls_for(run["run_id"], "reference" if name == "acme/ref" else "candidate")
        assert calls[0].tool_results == [
            {
                "id": calls[0].tool_results[0]["id"],
                "name": "lookup_order",
                "arguments": {"order_id": "A-1001"},
                "result": {"status": "delivered", "days_ago": 3},
            }
        ]
        events = transcript_events(calls, run["output"], None)
        assert {"kind": "tool_result", "name": "lookup_order", "result": ORDERS["A-1001"]} in events
    candidate = rows(report, "acme/cand")[0]
    assert candidate["tool_missing"] == 0 and candidate["tool_arg_mismatch"] == 0  # diffed against the reference's
    assert candidate["accuracy"] == 7


async def test_a_streamed_answer_is_recorded_whole_and_replayed_from_the_cache(tmp_path: Path) -> None:
    server = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion(ANSWER, prompt_tokens=30))
    async with serve({"ref-1": server, "cand-1": server, "judge-1": judge_server()}) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/cand", "cand-1", base_url), reference="acme/ref"
        )
        first = await race(on_seat(streamed), cat, tmp_path, candidates=["acme/cand"])
        sent = len(server.bodies)
        again = await race(on_seat(streamed), cat, tmp_path, candidates=["acme/cand"])
    assert answer(first) == {"text": ANSWER, "total_tokens": 40}
    assert all("stream" not in b and "stream_options" not in b for b in server.bodies)  # asked for whole
    call = first.calls.filter(pl.col("role") == "candidate").row(0, named=True)
    assert json.loads(call["response"])["choices"][0]["message"]["content"] == ANSWER
    assert call["input_tokens"] == 30 and call["cost"] is not None
    assert len(server.bodies) == sent  # the rerun sent nothing
    assert answer(again) == answer(first)
    assert again.calls.filter(pl.col("role") != "judge")["cache_hit"].to_list() == [True, True]


async def test_the_sdks_stream_helper_reads_the_replayed_stream(tmp_path: Path) -> None:
    async def helper(question: str, client: openai.AsyncOpenAI) -> str:
        async with client.chat.completions.stream(
            model="gpt-4o", messages=[{"role": "user", "content": question}], tools=TOOLS
        ) as stream:
            final = await stream.get_final_completion()
        tool_calls = final.choices[0].message.tool_calls or []
        return f"{final.choices[0].finish_reason}:{tool_calls[0].function.name}:{tool_calls[0].function.arguments}"

    call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"})
    server = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion(None, tool_calls=[call]))
    async with serve({"ref-1": server, "cand-1": server, "judge-1": judge_server()}) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/cand", "cand-1", base_url), reference="acme/ref"
        )
        report = await race(on_seat(helper), cat, tmp_path, candidates=["acme/cand"])
    assert answer(report) == 'tool_calls:lookup_order:{"order_id": "A-1001"}'
    made = report.calls.filter(pl.col("role") == "reference").row(0, named=True)
    # the code never sent a result back: the call is recorded with its arguments and no result
    assert json.loads(made["tool_results"]) == [
        {"id": "call_12345xyz", "name": "lookup_order", "arguments": {"order_id": "A-1001"}}
    ]


async def test_a_call_that_fails_for_good_fails_the_run_past_the_codes_fallback(tmp_path: Path) -> None:
    async def with_fallback(question: str, client: openai.AsyncOpenAI) -> str:
        try:
            return await classify(question, client)
        except openai.APIError:  # production's fallback must not turn an endpoint's failure into an answer
            return "unknown"

    good = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("refund"))
    strict = OpenAIEndpoint([OpenAIEndpoint.completion("unused")], reasoning_family=True)
    async with serve({"ref-1": good, "cand-1": strict, "judge-1": judge_server()}) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/cand", "cand-1", base_url), reference="acme/ref"
        )
        report = await race(on_seat(with_fallback), cat, tmp_path, candidates=["acme/cand"])
    run = rows(report, "acme/cand")[0]
    assert run["ok"] is False
    assert run["error"].startswith("CallError: acme/cand:") and "max_tokens" in run["error"]
    assert run["output"] is None


async def test_what_seat_openai_does_not_send_says_so(tmp_path: Path) -> None:
    seen: list[str] = []

    async def embeds(question: str, client: openai.AsyncOpenAI) -> str:
        try:
            await client.embeddings.create(model="text-embedding-3-small", input=question)
        except openai.NotFoundError as exc:
            seen.append(str(exc))
        return "done"

    server = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("unused"))
    async with serve({"ref-1": server, "judge-1": judge_server()}) as base_url:
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), reference="acme/ref")
        await race(on_seat(embeds), cat, tmp_path, candidates=["acme/ref"])
    assert "seat.openai sends chat.completions.create(...) only" in seen[0] and "/embeddings" in seen[0]
    assert server.bodies == []


async def test_the_key_reaches_the_endpoint_and_never_the_jobs_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_KEY", "sk-acme-secret-0123456789")
    keys: list[str] = []

    async def peek(question: str, client: openai.AsyncOpenAI) -> str:
        keys.append(client.api_key)
        return await classify(question, client)

    server = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("refund"))
    async with serve({"ref-1": server, "judge-1": judge_server()}) as base_url:
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url, api_key_env="ACME_KEY"), reference="acme/ref")
        report = await race(on_seat(peek), cat, tmp_path, candidates=["acme/ref"])
    assert set(keys) == {"gradebench-seat"}
    assert server.headers[0]["authorization"] == "Bearer sk-acme-secret-0123456789"
    assert answer(report) == "refund"


def test_a_seat_keeps_one_client(tmp_path: Path) -> None:
    cat = gb.testing.ScriptedEndpoint([gb.testing.completion("x")]).catalog()
    seat = gb.Seat(cat["test/reference"], path=None, key=None)  # type: ignore[arg-type]
    assert seat.openai is seat.openai
    assert str(seat.openai.base_url).startswith("http://seat.gradebench.invalid/")
