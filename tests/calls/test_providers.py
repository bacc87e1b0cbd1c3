"""Conformance: gradebench against the documented response shapes of real OpenAI-compatible providers.

Every case serves a provider flavour from `tests.providers` on 127.0.0.1 (real HTTP, the real ``openai`` client, no
``transport``), drives gradebench as a user would (a catalog of entries whose ``base_url`` is the loopback server, a
small job, ``Benchmark.run``, ``report()``) and asserts what a user relies on: the right number, or unknown plus a
diagnostic — never a wrong number. The ``test_fixture_*`` cases check the shapes themselves through a plain
``openai.AsyncOpenAI`` client.

Shapes and their sources (the comment beside each builder in tests/providers.py cites its page):

- OpenAI chat completions (https://platform.openai.com/docs/api-reference/chat/object): ``usage.prompt_tokens_details
  .cached_tokens`` (part of prompt_tokens, https://platform.openai.com/docs/guides/prompt-caching),
  ``usage.completion_tokens_details.reasoning_tokens`` (part of completion_tokens), ``refusal`` with ``content:
  null`` (https://platform.openai.com/docs/guides/structured-outputs#refusals), the 400s of a family that rejects
  ``max_tokens`` and a non-default ``temperature`` in OpenAI's error body (messages as quoted in
  https://github.com/griptape-ai/ComfyUI-Griptape/issues/312 and https://github.com/gabrii/Cursor-Azure-GPT-5/issues/33),
  a 429 with ``retry-after-ms`` (https://platform.openai.com/docs/guides/rate-limits).
- Content as a list of chunks, thinking then text (Mistral: https://docs.mistral.ai/capabilities/reasoning/).
- OpenRouter: ``usage.cost`` (https://openrouter.ai/docs/use-cases/usage-accounting), ``reasoning`` +
  ``reasoning_details`` to pass back unchanged (https://openrouter.ai/docs/use-cases/reasoning-tokens), errors
  mid-generation as HTTP 200 with ``{"error": {"code", "message"}}`` (https://openrouter.ai/docs/api-reference/errors),
  the serving ``provider`` in the response (https://openrouter.ai/docs/api-reference/overview) for a pin in the
  request (https://openrouter.ai/docs/features/provider-routing).
- DeepSeek thinking mode: ``reasoning_content``, and a 400 when a later request's assistant tool-call turn lacks it
  (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls; the message as users report it,
  https://github.com/anomalyco/opencode/issues/24083); JSON mode is ``json_object`` only, ``json_schema`` is a 400
  (https://api-docs.deepseek.com/guides/json_mode; message from https://github.com/UKGovernmentBEIS/inspect_ai/issues/4916).
- vLLM / Ollama: no ``usage`` (optional in OpenAI's spec: https://github.com/Azure/azure-rest-api-specs/pull/33315),
  a prompt-only usage (a guess: Ollama's cached-prompt bugs https://github.com/ollama/ollama/issues/3427 and #5370
  drop or zero a count, no page shows this exact body), tool calls without ``id`` (issue threads:
  https://github.com/ggml-org/llama.cpp/issues/11992, https://github.com/ollama/ollama/issues/6462).
- LiteLLM proxy: ``x-litellm-response-cost`` (https://docs.litellm.ai/docs/proxy/response_headers), mock responses
  with null usage counts (https://docs.litellm.ai/docs/completion/mock_requests) that reuse one id (FACTS.md; no page
  shows the id), a 401 that echoes the key it received (https://github.com/BerriAI/litellm/pull/39787).
- Judges: one that rejects ``response_format`` with DeepSeek's 400, one that ignores it, one whose verdict comes back
  with ``content: null`` (``finish_reason: "length"``, or only in ``reasoning_content``:
  https://docs.vllm.ai/en/v0.8.3/features/reasoning_outputs.html).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import openai
import polars as pl
import pytest

import gradebench as gb

from ..loopback import ANSWER, QUESTION, answering, answers, catalog, diagnostics, entry, model_row, race, rows
from ..providers import (
    DEEPSEEK_TOOL_TURN_MESSAGE,
    DeepSeekEndpoint,
    Endpoint,
    JudgeEndpoint,
    LiteLLMEndpoint,
    OllamaEndpoint,
    OpenAIEndpoint,
    OpenRouterEndpoint,
    VLLMEndpoint,
    content_parts,
    serve,
)

REFUSAL = "I'm sorry, I cannot assist with that request."


# ------------------------------------------------------------------------------------------------------ helpers


def tool_then_answer(first: dict[str, Any], final: dict[str, Any]) -> Callable[[dict[str, Any], httpx2.Request], Any]:
    """The first answer until the conversation holds a tool result, then the final one."""
    return lambda body, request: final if body["messages"][-1]["role"] == "tool" else first


def reference_endpoint() -> OpenAIEndpoint:
    return OpenAIEndpoint(answers())


@gb.tool
def lookup_order(order_id: str) -> dict:
    """Look an order up by its id.

    Args:
        order_id: The order id, e.g. "A-1001".
    """
    return {"order_id": order_id, "status": "delivered", "days_since_delivery": 3}


def order_desk(replies: list[gb.Reply] | None = None, tools: Sequence[Any] = (lookup_order,)) -> Any:
    """A tool-using job: look the order up, then answer."""

    async def order_desk(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Look the order up with the tool, then say whether it can be refunded."""
        reply = await seat.chat([{"role": "user", "content": input["question"]}], tools=list(tools))
        if replies is not None:
            replies.append(reply)
        return reply.text

    return order_desk


