"""What one race holds open inside its event loop: a client per entry, the admission limits, the cache, and the call
path built from them for each entry (`gradebench._calls.path`).

Requests travel over the network, except to a base URL served in-process: `mount` registers an ``httpx2`` transport
for an origin (the simulated fleet mounts itself at ``http://sim.gradebench.invalid``; `gradebench.testing` mounts
scripted endpoints), and a session is handed the mounted transports when it is made. An entry whose origin has none
is called through the openai SDK's own default HTTP client (proxies from the environment included).

The clients are the openai SDK's own, with two changes of meaning (`GradebenchClient`): a 429 is handed straight back
to admission control instead of being retried by count, and a 200 whose body is only an error object is that error.

A session made with ``batch`` (judge entry name → batch API) sends those entries' judge calls through their Batch
API (`gradebench._calls.batch.layer`); `Session.hold_batches` keeps the batches open while a race's candidate runs land.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import httpx2
import openai

from .._base.vocab import Role
from .._catalog.catalog import Catalog, Entry
from .._records.keys import SeatKey
from .admission import ERROR_IN_200, Admission
from .batch.anthropic import AnthropicBatches
from .batch.api import BatchAPI, OpenAIBatches
from .batch.layer import BatchLayer
from .cache import CallCache
from .path import AdmissionLayer, CacheLayer, CallLayer, Refuse, Transport
from .seat import JobLimits, Seat
from .servers import ServerSlots
from .waits import retry_after_s

__all__ = ["GradebenchClient", "Session", "client_for", "mount", "mounted", "origin"]

T = TypeVar("T")

_MOUNTS: dict[str, httpx2.AsyncBaseTransport] = {}


def origin(base_url: str) -> str:
    """``scheme://host[:port]`` of a base URL (lower-cased): what a transport is mounted at."""
    url = httpx2.URL(base_url)
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}".lower()


def mount(base_url: str, transport: httpx2.AsyncBaseTransport | None) -> None:
    """Serve every request to ``base_url``'s origin from ``transport`` in this process (None: the network again).

    Sessions made afterwards use it; a later mount at the same origin replaces it for them.
    """
    if transport is None:
        _MOUNTS.pop(origin(base_url), None)
    else:
        _MOUNTS[origin(base_url)] = transport


def mounted() -> dict[str, httpx2.AsyncBaseTransport]:
    """The transports mounted now, by origin (a copy: what a session is handed)."""
    return dict(_MOUNTS)


class GradebenchClient(openai.AsyncOpenAI):
    """The openai async client, with 429s left to `Admission.request` and errors sent as 200 made errors.

    - ``_should_retry`` is the hook the SDK's retry loop asks after every 4xx/5xx: it says no to a 429, so the SDK
      raises `openai.RateLimitError` (headers on ``exc.response``) at once and admission waits it out by time.
    - ``_send_request`` is where the SDK sends each attempt, before it looks at the status: a 200 whose body is an
      ``{"error": {...}}`` object with no ``choices`` (OpenRouter reports errors met mid-generation so; some proxies
      do too) gets the error's ``code`` as its status when that is an HTTP error status (429: waited out; 5xx: the
      SDK's retries; 4xx: fails), else 502 and no retry. The body is left as sent, so the provider's message is kept.
    - ``_parse_retry_after_header``: the SDK's own retries (5xx) wait the longest of ``retry-after-ms`` and
      ``retry-after``, as admission does.
    """

    def _should_retry(self, response: httpx2.Response) -> bool:
        if response.status_code == 429:
            return False
        if ERROR_IN_200 in response.extensions and _http_error_status(response.extensions[ERROR_IN_200]) is None:
            return False
        return super()._should_retry(response)

    def _parse_retry_after_header(self, response_headers: httpx2.Headers | None = None) -> float | None:
        # the SDK reads ``retry-after-ms`` first; the longer of the two asks holds, as in admission (`retry_after_s`)
        parsed = super()._parse_retry_after_header(response_headers)
        ours = retry_after_s(response_headers) if response_headers is not None else None
        return parsed if parsed is None or ours is None else max(parsed, ours)

    async def _send_request(self, request: httpx2.Request, *, stream: bool, **kwargs: Any) -> httpx2.Response:
        response = await super()._send_request(request, stream=stream, **kwargs)
        if response.status_code == 200 and not stream:
            _error_in_200(response)
        return response


def _error_in_200(response: httpx2.Response) -> None:
    """Give a 200 whose body is only an error object the error's status (see `GradebenchClient`)."""
    content = response.content  # read already: the SDK sends without streaming here
    if b'"error"' not in content:  # the hot path: a completion is never parsed here
        return
    try:
        body = json.loads(content)
    except ValueError:
        return
    if not isinstance(body, dict) or body.get("choices") or not isinstance(body.get("error"), dict):
        return
    code = body["error"].get("code")
    response.status_code = _http_error_status(code) or 502
    response.extensions[ERROR_IN_200] = code


def _http_error_status(code: object) -> int | None:
    """``code`` as an HTTP error status (400-599, a number or a numeric string), or None."""
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    return None


def client_for(entry: Entry, http_client: httpx2.AsyncClient | None = None) -> GradebenchClient:
    """The client gradebench calls ``entry`` through; ``http_client`` None: the SDK's own default HTTP client."""
    return GradebenchClient(
        base_url=entry.base_url,
        api_key=entry.api_key(),
        max_retries=entry.max_retries,
        timeout=entry.timeout_s,
        http_client=http_client,
    )


