"""Keys never leave gradebench: every API key value it reads is scrubbed from text before it is stored or shown.

A provider may echo the ``Authorization`` value back in an error message; a tool may return what it found in the
environment. `scrub` replaces every key value gradebench holds (each one read through `Entry.api_key`) with
``[redacted]`` in error texts, response bodies, tool results, run errors and log lines, before any of them reaches the
cache, a report, a log or another provider's prompt.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

__all__ = ["REDACTED", "has_surrogates", "remember", "scrub", "scrub_bytes", "scrub_value", "utf8_safe"]

REDACTED = "[redacted]"
MIN_LENGTH = 8
"""Shorter values (a placeholder like ``no-key``) are not secrets worth a pass over every text."""

_keys: set[str] = set()
_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()


def remember(value: str) -> None:
    """Hold ``value`` as a key to scrub from now on."""
    global _pattern
    if len(value) < MIN_LENGTH or value in _keys:
        return
    with _lock:
        _keys.add(value)
        _pattern = re.compile("|".join(re.escape(k) for k in sorted(_keys, key=len, reverse=True)))


def scrub(text: str) -> str:
    """``text`` with every known key value replaced by ``[redacted]``."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def scrub_bytes(body: bytes) -> bytes:
    """A response body with every known key value replaced (cheap when none occurs: a substring test per key)."""
    if not _keys or not any(k.encode() in body for k in _keys):
        return body
    return scrub(body.decode("utf-8", errors="replace")).encode()


def scrub_value(value: Any) -> Any:
    """A JSON-like value with every known key value replaced in its strings."""
    if not _keys:
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    if not any(k in text for k in _keys):
        return value
    return json.loads(scrub(text))


class _ScrubFilter(logging.Filter):
    """The last guard: a gradebench log line never carries a key, whatever was formatted into it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _pattern is not None:
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True


logging.getLogger("gradebench").addFilter(_ScrubFilter())


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(value: Any) -> bool:
    """Whether a JSON-like value holds a lone surrogate anywhere (a JSON ``"\\ud800"`` escape decodes to one)."""
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(has_surrogates(k) or has_surrogates(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_surrogates(v) for v in value)
    return False


def utf8_safe(value: Any) -> Any:
    """A JSON-like value whose every string is UTF-8: a lone surrogate becomes U+FFFD. Text that cannot be UTF-8
    fails every store, hash and frame downstream (sqlite, sha256, polars), so one odd character in one answer would
    stop a whole race. ``value`` itself comes back when it holds none."""
    if not has_surrogates(value):
        return value
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    return [utf8_safe(v) for v in value]
