"""What the negative controls can see: how often they flag a judge lenient on wrong answers, or fooled by them.

    python benchmarks/control_leniency.py      # one JSON line per world on stdout

The void rule of `gradebench._verdict.controls` (the real `ControlOutcome`) read on simulated controls: in each world
a judge scores each kind of control around its own mean with a spread (normal, within 0..10), against a yardstick of
8.6 at margin 1; ``count`` controls cycle through the kinds. Printed per world and count, over 2,000 races a point:
the stated ``unnoticed`` leniency of a race with no leniency (median, 10th and 90th percentile: seed 0); the share of
races flagged for a judge adding L points to every wrong answer, at L the median stated figure −1.5, +0, +1.5 and at
L = the margin (seed 1); and the share a judge fooled by a wrong answer with chance 1/2 (a fooled control scores like
the yardstick) escapes (seed 2).
"""

from __future__ import annotations

import json
import random
import statistics

from gradebench._records.planted import KINDS
from gradebench._verdict.controls import ControlOutcome, ControlScore

WORLDS = {
    "kinds apart": ((4.3, 0.1, 4.0), 1.5),  # like the fleet's oracle: an empty answer far below the other two
    "kinds alike": ((3.0, 3.0, 3.0), 2.5),  # every kind alike, a shaky hand
    "near the line": ((6.0, 2.0, 6.5), 1.0),  # a judge that already gives wrong answers most of the points
}
RACES, YARDSTICK, MARGIN = 2000, 8.6, 1.0


def outcome(rng: random.Random, world: str, count: int, leniency: float, fooled: float = 0.0) -> ControlOutcome:
    means, spread = WORLDS[world]
    controls = []
    for i in range(count):
        if rng.random() < fooled:
            score = YARDSTICK
        else:
            score = min(10.0, min(10.0, max(0.0, rng.gauss(means[i % len(KINDS)], spread))) + leniency)
        controls.append(ControlScore(run_id=f"c{i}", kind=KINDS[i % len(KINDS)], input_id=f"i{i}", score=score))
    return ControlOutcome(
        asked=count, controls=tuple(controls), margin=MARGIN, yardstick=YARDSTICK, self_agreement=True
    )


def share(seed: int, world: str, count: int, leniency: float, fooled: float = 0.0, *, void: bool = True) -> float:
    rng = random.Random(seed)
    hits = sum(outcome(rng, world, count, max(0.0, leniency), fooled).void == void for _ in range(RACES))
    return round(hits / RACES, 3)


def main() -> None:
    for world in WORLDS:
        for count in (3, 6, 9):
            rng = random.Random(0)
            stated = [outcome(rng, world, count, 0.0).unnoticed for _ in range(RACES)]
            known = [u for u in stated if u is not None]
            median = statistics.median(known)
            deciles = statistics.quantiles(known, n=10)
            row = {
                "world": world,
                "controls": count,
                "stated_unnoticed": {
                    "p10": round(deciles[0], 2),
                    "median": round(median, 2),
                    "p90": round(deciles[-1], 2),
                },
                "flagged_at_leniency": {f"median{d:+g}": share(1, world, count, median + d) for d in (-1.5, 0.0, 1.5)},
                "flagged_at_leniency_of_the_margin": share(1, world, count, MARGIN),
                "fooled_half_the_time_escapes": share(2, world, count, 0.0, 0.5, void=False),
                "races": RACES,
            }
            print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
