"""The one sync door: `run_sync` runs a coroutine from plain code, in a notebook cell too."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")

INTERRUPT_POLL_S = 0.05
"""How often a thread waiting for `run_sync`'s worker looks for an interrupt (Ctrl-C)."""


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``await make()`` from plain code: in a fresh event loop, or inside a running one (a notebook cell) on a worker
    thread with a loop of its own.

    An interrupt (Ctrl-C, the notebook's stop button) while the worker runs cancels the work there and waits for it to
    wind down — a race keeps what finished and sends nothing more — then raises here as it came. Under
    ``asyncio.run`` the first Ctrl-C raises nothing: asyncio's handler cancels the loop's main task and waits for it
    to yield, which a blocked call never does — so a cancel of the calling task is an interrupt too, raised here as
    `asyncio.CancelledError` (which ``asyncio.run`` then turns into `KeyboardInterrupt`).
    """
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:  # outside the except block: a job's exception must not be chained to "no running event loop"
        return asyncio.run(make())
    caller = asyncio.current_task()
    cancels_before = caller.cancelling() if caller is not None else 0
    started: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]] = []

    def work() -> T:
        loop = asyncio.new_event_loop()  # made here: a loop made in the main thread keeps its signals from it
        asyncio.set_event_loop(loop)
        try:
            task = loop.create_task(make())
            started.append((loop, task))
            return loop.run_until_complete(task)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradebench") as pool:
        done = pool.submit(work)
        try:
            # Waiting in slices: a signal may reach another thread (polars' own, say), and then this one only sees
            # it between two of its own steps, never inside one long wait.
            while True:
                try:
                    return done.result(timeout=INTERRUPT_POLL_S)
                except concurrent.futures.TimeoutError:
                    if caller is not None and caller.cancelling() > cancels_before:
                        raise asyncio.CancelledError() from None
        except BaseException:
            if not done.done():  # interrupted here while the work goes on there: stop it, and wait for it
                while not started and not done.done():
                    time.sleep(0.001)
                if started:
                    loop, task = started[0]
                    loop.call_soon_threadsafe(task.cancel)
                concurrent.futures.wait([done])
            raise
