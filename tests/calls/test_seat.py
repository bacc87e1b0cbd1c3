from __future__ import annotations

import json
from typing import Literal

import httpx2
import pytest

import gradebench as gb
from gradebench.results import CallCache

from ..conftest import Scripted, completion, make_seat, scripted_catalog


@gb.tool
def lookup(order_id: str, verbose: bool = False) -> dict:
    """Look an order up.

    Args:
        order_id: The order's id, e.g. "A-1".
        verbose: Whether to include history.
    """
    if order_id == "boom":
        raise LookupError("database is down")
    return {"order_id": order_id, "status": "delivered"}


@gb.tool
async def grade_it(level: Literal["low", "high"], amount: float) -> str:
    """Grade something."""
    return f"{level}:{amount}"


def test_tool_schema_from_hints_and_docstring() -> None:
    assert lookup.name == "lookup"
    assert lookup.description == "Look an order up."
    params = lookup.parameters
    assert params["required"] == ["order_id"]
    assert params["properties"]["order_id"] == {"type": "string", "description": 'The order\'s id, e.g. "A-1".'}
    assert params["properties"]["verbose"]["type"] == "boolean"
    assert params["properties"]["verbose"]["description"] == "Whether to include history."
    assert grade_it.parameters["properties"]["level"]["enum"] == ["low", "high"]
    assert lookup("x") == {"order_id": "x", "status": "delivered"}  # still a plain function


async def test_tool_loop_runs_tools_and_records_calls() -> None:
    endpoint = Scripted(
        [
            completion(
                tool_calls=[
                    {"name": "lookup", "arguments": {"order_id": "A-1"}},
                    {"name": "grade_it", "arguments": {"level": "high", "amount": "2.5"}},
                ]
            ),
            completion(tool_calls=[{"name": "lookup", "arguments": {"order_id": "boom"}}]),
            completion("done", tokens=(30, 7)),
        ]
    )
    seat = make_seat(scripted_catalog(endpoint), "acme/pick")
    reply = await seat.chat([{"role": "user", "content": "hi"}], tools=[lookup, grade_it])
    assert reply.text == "done"
    assert [c.seq for c in reply.calls] == [0, 1, 2]
    first = reply.calls[0].tool_results
    assert first[0] == {
        "id": "call_0",
        "name": "lookup",
        "arguments": {"order_id": "A-1"},
        "result": {"order_id": "A-1", "status": "delivered"},
    }
    assert first[1]["result"] == "high:2.5"
    assert reply.calls[1].tool_results[0]["error"] == "LookupError: database is down"
    # the second request carries the assistant turn and both tool results back
    second = endpoint.bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    assert json.loads(second[2]["content"]) == {"order_id": "A-1", "status": "delivered"}
    third = endpoint.bodies[2]["messages"]
    assert json.loads(third[-1]["content"]) == {"error": "LookupError: database is down"}
    assert endpoint.bodies[0]["tools"][0]["function"]["name"] == "lookup"
    last = reply.calls[2]
    assert (last.input_tokens, last.output_tokens) == (30, 7)
    assert last.cost == pytest.approx((30 * 1.0 + 7 * 2.0) / 1e6)
    assert seat.calls == reply.calls


async def test_unknown_tool_and_bad_arguments_go_back_to_the_model() -> None:
    endpoint = Scripted(
        [
            completion(tool_calls=[{"name": "nope", "arguments": {}}, {"name": "lookup", "arguments": {"x": 1}}]),
            completion("ok"),
        ]
    )
    seat = make_seat(scripted_catalog(endpoint), "acme/pick")
    reply = await seat.chat([{"role": "user", "content": "hi"}], tools=[lookup])
    errors = [r["error"] for r in reply.calls[0].tool_results]
    assert "no tool named 'nope'" in errors[0]
    assert "invalid arguments" in errors[1]


async def test_step_limit_raises() -> None:
    endpoint = Scripted(lambda body, req: completion(tool_calls=[{"name": "lookup", "arguments": {"order_id": "a"}}]))
    seat = make_seat(scripted_catalog(endpoint), "acme/pick", max_steps=3)
    with pytest.raises(gb.ToolLoopError, match="3 model calls"):
        await seat.chat([{"role": "user", "content": "hi"}], tools=[lookup])
    assert len(endpoint.bodies) == 3


async def test_params_precedence_and_unset_params_are_absent() -> None:
    endpoint = Scripted(lambda body, req: completion("ok"))
    catalog = scripted_catalog(endpoint, params={"temperature": 0.7, "top_p": 0.9})
    seat = make_seat(catalog, "acme/pick", job_params={"temperature": 0.3, "max_tokens": 100})
    await seat.chat([{"role": "user", "content": "hi"}], top_p=0.5)
    body = endpoint.bodies[0]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.5 and body["max_tokens"] == 100
    await seat.chat([{"role": "user", "content": "plain"}])
    bare = make_seat(scripted_catalog(endpoint), "acme/pick")
    await bare.chat([{"role": "user", "content": "bare"}])
    body = endpoint.bodies[-1]
    assert set(body) == {"model", "messages"}, body  # nothing nobody set is sent, not even as a default


