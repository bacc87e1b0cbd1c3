"""Thinking models in the simulated fleet, in the two shapes providers return them.

A profile's ``reasoning`` names the flavour; its model thinks a short deterministic text (``thinking``) before every
answer. The thinking tokens are output tokens: ``usage.completion_tokens_details.reasoning_tokens`` counts them and
``completion_tokens`` includes them (as OpenAI, DeepSeek and OpenRouter count them), and ``max_tokens`` bounds both.

- ``"deepseek"`` — DeepSeek's thinking mode. The assistant message carries ``reasoning_content`` beside ``content``.
  An assistant turn that called tools must be passed back with its ``reasoning_content`` in every later request;
  a request that drops it is answered 400 with DeepSeek's message (``DEEPSEEK_MISSING``). On other turns the field may
  be dropped (DeepSeek ignores it there).
- ``"openrouter"`` — OpenRouter's normalised reasoning: ``reasoning`` (the text) and ``reasoning_details`` (a list of
  ``reasoning.text`` objects with a signature) that must come back unchanged. As Anthropic's extended thinking behind
  OpenRouter requires, an assistant turn that called tools since the last user message must carry its
  ``reasoning_details``, and any ``reasoning_details`` passed back must still match their signature; else 400.
"""

from __future__ import annotations

import random
from typing import Any

from .._base.protocol import content_text
from ._perturb import stable_hex
from ._profiles import REASONING_FLAVOURS as FLAVOURS

__all__ = ["DEEPSEEK_MISSING", "FLAVOURS", "attach", "problem", "thinking"]

DEEPSEEK_MISSING = "The `reasoning_content` in the thinking mode must be passed back to the API."
"""DeepSeek's error message for a tool-call turn passed back without its ``reasoning_content``."""

_CHECKS = (
    "Let me make sure nothing in the request is left out.",
    "I should answer exactly what was asked, no more.",
    "The facts given so far agree with each other.",
    "Nothing here calls for a guess.",
    "I will keep the reasoning short and the answer plain.",
)


def thinking(messages: list[dict[str, Any]], message: dict[str, Any], rng: random.Random) -> str:
    """What the model thought before sending ``message``: the request's gist, the tool results read, the next step.

    It never names the model (answers and their records reach the blind judge).
    """
    users = [m for m in messages if m.get("role") == "user"]
    words = content_text(users[-1].get("content")).split() if users else []
    gist = " ".join(words[:16]) + (" ..." if len(words) > 16 else "")
    out = [f'The request reads: "{gist}".' if gist else "There is no user request to read."]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    results = sum(1 for m in messages[last + 1 :] if m.get("role") == "tool")
    if results:
        out.append(f"I have {results} tool result{'s' if results > 1 else ''} to take into account.")
    names = sorted({(c.get("function") or {}).get("name", "?") for c in message.get("tool_calls") or []})
    out.append(f"Before answering I need to call {', '.join(names)}." if names else "I can answer now.")
    out.append(rng.choice(_CHECKS))
    return " ".join(out)


def _signature(seed: int, model: str, text: Any, tool_calls: Any) -> str:
    """What the provider signs a thinking block with: the text and the tool calls of its turn, under the model."""
    return stable_hex(seed, model, "reasoning-signature", text, tool_calls or [], n=64)


def attach(flavour: str, message: dict[str, Any], text: str, *, seed: int, model: str) -> dict[str, Any]:
    """The assistant message with its thinking, in the flavour's fields."""
    if flavour == "deepseek":
        return {**message, "reasoning_content": text}
    signature = _signature(seed, model, text, message.get("tool_calls"))
    detail = {"type": "reasoning.text", "text": text, "signature": signature, "format": "unknown", "index": 0}
    return {**message, "reasoning": text, "reasoning_details": [detail]}


def problem(flavour: str, messages: list[dict[str, Any]], *, seed: int, model: str) -> str | None:
    """Why the provider rejects this conversation (the 400's message), or None when it accepts it."""
    if flavour == "deepseek":
        for m in messages:
            if m.get("role") == "assistant" and m.get("tool_calls") and not isinstance(m.get("reasoning_content"), str):
                return DEEPSEEK_MISSING
        return None
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        details = m.get("reasoning_details")
        if details is not None:
            intact = (
                isinstance(details, list)
                and details
                and all(
                    isinstance(d, dict)
                    and d.get("type") == "reasoning.text"
                    and d.get("signature") == _signature(seed, model, d.get("text"), m.get("tool_calls"))
                    for d in details
                )
            )
            if not intact:
                return f"messages.{i}: Invalid `signature` in `thinking` block: pass reasoning_details back unchanged"
        elif m.get("tool_calls") and i > last_user:
            return (
                f"messages.{i}: an assistant turn with tool_calls must be passed back with its reasoning_details "
                "when thinking is enabled"
            )
    return None
