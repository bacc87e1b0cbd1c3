"""The panel's progress display: a bar of runs judged, and a row per entry of runs landed, judged and failed.

Fed by the race's events (`Benchmark.subscribe`); redrawn at most every `PROGRESS_EVERY_S`, and at once when asked.
"""

from __future__ import annotations

import time

import ipywidgets as w

from .._race import RaceEvent
from ._html import CSS, td

__all__ = ["PROGRESS_EVERY_S", "Progress"]

PROGRESS_EVERY_S = 0.1
"""The progress display is redrawn at most this often (and always when the race ends)."""


class Progress:
    """The progress of one race: ``bar`` (runs judged of those planned) and ``table`` (a row per entry)."""

    def __init__(self) -> None:
        self.bar = w.IntProgress(value=0, min=0, max=1, description="judged", layout=w.Layout(width="50%"))
        self.table = w.HTML()
        self._counts: dict[str, list[int]] = {}  # progress row -> [planned, landed, judged, failed]
        self._reference = ""
        self._drawn_at = 0.0

    def reset(self, reference: str, candidates: list[str], per_entry: int, inputs: int) -> None:
        """A new race: every count at 0, the bar plain (``per_entry``: the most runs an entry gets)."""
        self._counts = {"reference": [inputs, 0, 0, 0]} | {n: [per_entry, 0, 0, 0] for n in candidates}
        self._reference = reference
        self.bar.max = max(1, len(candidates) * per_entry)
        self.bar.value, self.bar.bar_style = 0, ""
        self.draw(force=True)

    def landed(self) -> int:
        """Candidate runs landed so far."""
        return sum(c[1] for name, c in self._counts.items() if name != "reference")

    def on_event(self, event: RaceEvent) -> None:
        counts = self._counts.setdefault("reference" if event.kind == "reference" else event.run.entry, [0] * 4)
        if event.kind == "judged":
            counts[2] += 1
        else:  # a reference or a candidate run landed
            counts[1] += 1
            counts[3] += not event.run.ok
        self.draw()

    def draw(self, force: bool = False) -> None:
        if not force and time.perf_counter() - self._drawn_at < PROGRESS_EVERY_S:
            return
        self._drawn_at = time.perf_counter()
        judged = sum(c[2] for c in self._counts.values())
        self.bar.value = min(judged, self.bar.max)
        if judged and judged >= self.bar.max:
            self.bar.bar_style = "success"
        rows = []
        for name, (planned, landed, done, failed) in self._counts.items():
            label = f"reference ({self._reference})" if name == "reference" else name
            share = 100 * (landed if name == "reference" else done) / planned if planned else 0
            bar = (
                f'<div style="width:120px;background:#eee"><div style="width:{share:.0f}%;height:8px;background:#4a8">'
            )
            judged_cell = "–" if name == "reference" else done
            rows.append(
                f"<tr>{td(label)}{td(f'{landed} / {planned}')}{td(judged_cell)}{td(failed)}"
                f"<td>{bar}</div></div></td></tr>"
            )
        head = "".join(f"<th>{h}</th>" for h in ("entry", "landed", "judged", "failed", ""))
        self.table.value = f'{CSS}<table class="gb-t"><tr>{head}</tr>{"".join(rows)}</table>'
