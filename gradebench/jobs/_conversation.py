"""Reading an OpenAI chat conversation the way a policy does, and playing a policy against real tools."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.protocol import content_text
from ..sim import Policy

__all__ = ["ToolExchange", "first_user_text", "ideal_answer", "system_text", "tool_exchanges", "tool_names"]


@dataclass(frozen=True, kw_only=True)
class ToolExchange:
    """One tool call in the conversation and what came back."""

    name: str
    """The tool's function name ("" when the call cannot be traced)."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments sent (empty when they were not a JSON object)."""
    result: Any = None
    """The decoded result; None when the call was skipped (a ``null`` result) or its content was not JSON."""


def first_user_text(messages: Sequence[Any]) -> str:
    """The text of the first user message (the request the conversation is about)."""
    return next((content_text(m.get("content")) for m in _dicts(messages) if m.get("role") == "user"), "")


def system_text(messages: Sequence[Any]) -> str:
    """The text of the system (or developer) messages, joined."""
    return "\n".join(
        content_text(m.get("content")) for m in _dicts(messages) if m.get("role") in ("system", "developer")
    )


def tool_names(tools: Iterable[Any]) -> set[str]:
    """The function names a request offers (OpenAI ``tools`` items, or flat ``{"name": ...}`` dicts)."""
    names = set()
    for spec in tools or ():
        if not isinstance(spec, Mapping):
            continue
        function = spec.get("function")
        name = function.get("name") if isinstance(function, Mapping) else spec.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def tool_exchanges(messages: Sequence[Any]) -> list[ToolExchange]:
    """Every answered tool call, in order: name and arguments from the assistant turn, result from the tool turn."""
    asked: dict[Any, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in _dicts(messages):
        if m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list):
            for call in m["tool_calls"]:
                if isinstance(call, Mapping):
                    function = call["function"] if isinstance(call.get("function"), Mapping) else {}
                    asked[call.get("id")] = (str(function.get("name") or ""), _arguments(function.get("arguments")))
        elif m.get("role") == "tool":
            call_id = m.get("tool_call_id")
            name, arguments = asked.get(call_id, (str(m.get("name") or ""), {}))
            out.append(ToolExchange(name=name, arguments=arguments, result=_result(m.get("content"))))
    return out


def ideal_answer(
    policy: Policy, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any], max_steps: int = 12
) -> str:
    """Play ``policy`` as the model against real (sync) ``@gb.tool`` tools until it answers; returns the answer text."""
    by_name = {t.name: t for t in tools}
    specs = [t.spec() for t in tools]
    conversation = [dict(m) for m in messages]
    for step in range(max_steps):
        ideal = policy.next_message(conversation, specs)
        if not ideal.tool_calls:
            return ideal.content or ""
        ids = [f"call_{step}_{i}" for i in range(len(ideal.tool_calls))]
        conversation.append(
            {
                "role": "assistant",
                "content": ideal.content,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for cid, c in zip(ids, ideal.tool_calls, strict=True)
                ],
            }
        )
        for cid, c in zip(ids, ideal.tool_calls, strict=True):
            conversation.append({"role": "tool", "tool_call_id": cid, "content": json.dumps(_run(by_name, c))})
    raise RuntimeError(f"policy {policy.name!r} gave no final answer within {max_steps} steps")


def _run(by_name: Mapping[str, Any], call: Any) -> Any:
    """Run one requested tool the way the seat does: a failure becomes an ``{"error": ...}`` result."""
    if call.name not in by_name:
        return {"error": f"no tool named {call.name!r}; tools: {sorted(by_name)}"}
    try:
        return by_name[call.name].fn(**call.arguments)
    except Exception as exc:  # the policy must see the failure, as a model would
        return {"error": f"{type(exc).__name__}: {exc}"}


def _dicts(messages: Any) -> list[Mapping[str, Any]]:
    return [m for m in messages or () if isinstance(m, Mapping)]


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _result(content: Any) -> Any:
    text = content_text(content)
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None  # a result the model cannot read tells it nothing