def client(base_url: str, key: str = "sk-test") -> openai.AsyncOpenAI:
    """A plain openai client, no retries (a case that wants one asks with ``with_options``)."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)


USER = [{"role": "user", "content": "hi"}]


# -------------------------------------------------------------------------- the fixtures round-trip their shapes


async def test_fixture_openai_shapes_round_trip() -> None:
    usage = answers(prompt_tokens=2006, completion_tokens=300, cached_tokens=1920, reasoning_tokens=200)
    endpoints = {
        "gpt-usage": OpenAIEndpoint(usage),
        "gpt-refuses": OpenAIEndpoint(answers(None, refusal=REFUSAL)),
        "gpt-5": OpenAIEndpoint(answers(), reasoning_family=True),
        "gpt-busy": OpenAIEndpoint([OpenAIEndpoint.rate_limited(), OpenAIEndpoint.completion("after the wait")]),
        "mistral": OpenAIEndpoint(answers(content_parts("The answer is 42.", thinking="6 × 7"))),
    }
    async with serve(endpoints) as base_url, client(base_url) as c:
        done = await c.chat.completions.create(model="gpt-usage", messages=USER)
        assert done.usage is not None and done.usage.prompt_tokens == 2006 and done.usage.completion_tokens == 300
        assert done.usage.prompt_tokens_details.cached_tokens == 1920
        assert done.usage.completion_tokens_details.reasoning_tokens == 200
        refused = (await c.chat.completions.create(model="gpt-refuses", messages=USER)).choices[0].message
        assert refused.content is None and refused.refusal == REFUSAL
        with pytest.raises(openai.BadRequestError) as bad:
            await c.chat.completions.create(model="gpt-5", messages=USER, max_tokens=10)
        assert bad.value.code == "unsupported_parameter" and "max_completion_tokens" in bad.value.message
        with pytest.raises(openai.BadRequestError) as bad:
            await c.chat.completions.create(model="gpt-5", messages=USER, temperature=0)
        assert bad.value.code == "unsupported_value" and bad.value.body["param"] == "temperature"
        fine = await c.chat.completions.create(model="gpt-5", messages=USER, max_completion_tokens=10, temperature=1)
        assert fine.choices[0].message.content == ANSWER
        waited = await c.with_options(max_retries=1).chat.completions.create(model="gpt-busy", messages=USER)
        assert waited.choices[0].message.content == "after the wait"
        parts = await c.chat.completions.with_raw_response.create(model="mistral", messages=USER)
        assert parts.http_response.json()["choices"][0]["message"]["content"][-1] == {
            "type": "text",
            "text": "The answer is 42.",
        }
    assert [b["model"] for b in endpoints["gpt-busy"].bodies] == ["gpt-busy", "gpt-busy"]


async def test_fixture_openrouter_shapes_round_trip() -> None:
    details = OpenRouterEndpoint.reasoning_details("Look the order up first.")
    endpoints = {
        "qwen": OpenRouterEndpoint(
            lambda body, request: OpenRouterEndpoint.completion(
                ANSWER,
                prompt_tokens=1000,
                completion_tokens=500,
                cost=0.00135,
                reasoning="Look the order up first.",
                reasoning_details=details,
            )
        ),
        "broken": OpenRouterEndpoint(
            [
                OpenRouterEndpoint.error_200(502, "Upstream provider returned an invalid response"),
                OpenRouterEndpoint.error_200(429, "Rate limit exceeded upstream"),
            ]
        ),
    }
    pin = {"provider": {"only": ["deepinfra"], "allow_fallbacks": False}}
    async with serve(endpoints) as base_url, client(base_url) as c:
        done = await c.chat.completions.create(model="qwen", messages=USER, extra_body=pin)
        assert done.usage is not None and (done.usage.prompt_tokens, done.usage.completion_tokens) == (1000, 500)
        assert done.usage.model_dump()["cost"] == 0.00135
        assert done.model_dump()["provider"] == "DeepInfra"
        message = done.choices[0].message.model_dump()
        assert message["reasoning"] == "Look the order up first." and message["reasoning_details"] == details
        for code in (502, 429):
            raw = await c.chat.completions.with_raw_response.create(model="broken", messages=USER)
            assert raw.http_response.status_code == 200
            assert raw.http_response.json()["error"]["code"] == code
    assert endpoints["qwen"].bodies[0]["provider"] == pin["provider"]


async def test_fixture_deepseek_rejects_a_tool_turn_without_its_reasoning() -> None:
    call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"})
    first = DeepSeekEndpoint.completion(None, reasoning_content="Look it up.", tool_calls=[call])
    deepseek = DeepSeekEndpoint([first, DeepSeekEndpoint.completion(ANSWER)])
    async with serve({"deepseek-v4-pro": deepseek}) as base_url, client(base_url) as c:
        done = await c.chat.completions.create(model="deepseek-v4-pro", messages=USER)
        message = done.choices[0].message
        assert message.model_dump()["reasoning_content"] == "Look it up." and message.tool_calls is not None
        assert done.usage is not None and done.usage.completion_tokens_details.reasoning_tokens == 38
        tool = {"role": "tool", "tool_call_id": call["id"], "content": "{}"}
        stripped = {"role": "assistant", "content": None, "tool_calls": [call]}
        with pytest.raises(openai.BadRequestError) as bad:
            await c.chat.completions.create(model="deepseek-v4-pro", messages=[*USER, stripped, tool])
        assert bad.value.message.endswith(DEEPSEEK_TOOL_TURN_MESSAGE)
        with pytest.raises(openai.BadRequestError) as bad:
            schema = {"type": "json_schema", "json_schema": {"name": "x"}}
            await c.chat.completions.create(model="deepseek-v4-pro", messages=USER, response_format=schema)
        assert "response_format type is unavailable" in bad.value.message
        kept = {**stripped, "reasoning_content": "Look it up."}
        final = await c.chat.completions.create(model="deepseek-v4-pro", messages=[*USER, kept, tool])
        assert final.choices[0].message.content == ANSWER
    assert deepseek.rejected == [DEEPSEEK_TOOL_TURN_MESSAGE, "This response_format type is unavailable now"]


async def test_fixture_local_servers_and_litellm_round_trip() -> None:
    bare = VLLMEndpoint.tool_call_without_id("lookup_order", {"order_id": "A-1001"})
    endpoints = {
        "vllm": VLLMEndpoint([VLLMEndpoint.completion(ANSWER), VLLMEndpoint.completion(None, tool_calls=[bare])]),
        "ollama": OllamaEndpoint(lambda b, r: OllamaEndpoint.completion(ANSWER, usage={"prompt_tokens": 31})),
        "proxy": LiteLLMEndpoint(
            lambda b, r: LiteLLMEndpoint.mock(b["messages"][-1]["content"]), cost=0.00042, expected_key="sk-right"
        ),
    }
    async with serve(endpoints) as base_url:
        async with client(base_url) as c:
            assert (await c.chat.completions.create(model="vllm", messages=USER)).usage is None
            raw = await c.chat.completions.with_raw_response.create(model="vllm", messages=USER)
            assert "id" not in raw.http_response.json()["choices"][0]["message"]["tool_calls"][0]
            raw = await c.chat.completions.with_raw_response.create(model="ollama", messages=USER)
            assert raw.http_response.json()["usage"] == {"prompt_tokens": 31}
            with pytest.raises(openai.AuthenticationError) as denied:
                await c.chat.completions.create(model="proxy", messages=USER)
            assert "Received API Key = sk-test," in denied.value.message
        async with client(base_url, key="sk-right") as c:
            one = await c.chat.completions.with_raw_response.create(model="proxy", messages=USER)
            two = await c.chat.completions.create(model="proxy", messages=[{"role": "user", "content": "other"}])
            assert one.headers["x-litellm-response-cost"] == "0.00042"
            assert (
                one.parse().id == two.id == "chatcmpl-mock"
                and one.parse().choices[0].message.content != two.choices[0].message.content
            )


async def test_fixture_judge_modes_round_trip() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}}
    endpoints = {mode: JudgeEndpoint(mode) for mode in JudgeEndpoint.MODES}
    async with serve({"judge-1": endpoints["schema"]}) as base_url, client(base_url) as c:
        done = await c.chat.completions.create(model="judge-1", messages=USER, response_format=schema)
        assert json.loads(done.choices[0].message.content or "") == {
            "accuracy": 7,
            "work": 3,
            "reason": "Same outcome as the reference, by the same steps.",
        }
    async with serve({"judge-1": endpoints["rejects_schema"]}) as base_url, client(base_url) as c:
        with pytest.raises(openai.BadRequestError):
            await c.chat.completions.create(model="judge-1", messages=USER, response_format=schema)
        prose = await c.chat.completions.create(model="judge-1", messages=USER)
        assert "```json" in (prose.choices[0].message.content or "")
    async with serve({"judge-1": endpoints["length"]}) as base_url, client(base_url) as c:
        cut = (await c.chat.completions.create(model="judge-1", messages=USER, response_format=schema)).choices[0]
        assert cut.message.content is None and cut.finish_reason == "length"
    async with serve({"judge-1": endpoints["reasoning_only"]}) as base_url, client(base_url) as c:
        only = (await c.chat.completions.create(model="judge-1", messages=USER)).choices[0].message
        assert only.content is None and '"accuracy": 7' in only.model_dump()["reasoning_content"]
    assert endpoints["rejects_schema"].schema_asks() == 1


# ------------------------------------------------------------------------------------------------------- OpenAI


async def test_openai_cached_and_reasoning_tokens_are_counted_and_priced(tmp_path: Path) -> None:
    shape = dict(prompt_tokens=2006, completion_tokens=300, cached_tokens=1920, reasoning_tokens=200)
    endpoints = {"gpt-mid": OpenAIEndpoint(answers(**shape)), "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        mid = entry("openai/mid", "gpt-mid", base_url, price_in=1.25, price_cached_in=0.125, price_out=10.0)
        report = await race(
            answering(), catalog(base_url, mid, reference="openai/mid"), tmp_path, candidates=["openai/mid"]
        )
    # 86 fresh input tokens at 1.25, 1920 cached at 0.125, 300 output (the 200 reasoning tokens are among them) at 10
    expected = (86 * 1.25 + 1920 * 0.125 + 300 * 10.0) / 1e6
    assert mid.cost(2006, 300, 1920) == pytest.approx(expected)
    [run] = rows(report, "openai/mid")
    assert (run["input_tokens"], run["output_tokens"]) == (2006, 300)
    assert (run["cached_input_tokens"], run["reasoning_tokens"]) == (1920, 200)
    assert run["cost"] == pytest.approx(expected) and run["price_table_cost"] == pytest.approx(expected)
    assert run["cost_source"] == "price_table" and run["judge_schema"] == "honoured"
    call = report.calls.filter((pl.col("run_id") == run["run_id"]) & (pl.col("role") == "candidate")).row(0, named=True)
    assert (call["cached_input_tokens"], call["reasoning_tokens"], call["cost_source"]) == (1920, 200, "price_table")
    assert call["cost"] == pytest.approx(expected) and call["price_table_cost"] == pytest.approx(expected)
    model = model_row(report, "openai/mid")
    assert (model["cached_input_tokens_mean"], model["reasoning_tokens_mean"]) == (1920.0, 200.0)
    assert model["cost_per_run"] == pytest.approx(expected)


async def test_openai_refusal_is_a_refused_run_that_the_judge_reads(tmp_path: Path) -> None:
    replies: list[gb.Reply] = []
    judge = JudgeEndpoint("schema")
    endpoints = {
        "gpt-ref": reference_endpoint(),
        "gpt-strict": OpenAIEndpoint(answers(None, refusal=REFUSAL)),
        "judge-1": judge,
    }
    async with serve(endpoints) as base_url:
        strict = entry("openai/strict", "gpt-strict", base_url)
        cat = catalog(base_url, entry("openai/ref", "gpt-ref", base_url), strict, reference="openai/ref")
        report = await race(answering(replies), cat, tmp_path, candidates=["openai/strict"])
    refused = [r for r in replies if r.message.get("refusal")]
    assert len(refused) == 1 and refused[0].refusal == REFUSAL and refused[0].text == ""
    [run] = rows(report, "openai/strict")
    assert run["refused"] is True
    assert [d["run_id"] for d in diagnostics(report, "refused", "openai/strict")] == [run["run_id"]]
    events = report.transcript(run["run_id"])
    assert any(e["kind"] == "refusal" and REFUSAL in json.dumps(e) for e in events)
    assert any(REFUSAL in m["content"] for prompt in report.judge_prompts(run["run_id"]) for m in prompt)


async def test_content_as_a_list_of_parts_gives_reply_text_as_a_string(tmp_path: Path) -> None:
    replies: list[gb.Reply] = []
    mistral = OpenAIEndpoint(answers(content_parts("The answer is 42.", thinking="6 × 7 = 42")))
    endpoints = {"gpt-ref": reference_endpoint(), "magistral": mistral, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("mistral/think", "magistral", base_url),
            reference="openai/ref",
        )
        report = await race(answering(replies), cat, tmp_path, candidates=["mistral/think"])
    texts = [r.text for r in replies]
    assert all(isinstance(t, str) for t in texts), texts
    assert "The answer is 42." in texts and not any("6 × 7" in t for t in texts)  # the thinking is not the answer
    [run] = rows(report, "mistral/think")
    assert json.loads(run["output"]) == "The answer is 42."


class CappedAnswer(gb.Job):
    """Answer the customer's question in one sentence."""

    name = "capped-answer"
    params = {"max_tokens": 400, "temperature": 0}

    async def run(self, input: dict[str, Any], seat: gb.Seat) -> str:
        return (await seat.chat([{"role": "user", "content": input["question"]}])).text


