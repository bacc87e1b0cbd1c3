"""What one race holds open inside its event loop: a client per entry, the admission limits, the cache.

The clients are the openai SDK's own, with one change of meaning (`GradebenchClient`): a 429 is handed straight back
to admission control instead of being retried by count.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
import openai

from .admission import Admission
from .cache import CallCache
from .catalog import Catalog, Entry
from .seat import Seat, SeatContext

__all__ = ["GradebenchClient", "Session", "client_for"]


class GradebenchClient(openai.AsyncOpenAI):
    """The openai async client, with 429s left to `Admission.request`.

    ``_should_retry`` is the hook the SDK's retry loop asks after every 4xx/5xx: it says no to a 429, so the SDK raises
    `openai.RateLimitError` (headers on ``exc.response``) at once and admission waits it out by time.
    """

    def _should_retry(self, response: httpx2.Response) -> bool:
        if response.status_code == 429:
            return False
        return super()._should_retry(response)


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
    """Clients, limits and cache of one race (or rejudge), built inside the event loop that uses them."""

    def __init__(self, catalog: Catalog, cache: CallCache, concurrency: int):
        self.catalog = catalog
        self.cache = cache
        self.admission = Admission(catalog.entries, concurrency=concurrency)
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self._stack = AsyncExitStack()
        self._http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> Session:
        if self.catalog.transport is not None:
            self._http = await self._stack.enter_async_context(httpx2.AsyncClient(transport=self.catalog.transport))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self._clients.values():
            await client.close()
        await self._stack.aclose()

    def seat(self, entry: Entry, **context: Any) -> Seat:
        """A seat at ``entry`` for one run (or one verdict), sharing this session's client, cache and limits."""
        return Seat(
            entry, SeatContext(client=self.client(entry), cache=self.cache, admission=self.admission, **context)
        )

    def client(self, entry: Entry) -> openai.AsyncOpenAI:
        client = self._clients.get(entry.name)
        if client is None:
            client = self._clients[entry.name] = client_for(entry, self._http)
        return client
