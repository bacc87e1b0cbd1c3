"""The estimate beside Run: what the race as set up will cost and how long it will take, before it runs.

An estimate is built on the reference runs (`Benchmark.estimate` runs them first), so it is free only when the cache
holds them. The estimator follows the form: a change of settings waits `ESTIMATE_AFTER_S` for the burst to end (a new
job moves the grade, the candidates and the rubric at once), then asks the cache alone how many reference runs are
missing (`Benchmark.uncached_references`, nothing is sent). None: it estimates at once. Some: it says so and leaves it
to the **Estimate** button, since those runs spend on the reference's endpoint. Every step runs as a task on the
running loop (the kernel's, in a notebook); a newer change cancels an older one, and an error is shown in place.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ipywidgets as w

from .._race.estimate import Estimate
from .._report import present as _present
from ._form import Form
from ._html import CSS, concat, tag

__all__ = ["ESTIMATE_AFTER_S", "Estimator"]

ESTIMATE_AFTER_S = 0.5
"""How long the estimate waits after the last change of settings before it looks again."""
WAITING = "the estimate waits for the race to end"
THIS_RACE = "this race, as estimated when it started: "
"""What the estimate beside Run says of itself while the race it estimated runs (it is that race's, not the next)."""


class Estimator:
    """The **Estimate** button and the line beside it, kept up to date with the form."""

    def __init__(self, form: Form):
        self.form = form
        self.button = w.Button(
            description="Estimate",
            icon="calculator",
            disabled=True,
            tooltip="run the reference runs (they spend), then estimate the race",
        )
        self.line = w.HTML(layout=w.Layout(flex="1 1 auto", min_width="0"))
        self.task: asyncio.Task[Any] | None = None
        """The estimate under way (or the last one)."""
        self.result: Estimate | None = None
        """The estimate of the settings as they are now; None while there is none."""
        self.error: BaseException | None = None
        """Why the last estimate could not be made, or None."""
        self._paused = self._spending = False
        self._said = ""  # the estimate's line as shown, once made
        self.button.on_click(lambda _: self.begin(spend=True))
        form.on_change(self.refresh)
        self.refresh()

    # ------------------------------------------------------------------------------------------------ the calls

    def refresh(self) -> None:
        """The settings changed: what was estimated no longer holds. Look again after a pause, unless a race runs
        (then after it)."""
        self.cancel()
        self.result, self.error = None, None
        if self._paused:  # `resume` looks again
            self._say(WAITING, quiet=True)
        else:
            self.begin(spend=False)

    def begin(self, *, spend: bool) -> asyncio.Task[Any] | None:
        """Estimate the settings as they are: with ``spend``, running any reference run the cache lacks (the button);
        without, only when that costs nothing (after `ESTIMATE_AFTER_S`). Returns the task (while one that may spend
        runs, that one), or None when none started."""
        if self._paused:
            return None
        if spend and self._spending and self.task is not None and not self.task.done():
            return self.task  # a second click: the estimate under way is the answer
        self.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._say("the estimate needs a running event loop (in a script: `await panel.estimate()`)", quiet=True)
            self.button.disabled = False
            return None
        self.button.disabled = True
        self._spending = spend
        if spend:
            pick = self.form.catalog.picks.get(self.form.grade.value, "the reference entry")
            self._say(f"estimating: the reference runs first on {pick}…")
        else:
            self._say("estimating…", quiet=True)
        self.task = loop.create_task(self._estimate(spend))
        return self.task

    async def estimate(self) -> Estimate | None:
        """Click Estimate and wait: the estimate, or None when it could not be made (see ``line``, ``error``) or a
        change of settings overtook it."""
        task = self.begin(spend=True)
        if task is None:
            return None
        await asyncio.wait([task])
        return None if task.cancelled() else task.result()

    def cancel(self) -> bool:
        """Cancel the estimate under way (a reference run that finished stays in the cache)."""
        if self.task is None or self.task.done():
            return False
        return self.task.cancel()

    def pause(self, *, race: bool = True) -> None:
        """A race (or rejudge) starts: no estimate is made beside it (the race runs the reference runs itself), and
        the line says whose estimate it shows: the race's own, made of the settings it started with, or none."""
        if not self.cancel() and race and self.result is not None:  # made of these very settings: this race's
            self._say(THIS_RACE + self._said, quiet=True)
        else:  # none, or one under way: never the line of settings before these, nor "estimating…" all race long
            self._say(WAITING, quiet=True)
        self._paused = True
        self.button.disabled = True

    def resume(self) -> None:
        """The race ended: estimate again (its runs are in the cache now, so it is likely free)."""
        self._paused = False
        self.refresh()

    # ------------------------------------------------------------------------------------------------- the work

    async def _estimate(self, spend: bool) -> Estimate | None:
        try:
            if not spend:
                await asyncio.sleep(ESTIMATE_AFTER_S)  # a burst of changes cancels this and starts again
            bench = self.form.build_benchmark()
            if not spend:
                missing = await bench.uncached_references()
                if missing:
                    entry = bench.lineup.reference.name
                    self._say(references_first(missing, len(bench.inputs), entry))
                    self.button.disabled = False
                    return None
            made = await bench.estimate()
        except Exception as exc:  # a setting that cannot work, a reference run that failed: said in place
            self.error = exc
            self._say(f"cannot estimate: {type(exc).__name__}: {exc}", error=True)
            self.button.disabled = False
            return None
        self.result = made
        self._said = estimate_text(made, to_verdict=bench.spec.design.to_verdict, budget=bench.spec.budget)
        self._say(self._said)
        self.button.disabled = False
        return made

    def _say(self, text: str, *, error: bool = False, quiet: bool = False) -> None:
        style = ("color:#666;" if quiet else "") + "display:inline-block;line-height:1.4"
        self.line.value = concat(CSS, tag("span", text, class_="gb-bad" if error else None, style=style))


def estimate_text(made: Estimate, *, to_verdict: bool = False, budget: float | None = None) -> str:
    """An estimate as the panel shows it beside Run: its line, that a race to a verdict may stop sooner, and how it
    stands to the budget."""
    parts = [made.line()]
    if to_verdict:
        parts.append("at most: racing to a verdict stops each entry once it is settled")
    if budget is not None:
        cap = f"{budget:g} {made.currency}"
        if made.cost > budget:
            parts.append(f"over the budget ({cap}): the race will stop when the budget runs out")
        else:
            parts.append(f"budget {cap}: no run starts that might not fit, so close to it the race may stop early")
    return " · ".join(parts)


def references_first(missing: int, total: int, entry: str) -> str:
    """Why an estimate waits for a click: it runs the reference runs the cache does not hold, and they cost."""
    held = f" ({total - missing} of {total} are in the cache)" if missing < total else ""
    return (
        f"an estimate runs {_present.plural(missing, 'reference run')} on {entry} first{held}: they are spent now, "
        "and Run then reuses them from the cache"
    )