async def test_openai_family_that_rejects_max_tokens_and_temperature(tmp_path: Path) -> None:
    gpt5 = OpenAIEndpoint(answers(), reasoning_family=True)
    async with serve({"gpt-5": gpt5, "judge-1": JudgeEndpoint("schema")}) as base_url:
        fitted = entry(
            "openai/gpt5",
            "gpt-5",
            base_url,
            rename_params={"max_tokens": "max_completion_tokens"},
            drop_params=("temperature",),
        )
        raw = entry("openai/gpt5-raw", "gpt-5", base_url, routing={"user": "raw"})
        report = await race(
            CappedAnswer,
            catalog(base_url, fitted, raw, reference="openai/gpt5"),
            tmp_path,
            candidates=["openai/gpt5", "openai/gpt5-raw"],
        )
    [ok] = rows(report, "openai/gpt5")
    assert ok["ok"] and json.loads(ok["output"]) == ANSWER
    sent = [b for b in gpt5.bodies if "user" not in b]
    assert sent and all(
        b["max_completion_tokens"] == 400 and "max_tokens" not in b and "temperature" not in b for b in sent
    )
    [failed] = rows(report, "openai/gpt5-raw")  # the provider's own words say what to change
    assert not failed["ok"] and "HTTP 400" in failed["error"]
    assert "Unsupported parameter: 'max_tokens'" in failed["error"] and "max_completion_tokens" in failed["error"]


