"""What one race holds open inside its event loop: a client per entry, the admission limits, the cache."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
import openai

from .admission import Admission
from .cache import CallCache
from .catalog import Catalog, Entry
from .seat import Seat, SeatContext

__all__ = ["Session"]


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
            client = openai.AsyncOpenAI(
                base_url=entry.base_url,
                api_key=entry.api_key(),
                max_retries=entry.max_retries,
                timeout=entry.timeout_s,
                http_client=self._http,
            )
            self._clients[entry.name] = client
        return client
