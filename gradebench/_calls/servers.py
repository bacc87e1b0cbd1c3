"""How many requests a local inference server answers at once, and the cap a race keeps to it.

A llama.cpp server answers ``total_slots`` requests at once (its ``-np``) and queues the rest on the server, where a
queued call's deadline (the entry's ``timeout_s``) runs while it waits: a hundred verdicts sent at once into two slots
time out one after another. So before the first call to a local server (loopback or a private network) the session
reads its ``/props`` once, and every entry on that server — candidates and judge alike, the cap is the server's —
shares a cap of that many requests in flight. The rest wait in gradebench's own admission queue, which no call's
deadline counts (`gradebench._calls.path.Transport` starts the clock when the request is sent).

A server without ``/props`` (vLLM, Ollama, a proxy) gets no cap of its own: each entry's ``max_concurrency`` rules,
and `ServerPace` says so, so the estimate and ``gradebench check`` can tell the user instead of guessing.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

import httpx2

from .._catalog.catalog import Entry

__all__ = ["PROPS_TIMEOUT_S", "ServerPace", "ServerSlots", "is_local", "read_pace", "server_root"]

PROPS_TIMEOUT_S = 10.0
"""At most this long for the one ``/props`` read (an entry's ``timeout_s`` when shorter)."""


def server_root(base_url: str) -> str:
    """The server of a base URL: the URL without its trailing ``/v1`` (where llama.cpp serves ``/props``)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


@functools.lru_cache(maxsize=256)  # asked on every model call, of the few base URLs a race has: parsed once each
def is_local(base_url: str) -> bool:
    """True for a server on this machine or a private network (loopback, ``localhost``, a private address): the
    kind that answers a few requests at once and queues the rest."""
    host = (httpx2.URL(base_url).host or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


@dataclass(frozen=True, kw_only=True)
class ServerPace:
    """What one server is raced at: how many requests at once, and why."""

    server: str
    """The server's root URL (`server_root`)."""
    slots: int | None
    """Requests it answers at once (``/props`` ``total_slots``): the race's cap on it. None: it did not say."""
    why: str
    """How the cap was found, or why there is none (``/props`` absent, unreadable, unreachable)."""
    model: str | None = None
    """The model the server says it serves (``model_alias``), when it says."""

    def text(self) -> str:
        """One line for a person: the cap used and where it came from."""
        if self.slots is not None:
            return (
                f"llama.cpp at {self.server} serves {self.slots} request{'s' * (self.slots != 1)} at once "
                f"({self.why}): racing it with max_concurrency {self.slots}"
            )
        return f"{self.server}: {self.why}; no cap of its own — each entry's max_concurrency rules"


async def read_pace(http: httpx2.AsyncClient, server: str, timeout_s: float = PROPS_TIMEOUT_S) -> ServerPace:
    """Read ``server``'s ``/props`` once: its ``total_slots`` when it is a llama.cpp server, else why not."""
    url = f"{server}/props"
    try:
        async with asyncio.timeout(timeout_s):  # the whole read: a server that trickles must not hold the race
            response = await http.get(url, timeout=timeout_s)
    except TimeoutError:
        return ServerPace(server=server, slots=None, why=f"GET /props gave no answer within {timeout_s:g} s")
    except Exception as exc:  # unreachable, refused, a transport's own error: the calls will say what it is
        return ServerPace(server=server, slots=None, why=f"GET /props failed ({type(exc).__name__})")
    if response.status_code != 200:
        return ServerPace(server=server, slots=None, why=f"no /props (HTTP {response.status_code})")
    try:
        props = response.json()
    except ValueError:
        return ServerPace(server=server, slots=None, why="/props is not JSON")
    slots = props.get("total_slots") if isinstance(props, dict) else None
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        return ServerPace(server=server, slots=None, why="/props gives no total_slots")
    alias = props.get("model_alias")
    return ServerPace(
        server=server, slots=slots, why="/props total_slots", model=alias if isinstance(alias, str) else None
    )


class ServerSlots:
    """The local servers of one session: each one's ``/props`` read once, each one's cap shared by its entries.

    ``http(entry)`` is the HTTP client the entry's calls go through (a mounted transport's, or the network's).
    Built inside the event loop that uses it.
    """

    def __init__(self, http: Callable[[Entry], httpx2.AsyncClient]):
        self._http = http
        self._reads: dict[str, asyncio.Task[ServerPace]] = {}
        self._gates: dict[str, asyncio.Semaphore] = {}

    async def pace(self, entry: Entry) -> ServerPace | None:
        """The pace of ``entry``'s server (read on the first ask, once however many ask at once); None for a server
        that is not local (a provider's API paces itself with 429s)."""
        if not is_local(entry.base_url):
            return None
        server = server_root(entry.base_url)
        read = self._reads.get(server)
        if read is None:
            timeout = min(entry.timeout_s, PROPS_TIMEOUT_S)
            read = self._reads[server] = asyncio.ensure_future(read_pace(self._http(entry), server, timeout))
        return await asyncio.shield(read)  # one caller cancelled must not cancel the read the others wait for

    async def gate(self, entry: Entry) -> asyncio.Semaphore | None:
        """The semaphore every call to ``entry``'s server holds while in flight; None: the server has no cap."""
        pace = await self.pace(entry)
        if pace is None or pace.slots is None:
            return None
        gate = self._gates.get(pace.server)
        if gate is None:
            gate = self._gates[pace.server] = asyncio.Semaphore(pace.slots)
        return gate

    def paces(self) -> tuple[ServerPace, ...]:
        """The servers read so far, in the order first called."""
        return tuple(t.result() for t in self._reads.values() if t.done() and not t.cancelled())

    async def read(self, entries: list[Entry]) -> tuple[ServerPace, ...]:
        """Read the servers of ``entries`` now (the estimate and the check ask before any call)."""
        await asyncio.gather(*(self.pace(e) for e in entries))
        return self.paces()

    def close(self) -> None:
        """Cancel a read still going (the session is closing)."""
        for task in self._reads.values():
            task.cancel()
