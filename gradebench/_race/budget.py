"""A hard budget: what a race may spend now, in the catalog's currency, and never more.

Before a run starts it reserves what it is expected to cost, its verdict included (`Budget.admit`); when it lands
the reservation gives way to what it really spent (`Budget.settle`). A run whose reservation does not fit waits for
the runs in flight to land (they free what they held beyond what they spent); when it still does not fit with none in
flight, it is not started: the race issues no new runs and its report is marked ``stopped: budget``. So a race
spends its budget to within one run's reservation instead of stopping at the first reservation that does not fit
beside those in flight. A run
spends at most its reservation as long as no run costs more than `HEADROOM` times its estimate, and the estimate of an
entry follows the dearest run it has made so far.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._base.numbers import money

if TYPE_CHECKING:
    from .._catalog.catalog import Entry

__all__ = ["HEADROOM", "Budget", "one_currency", "priced_for_budget"]

HEADROOM = 2.0
"""A run reserves this many times its estimate (an estimate is a mean; one run can say much more than another)."""


class Budget:
    """The money a race may spend now, the part already spent and the part reserved by runs in flight."""

    def __init__(self, limit: float, currency: str):
        self.limit = float(limit)  # checked by the spec: a number > 0
        """The most the race may spend now."""
        self.currency = currency
        """Its currency (the catalog's)."""
        self.spent = 0.0
        """Spent by the runs (and verdicts) that landed."""
        self.reserved = 0.0
        """Held by the runs in flight."""
        self.refused = 0
        """Runs not started because their reservation did not fit."""
        self._dearest: dict[str, float] = {}
        self._changed = asyncio.Event()
        self._in_flight = 0
        self._waiting: list[tuple[int, int]] = []  # a heap of (place, ticket): the runs asking, first in order on top
        self._tickets = itertools.count()

    def reservation(self, entry: str, estimate: float) -> float:
        """What a run of ``entry`` reserves: `HEADROOM` × the larger of its estimate and the dearest run seen."""
        return HEADROOM * max(estimate, self._dearest.get(entry, 0.0))

    async def admit(self, amount: float, *, place: int = 0) -> bool:
        """Hold ``amount`` for a run about to start; False (nothing held, and the race stopped) once it does not fit
        with no run in flight, or the race has stopped.

        Runs are admitted in the order of their ``place`` in the race (its plan: input by input, every entry on each),
        not in the order they ask: when the money runs short the runs made are spread over the entries, not spent
        on whichever asked first. The first in that order that does not fit waits for runs in flight to land (they
        free what they held beyond what they spent), and the runs after it wait behind it.
        """
        ticket = (place, next(self._tickets))
        heapq.heappush(self._waiting, ticket)
        try:
            while not self.stopped:
                if self._waiting[0] == ticket:
                    if self.spent + self.reserved + amount <= self.limit:
                        self.reserved += amount
                        self._in_flight += 1
                        return True
                    if not self._in_flight:
                        self.refused += 1
                        break
                await self._changed.wait()
            return False
        finally:
            self._waiting.remove(ticket)
            heapq.heapify(self._waiting)
            self._wake()

    def settle(self, entry: str, held: float, spent: float | None) -> None:
        """A run landed: its hold gives way to what it spent (an unknown cost counts as the whole hold)."""
        self.reserved -= held
        self._in_flight -= 1
        actual = held if spent is None else spent
        self.spent += actual
        self._dearest[entry] = max(self._dearest.get(entry, 0.0), actual)
        self._wake()

    def _wake(self) -> None:
        """Something changed (a run landed, the first in line went): the runs waiting look again."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    @property
    def stopped(self) -> bool:
        """True once a run was refused with none in flight: the race issues no new runs."""
        return self.refused > 0

    def __repr__(self) -> str:
        return f"Budget({money(self.spent)} spent + {money(self.reserved)} held of {money(self.limit)} {self.currency})"


def priced_for_budget(entries: Sequence[Entry]) -> None:
    """A `ValueError` naming the entries without a price table (their endpoints report each call's cost only as it
    answers): a budget reserves what a run will cost before it starts, and of these that is unknown."""
    unpriced = sorted({e.name for e in entries if not e.priced})
    if unpriced:
        raise ValueError(
            f"a budget needs a price for every entry; {', '.join(unpriced)} "
            f"{'has' if len(unpriced) == 1 else 'have'} none (reports_cost: the endpoint reports each call's cost "
            "only as it answers): set its price_in and price_out, or its provider, or race without a budget"
        )


def one_currency(entries: Sequence[Entry]) -> str:
    """The one currency the entries are priced in; a `ValueError` naming each entry's when they differ (a budget
    or a total in several currencies would mean nothing)."""
    used = {e.name: e.currency for e in entries}
    currencies = sorted(set(used.values()))
    if len(currencies) > 1:
        by = ", ".join(f"{name} ({cur})" for name, cur in used.items())
        raise ValueError(f"a budget needs one currency; these entries are priced in {currencies}: {by}")
    return currencies[0]
