"""What the negative controls can see: how often they flag a judge lenient on wrong answers, or fooled by them.

    python benchmarks/control_leniency.py              # one JSON line per world and count on stdout
    python benchmarks/control_leniency.py --fleet 20   # and the simulated fleet: 3 against 5 controls, 20 races each

The void rule of `gradebench._verdict.controls` (the real `ControlOutcome`) read on simulated controls: in each world
a judge scores each kind of control around its own mean with a spread (normal, within 0..10), against a yardstick of
8.6 at margin 1; ``count`` controls cycle through the default three kinds. Printed per world and count, over 2,000
races a point: the stated ``unnoticed`` leniency of a race with no leniency (median, 10th and 90th percentile: seed
0); the share of races flagged for a judge adding L points to every wrong answer, at L the median stated figure −1.5,
+0, +1.5 and at L = the margin (seed 1); and the share a judge fooled by a wrong answer with chance 1/2 (a fooled
control scores like the yardstick) escapes (seed 2).

``--fleet N``: N races per judge and control count on the simulated fleet, each the order agent on 16 inputs drawn with
``random.Random(r)``, salt ``controls-r``, 2 runs, margin 1, a fresh cache: under the swayed judge
(`gradebench.sim.swayed_catalog`, sim/steady and sim/windy) and under sim/oracle (sim/steady, sim/swift, sim/chatty),
with the default 3 controls and with 5 (every kind, the key fact changed and that answer argued at length included).
Printed: races voided, races whose controls sat within the margin of the line without voiding (``within_margin``:
a leniency of the margin would have voided them, which confirms nothing — see `gradebench._verdict.controls`), each
kind's mean score.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile

from gradebench._records.planted import KINDS
from gradebench._verdict.controls import ControlOutcome, ControlScore

WORLDS = {
    "kinds apart": ((4.3, 0.1, 4.0), 1.5),  # like the fleet's oracle: an empty answer far below the other two
    "kinds alike": ((3.0, 3.0, 3.0), 2.5),  # every kind alike, a shaky hand
    "near the line": ((6.0, 2.0, 6.5), 1.0),  # a judge that already gives wrong answers most of the points
}
RACES, YARDSTICK, MARGIN = 2000, 8.6, 1.0
DEFAULT = KINDS[:3]
"""The default three kinds (another input's answer, an empty answer, half): the worlds give each a mean."""


def outcome(rng: random.Random, world: str, count: int, leniency: float, fooled: float = 0.0) -> ControlOutcome:
    means, spread = WORLDS[world]
    controls = []
    for i in range(count):
        if rng.random() < fooled:
            score = YARDSTICK
        else:
            score = min(10.0, min(10.0, max(0.0, rng.gauss(means[i % len(DEFAULT)], spread))) + leniency)
        controls.append(ControlScore(run_id=f"c{i}", kind=DEFAULT[i % len(DEFAULT)], input_id=f"i{i}", score=score))
    return ControlOutcome(
        asked=count, controls=tuple(controls), margin=MARGIN, yardstick=YARDSTICK, self_agreement=True
    )


def share(seed: int, world: str, count: int, leniency: float, fooled: float = 0.0, *, void: bool = True) -> float:
    rng = random.Random(seed)
    hits = sum(outcome(rng, world, count, max(0.0, leniency), fooled).void == void for _ in range(RACES))
    return round(hits / RACES, 3)


async def fleet_race(judge: str, index: int, controls: int) -> ControlOutcome:
    import gradebench as gb
    from gradebench.jobs import OrderAgent, load_inputs

    swayed = judge == "swayed"
    catalog = gb.sim.swayed_catalog(latency_scale=0) if swayed else gb.sim.catalog(latency_scale=0)
    candidates = ["sim/steady", "sim/windy"] if swayed else ["sim/steady", "sim/swift", "sim/chatty"]
    with tempfile.TemporaryDirectory() as cache:
        bench = gb.Benchmark(
            OrderAgent,
            runs=2,
            catalog=catalog,
            grade="standard",
            candidates=candidates,
            controls=controls,
            salt=f"controls-{index}",
            cache=cache,
            progress=False,
        )
        bench.set_inputs(random.Random(index).sample(load_inputs("orders"), 16))
        await bench.run()
        return bench.report().controls_outcome()


async def fleet(races: int) -> None:
    for judge in ("swayed", "oracle"):
        for controls in (3, 5):
            found = [await fleet_race(judge, r, controls) for r in range(races)]
            kinds = sorted({k for c in found for k in c.kind_means()}, key=KINDS.index)
            row = {
                "judge": judge,
                "controls": controls,
                "races": races,
                "voided": sum(c.void for c in found),
                "within_margin": sum(c.unnoticed is not None and c.unnoticed <= c.margin for c in found),
                "kind_means": {k.value: round(statistics.mean(c.kind_means()[k] for c in found), 2) for k in kinds},
            }
            print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fleet", type=int, default=0, help="races per judge and control count on the fleet")
    fleet_races = parser.parse_args().fleet
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
    if fleet_races:
        asyncio.run(fleet(fleet_races))


if __name__ == "__main__":
    main()