async def test_http_429_is_waited_out_within_rate_limit_wait_s(tmp_path: Path) -> None:
    busy = OpenAIEndpoint([*(OpenAIEndpoint.rate_limited() for _ in range(3)), OpenAIEndpoint.completion(ANSWER)])
    jammed = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.rate_limited())
    endpoints = {
        "gpt-ref": reference_endpoint(),
        "gpt-busy": busy,
        "gpt-jammed": jammed,
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("openai/busy", "gpt-busy", base_url, rate_limit_wait_s=5.0),
            entry("openai/jammed", "gpt-jammed", base_url, rate_limit_wait_s=0.05),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["openai/busy", "openai/jammed"])
    [waited] = rows(report, "openai/busy")  # max_retries=0: three 429s are waited out all the same
    assert waited["ok"], waited["error"]
    assert len(busy.bodies) == 4 and json.loads(waited["output"]) == ANSWER
    [gave_up] = rows(report, "openai/jammed")  # past its wait budget: fails with the provider's message
    assert not gave_up["ok"] and "429" in gave_up["error"] and "Rate limit reached" in gave_up["error"]


# --------------------------------------------------------------------------------------------------- OpenRouter


async def test_openrouter_cost_is_the_providers_figure_beside_the_price_table(tmp_path: Path) -> None:
    def billed(body: dict[str, Any], request: httpx2.Request) -> Any:
        return OpenRouterEndpoint.completion(
            ANSWER, model=body["model"], prompt_tokens=1000, completion_tokens=500, cost=0.00135
        )

    endpoints = {
        "qwen-a": OpenRouterEndpoint(billed),
        "qwen-b": OpenRouterEndpoint(billed),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        current = entry("openrouter/current", "qwen-a", base_url, price_in=0.6, price_out=1.5)  # 0.00135 a call
        stale = entry("openrouter/stale", "qwen-b", base_url, price_in=0.2, price_out=1.5)  # 0.00095 a call
        report = await race(
            answering(),
            catalog(base_url, current, stale, reference="openrouter/current"),
            tmp_path,
            candidates=["openrouter/current", "openrouter/stale"],
        )
    [run] = rows(report, "openrouter/stale")
    assert run["cost"] == pytest.approx(0.00135) and run["cost_source"] == "provider"
    assert run["price_table_cost"] == pytest.approx(0.00095)
    assert model_row(report, "openrouter/stale")["cost_per_run"] == pytest.approx(0.00135)
    assert model_row(report, "openrouter/stale")["cost_ratio"] == pytest.approx(1.0)  # both billed the same
    assert len(diagnostics(report, "price_mismatch", "openrouter/stale")) >= 1
    assert diagnostics(report, "price_mismatch", "openrouter/current") == []


async def test_openrouter_reasoning_details_go_back_unchanged(tmp_path: Path) -> None:
    replies: list[gb.Reply] = []
    details = OpenRouterEndpoint.reasoning_details("The customer wants a refund: look the order up first.")
    call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"}, id="toolu_01A09q90qw90lq917835lq9")
    first = OpenRouterEndpoint.completion(
        None, tool_calls=[call], reasoning="Look the order up first.", reasoning_details=details
    )
    final = OpenRouterEndpoint.completion(
        ANSWER,
        reasoning="Delivered 3 days ago: refundable.",
        reasoning_details=OpenRouterEndpoint.reasoning_details("Refundable."),
    )
    claude = OpenRouterEndpoint(tool_then_answer(first, final))
    endpoints = {"gpt-ref": reference_endpoint(), "claude": claude, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        claude_entry = entry("openrouter/claude", "claude", base_url)
        cat = catalog(base_url, entry("openai/ref", "gpt-ref", base_url), claude_entry, reference="openai/ref")
        report = await race(order_desk(replies), cat, tmp_path, candidates=["openrouter/claude"])
    [run] = rows(report, "openrouter/claude")
    assert run["ok"], run["error"]
    assert len(claude.bodies) == 2
    turn = claude.bodies[1]["messages"][1]
    assert turn["role"] == "assistant" and turn["tool_calls"][0]["id"] == call["id"]
    assert turn["reasoning_details"] == details  # unchanged: every block, signature and encrypted data included
    assert turn["reasoning"] == "Look the order up first."
    assert [r.reasoning for r in replies if r.text == ANSWER and r.calls[0].entry == "openrouter/claude"] == [
        "Delivered 3 days ago: refundable."
    ]


async def test_openrouter_errors_in_a_200_body_are_retried(tmp_path: Path) -> None:
    flaky = OpenRouterEndpoint(
        [
            OpenRouterEndpoint.error_200(502, "Upstream provider DeepInfra returned an invalid response"),
            OpenRouterEndpoint.error_200(429, "Rate limit exceeded: DeepInfra is temporarily rate-limited upstream"),
            OpenRouterEndpoint.completion(ANSWER, prompt_tokens=1000, completion_tokens=500, cost=0.00135),
        ]
    )
    endpoints = {"gpt-ref": reference_endpoint(), "qwen": flaky, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("openrouter/qwen", "qwen", base_url, max_retries=2),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["openrouter/qwen"])
    [run] = rows(report, "openrouter/qwen")
    assert run["ok"], run["error"]
    assert len(flaky.bodies) == 3
    assert (run["input_tokens"], run["output_tokens"], run["cost"]) == (1000, 500, pytest.approx(0.00135))


async def test_a_run_failed_by_a_200_error_keeps_the_message_is_not_judged_and_scores_0(tmp_path: Path) -> None:
    message = "Upstream provider DeepInfra returned an invalid response: model overloaded"
    down = OpenRouterEndpoint(lambda body, request: OpenRouterEndpoint.error_200(502, message))
    judge = JudgeEndpoint("schema")
    async with serve({"gpt-ref": reference_endpoint(), "qwen": down, "judge-1": judge}) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("openrouter/qwen", "qwen", base_url, max_retries=1),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["openrouter/qwen"])
    [run] = rows(report, "openrouter/qwen")
    assert not run["ok"] and message in run["error"]
    assert run["run_id"] not in judge.runs()  # no judge call for a failed run
    assert run["score"] == 0.0
    assert model_row(report, "openrouter/qwen")["score_mean"] == 0.0


async def test_openrouter_provider_pin_is_sent_and_the_served_provider_is_hidden_from_the_judge(tmp_path: Path) -> None:
    qwen = OpenRouterEndpoint(lambda body, request: OpenRouterEndpoint.completion(ANSWER))
    judge = JudgeEndpoint("schema")
    pin = {"provider": {"only": ["deepinfra"], "allow_fallbacks": False}}
    async with serve({"gpt-ref": reference_endpoint(), "qwen": qwen, "judge-1": judge}) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("openrouter/qwen", "qwen", base_url, routing=pin),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["openrouter/qwen"])
    [run] = rows(report, "openrouter/qwen")
    assert run["ok"] and [b["provider"] for b in qwen.bodies] == [pin["provider"]]
    call = report.calls_for(run["run_id"], role="candidate")[0]
    assert call.response is not None and call.response["provider"] == "DeepInfra"  # kept in the record
    assert judge.bodies and not any("DeepInfra" in json.dumps(b) for b in judge.bodies)  # the judge stays blind