class Session:
    """Clients, limits and cache of one race (or rejudge), built inside the event loop that uses them.

    ``transports`` (by origin, see `mount`; None: those mounted now) serve the entries whose base URL they cover;
    the rest go to the network.
    """

    def __init__(
        self,
        catalog: Catalog,
        cache: CallCache,
        concurrency: int,
        transports: Mapping[str, httpx2.AsyncBaseTransport] | None = None,
        *,
        cache_only: bool = False,
        batch: Mapping[str, str] | None = None,
        progress: bool = False,
    ):
        self.catalog = catalog
        self.cache = cache
        self.servers = ServerSlots(self._http_or_network)
        """The local servers' caps: each one's ``/props`` read once, before its first call."""
        self.admission = Admission(catalog.entries, concurrency=concurrency, servers=self.servers)
        self.transports = mounted() if transports is None else dict(transports)
        self.cache_only = cache_only
        """Seats answer from the cache only (the path ends in `Refuse`: a miss raises `NotCached`): nothing is sent,
        nothing spent."""
        self.batch = {} if cache_only else dict(batch or {})
        """The judge entries whose judge calls go through a Batch API, and which (``openai``, ``anthropic``, ...)."""
        self.progress = progress
        """Show a progress bar for each batch."""
        self._clients: dict[tuple[Any, ...], openai.AsyncOpenAI] = {}
        self._paths: dict[str, CallLayer] = {}
        self._http: dict[str, httpx2.AsyncClient] = {}
        self._batches: dict[str, BatchLayer] = {}
        self._holds = 0

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.servers.close()
        for layer in self._batches.values():  # the batches go on at the provider; their notes stay on disk
            await layer.aclose()
        self.cache.flush()  # what landed stays, however the race ended
        for client in self._clients.values():
            await client.close()
        for http in self._http.values():
            await http.aclose()

    def seat(self, entry: Entry, key: SeatKey, limits: JobLimits | None = None) -> Seat:
        """A seat at ``entry`` for one run (or one verdict), on this session's call path to it (a verdict of a judge
        that batches: through its Batch API)."""
        batched = key.role is Role.JUDGE and entry.name in self.batch
        return Seat(entry, self.batch_path(entry) if batched else self.path(entry), key, limits)

    def batch_path(self, entry: Entry) -> CallLayer:
        """The call path of ``entry``'s judge calls through its Batch API: the cache, then the batch."""
        key = f"batch:{entry.name}"
        path = self._paths.get(key)
        if path is None:
            layer = self.batch_layer(entry)
            path = self._paths[key] = CacheLayer(self.cache, layer, fresh=layer.collected)
        return path

    def batch_layer(self, entry: Entry) -> BatchLayer:
        """The batches of ``entry``'s judge calls (see `gradebench._calls.batch.layer`)."""
        layer = self._batches.get(entry.name)
        if layer is None:
            name = self.batch[entry.name]
            direct = AdmissionLayer(self.admission, Transport(self.client(entry)))  # what a batch never ran goes by
            layer = self._batches[entry.name] = BatchLayer(
                entry, name, self._batch_api(entry, name), self.cache, direct, held=self._held, progress=self.progress
            )
        return layer

    def _batch_api(self, entry: Entry, name: str) -> BatchAPI:
        if name == "anthropic":
            return AnthropicBatches(entry, self._http_or_network(entry))
        # openai and openrouter: the openai SDK's files and batches, through a plain client of the SDK's (its own
        # retries of 429s: a batch's few management calls need no pacing)
        client = openai.AsyncOpenAI(
            base_url=entry.base_url,
            api_key=entry.api_key(),
            max_retries=entry.max_retries,
            timeout=entry.timeout_s,
            http_client=self._http_for(entry),
        )
        self._clients[("batch", entry.name)] = client
        return OpenAIBatches(client, rate_limit_wait_s=entry.rate_limit_wait_s)

    @contextlib.contextmanager
    def hold_batches(self) -> Iterator[None]:
        """Keep every batch open while the block runs (a race's candidate runs landing: their verdicts go together);
        after it, a batch is submitted once its requests stop coming."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                for layer in self._batches.values():
                    layer.released()

    def _held(self) -> bool:
        return self._holds > 0

    def path(self, entry: Entry) -> CallLayer:
        """The call path to ``entry``: the cache, then admission control, then the transport (the cache alone, when
        the session answers from the cache only)."""
        path = self._paths.get(entry.name)
        if path is None:
            behind: CallLayer = (
                Refuse() if self.cache_only else AdmissionLayer(self.admission, Transport(self.client(entry)))
            )
            path = self._paths[entry.name] = CacheLayer(self.cache, behind)
        return path

    def client(self, entry: Entry) -> openai.AsyncOpenAI:
        """The client ``entry`` is called through: one per endpoint, key, retries and timeout, so entries on one base
        URL (a proxy's thousand models) share its connections instead of opening a pool each."""
        shared = (entry.base_url.rstrip("/"), entry.api_key_env, entry.max_retries, entry.timeout_s)
        client = self._clients.get(shared)
        if client is None:
            client = self._clients[shared] = client_for(entry, self._http_for(entry))
        return client

    def _http_or_network(self, entry: Entry) -> httpx2.AsyncClient:
        """The mounted transport's client for ``entry``, else a network client of this session's own (closed with
        it)."""
        http = self._http_for(entry)
        if http is None:
            where = f"net:{origin(entry.base_url)}"
            http = self._http.get(where) or self._http.setdefault(where, httpx2.AsyncClient())
        return http

    def _http_for(self, entry: Entry) -> httpx2.AsyncClient | None:
        where = origin(entry.base_url)
        transport = self.transports.get(where)
        if transport is None:
            return None
        if where not in self._http:
            self._http[where] = httpx2.AsyncClient(transport=transport)
        return self._http[where]
