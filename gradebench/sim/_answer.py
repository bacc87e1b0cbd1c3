"""Composing the assistant message a simulated model sends: from the judge, a policy or the generic answer, perturbed by
the model's profile, shaped to ``response_format`` and cut to the request's token limit.

The fleet (``gradebench.sim._fleet``) validates the request and owns the HTTP side (status codes, usage, latency);
`compose_answer` and `truncate` are what it asks for the message. Every random decision is drawn from a generator
seeded by the ``key`` the fleet passes (fleet seed, canonical body, label headers), so the same request gives the same
message.
"""

from __future__ import annotations

import json
from typing import Any

from .._base.canonical import canonical_json
from .._base.protocol import content_text
from . import _grader as sim_judge
from ._perturb import (
    adjust_verbosity,
    generic_answer,
    misread,
    opening,
    perturb_answer,
    resolve,
    rng_for,
    sign,
    stable_hex,
)
from ._policy import Policy
from ._policy import policies as registered_policies
from ._profiles import Profile
from ._prompt_cache import tokens as _tokens

__all__ = ["compose_answer", "truncate"]


def compose_answer(
    profile: Profile,
    body: dict[str, Any],
    key: list[Any],
    *,
    seed: int,
    policies: list[Policy] | None,
    run_labels: tuple[str, str],
) -> tuple[dict[str, Any], str]:
    """The assistant message and finish reason for a valid chat request.

    ``key`` seeds per-request decisions; ``run_labels`` (run id, semantic attempt) seed the per-run ones. ``seed`` is
    the fleet's; ``policies`` None: the ones registered with `register_policy`, looked up now.
    """
    messages: list[dict[str, Any]] = body["messages"]
    tools: list[dict[str, Any]] = body.get("tools") or []
    fmt = body.get("response_format") if isinstance(body.get("response_format"), dict) else None
    users = [m for m in messages if m.get("role") == "user"]
    last_user = content_text(users[-1].get("content")) if users else ""

    if sim_judge.is_judge_request(last_user):
        verdict = sim_judge.judge(
            last_user,
            rng_for(*key, "judge"),
            noise=profile.judge_noise,
            position_bias=profile.position_bias,
            favours=(profile.signature, profile.self_preference) if profile.signature else None,
            verbosity_bias=profile.verbosity_bias,
            skims=profile.judge_skims,
        )
        schema_ok = fmt is not None and fmt.get("type") == "json_schema" and not profile.ignores_schema
        return _content(sim_judge.render(verdict, as_json=schema_ok)), "stop"

    policy = _policy(policies, messages, tools)
    if policy is None:
        return _final(profile, generic_answer(last_user, fmt, rng_for(*key, "wording")), fmt, key, messages), "stop"

    # Stickiness: skip and misread decisions are drawn per run (label headers + the conversation's opening),
    # not per request, so a tool skipped in one turn stays skipped in the next and a misread stays consistent.
    run_key = [seed, profile.model, *run_labels, canonical_json(opening(messages)), canonical_json(tools)]
    seen = misread(profile, messages, run_key)
    tool_choice = body.get("tool_choice")
    allow_tools = bool(tools) and tool_choice != "none"
    ideal = resolve(policy, seen, tools, profile, run_key, allow_tools)
    if ideal is None:
        return _final(profile, generic_answer(last_user, fmt, rng_for(*key, "wording")), fmt, key, messages), "stop"

    if ideal.tool_calls:
        calls = list(ideal.tool_calls)
        if body.get("parallel_tool_calls") is False:
            calls = calls[:1]
        tool_calls = [
            {
                "id": "call_" + stable_hex(*key, "call", i, n=24),
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
            }
            for i, c in enumerate(calls)
        ]
        return {"role": "assistant", "content": ideal.content, "tool_calls": tool_calls}, "tool_calls"

    return _final(profile, ideal.content or "", fmt, key, messages), "stop"


def truncate(
    body: dict[str, Any], message: dict[str, Any], finish: str, thought: str = ""
) -> tuple[dict[str, Any], str, int, str]:
    """Cut the answer to ``max_completion_tokens``/``max_tokens``, of which the thinking comes first.

    Returns message, finish reason, the message's tokens (without the thinking) and the thinking as sent.
    """
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    content = message.get("content") or ""
    calls = message.get("tool_calls") or []
    chars = len(content) + sum(len(c["function"]["name"]) + len(c["function"]["arguments"]) for c in calls)
    tokens = _tokens(chars)
    thinking = _tokens(len(thought)) if thought else 0
    if not isinstance(limit, int) or limit <= 0 or thinking + tokens <= limit:
        return message, finish, tokens, thought
    if thinking >= limit:  # the budget ran out while thinking: no answer at all, as a reasoning model sends it
        empty = {k: v for k, v in message.items() if k != "tool_calls"}
        return {**empty, "content": ""}, "length", 0, thought[: limit * 4]
    limit -= thinking
    budget = limit * 4
    message = dict(message)
    if content:
        message["content"] = content[:budget]
        budget -= len(message["content"])
    if calls:
        # A real model cut short mid-call leaves broken arguments; the caller must check finish_reason.
        cut = []
        for c in calls:
            args = c["function"]["arguments"][: max(0, budget)]
            budget -= len(args)
            cut.append({**c, "function": {**c["function"], "arguments": args}})
            if budget <= 0:
                break
        message["tool_calls"] = cut
    return message, "length", limit, thought


def _final(
    profile: Profile, text: str, fmt: dict[str, Any] | None, key: list[Any], messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """A final answer as this profile gives it: right or wrong by its accuracy, padded or cut by its verbosity."""
    schema = ((fmt or {}).get("json_schema") or {}).get("schema")
    if rng_for(*key, "accuracy").random() >= profile.accuracy:
        prompt = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") in ("system", "user"))
        text = perturb_answer(text, rng_for(*key, "wrong"), schema if isinstance(schema, dict) else None, prompt)
    text = adjust_verbosity(text, profile.verbosity, rng_for(*key, "verbosity"))
    if profile.signature:
        text = sign(text, profile.signature)
    return _content(_shape(profile, text, fmt, rng_for(*key, "shape")))


def _content(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "refusal": None}


def _shape(profile: Profile, text: str, fmt: dict[str, Any] | None, rng) -> str:
    """A schema-ignoring profile wraps a json_schema answer in prose and a fenced block."""
    if not (profile.ignores_schema and fmt and fmt.get("type") == "json_schema"):
        return text
    lead = rng.choice(["Here is my answer.", "Sure. Here is the result:", "After reviewing the request:"])
    return f"{lead}\n\n```json\n{text}\n```\n\nLet me know if anything needs adjusting."


def _policy(
    policies: list[Policy] | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> Policy | None:
    """The first policy that recognises the request; ``policies`` None: the registered ones."""
    registered = policies if policies is not None else registered_policies()
    return next((p for p in registered if p.matches(messages, tools)), None)
