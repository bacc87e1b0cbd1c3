"""The labels of an earlier report of the same job, found where a new report is about to be written: how far the judge
agreed with a person then (`gradebench._verdict.worth.EarlierLabels`), which the new report leads with.

The command line writes a report into a folder (``--out``); a `LabelPanel` opened on it writes ``labels.parquet``
beside it. When the next race of the same job is written to that folder, the labels there belong to the earlier
report, which is read back with them before it is replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._verdict.label_agreement import ALL_ENTRIES
from .._verdict.labels import LABELS_FILE
from .._verdict.worth import EarlierLabels
from .report import BenchmarkReport

__all__ = ["earlier_labels", "with_earlier_labels"]


def earlier_labels(directory: str | Path, job: str | None) -> EarlierLabels | None:
    """The judge's agreement with the labels of the report in ``directory``, when it is a report of ``job`` with a
    labels file beside it; None when there is none. A report or labels file that cannot be read is said, not
    skipped: the lead line names the file and why."""
    folder = Path(directory)
    labels_file, meta_file = folder / LABELS_FILE, folder / "meta.json"
    if not labels_file.is_file() or not meta_file.is_file():
        return None
    try:
        if json.loads(meta_file.read_text()).get("job") != job:
            return None
        agreement = BenchmarkReport.read_parquet(folder).agreement
    except (OSError, ValueError, KeyError) as exc:  # labels of another race, a file cut short: say so
        return EarlierLabels(source=str(labels_file), labels=0, unreadable=f"{type(exc).__name__}: {exc}")
    every = agreement.filter(agreement["entry"] == ALL_ENTRIES)
    if not every.height:
        return EarlierLabels(source=str(labels_file), labels=0, unreadable="no tested entry to measure the judge on")
    return EarlierLabels.from_row(every.row(0, named=True), str(labels_file))


def with_earlier_labels(report: BenchmarkReport, earlier: EarlierLabels | None) -> BenchmarkReport:
    """A copy of ``report`` that leads with the judge's agreement with ``earlier`` (`earlier_labels`)."""
    made = BenchmarkReport(report.to_runs(), report.meta, report.noise, report.labels)
    made.earlier = earlier
    return made
