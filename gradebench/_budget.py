"""A hard budget: what a race may spend now, in the catalog's currency, and never more.

Before a run starts it reserves what it is expected to cost, its verdict included (`Budget.reserve`); when it lands
the reservation gives way to what it really spent (`Budget.settle`). A run whose reservation does not fit is not
started: the race issues no new runs, finishes those in flight, and its report is marked ``stopped: budget``. A run
spends at most its reservation as long as no run costs more than `HEADROOM` times its estimate, and the estimate of an
entry follows the dearest run it has made so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._catalog import Entry

__all__ = ["HEADROOM", "Budget", "one_currency"]

HEADROOM = 2.0
"""A run reserves this many times its estimate (an estimate is a mean; one run can say much more than another)."""


class Budget:
    """The money a race may spend now, the part already spent and the part reserved by runs in flight."""

    def __init__(self, limit: float, currency: str):
        if not limit > 0:
            raise ValueError(f"budget must be > 0, got {limit!r}")
        self.limit = float(limit)
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

    def reservation(self, entry: str, estimate: float) -> float:
        """What a run of ``entry`` reserves: `HEADROOM` × the larger of its estimate and the dearest run seen."""
        return HEADROOM * max(estimate, self._dearest.get(entry, 0.0))

    def reserve(self, amount: float) -> bool:
        """Hold ``amount`` for a run about to start; False (and nothing held) when it would not fit."""
        if self.spent + self.reserved + amount > self.limit:
            self.refused += 1
            return False
        self.reserved += amount
        return True

    def settle(self, entry: str, held: float, spent: float | None) -> None:
        """A run landed: its hold gives way to what it spent (an unknown cost counts as the whole hold)."""
        self.reserved -= held
        actual = held if spent is None else spent
        self.spent += actual
        self._dearest[entry] = max(self._dearest.get(entry, 0.0), actual)

    @property
    def stopped(self) -> bool:
        """True once a run was refused: the race issues no new runs."""
        return self.refused > 0

    def __repr__(self) -> str:
        return f"Budget({self.spent:.6f} spent + {self.reserved:.6f} held of {self.limit:g} {self.currency})"


def one_currency(entries: Sequence[Entry]) -> str:
    """The one currency the entries are priced in; a `ValueError` naming each entry's when they differ (a budget
    or a total in several currencies would mean nothing)."""
    used = {e.name: e.currency for e in entries}
    currencies = sorted(set(used.values()))
    if len(currencies) > 1:
        by = ", ".join(f"{name} ({cur})" for name, cur in used.items())
        raise ValueError(f"a budget needs one currency; these entries are priced in {currencies}: {by}")
    return currencies[0]
