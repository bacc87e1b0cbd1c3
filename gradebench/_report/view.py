"""What the report's views read of a report: `ReportView`, the one shape the presenter, the HTML page and the charts
take.

The report (`gradebench._report.report.BenchmarkReport`) is one such thing; the views name this Protocol instead of
the class, so that the report can write its HTML page (which draws the charts) without any of them importing it back.
"""

from __future__ import annotations

from typing import Any, Protocol

import polars as pl

from .._judge.agreement import JudgeAgreement
from .._records.meta import ReportMeta
from .._records.records import Run
from .._verdict.controls import ControlOutcome
from .._verdict.gold import GoldCheck
from .._verdict.recommend import Recommendation
from .._verdict.worth import JudgeWorth
from .models import EntrySummary

__all__ = ["ReportView"]


class ReportView(Protocol):
    """What the presenter, the HTML page and the charts read of a report."""

    meta: ReportMeta

    @property
    def runs(self) -> pl.DataFrame: ...

    @property
    def calls(self) -> pl.DataFrame: ...

    @property
    def controls(self) -> pl.DataFrame: ...

    @property
    def models(self) -> pl.DataFrame: ...

    @property
    def agreement(self) -> pl.DataFrame: ...

    def model_rows(self) -> list[EntrySummary]: ...

    def recommend(self) -> Recommendation | None: ...

    def to_runs(self) -> list[Run]: ...

    def judge_agreement(self) -> JudgeAgreement | None: ...

    def controls_outcome(self) -> ControlOutcome: ...

    def gold_check(self) -> GoldCheck | None: ...

    def diagnostics(self) -> pl.DataFrame: ...

    def transcript(self, run_id: str) -> list[dict[str, Any]]: ...

    def worth(self) -> JudgeWorth | None: ...
