"""Drift between two races of one job: `compare` pairs two reports by input and entry and says what changed.

A provider can change the model behind a name without a word. Race the job again later (with a fresh salt, so the
cache does not answer for the models) and ``gb.compare(before, after)`` gives each entry's change in score, paired
by input with a bootstrap interval (`gradebench._compare.stats`) that holds for all the entries compared at once
(Bonferroni: with five entries each is at 99%, so an unchanged fleet shows a false ``changed`` on some entry in about
6% of comparisons on 16 inputs, not in one of five), with its change in failures, cost per run and latency, and
everything else that differs between the races said beside it (`gradebench._compare.terms`): a changed judge,
rubric, input set or catalog entry is a reason a score moved, never silently compared.

Runs the after race took from the before race's cache (the same salt) are the same samples: they can show no change,
so they are left out, and an after race made only of them is said to be that. A failed run counts as 0, as in every
figure, and a change in how often an entry fails is said apart, so a drop made of 503s is not read as a new model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from .._base.html import Markup
from .._base.vocab import Role
from .._records.codec import Columns, frame
from .._report.report import REPORT_FILES, BenchmarkReport
from . import text
from .pairing import CHANGED, ONLY_AFTER, ONLY_BEFORE, EntryChange, Pairing, alone
from .terms import JUDGE_KINDS, NOTE, REFUSE, WARN, Difference, differences, input_set

__all__ = ["DIFFERENCES_SCHEMA", "ENTRIES_SCHEMA", "Comparison", "compare", "read_side"]

RESAMPLES = 10_000
"""Bootstrap resamples of each interval: the simultaneous intervals reach into the tails (0.5% with five entries)."""


_ROW = Columns(EntryChange, [*(f.name for f in dataclasses.fields(EntryChange)), "cost_ratio", "latency_ratio"])
ENTRIES_SCHEMA: dict[str, pl.DataType] = _ROW.schema
"""The columns of ``Comparison.entries``."""
DIFFERENCES_SCHEMA: dict[str, pl.DataType] = Columns(
    Difference, [f.name for f in dataclasses.fields(Difference)]
).schema
"""The columns of ``Comparison.differences``."""


class Comparison:
    """Two races of one job side by side: ``entries`` (one row per entry), ``differences`` (what else differs),
    ``sentences()``, ``table()`` and an HTML view."""

    def __init__(
        self,
        *,
        job: str,
        before: str,
        after: str,
        level: float,
        rows: Sequence[EntryChange],
        found: Sequence[Difference],
        shape: tuple[str, str],
    ):
        self.job = job
        """The job both races are of."""
        self.before = before
        """When the before race's answers were made (``on 2026-11-01``), as its sentences say it."""
        self.after = after
        """When the after race's were."""
        self.level = level
        """The family's confidence level: every ``changed`` holds at once at this level."""
        self.rows = list(rows)
        """The `EntryChange` records, in the before race's entry order (then the after race's new ones)."""
        self.found = list(found)
        """The `Difference` records: refusals never get here, then warnings, then notes."""
        self.shape = shape
        """Each race in a few words: inputs × runs and salt."""
        self.entries: pl.DataFrame = frame((_ROW.row(r) for r in self.rows), ENTRIES_SCHEMA)
        """One row per entry (columns of `ENTRIES_SCHEMA`)."""
        self.differences: pl.DataFrame = frame((dataclasses.asdict(d) for d in self.found), DIFFERENCES_SCHEMA)
        """One row per difference found (kind, weight, entry, before, after, sentence)."""

    @property
    def changed(self) -> list[str]:
        """The entries whose score changed."""
        return [r.entry for r in self.rows if r.status == CHANGED]

    def sentences(self) -> list[str]:
        """What the comparison says: the warnings, one sentence per entry (and one more for a change in failures),
        then the notes."""
        return text.sentences(self)

    def table(self) -> str:
        """The comparison as text: a header, one line per entry, then the sentences."""
        return text.table(self)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"Comparison(job={self.job!r}, entries={len(self.rows)}, changed={self.changed!r})"

    def _repr_html_(self) -> Markup:
        return text.html_view(self)


# ------------------------------------------------------------------------------------------------------- compare


