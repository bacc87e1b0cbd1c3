"""Prompt caching as OpenAI documents it, for the simulated fleet.

A prompt is the canonical text ``prompt_text`` builds from a request; the sim counts ``ceil(chars / 4)`` tokens of it,
so token ``i`` is characters ``4i .. 4i+3``. A request whose prompt starts with a prefix an earlier request to the same
model recorded gets that prefix served from cache: at least ``MIN_TOKENS`` (1024), in steps of ``STEP_TOKENS`` (128),
reported in ``usage.prompt_tokens_details.cached_tokens``. The last token of a prompt is always computed, so a repeated
prompt is served at most ``prompt_tokens - 1`` tokens from cache (rounded down to a step).

``PromptCache`` keeps, per model, the hash of each prompt's prefix at every step boundary from 1024 tokens on:

- **Keys.** A request that sends ``prompt_cache_key`` reads and writes only the prefixes recorded under that key (OpenAI
  routes by prefix hash and key together, so requests with different keys land on different machines); a request
  without one shares the model's unkeyed prefixes. The real routing is best effort (and overflows to other machines
  past about 15 requests a minute per prefix and key); the sim's is exact and never overflows.
- **Expiry.** A prefix expires after ``ttl_s`` (default 5 minutes, the low end of OpenAI's "5 to 10 minutes of
  inactivity") of *simulated* time without a request touching it; ``prompt_cache_retention: "24h"`` keeps it a day.
  The fleet's clock is real time divided by its latency scale; at scale 0 time is frozen and nothing expires.
- **Memory.** At most ``max_prefixes`` boundary hashes per model (least recently used dropped first), 16 bytes each.

Caching depends on request order: a prefix is recorded when its request arrives (before the simulated latency), so of
two identical-prefix requests in flight at once, the second hits only if the first arrived before it.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .._base.canonical import canonical_json
from .._base.protocol import content_text

__all__ = ["CHARS_PER_TOKEN", "MIN_TOKENS", "STEP_TOKENS", "PromptCache", "prompt_text", "tokens"]

CHARS_PER_TOKEN = 4
"""The sim's tokenizer: every 4 characters of prompt or answer are one token."""
MIN_TOKENS = 1024
"""The shortest prefix served from cache."""
STEP_TOKENS = 128
"""Cached prefixes grow in steps of this many tokens: 1024, 1152, 1280, ..."""
RETENTION_S = {"in_memory": 300.0, "24h": 86_400.0}
"""Simulated seconds of inactivity before a prefix expires, by ``prompt_cache_retention``."""


def tokens(chars: int) -> int:
    """Tokens of a text of ``chars`` characters (at least 1)."""
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def _frame(role: Any) -> str:
    """Four characters of role framing per message: ``<sy>``, ``<us>``, ``<as>``, ``<to>``, ``<de>``."""
    return f"<{role[:2]}>" if isinstance(role, str) and len(role) >= 2 else "<??>"


def prompt_text(body: dict[str, Any]) -> str:
    """The prompt as the sim's model reads it, whose length is what the sim bills as prompt tokens.

    Tools, then the response format, then every message in order: four characters of role framing, the content text,
    the tool calls as canonical JSON, and on an assistant turn that calls tools the reasoning it passed back
    (``reasoning_content``, or ``reasoning_details`` as canonical JSON): what a thinking model reads again.
    Tools and the response schema come first because that is where OpenAI renders them (into the system prefix): a
    tool loop's turns then share them as part of their common prefix, and a change of tools misses the cache.
    """
    parts = [canonical_json(body[extra]) for extra in ("tools", "response_format") if body.get(extra)]
    for m in body["messages"]:
        parts.append(_frame(m.get("role")))
        parts.append(content_text(m.get("content")))
        if m.get("tool_calls"):
            parts.append(canonical_json(m["tool_calls"]))
            if isinstance(m.get("reasoning_content"), str):
                parts.append(m["reasoning_content"])
            if m.get("reasoning_details"):
                parts.append(canonical_json(m["reasoning_details"]))
    return "".join(parts)


class PromptCache:
    """The prompt prefixes each model saw recently: how many tokens of a new prompt are served from cache."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        ttl_s: float = RETENTION_S["in_memory"],
        max_prefixes: int = 4096,
    ):
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be > 0, got {ttl_s}")
        if max_prefixes < 1:
            raise ValueError(f"max_prefixes must be >= 1, got {max_prefixes}")
        self.clock: Callable[[], float] = clock or (lambda: 0.0)
        """Simulated seconds (monotonic); a constant clock freezes time, so nothing expires."""
        self.ttl_s = float(ttl_s)
        """Simulated seconds of inactivity before a prefix expires (``prompt_cache_retention: "24h"`` overrides it)."""
        self.max_prefixes = int(max_prefixes)
        """Most boundary hashes kept per model; the least recently used go first."""
        # model -> (prompt_cache_key, prefix digest) -> simulated time it expires at
        self._stores: dict[str, OrderedDict[tuple[str | None, bytes], float]] = {}
        self._lock = threading.Lock()  # the loopback server and an in-process client may share one fleet

    def __len__(self) -> int:
        return sum(len(s) for s in self._stores.values())

    def clear(self) -> None:
        """Forget every prefix (a cold cache)."""
        with self._lock:
            self._stores.clear()

    @staticmethod
    def boundaries(text: str) -> list[tuple[int, bytes]]:
        """``(tokens, digest)`` of each cacheable prefix of ``text``, shortest first (one pass over the text)."""
        last = tokens(len(text)) - 1  # the last token is always computed
        if last < MIN_TOKENS:
            return []
        out = []
        h = hashlib.sha256()
        done = 0
        for n in range(MIN_TOKENS, last + 1, STEP_TOKENS):
            h.update(text[done * CHARS_PER_TOKEN : n * CHARS_PER_TOKEN].encode())
            done = n
            out.append((n, h.copy().digest()[:16]))
        return out

    def serve(self, model: str, text: str, *, key: str | None = None, retention: Any = None) -> int:
        """Tokens of ``text`` served from ``model``'s cache (under ``key``), then record its prefixes as seen now.

        ``retention`` is the request's ``prompt_cache_retention`` (``"in_memory"`` or ``"24h"``; anything else: the
        cache's own ``ttl_s``).
        """
        marks = self.boundaries(text)
        if not marks:
            return 0
        ttl = RETENTION_S["24h"] if retention == "24h" else self.ttl_s
        with self._lock:
            now = self.clock()
            store = self._stores.setdefault(model, OrderedDict())
            cached = 0
            for n, digest in reversed(marks):
                expires = store.get((key, digest))
                if expires is None:
                    continue
                if expires <= now:
                    del store[(key, digest)]
                    continue
                cached = n
                break
            for _, digest in marks:
                store[(key, digest)] = max(now + ttl, store.get((key, digest), 0.0))
                store.move_to_end((key, digest))
            while len(store) > self.max_prefixes:
                store.popitem(last=False)
        return cached
