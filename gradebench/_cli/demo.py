"""`gradebench demo`'s labelled path: after the judge-only report, a person answers the questions a `LabelPanel`
asks — here the sim's careful person (`gradebench.sim.human_score`) — and the verdict is corrected by the labels.

The panel is driven in code as docs/labels.md drives it: opened on the report in active labelling's order, on the
entry the recommendation turns on and the reference entry, for as many runs a side as the report's lead block says
would likely settle its verdict (``report.labels_needed``). After each batch of answers it says how close that
verdict is to settling (`LabelPanel.standing`); then the label-corrected verdict and the recommendation are printed,
and the labels file and the labelled report's HTML are written beside the others.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._base.numbers import fit_line
from .._report.present import lead, recommendation, verdict_lines, verdicts_title
from .._report.report import BenchmarkReport
from .._verdict.labels import LABELS_FILE, HumanLabels
from ..sim import human_score
from ..widgets import LabelPanel

__all__ = ["BATCH", "LABELLED_HTML", "SET_ASIDE", "labelled_path"]

BATCH = 10
"""Answers between two reports of where the verdict stands."""
LABELLED_HTML = "report-labelled.html"
"""The labelled report's HTML, beside the judge-only one."""
SET_ASIDE = "labels-earlier.parquet"
"""Where labels of another race found in the folder are moved, so the panel starts afresh."""
LABELLER = "sim person"


def labelled_path(report: BenchmarkReport, out: Path, width: int | None) -> None:
    """Ask the sim's careful person for the labels the report says it needs, print where the verdict stands after
    each batch and the label-corrected verdict and recommendation, and write the labels and the labelled report's
    HTML into ``out``."""

    def say(line: str) -> None:
        print(line if width is None else fit_line(line, width))

    worth = report.worth()
    print()
    if worth is None or worth.pivot is None or worth.labels_needed is None:
        why = "no verdict was tested" if worth is None or worth.pivot is None else "labelling every run would not"
        say(f"The labelled path: no labels asked ({why} settle the verdict the recommendation turns on)")
        return
    entry, reference = worth.pivot, report.meta.reference_entry
    needed = next(n for n in worth.needed if n.entry == entry)
    asked = sum(min(worth.labels_needed, runs) for runs in needed.runs)
    path = out / LABELS_FILE
    _set_aside(path, report, say)
    panel = LabelPanel(report, path, n=asked, order="active", entries=[entry, reference], labeller=LABELLER)
    say(
        f"The labelled path: the sim's careful person answers the label panel (active order) on {asked} runs of "
        f"{entry} and {reference}, as the report asked:"
    )
    if panel.current is None:
        say(f"  all {asked} are labelled already in {path}")
    while panel.current is not None:
        score = human_score(report, panel.current)
        if score is None:  # the panel asks only about judged runs: a run the person cannot see is a bug
            raise RuntimeError(f"run {panel.current} was never shown to the judge: nothing to label")
        panel.answer(score)
        if panel.answered % BATCH == 0 or panel.current is None:
            say(f"  after {panel.answered} labels: {_standing(panel, entry)}")
    labelled = panel.labelled_report()
    said = lead(labelled)
    for line in said[:1] + [s for s in said[1:] if s.startswith((f"  {entry}:", "  the judge against"))]:
        say(line)
    say(verdicts_title(labelled))
    names = len(entry) + 2
    for verdict in verdict_lines(labelled):
        if verdict.entry == entry:
            say(verdict.text(names))
    if (pick := recommendation(labelled)) is not None:
        say(pick)
    written = labelled.to_html(out / LABELLED_HTML)
    say(f"\nWrote {path} ({len(panel.labels)} labels) and {written}: the labelled report")


def _standing(panel: LabelPanel, entry: str) -> str:
    """``entry``'s line of `LabelPanel.standing`, cut to what the labels say: the verdict and the part of its reason
    about labels (the corrected verdict's basis and bounds, or why there is none yet)."""
    line = next(said for said in panel.standing() if said.startswith(f"{entry}:"))
    verdict, _, reason = line.removeprefix(f"{entry}: ").partition(" · ")
    parts = reason.split("; ")
    about = next((p for p in parts if "label" in p), parts[0])
    basis = "judge-only" if about.startswith("no label-corrected") else "label-corrected"
    return f"{entry} {verdict} ({basis}) · {about}"


def _set_aside(path: Path, report: BenchmarkReport, say: Callable[[str], None]) -> None:
    """Move labels of another race found at ``path`` to `SET_ASIDE` beside it (a panel would refuse them)."""
    if not path.is_file():
        return
    try:
        HumanLabels.read(path).validate(report.runs)
    except ValueError:
        moved = path.replace(path.with_name(SET_ASIDE))
        say(f"(labels of an earlier race in {path} moved to {moved})")