# ----------------------------------------------------------------------------------------------------- DeepSeek


async def test_deepseek_reasoning_content_goes_back_on_tool_call_turns(tmp_path: Path) -> None:
    replies: list[gb.Reply] = []
    call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"}, id="call_00_kZ3vWnBjtNTf1RqUxjs2")
    first = DeepSeekEndpoint.completion(
        None,
        reasoning_content="A refund request: look the order up first.",
        tool_calls=[call],
        completion_tokens=40,
        reasoning_tokens=30,
    )
    final = DeepSeekEndpoint.completion(
        ANSWER, reasoning_content="Delivered 3 days ago, inside 30 days.", completion_tokens=60, reasoning_tokens=25
    )
    deepseek = DeepSeekEndpoint(tool_then_answer(first, final))
    endpoints = {"gpt-ref": reference_endpoint(), "deepseek-v4-pro": deepseek, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("deepseek/pro", "deepseek-v4-pro", base_url),
            reference="openai/ref",
        )
        report = await race(order_desk(replies), cat, tmp_path, candidates=["deepseek/pro"])
    [run] = rows(report, "deepseek/pro")
    assert deepseek.rejected == [] and run["ok"], run["error"]
    turn = deepseek.bodies[1]["messages"][1]
    assert turn["role"] == "assistant" and turn["reasoning_content"] == "A refund request: look the order up first."
    assert (run["output_tokens"], run["reasoning_tokens"]) == (100, 55)
    assert [r.reasoning for r in replies if r.calls[0].entry == "deepseek/pro"] == [
        "Delivered 3 days ago, inside 30 days."
    ]


