"""What gradebench and the endpoints it talks to agree on, in one place both sides import.

- the ``x-gradebench-*`` label headers every request carries (opaque ids, never names);
- the tags of the judge's prompt (``<task>``, ``<input>``, ``<rubric>``, ``<checked_in_code>`` and the two
  ``<transcript label=".." role="..">`` sections, each tag alone on its line), written by the judge and read back by
  the simulated judge;
- the text of a chat message as providers send it: a string or a list of parts, refusals, reasoning;
- the ``custom_id`` of a request sent in a batch (`batch_custom_id`): a batch line carries no headers, so its labels
  travel in its id (`batch_labels` reads them back, as the simulated fleet does to answer a batched request as it
  answers the same request sent alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ATTEMPT_HEADER",
    "BENCHMARK_HEADER",
    "REASONING_FIELDS",
    "ROLE_HEADER",
    "RUN_HEADER",
    "SAMPLE_HEADER",
    "SEQ_HEADER",
    "batch_custom_id",
    "batch_labels",
    "block",
    "content_text",
    "label_headers",
    "reasoning_text",
    "section",
    "transcript_block",
    "transcripts",
]

BENCHMARK_HEADER = "x-gradebench-benchmark"
RUN_HEADER = "x-gradebench-run"
ROLE_HEADER = "x-gradebench-role"
SEQ_HEADER = "x-gradebench-seq"
ATTEMPT_HEADER = "x-gradebench-attempt"
SAMPLE_HEADER = "x-gradebench-sample"


def label_headers(*, benchmark: str, run: str, role: str, seq: int, attempt: int, sample: int) -> dict[str, str]:
    """The opaque labels of one request: which benchmark, run, role, call and draw it is (no names)."""
    return {
        BENCHMARK_HEADER: benchmark,
        RUN_HEADER: run,
        ROLE_HEADER: role,
        SEQ_HEADER: str(seq),
        ATTEMPT_HEADER: str(attempt),
        SAMPLE_HEADER: str(sample),
    }


CUSTOM_ID_LENGTH = 64
"""The longest ``custom_id`` every batch API takes (Anthropic's: 1 to 64 of ``[a-zA-Z0-9_-]``)."""
_CUSTOM_ID = re.compile(
    r"^gb-(?P<run>[0-9a-zA-Z]+)-(?P<seq>\d+)-(?P<attempt>\d+)-(?P<sample>\d+)-(?P<digest>[0-9a-f]+)$"
)


def batch_custom_id(labels: dict[str, str], cache_key: str) -> str:
    """The ``custom_id`` of a request sent in a batch: ``gb-RUN-SEQ-ATTEMPT-SAMPLE-DIGEST`` (its labels, then as
    much of its cache key as fits in `CUSTOM_ID_LENGTH`: unique within any batch, naming nothing)."""
    head = f"gb-{labels[RUN_HEADER]}-{labels[SEQ_HEADER]}-{labels[ATTEMPT_HEADER]}-{labels[SAMPLE_HEADER]}-"
    room = CUSTOM_ID_LENGTH - len(head)
    if room < 24:  # fewer than 96 bits of the key would not keep two requests of one batch apart
        raise ValueError(f"labels too long for a batch custom_id: {head!r}")
    return head + cache_key[:room]


def batch_labels(custom_id: str) -> dict[str, str] | None:
    """The label headers a `batch_custom_id` carries (the role is ``judge``: only verdicts are batched), or None for
    an id gradebench did not make."""
    found = _CUSTOM_ID.match(custom_id)
    if found is None:
        return None
    return {
        RUN_HEADER: found["run"],
        ROLE_HEADER: "judge",
        SEQ_HEADER: found["seq"],
        ATTEMPT_HEADER: found["attempt"],
        SAMPLE_HEADER: found["sample"],
    }


def block(tag: str, body: str) -> str:
    """``<tag>``, the body and ``</tag>``, each on its own line."""
    return f"<{tag}>\n{body}\n</{tag}>\n"


def transcript_block(label: str, role: str, lines: str) -> str:
    """One transcript section of the judge's prompt: ``role`` is ``reference`` or ``candidate``."""
    return f'<transcript label="{label}" role="{role}">\n{lines}\n</transcript>\n'


_TRANSCRIPT = re.compile(r'^<transcript label="(?P<label>[^"]*)" role="(?P<role>reference|candidate)">$')


def transcripts(text: str) -> list[tuple[str, str]]:
    """The ``(role, body)`` of each transcript section of a prompt, in the order they appear."""
    found: list[tuple[str, str]] = []
    role: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        opening = _TRANSCRIPT.match(line.strip())
        if opening:
            role, body = opening.group("role"), []
        elif role is not None and line.strip() == "</transcript>":
            found.append((role, "\n".join(body)))
            role = None
        elif role is not None:
            body.append(line)
    return found


def section(text: str, tag: str) -> str | None:
    """The lines between ``<tag>`` and ``</tag>`` (each alone on a line); the last such section wins."""
    lines = text.splitlines()
    opens = [i for i, line in enumerate(lines) if line.strip() == f"<{tag}>"]
    for start in reversed(opens):
        for end in range(start + 1, len(lines)):
            if lines[end].strip() == f"</{tag}>":
                return "\n".join(lines[start + 1 : end])
    return None


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
