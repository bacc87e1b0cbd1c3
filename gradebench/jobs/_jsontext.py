"""Finding the JSON object in a model's answer: bare, fenced in a ```json block, or with prose around it."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_json_object"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)


def parse_json_object(text: Any) -> dict[str, Any]:
    """The JSON object an answer gives; the last one when there are several. Raises ValueError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"the answer has no text to read a JSON object from: {text!r}")
    for block in reversed(_FENCE.findall(text)):
        value = _loads(block)
        if isinstance(value, dict):
            return value
    value = _loads(text)
    if isinstance(value, dict):
        return value
    # Prose around the object: decode from every "{" and keep the last top-level object (the conclusion comes last).
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found = value
        position = text.find("{", end)
    if found is None:
        raise ValueError(f"the answer contains no JSON object: {_preview(text)}")
    return found


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _preview(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