# ----------------------------------------------------------------------------------------------- vLLM and Ollama


NO_USAGE = {
    "vllm": VLLMEndpoint.completion(ANSWER, usage=None),
    "litellm-mock": LiteLLMEndpoint.mock(ANSWER, prompt_tokens=None, completion_tokens=None),
}


@pytest.mark.parametrize("shape", sorted(NO_USAGE))
async def test_no_usage_means_unknown_tokens_and_cost_with_a_diagnostic(tmp_path: Path, shape: str) -> None:
    local = Endpoint(lambda body, request: NO_USAGE[shape])
    endpoints = {"gpt-ref": reference_endpoint(), "local": local, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        hosted = entry("local/qwen", "local", base_url, price_in=0.2, price_out=0.6)  # priced: unknown is not free
        cat = catalog(base_url, entry("openai/ref", "gpt-ref", base_url), hosted, reference="openai/ref")
        report = await race(answering(), cat, tmp_path, candidates=["openai/ref", "local/qwen"])
    [run] = rows(report, "local/qwen")
    assert run["ok"]
    assert (run["input_tokens"], run["output_tokens"], run["cost"], run["cost_source"]) == (None, None, None, None)
    calls = report.calls.filter((pl.col("entry") == "local/qwen") & (pl.col("role") == "candidate"))
    assert calls["input_tokens"].to_list() == [None] and calls["cost"].to_list() == [None]
    model = model_row(report, "local/qwen")
    assert (model["cost_per_run"], model["cost_ratio"], model["input_tokens_mean"]) == (None, None, None)
    assert model_row(report, "openai/ref")["cost_per_run"] is not None
    assert len(diagnostics(report, "no_usage", "local/qwen")) == 1


async def test_prompt_only_usage_leaves_output_tokens_and_cost_unknown(tmp_path: Path) -> None:
    partial = {"prompt_tokens": 31}  # a guessed shape (see the module docstring); nothing to derive the output from
    ollama = OllamaEndpoint(lambda body, request: OllamaEndpoint.completion(ANSWER, usage=partial))
    endpoints = {"gpt-ref": reference_endpoint(), "llama": ollama, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("ollama/llama", "llama", base_url, price_in=0.1, price_out=0.1),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["ollama/llama"])
    [run] = rows(report, "ollama/llama")
    assert run["input_tokens"] == 31
    assert (run["output_tokens"], run["cost"]) == (None, None)  # never 31 tokens' worth passed off as the cost


async def test_tool_calls_without_an_id_get_a_stable_id(tmp_path: Path) -> None:
    calls = [VLLMEndpoint.tool_call_without_id("lookup_order", {"order_id": o}) for o in ("A-1001", "A-1002")]
    first = VLLMEndpoint.completion(
        None, tool_calls=calls, usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    )
    final = VLLMEndpoint.completion(ANSWER, usage={"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220})
    vllm = VLLMEndpoint(tool_then_answer(first, final))
    endpoints = {"gpt-ref": reference_endpoint(), "qwen": vllm, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("vllm/qwen", "qwen", base_url),
            reference="openai/ref",
        )
        report = await race(order_desk(), cat, tmp_path, candidates=["vllm/qwen"])
        [run] = rows(report, "vllm/qwen")
        assert run["ok"], run["error"]
        messages = vllm.bodies[1]["messages"]
        ids = [tc["id"] for tc in messages[1]["tool_calls"]]
        assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 2
        assert [m["tool_call_id"] for m in messages[2:]] == ids  # the same id in the turn and in its tool message
        sent = len(vllm.bodies)
        await race(order_desk(), cat, tmp_path, candidates=["vllm/qwen"])  # the same race again
    assert len(vllm.bodies) == sent  # stable ids: the same requests, all served from the cache


# ------------------------------------------------------------------------------------------------------ LiteLLM


async def test_litellm_cost_header_is_the_providers_figure(tmp_path: Path) -> None:
    proxy = LiteLLMEndpoint(lambda body, request: LiteLLMEndpoint.mock(ANSWER, id="chatcmpl-7f3a"), cost=0.00042)
    endpoints = {"gpt-ref": reference_endpoint(), "proxied": proxy, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("litellm/gpt", "proxied", base_url),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["litellm/gpt"])
    [run] = rows(report, "litellm/gpt")
    assert run["cost"] == pytest.approx(0.00042) and run["cost_source"] == "provider"
    assert run["price_table_cost"] == pytest.approx((12 * 1.0 + 8 * 2.0) / 1e6)
    assert len(diagnostics(report, "price_mismatch", "litellm/gpt")) >= 1


def mocks(contents: Sequence[str]) -> LiteLLMEndpoint:
    """A LiteLLM mock that reuses one response id: the reference's answer first, then ``contents`` in turn."""
    script = iter([ANSWER, *contents])
    return LiteLLMEndpoint(lambda body, request: LiteLLMEndpoint.mock(next(script)))


async def test_a_reused_id_with_different_content_is_not_a_shared_generation(tmp_path: Path) -> None:
    async with serve(
        {"mock": mocks(["Refundable.", "Yes, it can be refunded."]), "judge-1": JudgeEndpoint("schema")}
    ) as base_url:
        cat = catalog(base_url, entry("litellm/mock", "mock", base_url), reference="litellm/mock")
        report = await race(answering(), cat, tmp_path, candidates=["litellm/mock"], runs=2, concurrency=1)
    outputs = [json.loads(r["output"]) for r in rows(report, "litellm/mock")]
    assert sorted(outputs) == ["Refundable.", "Yes, it can be refunded."]
    assert diagnostics(report, "shared_generation") == []


async def test_a_reused_id_with_the_same_content_is_a_shared_generation(tmp_path: Path) -> None:
    async with serve({"mock": mocks(["Refundable.", "Refundable."]), "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("litellm/mock", "mock", base_url), reference="litellm/mock")
        report = await race(answering(), cat, tmp_path, candidates=["litellm/mock"], runs=2, concurrency=1)
    assert len(diagnostics(report, "shared_generation", "litellm/mock")) == 1


# --------------------------------------------------------------------------------------------------------- keys


def _text(frame: pl.DataFrame) -> str:
    return json.dumps(frame.to_dicts(), ensure_ascii=False, default=str)


def assert_nowhere(secret: str, report: gb.BenchmarkReport, out: Path, logs: str, *sent: Endpoint) -> None:
    """The secret is in no frame, no file written, no log line and no request body the judge received."""
    assert secret not in _text(report.runs), "runs"
    assert secret not in _text(report.calls), "calls"
    report.to_parquet(out)
    back = gb.BenchmarkReport.read_parquet(out)
    for name, frame in (("runs", back.runs), ("calls", back.calls), ("models", back.models)):
        assert secret not in _text(frame), f"{name}.parquet"
    assert secret not in (out / "meta.json").read_text(), "meta.json"
    assert secret not in logs, "logs"
    for endpoint in sent:
        assert secret not in json.dumps(endpoint.bodies), f"requests to {type(endpoint).__name__}"


async def test_a_key_echoed_in_a_401_is_scrubbed_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-litellm-LEAKED-5f1e2d3c4b5a6978"
    monkeypatch.setenv("LITELLM_KEY", secret)
    monkeypatch.setenv("ACME_KEY", "sk-acme-0123456789abcdef")
    caplog.set_level(logging.DEBUG, logger="gradebench")
    proxy = LiteLLMEndpoint(lambda body, request: LiteLLMEndpoint.mock(ANSWER), expected_key="sk-litellm-right")
    judge = JudgeEndpoint("schema")
    async with serve({"gpt-ref": reference_endpoint(), "proxied": proxy, "judge-1": judge}) as base_url:
        cat = catalog(
            base_url,
            entry("acme/ref", "gpt-ref", base_url, api_key_env="ACME_KEY"),
            entry("litellm/gpt", "proxied", base_url, api_key_env="LITELLM_KEY"),
            reference="acme/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["acme/ref", "litellm/gpt"])
    [run] = rows(report, "litellm/gpt")
    assert not run["ok"] and "401" in run["error"] and "[redacted]" in run["error"]
    for key in (secret, "sk-acme-0123456789abcdef"):
        assert_nowhere(key, report, tmp_path / "out", caplog.text, judge)


async def test_a_key_in_a_tool_error_never_reaches_the_frames_or_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-acme-tool-7e6d5c4b3a291807"
    monkeypatch.setenv("ACME_KEY", secret)
    caplog.set_level(logging.DEBUG, logger="gradebench")

    @gb.tool
    def stock_level(sku: str) -> int:
        """How many of an item are in stock.

        Args:
            sku: The item's stock-keeping unit.
        """
        raise PermissionError(f"inventory service refused key {os.environ['ACME_KEY']} for {sku}")

    call = OpenAIEndpoint.tool_call("stock_level", {"sku": "SKU-1"})
    mid = OpenAIEndpoint(
        tool_then_answer(
            OpenAIEndpoint.completion(None, tool_calls=[call]),
            OpenAIEndpoint.completion("I could not check the stock."),
        )
    )
    judge = JudgeEndpoint("schema")
    async with serve({"gpt-mid": mid, "judge-1": judge}) as base_url:
        cat = catalog(base_url, entry("acme/mid", "gpt-mid", base_url, api_key_env="ACME_KEY"), reference="acme/mid")
        report = await race(order_desk(tools=[stock_level]), cat, tmp_path, candidates=["acme/mid"])
    [run] = rows(report, "acme/mid")
    assert run["ok"] and run["tool_calls"] == 1
    results = report.calls.filter(pl.col("run_id") == run["run_id"])["tool_results"].to_list()
    assert any("[redacted]" in (r or "") for r in results)  # the error still says what happened, without the key
    assert judge.bodies
    assert_nowhere(secret, report, tmp_path / "out", caplog.text, judge)


# -------------------------------------------------------------------------------------------------------- judge


async def test_the_judge_remembers_that_response_format_was_rejected(tmp_path: Path) -> None:
    judge = JudgeEndpoint("rejects_schema")

    class AfterTheRefusal(OpenAIEndpoint):
        """The runs land one by one (max_concurrency=1), each after the first only once the judge was asked twice (the
        schema, refused, then prose): every later verdict is asked after the refusal was seen, however loaded the
        machine."""

        async def handle(self, request: httpx2.Request) -> httpx2.Response:
            while self.bodies and len(judge.bodies) < 2:
                await asyncio.sleep(0.005)
            return await super().handle(request)

    slow = AfterTheRefusal(answers())
    async with serve({"gpt-ref": reference_endpoint(), "gpt-slow": slow, "judge-1": judge}) as base_url:
        cat = catalog(
            base_url,
            entry("openai/ref", "gpt-ref", base_url),
            entry("openai/slow", "gpt-slow", base_url, max_concurrency=1),
            reference="openai/ref",
        )
        report = await race(answering(), cat, tmp_path, candidates=["openai/slow"], runs=4)
    runs = rows(report, "openai/slow")
    assert [r["score"] for r in runs] == [10.0] * 4
    assert {r["judge_schema"] for r in runs} == {"rejected"} and {r["judge_path"] for r in runs} == {"fallback"}
    [fallback] = diagnostics(report, "judge_fallback", "openai/slow")
    assert "rejected" in fallback["detail"]
    assert judge.schema_asks() == 1  # asked once with the schema; never again in this race


async def test_a_judge_that_ignores_the_schema_is_recorded_as_ignored(tmp_path: Path) -> None:
    async with serve({"gpt-ref": reference_endpoint(), "judge-1": JudgeEndpoint("prose")}) as base_url:
        cat = catalog(base_url, entry("openai/ref", "gpt-ref", base_url), reference="openai/ref")
        report = await race(answering(), cat, tmp_path, candidates=["openai/ref"])
    [run] = rows(report, "openai/ref")
    assert run["score"] == 10.0 and run["judge_path"] == "fallback" and run["judge_schema"] == "ignored"
    [fallback] = diagnostics(report, "judge_fallback", "openai/ref")
    assert "ignored" in fallback["detail"]


@pytest.mark.parametrize(("mode", "cause"), [("length", "length"), ("reasoning_only", "reasoning")])
async def test_a_verdict_with_null_content_reports_the_real_cause(tmp_path: Path, mode: str, cause: str) -> None:
    async with serve({"gpt-ref": reference_endpoint(), "judge-1": JudgeEndpoint(mode)}) as base_url:
        cat = catalog(base_url, entry("openai/ref", "gpt-ref", base_url), reference="openai/ref")
        report = await race(answering(), cat, tmp_path, candidates=["openai/ref"])
    [run] = rows(report, "openai/ref")
    assert run["score"] is None and run["judge_error"] is not None
    assert cause in run["judge_error"].lower() and "no json object found" not in run["judge_error"].lower()


# --------------------------------------------------------------------------------------------------- truncation


async def test_truncated_counts_every_call_of_a_run_that_stopped_at_length(tmp_path: Path) -> None:
    async def draft_twice_then_answer(input: dict[str, Any], seat: gb.Seat) -> str:
        """Draft an answer twice, then write the final one."""
        for _ in range(2):
            await seat.chat([{"role": "user", "content": f"Draft: {input['question']}"}], max_tokens=5)
        return (await seat.chat([{"role": "user", "content": f"Final: {input['question']}"}])).text

    def cut_drafts(body: dict[str, Any], request: httpx2.Request) -> Any:
        if body["messages"][0]["content"].startswith("Draft"):
            return OpenAIEndpoint.completion("Order A-1001 was deliv", completion_tokens=5, finish_reason="length")
        return OpenAIEndpoint.completion(ANSWER)

    inputs = [{"id": "order", "question": QUESTION["question"]}]  # an id without digits: the count is the digit
    async with serve({"gpt-mid": OpenAIEndpoint(cut_drafts), "judge-1": JudgeEndpoint("schema")}) as base_url:
        cat = catalog(base_url, entry("openai/mid", "gpt-mid", base_url), reference="openai/mid")
        report = await race(draft_twice_then_answer, cat, tmp_path, candidates=["openai/mid"], inputs=inputs)
    [run] = rows(report, "openai/mid")
    assert run["finish_reason"] == "stop" and run["truncated"] == 2  # the last call stopped, two before it did not
    [flag] = [d for d in diagnostics(report, "truncated", "openai/mid") if d["run_id"] == run["run_id"]]
    assert "2" in flag["detail"]
