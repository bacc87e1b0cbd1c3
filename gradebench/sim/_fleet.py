"""The simulated OpenAI-compatible fleet: one async handler that answers ``/v1/chat/completions`` and ``/v1/models``,
and OpenAI's Files and Batch APIs (``/v1/files``, ``/v1/batches``: `gradebench.sim._batches`), whose requests it
answers as it answers the same requests sent alone.

The handler is served in-process through ``httpx2.MockTransport`` (the real openai client on top) or over a loopback
socket (``gradebench.sim._server``). The fleet owns the HTTP side: routing, the request log, failure injection, the
server-side rate limit, latency, usage and the catalog. The message itself is composed by ``gradebench.sim._answer``
(the sim judge, the first policy that recognises the request perturbed by the model's profile, or a generic answer).
Everything random is drawn from generators seeded with the fleet seed, the canonical request body and the
``x-gradebench-*`` label headers, so the same request gives the same answer. Usage reports what a provider's would:
prompt prefixes served from cache (``gradebench.sim._prompt_cache``; these depend on the order requests arrive in) and,
for a thinking profile, reasoning tokens (``gradebench.sim._reasoning``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx2

from .._base.canonical import canonical_json
from .._base.protocol import ATTEMPT_HEADER, RUN_HEADER, SAMPLE_HEADER, SEQ_HEADER
from .._calls.session import mount
from .._catalog.catalog import Catalog, Entry
from . import _reasoning as reasoning
from ._answer import compose_answer, truncate
from ._batches import BatchOptions, BatchService
from ._drift import BEHAVIOUR_FIELDS as _BEHAVIOUR
from ._drift import Drift, drifted
from ._perturb import rng_for, stable_hex
from ._policy import Policy
from ._profiles import CEILING, GRADES, PICKS, PROFILES, Profile
from ._prompt_cache import PromptCache, prompt_text
from ._prompt_cache import tokens as _tokens

__all__ = ["DEFAULT_BASE_URL", "LATENCY_ENV", "SimFleet", "SimRequest"]

DEFAULT_BASE_URL = "http://sim.gradebench.invalid/v1"
"""Base URL of the in-process fleet (``.invalid``: it can never resolve to a real host)."""

LATENCY_ENV = "GRADEBENCH_SIM_LATENCY_SCALE"
"""Environment variable with the default latency scale (tests set 0)."""

log = logging.getLogger("gradebench")

TYPICAL_TOKENS = 40
"""Output tokens of a typical call, for an entry's typical latency (a job's answer, a verdict)."""

_LABELS = (RUN_HEADER, SEQ_HEADER, ATTEMPT_HEADER, SAMPLE_HEADER)


@dataclass(frozen=True, kw_only=True)
class SimRequest:
    """One HTTP request the fleet received, as tests and diagnostics see it."""

    method: str
    """HTTP method, e.g. ``POST``."""
    path: str
    """URL path, e.g. ``/v1/chat/completions``."""
    headers: dict[str, str]
    """Request headers, names lower-cased (the authorization value is redacted)."""
    body: dict[str, Any] | None
    """The parsed JSON body, or None (no body, or not a JSON object)."""
    status: int
    """The status the fleet answered with."""


class _Bucket:
    """A token bucket in simulated time (real time divided by the latency scale)."""

    def __init__(self, rpm: int, burst: int, scale: float):
        self.rate = rpm / 60.0 / scale  # tokens per real second
        self.capacity = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()

    def take(self) -> float:
        """Take a token; returns 0 when allowed, else the real seconds until one is available."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


def _error(status: int, message: str, kind: str, *, code: str | None = None, headers: dict | None = None):
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return httpx2.Response(status, json=body, headers=headers)


