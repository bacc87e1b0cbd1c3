"""The one fan-out under every kind of work a race does: reference runs, candidate runs, rejudging, the estimate's
replay and the judge-noise floor.

Work is admitted lazily: each lane (an entry, or the one lane of a rejudge) has a fixed number of workers that take
the next item when they finish one, so a race of 100,000 runs holds a few hundred coroutines, not 100,000. Results
come back in item order whatever order they finish in, and each one is handed to ``done`` as it lands, so a race that
is stopped still has what finished. Admission control (`gradebench._calls.admission`) paces the HTTP requests
underneath.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, TypeVar

__all__ = ["fan_out", "lane_width"]

T = TypeVar("T")
R = TypeVar("R")


def lane_width(concurrency: int, entry_limit: int | None = None) -> int:
    """Workers for one lane: twice the requests it may have in flight (a run also waits on its judge and its tools,
    so the entry's slots stay busy), never more than twice the global limit."""
    limit = min(entry_limit or concurrency, concurrency)
    return max(1, 2 * limit)


async def fan_out(
    items: Sequence[T],
    work: Callable[[T], Awaitable[R]],
    *,
    width: int | Callable[[Hashable], int],
    lane: Callable[[T], Hashable] | None = None,
    done: Callable[[R], Any] | None = None,
) -> list[R]:
    """``work(item)`` for every item, ``width`` at a time per lane (``lane(item)``; one lane when None).

    Returns the results in item order. ``done(result)`` is called as each result lands. When the caller is cancelled,
    the work in flight is cancelled too and `asyncio.CancelledError` propagates; results already handed to ``done``
    stand.
    """
    results: list[Any] = [None] * len(items)
    queues: dict[Hashable, deque[int]] = {}
    for index, item in enumerate(items):
        queues.setdefault(lane(item) if lane is not None else None, deque()).append(index)

    async def worker(queue: deque[int]) -> None:
        while queue:
            index = queue.popleft()
            result = await work(items[index])
            results[index] = result
            if done is not None:
                done(result)

    async with asyncio.TaskGroup() as group:
        for key, queue in queues.items():
            workers = width(key) if callable(width) else width
            for _ in range(min(max(1, workers), len(queue))):
                group.create_task(worker(queue))
    return results