def compare(
    before: BenchmarkReport | str | os.PathLike[str],
    after: BenchmarkReport | str | os.PathLike[str],
    *,
    level: float = 0.95,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> Comparison:
    """Pair two reports of one job (or their folders, as `BenchmarkReport.to_parquet` writes them) by input and entry,
    and give each entry's change in score with a paired interval, its change in failures, cost and latency, and what
    else differs between the races. Intervals hold together at ``level`` over the entries compared; ``seed`` makes
    them the same in every process. Two reports of different jobs, or with no input or entry in common, raise a
    ValueError saying so; a bad folder raises naming the file."""
    if not 0.5 <= level < 1:
        raise ValueError(f"level must be in [0.5, 1), got {level}")
    b, a = read_side(before, "before"), read_side(after, "after")
    inputs = input_set(b, a)
    found = differences(b, a, inputs)
    refused = [d.sentence for d in found if d.weight == REFUSE]
    entries_b, entries_a = _entries(b), _entries(a)
    if not refused and not set(entries_b) & set(entries_a):
        refused.append(f"no entry raced in both ({', '.join(entries_b)} before; {', '.join(entries_a)} after)")
    if refused:
        raise ValueError(f"cannot compare these reports: {'; '.join(refused)}")
    pairing = Pairing(b, a, inputs.common, judged_alike=not any(d.kind in JUDGE_KINDS for d in found))
    found = [*pairing.said(), *found]
    common = [e for e in entries_b if e in entries_a]
    k = sum(1 for e in common if pairing.comparable(e))
    entry_level = 1 - (1 - level) / max(1, k)
    rows = {e: pairing.change(e, entry_level, seed=seed, resamples=resamples, found=found) for e in common}
    made = [
        rows[e] if e in rows else alone(e, ONLY_BEFORE if e in entries_b else ONLY_AFTER, b, a)
        for e in dict.fromkeys([*entries_b, *entries_a])
    ]
    labels, order = _when(b, a)
    judge = "same judge" if pairing.judged_alike else "the judging changed"
    if pairing.all_same and not pairing.judged_alike:
        judge = "the same runs judged again"
    return Comparison(
        job=b.meta.job,
        before=labels[0],
        after=labels[1],
        level=level,
        rows=[dataclasses.replace(r, sentence=text.entry_sentence(r, labels[0], judge)) for r in made],
        found=sorted([*found, *order], key=lambda d: {WARN: 0, NOTE: 1}.get(d.weight, 2)),
        shape=(_shape(b), _shape(a)),
    )


def _when(before: BenchmarkReport, after: BenchmarkReport) -> tuple[tuple[str, str], list[Difference]]:
    """How the sentences name each race (``on 2026-11-01``; on one day, with the time), and a note when the after
    race's answers are the older ones."""
    made_b, made_a = made_when(before), made_when(after)
    if made_b is None or made_a is None:
        return (f"on {made_b:%Y-%m-%d}" if made_b else "before", f"on {made_a:%Y-%m-%d}" if made_a else "after"), []
    order = []
    if made_a < made_b:
        said = f"the after race's answers ({made_a:%Y-%m-%d %H:%M} UTC) are older than the before race's "
        order.append(
            Difference(
                kind="order",
                weight=NOTE,
                entry=None,
                before=made_b.isoformat(),
                after=made_a.isoformat(),
                sentence=f"{said}({made_b:%Y-%m-%d %H:%M} UTC): were they given the other way round?",
            )
        )
    if made_b.date() == made_a.date():  # the same day: the time tells them apart
        return (f"on {made_b:%Y-%m-%d %H:%M} UTC", f"on {made_a:%Y-%m-%d %H:%M} UTC"), order
    return (f"on {made_b:%Y-%m-%d}", f"on {made_a:%Y-%m-%d}"), order


def read_side(side: BenchmarkReport | str | os.PathLike[str], which: str) -> BenchmarkReport:
    """A report, or the report in a folder: a file that is missing or unreadable raises a ValueError naming it."""
    if isinstance(side, BenchmarkReport):
        return side
    if not isinstance(side, str | os.PathLike):
        raise TypeError(f"{which} must be a BenchmarkReport or a report folder, got {type(side).__name__}")
    path = Path(side)
    if not path.is_dir():
        raise ValueError(f"{which}: {path} is not a report folder (one holds {', '.join(REPORT_FILES)})")
    for name in REPORT_FILES:
        file = path / name
        if not file.is_file():
            continue  # read_parquet names a missing one (noise.parquet may be absent in an older report)
        try:
            if name.endswith(".json"):
                json.loads(file.read_text(encoding="utf-8"))
            else:
                pl.read_parquet_schema(file)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, pl.exceptions.PolarsError) as exc:
            kind = "JSON" if name.endswith(".json") else "a parquet file"
            raise ValueError(f"{which}: {file} is not {kind} gradebench can read ({exc})") from None
    try:
        return BenchmarkReport.read_parquet(path)
    except FileNotFoundError as exc:
        raise ValueError(f"{which}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{which}: {exc}") from None


def _entries(report: BenchmarkReport) -> list[str]:
    candidates = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    return [str(e) for e in candidates["entry"].unique(maintain_order=True).to_list()]


def _shape(report: BenchmarkReport) -> str:
    spec = report.meta.spec
    runs = "to a verdict" if spec.design.to_verdict else f"{spec.runs} runs"
    return f"{len(report.meta.inputs)} inputs × {runs}, salt {spec.salt!r}"


def made_when(report: BenchmarkReport) -> datetime | None:
    """When the race's answers were made (UTC): the median ``created`` time the endpoint stamped on its candidates'
    responses (a cached answer keeps its own); None when no response carries one."""
    stamps = []  # from the records, not the calls frame: a large race's transcripts are never one frame for this
    for run in report.to_runs():
        if run.role is Role.CANDIDATE:
            for call in run.calls:
                created = (call.response or {}).get("created")
                if isinstance(created, int | float) and not isinstance(created, bool):
                    stamps.append(float(created))
    if not stamps:
        return None
    return datetime.fromtimestamp(statistics.median(stamps), UTC)