class SimFleet:
    """The simulated models, answering OpenAI chat-completion requests deterministically by profile."""

    def __init__(
        self,
        *,
        latency_scale: float | None = None,
        seed: int = 0,
        profiles: Iterable[Profile] | None = None,
        policies: Iterable[Policy] | None = None,
        record: bool = True,
        drift: Drift | None = None,
        batch: BatchOptions | None = None,
    ):
        """``latency_scale`` None reads ``GRADEBENCH_SIM_LATENCY_SCALE`` (default 1); ``policies`` None: the ones
        registered with `register_policy` (the example jobs register theirs when imported), looked up per request;
        ``drift``: entries that now answer as another profile does, behind the same name (see `set_drift`);
        ``batch``: how its Batch API behaves (delay, expiry, errors; see `BatchOptions`)."""
        if latency_scale is None:
            latency_scale = float(os.environ.get(LATENCY_ENV, "1"))
        if latency_scale < 0:
            raise ValueError(f"latency_scale must be >= 0, got {latency_scale}")
        self.latency_scale = float(latency_scale)
        self.seed = seed
        self.policies = None if policies is None else list(policies)
        self.record = record
        """Whether `requests` keeps every request answered (off for long benchmarks: it grows with them)."""
        self.profiles: dict[str, Profile] = {p.model: p for p in (profiles if profiles is not None else PROFILES)}
        self._by_name = {p.name: p for p in self.profiles.values()}
        self._drifted: dict[str, Profile] = {}
        self.set_drift(drift)
        self._slots: list[SimRequest | None] = []
        self._buckets: dict[str, _Bucket] = {}
        self.prompt_cache = PromptCache(clock=self.clock)
        """The prompt prefixes each model has seen (``prompt_cache.clear()`` for a cold cache)."""
        self.batch = BatchService(self._batched, batch, scale=self.latency_scale, seed=seed)
        """The Files and Batch APIs: ``batch.batches`` holds every batch, ``batch.with_options(...)`` changes how new
        ones behave."""

    def set_drift(self, drift: Drift | None) -> None:
        """From now on, answer each entry named in ``drift`` (by entry name or model id) as the profile it maps to
        (a name, a model id or a `Profile`), or with the behaviour fields a mapping gives (e.g. ``{"skip_rate": 0.3}``),
        behind the same name, model id, prices and catalog: a provider changing its model (see
        ``gradebench.sim._drift``). None or ``{}``: every entry answers as its own profile again."""
        self._drifted = drifted(self.profiles, drift)

    @property
    def drift(self) -> dict[str, str]:
        """The drifted entries: entry name -> the profile (or, for changed fields only, the entry) they answer as."""
        return {self.profiles[m].name: self._like(p) for m, p in self._drifted.items()}

    def _like(self, served: Profile) -> str:
        same = [p.name for p in self.profiles.values() if all(getattr(p, f) == getattr(served, f) for f in _BEHAVIOUR)]
        return same[0] if same else f"{served.name} (changed)"

    def clock(self) -> float:
        """Simulated seconds: real time divided by the latency scale; frozen (always 0) at scale 0."""
        return time.monotonic() / self.latency_scale if self.latency_scale > 0 else 0.0

    @property
    def requests(self) -> list[SimRequest]:
        """Every request received and answered, in the order received."""
        return [r for r in self._slots if r is not None]

    def reset(self) -> None:
        """Forget the recorded requests (the rate limiter and the prompt cache keep theirs: they are server state)."""
        self._slots.clear()

    def transport(self) -> httpx2.MockTransport:
        """An in-process transport for ``httpx2.AsyncClient(transport=...)``."""
        return httpx2.MockTransport(self.handle)

    def catalog(self, *, base_url: str | None = None) -> Catalog:
        """This fleet as a catalog. Without ``base_url`` the fleet is mounted in-process at `DEFAULT_BASE_URL`
        (replacing any fleet mounted there before); with one (a running ``gradebench sim-serve``), entries point there.
        """
        if base_url is None:
            mount(DEFAULT_BASE_URL, self.transport())
        url = base_url or DEFAULT_BASE_URL
        scale = self.latency_scale
        poll = 0.5 * scale  # a look at a batch every half simulated second: one finishes in a few
        entries = [
            Entry(
                name=p.name,
                model=p.model,
                grade=p.grade,
                base_url=url,
                api_key_env=None,
                price_in=p.price_in,
                price_out=p.price_out,
                price_cached_in=p.price_cached_in,
                currency="USD",
                max_concurrency=p.max_concurrency,
                # client-side pacing speeds up with the simulated clock, as the server's limit does
                rpm=None if not p.catalog_rpm or scale == 0 else max(1, round(p.catalog_rpm / scale)),
                max_retries=p.max_retries,
                prompt_cache_key=True,  # the sim caches per prompt_cache_key, as OpenAI routes by it
                latency_s=(p.latency_ms + p.ms_per_token * TYPICAL_TOKENS * p.verbosity) / 1000 * scale,
                simulated=True,
                family=p.family,
                batch_poll_s=poll,
            )
            for p in self.profiles.values()
        ]
        if set(self.profiles.values()) <= set(PROFILES):  # the built-in fleet (or part of it): its own picks
            grades = [g for g in GRADES if any(e.grade == g for e in entries)]
            picks = {g: n for g, n in PICKS.items() if g in grades and n in {e.name for e in entries}}
            ceiling = CEILING if CEILING in {e.name for e in entries} else entries[-1].name
        else:  # a fleet of its own profiles: the first entry of each grade is its pick, the strongest grade's judges
            grades = list(
                dict.fromkeys([*(g for g in GRADES if any(e.grade == g for e in entries)), *(e.grade for e in entries)])
            )
            picks = {g: next(e.name for e in entries if e.grade == g) for g in grades}
            ceiling = picks[grades[-1]]
        # the built-in fleet in-process is made again by gradebench.sim.catalog() (a report's spec records so)
        again = "gradebench.sim:catalog" if base_url is None and set(self.profiles.values()) <= set(PROFILES) else None
        return Catalog(entries, grades=grades, picks=picks, ceiling=ceiling, source="sim", reference=again)

    def profile(self, model: str) -> Profile | None:
        """The profile a model id (or entry name) names."""
        return self.profiles.get(model) or self._by_name.get(model)

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one HTTP request."""
        slot = len(self._slots)
        if self.record:
            self._slots.append(None)
        raw = await request.aread()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = ...
        try:
            response = await self._route(request, body)
        except Exception as exc:  # a sim or policy bug: say so once, do not let the SDK retry it
            log.exception("gradebench sim: error answering %s %s", request.method, request.url.path)
            response = _error(500, f"sim internal error: {exc!r}", "server_error", headers={"x-should-retry": "false"})
        if not self.record:
            return response
        headers = {k.lower(): v for k, v in request.headers.items()}
        if "authorization" in headers:
            headers["authorization"] = "<redacted>"
        self._slots[slot] = SimRequest(
            method=request.method,
            path=request.url.path,
            headers=headers,
            body=body if isinstance(body, dict) else None,
            status=response.status_code,
        )
        return response

    async def _route(self, request: httpx2.Request, body: Any) -> httpx2.Response:
        path = request.url.path.rstrip("/")
        if path.endswith("/chat/completions"):
            if request.method != "POST":
                return _error(405, f"method {request.method} not allowed", "invalid_request_error")
            return await self._chat(request, body)
        if BatchService.serves(path):
            return await self.batch.handle(request)
        if path.endswith("/models") or "/models/" in path:
            if request.method != "GET":
                return _error(405, f"method {request.method} not allowed", "invalid_request_error")
            return self._models(path)
        return _error(404, f"no such endpoint: {request.method} {request.url.path}", "invalid_request_error")

    def _models(self, path: str) -> httpx2.Response:
        cards = [_card(p) for p in self.profiles.values()]
        if "/models/" in path:
            wanted = path.split("/models/", 1)[1]
            card = next((c for c in cards if wanted in (c["id"], c["name"])), None)
            if card is None:
                return _error(
                    404, f"The model `{wanted}` does not exist", "invalid_request_error", code="model_not_found"
                )
            return httpx2.Response(200, json=card)
        return httpx2.Response(200, json={"object": "list", "data": cards})

    async def _batched(self, body: dict[str, Any], labels: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """One request of a batch, answered as the same request sent alone (its labels from its ``custom_id``), but
        with no latency, rate limit or injected overload: the batch is the provider's to pace."""
        request = httpx2.Request("POST", f"{DEFAULT_BASE_URL}/chat/completions", headers=labels, json=body)
        response = await self._chat(request, body, live=False)
        return response.status_code, json.loads(response.content)

    async def _chat(self, request: httpx2.Request, body: Any, *, live: bool = True) -> httpx2.Response:
        if body is ... or body is None:
            return _error(400, "request body is not valid JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        model = body.get("model")
        profile = self.profile(model) if isinstance(model, str) else None
        if profile is None:
            return _error(404, f"The model `{model}` does not exist", "invalid_request_error", code="model_not_found")
        profile = self._drifted.get(profile.model, profile)  # a drifted entry: another behaviour, the same name
        if body.get("stream"):
            return _error(400, "streaming not supported by the sim", "invalid_request_error", code="unsupported")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return _error(400, "'messages' must be a non-empty list of message objects", "invalid_request_error")
        if profile.reasoning:
            problem = reasoning.problem(profile.reasoning, messages, seed=self.seed, model=profile.model)
            if problem is not None:
                return _error(400, problem, "invalid_request_error", code="invalid_request_error")

        labels = [request.headers.get(h, "") for h in _LABELS]
        key = [self.seed, canonical_json(body), *labels]
        scale = self.latency_scale

        # Failure injection rolls again on every SDK retry (its retry count is part of this key only).
        fail_rng = rng_for(*key, request.headers.get("x-stainless-retry-count", ""), "fail")
        if live and fail_rng.random() < profile.failure_rate:
            await self._sleep(fail_rng.uniform(20, 80))
            return _error(503, "simulated overload", "server_error")
        if live and profile.server_rpm and scale > 0:
            bucket = self._buckets.get(profile.model)
            if bucket is None:
                bucket = self._buckets[profile.model] = _Bucket(profile.server_rpm, profile.burst, scale)
            wait = bucket.take()
            if wait > 0:
                headers = {
                    "retry-after": str(max(1, math.ceil(wait))),
                    "retry-after-ms": str(max(1, math.ceil(wait * 1000))),
                    # in real minutes, as retry-after is in real seconds: the limit speeds up with the clock
                    "x-ratelimit-limit-requests": str(max(1, round(profile.server_rpm / scale))),
                    "x-ratelimit-remaining-requests": "0",
                }
                msg = f"simulated rate limit of {profile.server_rpm} requests per minute reached for {profile.model}"
                return _error(429, msg, "rate_limit_error", code="rate_limit_exceeded", headers=headers)

        # The prompt's prefixes are looked up and recorded on arrival, before the simulated latency: of two requests
        # in flight with one prefix, the second hits only if the first arrived before it (as on a real server).
        prompt = prompt_text(body)
        prompt_tokens = _tokens(len(prompt))
        cache_key = body.get("prompt_cache_key")
        cached = self.prompt_cache.serve(
            profile.model,
            prompt,
            key=cache_key if isinstance(cache_key, str) else None,
            retention=body.get("prompt_cache_retention"),
        )

        message, finish = compose_answer(
            profile, body, key, seed=self.seed, policies=self.policies, run_labels=(labels[0], labels[2])
        )
        thought = reasoning.thinking(messages, message, rng_for(*key, "thinking")) if profile.reasoning else ""
        message, finish, completion, thought = truncate(body, message, finish, thought)
        thinking_tokens = _tokens(len(thought)) if thought else 0
        if profile.reasoning:
            message = reasoning.attach(profile.reasoning, message, thought, seed=self.seed, model=profile.model)
        completion += thinking_tokens
        if live:
            await self._sleep(
                profile.latency_ms
                + rng_for(*key, "latency").uniform(-profile.jitter_ms, profile.jitter_ms)
                + profile.ms_per_token * completion
            )
        payload = {
            "id": "chatcmpl-" + stable_hex(*key, "id", n=29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": profile.model,
            "system_fingerprint": "fp_" + stable_hex(self.seed, profile.model, "fingerprint", n=10),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": thinking_tokens,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        }
        return httpx2.Response(200, json=payload, headers={"x-gradebench-simulated": "true"})

    async def _sleep(self, ms: float) -> None:
        if self.latency_scale > 0 and ms > 0:
            await asyncio.sleep(ms * self.latency_scale / 1000)


SIM_CONTEXT_LENGTH = 128_000
"""The context window every simulated model lists."""


def _card(profile: Profile) -> dict[str, Any]:
    """A model as ``/models`` lists it: OpenAI's fields, and OpenRouter's ``context_length`` and ``pricing`` (USD per
    token, as strings), so a catalog can be made from the sim's list as from OpenRouter's."""
    pricing = {"prompt": _per_token(profile.price_in), "completion": _per_token(profile.price_out), "request": "0"}
    if profile.price_cached_in is not None:
        pricing["input_cache_read"] = _per_token(profile.price_cached_in)
    return {
        "id": profile.model,
        "object": "model",
        "created": 0,
        "owned_by": "gradebench-sim",
        "name": profile.name,
        "context_length": SIM_CONTEXT_LENGTH,
        "pricing": pricing,
    }


def _per_token(per_million: float) -> str:
    return format(Decimal(str(per_million)) / Decimal(1_000_000), "f")
