"""What a local server's cap (`gradebench._calls.servers`) means for a race's wall time, and when a queue on a server
will outlast a call's deadline: the estimate's part of pacing a slow local server."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._calls.servers import ServerPace, is_local, server_root
from .._catalog.catalog import Entry

__all__ = ["LocalSpeed", "ServerLoad"]


@dataclass
class ServerLoad:
    """The servers a race calls, their caps, and the seconds of calls the race will put on each."""

    paces: Mapping[str, ServerPace]
    """By server root: what `gradebench._calls.servers.ServerSlots` read."""
    concurrency: int
    """The race's global limit."""
    speed: LocalSpeed | None = None
    """How fast the reference's llama.cpp server read and wrote: a local judge's verdicts are timed by it."""

    def __post_init__(self) -> None:
        self.busy: dict[str, float] = {}

    @classmethod
    def of(cls, paces: Iterable[ServerPace], concurrency: int, speed: LocalSpeed | None = None) -> ServerLoad:
        return cls({p.server: p for p in paces}, concurrency, speed)

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


@dataclass(frozen=True)
class LocalSpeed:
    """How fast a llama.cpp server read and wrote tokens in the reference's calls (the ``timings`` it sends with each
    answer): what a verdict on a local server takes, whose prompt and answer are far longer than a run's call."""

    prompt_per_s: float
    """Prompt tokens read a second."""
    generated_per_s: float
    """Tokens generated a second."""

    @classmethod
    def of(cls, responses: Iterable[Mapping[str, Any] | None]) -> LocalSpeed | None:
        """From the response bodies of calls to a llama.cpp server; None when none carries ``timings``."""
        totals = [0.0, 0.0, 0.0, 0.0]  # prompt tokens, their ms, generated tokens, their ms
        for body in responses:
            timings = body.get("timings") if isinstance(body, Mapping) else None
            if not isinstance(timings, Mapping):
                continue
            try:
                figures = [float(timings[k]) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")]
            except (KeyError, TypeError, ValueError):
                continue
            if all(math.isfinite(f) and f >= 0 for f in figures):
                totals = [a + b for a, b in zip(totals, figures, strict=True)]
        read, read_ms, wrote, wrote_ms = totals
        if min(totals) <= 0:
            return None
        return cls(read / read_ms * 1000.0, wrote / wrote_ms * 1000.0)

    def call_s(self, input_tokens: float, output_tokens: float) -> float:
        """Seconds of a call that reads ``input_tokens`` and writes ``output_tokens``."""
        return input_tokens / self.prompt_per_s + output_tokens / self.generated_per_s

    def text(self) -> str:
        return f"{self.prompt_per_s:.0f} prompt / {self.generated_per_s:.1f} generated tokens a second"