async def test_fixed_params_cannot_be_overridden() -> None:
    endpoint = Scripted(lambda body, req: completion("ok"))
    catalog = scripted_catalog(endpoint, params={"temperature": 0.7})
    seat = make_seat(catalog, "acme/pick", fixed_params={"temperature": 0})
    await seat.chat([{"role": "user", "content": "hi"}])
    assert endpoint.bodies[0]["temperature"] == 0  # beats the entry's default
    with pytest.raises(ValueError, match="'temperature' is fixed by the job"):
        await seat.chat([{"role": "user", "content": "hi"}], temperature=1.0)


async def test_routing_goes_into_the_body_and_labels_into_headers() -> None:
    endpoint = Scripted(lambda body, req: completion("ok"))
    catalog = scripted_catalog(endpoint, routing={"provider": {"only": ["acme"], "allow_fallbacks": False}})
    seat = make_seat(catalog, "acme/pick", run_id="r-9")
    await seat.chat([{"role": "user", "content": "hi"}])
    assert endpoint.bodies[0]["provider"] == {"only": ["acme"], "allow_fallbacks": False}
    headers = endpoint.requests[0].headers
    assert headers["x-gradebench-run"] == "r-9"
    assert headers["x-gradebench-role"] == "candidate"
    assert headers["x-gradebench-seq"] == "0"
    assert headers["x-gradebench-benchmark"] == "bench-1"


async def test_failed_call_names_entry_status_and_attempts() -> None:
    endpoint = Scripted(
        lambda body, req: httpx2.Response(
            503, json={"error": {"message": "overloaded"}}, headers={"retry-after-ms": "1"}
        )
    )
    seat = make_seat(scripted_catalog(endpoint, max_retries=2), "acme/pick")
    with pytest.raises(gb.CallError) as info:
        await seat.chat([{"role": "user", "content": "hi"}])
    assert str(info.value) == "acme/pick: HTTP 503 after 3 attempts: overloaded"
    assert info.value.status == 503 and info.value.attempts == 3
    assert len(endpoint.requests) == 3
    assert seat.calls[-1].error == str(info.value)


async def test_entry_renames_and_drops_parameters() -> None:
    # A model family that rejects max_tokens (wants max_completion_tokens) and any temperature but its default.
    endpoint = Scripted([completion("ok")])
    catalog = scripted_catalog(
        endpoint,
        rename_params={"max_tokens": "max_completion_tokens"},
        drop_params=("temperature",),
        params={"temperature": 0.2},
    )
    seat = make_seat(catalog, "acme/pick")
    await seat.chat([{"role": "user", "content": "hi"}], max_tokens=50, temperature=0)
    body = endpoint.bodies[0]
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body and "temperature" not in body


def test_catalog_file_takes_rename_and_drop() -> None:
    raw = {
        "grades": ["standard"],
        "ceiling": "a/x",
        "entries": [
            {
                "name": "a/x",
                "model": "x",
                "grade": "standard",
                "base_url": "http://x.invalid/v1",
                "price_in": 1.0,
                "price_out": 2.0,
                "price_cached_in": 0.1,
                "rename_params": {"max_tokens": "max_completion_tokens"},
                "drop_params": ["temperature"],
                "rate_limit_wait_s": 60,
            }
        ],
    }
    entry = gb.Catalog.from_dict(raw)["a/x"]
    assert entry.rename_params == {"max_tokens": "max_completion_tokens"}
    assert entry.drop_params == ("temperature",)
    assert entry.rate_limit_wait_s == 60
    # 1000 input tokens of which 800 cached, 100 output: 200 at 1.0, 800 at 0.1, 100 at 2.0 per 1M
    assert entry.cost(1000, 100, cached_input_tokens=800) == pytest.approx((200 * 1.0 + 800 * 0.1 + 100 * 2.0) / 1e6)


# ------------------------------------------------------------------------------------------- what providers report


async def test_no_usage_leaves_tokens_and_cost_unknown() -> None:
    body = completion("ok")
    del body["usage"]
    seat = make_seat(scripted_catalog(Scripted([body])), "acme/pick")
    call = (await seat.chat([{"role": "user", "content": "hi"}])).calls[0]
    assert (call.input_tokens, call.output_tokens, call.cost, call.cost_source) == (None, None, None, None)
    assert call.price_table_cost is None and not call.has_usage


