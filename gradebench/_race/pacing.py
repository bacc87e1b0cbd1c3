"""What a local server's cap (`gradebench._calls.servers`) means for a race's wall time, and when a queue on a server
will outlast a call's deadline: the estimate's part of pacing a slow local server."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .._calls.servers import ServerPace, is_local, server_root
from .._catalog.catalog import Entry

__all__ = ["ServerLoad"]


@dataclass
class ServerLoad:
    """The servers a race calls, their caps, and the seconds of calls the race will put on each."""

    paces: Mapping[str, ServerPace]
    """By server root: what `gradebench._calls.servers.ServerSlots` read."""
    concurrency: int
    """The race's global limit."""

    def __post_init__(self) -> None:
        self.busy: dict[str, float] = {}

    @classmethod
    def of(cls, paces: Iterable[ServerPace], concurrency: int) -> ServerLoad:
        return cls({p.server: p for p in paces}, concurrency)

    def slots(self, entry: Entry) -> int | None:
        """Requests ``entry``'s server answers at once, when it said (its ``/props``)."""
        pace = self.paces.get(server_root(entry.base_url))
        return None if pace is None else pace.slots

    def limit(self, entry: Entry) -> int:
        """Most of ``entry``'s requests in flight at once: the global limit, its own and its server's."""
        return min(entry.max_concurrency or self.concurrency, self.concurrency, self.slots(entry) or self.concurrency)

    def add(self, entry: Entry, seconds: float) -> None:
        """``seconds`` of calls the race will make to ``entry``'s server."""
        server = server_root(entry.base_url)
        self.busy[server] = self.busy.get(server, 0.0) + seconds

    def wall_s(self) -> float:
        """The least wall time the capped servers allow: each one's seconds of calls over its slots."""
        capped = [(s, self.paces[server].slots) for server, s in self.busy.items() if server in self.paces]
        return max([s / slots for s, slots in capped if slots], default=0.0)

    def notes(self, entries: Sequence[Entry], call_s: Mapping[str, float]) -> list[str]:
        """What the estimate assumed of each local server, and each entry whose calls will outlast their deadline
        (``call_s``: seconds of one call, by entry name)."""
        said = [pace.text() for pace in self.paces.values()]
        for entry in entries:
            seconds = call_s.get(entry.name, 0.0)
            if seconds <= 0:
                continue
            if seconds > entry.timeout_s:
                said.append(
                    f"{entry.name}: a call takes about {seconds:.1f} s, longer than its timeout_s={entry.timeout_s:g}: "
                    "its calls will time out — raise timeout_s"
                )
                continue
            pace = self.paces.get(server_root(entry.base_url))
            if not is_local(entry.base_url) or pace is None or pace.slots is not None or entry.max_concurrency:
                continue
            at_once = self.limit(entry)
            if at_once * seconds > entry.timeout_s:
                said.append(
                    f"{entry.name}: its server did not say how many requests it answers at once, and the race may send "
                    f"it {at_once}; if it answers one at a time, the last waits about {math.ceil(at_once * seconds)} s "
                    f"in its queue, past timeout_s={entry.timeout_s:g} — give the entry max_concurrency (the server's "
                    "parallel slots)"
                )
        return said
