"""A statistical simulation at two sizes: a fast slice that `make test` runs, and the full size, marked ``slow``, that
`make test-slow` runs.

The slice draws fewer races and holds each rate to its bound loosened by three binomial standard deviations at the
slice's size: wider, so a fixed seed that passes at full size does not fail on the slice's own noise, and still narrow
enough that the wrong code each test names fails it. At full size the bounds are the ones the test states."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest


@dataclass(frozen=True, kw_only=True)
class Size:
    """How many races (or samples) a simulation draws, and whether that is its full size."""

    n: int
    """The races (or samples, panels, paths) drawn."""
    full: bool
    """True at the full size the test's bounds were measured at; False for the fast slice."""

    def slack(self, rate: float, n: int | None = None) -> float:
        """What a bound on ``rate`` gives in the slice: three binomial standard deviations over ``n`` draws (default
        `n`); nothing at full size."""
        return 0.0 if self.full else 3 * math.sqrt(rate * (1 - rate) / (n or self.n))

    def at_most(self, rate: float, n: int | None = None) -> float:
        """An upper bound ``rate`` on a rate, as this size holds it."""
        return rate + self.slack(rate, n)

    def at_least(self, rate: float, n: int | None = None) -> float:
        """A lower bound ``rate`` on a rate, as this size holds it."""
        return rate - self.slack(rate, n)


def sized(fast: int, full: int) -> pytest.MarkDecorator:
    """Run the test with ``size`` as the fast slice of ``fast`` draws, and (marked slow) at its ``full`` size."""
    return pytest.mark.parametrize(
        "size",
        [
            pytest.param(Size(n=fast, full=False), id=f"slice{fast}"),
            pytest.param(Size(n=full, full=True), id=f"full{full}", marks=pytest.mark.slow),
        ],
    )