async def test_partial_usage_keeps_what_was_reported_and_no_cost() -> None:
    body = completion("ok")
    body["usage"] = {"prompt_tokens": 12}
    call = (await make_seat(scripted_catalog(Scripted([body])), "acme/pick").chat([])).calls[0]
    assert (call.input_tokens, call.output_tokens, call.cost) == (12, None, None)


async def test_cached_and_reasoning_tokens_are_read_and_priced() -> None:
    body = completion("ok", tokens=(2000, 500))
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 1536}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 320}
    catalog = scripted_catalog(Scripted([body]), price_cached_in=0.1)
    call = (await make_seat(catalog, "acme/pick").chat([])).calls[0]
    assert (call.input_tokens, call.cached_input_tokens, call.output_tokens, call.reasoning_tokens) == (
        2000,
        1536,
        500,
        320,
    )
    # 464 fresh input at 1.0, 1536 cached at 0.1, 500 output (reasoning included) at 2.0, per 1M
    assert call.cost == pytest.approx((464 * 1.0 + 1536 * 0.1 + 500 * 2.0) / 1e6)
    assert call.cost_source == "price_table" and call.price_table_cost == call.cost


async def test_provider_reported_cost_wins_and_the_table_figure_stays_beside_it(tmp_path) -> None:
    body = completion("ok", tokens=(1000, 100))
    body["usage"]["cost"] = 0.0042  # OpenRouter: usage.cost in USD credits
    seat = make_seat(scripted_catalog(Scripted([body])), "acme/pick", cache=CallCache(tmp_path / "openrouter"))
    call = (await seat.chat([])).calls[0]
    assert call.cost == 0.0042 and call.cost_source == "provider"
    assert call.price_table_cost == pytest.approx((1000 * 1.0 + 100 * 2.0) / 1e6)

    header = httpx2.Response(200, json=completion("ok", tokens=(1000, 100)), headers={"x-litellm-response-cost": "0.5"})
    cache = CallCache(tmp_path / "litellm")
    litellm = scripted_catalog(Scripted([header]))  # one answer only: the second call must come from the cache
    call = (await make_seat(litellm, "acme/pick", cache=cache).chat([])).calls[0]
    assert call.cost == 0.5 and call.cost_source == "provider"
    again = (await make_seat(litellm, "acme/pick", cache=cache).chat([])).calls[0]
    assert again.cache_hit and again.cost == 0.5 and again.cost_source == "provider"  # the header's cost is kept


async def test_content_parts_are_joined_into_text() -> None:
    body = completion(None)
    body["choices"][0]["message"]["content"] = [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]
    reply = await make_seat(scripted_catalog(Scripted([body])), "acme/pick").chat([])
    assert reply.text == "Hello, world"


async def test_refusal_is_on_the_reply() -> None:
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    reply = await make_seat(scripted_catalog(Scripted([body])), "acme/pick").chat([])
    assert reply.text == "" and reply.refusal == "I can't help with that."


async def test_assistant_turn_is_replayed_with_every_field_and_stable_tool_ids() -> None:
    first = completion(tool_calls=[{"name": "lookup", "arguments": {"order_id": "A-1"}}])
    message = first["choices"][0]["message"]
    del message["tool_calls"][0]["id"]  # vLLM / Ollama: tool calls without ids
    message["reasoning_content"] = "The user wants an order looked up."
    message["reasoning_details"] = [{"type": "reasoning.text", "text": "look it up", "signature": "sig"}]
    endpoint = Scripted([first, completion("done")])
    reply = await make_seat(scripted_catalog(endpoint), "acme/pick").chat(
        [{"role": "user", "content": "A-1?"}], tools=[lookup]
    )
    assert reply.text == "done"
    turn, tool_message = endpoint.bodies[1]["messages"][1:3]
    assert turn["reasoning_content"] == "The user wants an order looked up."
    assert turn["reasoning_details"] == [{"type": "reasoning.text", "text": "look it up", "signature": "sig"}]
    assert turn["tool_calls"][0]["id"] == tool_message["tool_call_id"] == "call_0_0"
    assert reply.calls[0].tool_results[0]["id"] == "call_0_0"


async def test_a_key_echoed_back_is_scrubbed_from_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("ACME_KEY", key)
    echo = httpx2.Response(401, json={"error": {"message": f"Incorrect API key provided: {key}"}})
    catalog = scripted_catalog(Scripted([echo]), api_key_env="ACME_KEY")
    catalog["acme/pick"].api_key()  # gradebench holds the key from here on
    seat = make_seat(catalog, "acme/pick")
    with pytest.raises(gb.CallError) as caught:
        await seat.chat([])
    assert key not in str(caught.value) and "[redacted]" in str(caught.value)
    assert key not in (seat.calls[0].error or "")
