"""Reading chat messages as providers send them: text that may come as a list of parts, refusals, reasoning."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["REASONING_FIELDS", "content_text", "reasoning_text"]

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
"""Where providers put a model's reasoning: DeepSeek ``reasoning_content``; OpenRouter ``reasoning`` (text) and
``reasoning_details`` (structured blocks that must go back unchanged)."""


def content_text(content: Any) -> str:
    """The text of a message content: a string, or the joined text of a list of parts (None: empty)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    texts.append(text)
            elif isinstance(part, str):
                texts.append(part)
        return "".join(texts)
    return json.dumps(content, ensure_ascii=False, default=str)


def reasoning_text(message: Mapping[str, Any]) -> str | None:
    """The model's reasoning in an assistant message, as text; None when it carries none."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    details = message.get("reasoning_details")
    if isinstance(details, list) and details:
        texts = [str(d.get("text") or d.get("summary") or "") for d in details if isinstance(d, Mapping)]
        joined = "\n".join(t for t in texts if t)
        return joined or None
    return None
