"""The panel's progress display: a bar of runs done, and a row per entry of runs landed, judged and failed.

A run lands ok or failed; an ok run is then judged. A failed run is never sent to the judge (it scores 0): it counts
as failed, never as judged, though the race reports it "judged" too once its 0 is recorded. Done is judged + failed.

Fed by the race's events (`Benchmark.subscribe`); redrawn at most every `PROGRESS_EVERY_S`, and at once when asked.
A race to a verdict does not know how many runs an entry will get: each row counts against the most it can get
(`Benchmark.most_runs`), and says why an entry stopped (`Benchmark.stops`: settled, max_runs, budget) as soon as it
does; the bar's total shrinks to the runs a stopped entry made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import ipywidgets as w

from .._base.vocab import EventKind
from .._race.race import RaceEvent
from ._html import CSS, concat, tag, td

__all__ = ["PROGRESS_EVERY_S", "Progress"]

PROGRESS_EVERY_S = 0.1
"""The progress display is redrawn at most this often (and always when the race ends)."""
RACING = "racing"
"""What the stop column says of an entry still getting runs in a race to a verdict."""


class Progress:
    """The progress of one race: ``bar`` (runs done, judged or failed, of those planned) and ``table`` (a row per
    entry)."""

    def __init__(self) -> None:
        self.bar = w.IntProgress(value=0, min=0, max=1, description="done", layout=w.Layout(width="50%"))
        self.table = w.HTML()
        self._references = [0, 0, 0, 0]  # the reference runs: [planned, landed, judged, failed]
        self._counts: dict[str, list[int]] = {}  # candidate entry -> [most, landed, judged, failed]
        self._reference = ""
        self._open_ended = False  # a race to a verdict: how many runs an entry gets is not known
        self._stops: Callable[[], Mapping[str, str]] = dict
        self._final: dict[str, str] | None = None  # why each entry stopped, once the race ended
        self._complete = False  # ... and whether it ran to its end (not stopped, not failed)
        self._drawn_at = 0.0

    def reset(
        self,
        reference: str,
        candidates: list[str],
        per_entry: int,
        inputs: int,
        *,
        open_ended: bool = False,
        stops: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        """A new race: every count at 0, the bar plain. ``per_entry``: the most runs an entry gets; ``open_ended``:
        a race to a verdict, which may stop an entry sooner; ``stops``: which entries stopped so far, and why."""
        self._references = [inputs, 0, 0, 0]
        self._counts = {n: [per_entry, 0, 0, 0] for n in candidates}
        self._reference, self._open_ended, self._stops = reference, open_ended, stops
        self._final, self._complete = None, False
        self.bar.value, self.bar.bar_style = 0, ""
        self.draw(force=True)

    def landed(self) -> int:
        """Candidate runs landed so far."""
        return sum(c[1] for c in self._counts.values())

    def planned(self) -> str:
        """The candidate runs planned, in words: ``24`` (``at most 64`` for a race to a verdict not yet over)."""
        total = self.bar.max
        return f"at most {total}" if self._open_ended and not self._complete else str(total)

    def on_event(self, event: RaceEvent) -> None:
        if event.kind is EventKind.REFERENCE:
            counts = self._references
        else:
            counts = self._counts.setdefault(event.run.entry, [0] * 4)
        if event.kind is EventKind.JUDGED:
            counts[2] += event.run.ok  # a failed run skipped the judge: it counted as failed when it landed
        else:  # a reference or a candidate run landed
            counts[1] += 1
            counts[3] += not event.run.ok
        self.draw()

    def finish(self, stops: Mapping[str, str], *, complete: bool) -> None:
        """The race ended: ``stops`` (`Benchmark.stops`) says which entries stopped early and why; ``complete``, that
        it ran to its end (a race to a verdict then gave every entry all the runs it would get)."""
        self._final, self._complete = dict(stops), complete
        self.draw(force=True)

    def draw(self, force: bool = False) -> None:
        if not force and time.perf_counter() - self._drawn_at < PROGRESS_EVERY_S:
            return
        self._drawn_at = time.perf_counter()
        stops = dict(self._stops()) if self._final is None else self._final
        ended = self._final is not None
        show_stops = self._open_ended or bool(stops)
        rows, total = [], 0
        lines = [(f"reference ({self._reference})", True, self._references)]
        lines += [(name, False, counts) for name, counts in self._counts.items()]
        for label, is_reference, (most, landed, done, failed) in lines:
            stopped = None if is_reference else stops.get(label)
            # racing to a verdict, an entry that stopped (any, once the race is over) made all the runs it will make
            done_early = self._open_ended and not is_reference and (stopped is not None or self._complete)
            planned = landed if done_early else most
            total += 0 if is_reference else planned
            share = 100 * (landed if is_reference else done + failed) / planned if planned else 0
            filled = tag("div", style=f"width:{share:.0f}%;height:8px;background:#4a8")
            bar = tag("td", tag("div", filled, style="width:120px;background:#eee"))
            judged_cell = "–" if is_reference else done
            at_most = self._open_ended and not is_reference
            cells = [td(label), td(f"{landed} / ≤{most}" if at_most else f"{landed} / {most}"), td(judged_cell)]
            cells += [td(failed), bar]
            if show_stops:
                why = stopped or ("–" if ended or is_reference or not self._open_ended else RACING)
                cells.append(td(why))
            rows.append(tag("tr", *cells))
        self.bar.max = max(1, total)
        finished = sum(c[2] + c[3] for c in self._counts.values())  # candidate runs: the reference's are not judged
        self.bar.value = min(finished, self.bar.max)
        if finished and finished >= self.bar.max:
            self.bar.bar_style = "success"
        heads = ("entry", "landed", "judged", "failed", "", *(("stopped",) if show_stops else ()))
        head = tag("tr", *(tag("th", h) for h in heads))
        self.table.value = concat(CSS, tag("table", head, *rows, class_="gb-t"))
