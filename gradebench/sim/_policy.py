"""Policies: what an ideal model would say next in a known conversation.

An example job ships a policy; the simulated fleet asks the first registered policy that recognises a request for the
ideal next assistant message, then perturbs it by the model's profile (skips a tool call, misreads a tool result,
pads the answer, picks a wrong field value). A request no policy recognises gets a generic answer.

A policy sees only what a real model would see: the request's messages and tools. Nothing travels beside the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["IdealMessage", "Policy", "ToolRequest", "policies", "register_policy"]


@dataclass(frozen=True, kw_only=True)
class ToolRequest:
    """One tool call the ideal message makes."""

    name: str
    """The tool's function name."""
    arguments: dict[str, Any]
    """The arguments, as a JSON object."""


@dataclass(frozen=True, kw_only=True)
class IdealMessage:
    """The ideal next assistant message: tool calls, or a final answer (content)."""

    content: str | None = None
    """The final answer text; None when the message only calls tools."""
    tool_calls: tuple[ToolRequest, ...] = field(default_factory=tuple)
    """Tool calls to make; empty for a final answer."""


class Policy(Protocol):
    """What an example job ships so the simulated fleet can play a model that does the job."""

    name: str
    """A label for logs."""

    def matches(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
        """True when this request is a conversation of this policy's job (e.g. by its tools or system prompt)."""
        ...

    def next_message(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> IdealMessage:
        """The ideal next assistant message.

        ``messages`` are OpenAI chat messages as sent (tool results are ``role="tool"`` messages whose content is JSON
        text). A tool result may be ``null`` when the model skipped the call: the policy must then still answer,
        the way a model that did not look would (guessing the most common case).
        """
        ...


_POLICIES: list[Policy] = []


def register_policy(policy: Policy) -> Policy:
    """Add a policy the simulated fleet consults (later registrations of the same name replace earlier ones)."""
    _POLICIES[:] = [p for p in _POLICIES if p.name != policy.name]
    _POLICIES.append(policy)
    return policy


def policies() -> list[Policy]:
    """The registered policies (the example jobs register theirs when `gradebench.jobs` is imported)."""
    return list(_POLICIES)
