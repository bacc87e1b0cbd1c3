"""The report of one benchmark: its run records, and the polars frames, diagnostics, parquet and table made from them.

The records are the truth (`Run`, with its `Call` records and its `JudgeScore`): ``runs`` and ``calls`` are built from
them, ``models`` from ``runs``, and `BenchmarkReport.model_rows` reads its rows as `EntrySummary` records. A report
read back from parquet is its records again, so it is as good as one just made, transcripts included, and writing it
out again gives the same files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from .._base.html import Markup
from .._base.vocab import Role
from .._judge.agreement import JudgeAgreement, judge_agreement
from .._judge.panel import VERDICTS_FILE, VERDICTS_SCHEMA, verdicts_frame, with_panels
from .._judge.prompt import transcript_events
from .._records.codec import FRAME_CHUNK, frame, frames
from .._records.meta import ReportMeta
from .._records.planted import planted_run
from .._records.records import BODY_COLUMNS, CALL_FACTS_SCHEMA, CALLS_SCHEMA, RUNS_SCHEMA, Call, Run
from .._verdict.controls import ControlOutcome, control_diagnostics
from .._verdict.gold import GoldCheck
from .._verdict.labels import LABELS_FILE, HumanLabels
from .._verdict.pipeline import EntryVerdicts, entry_verdicts
from .._verdict.recommend import Recommendation, report_recommendation
from .._verdict.worth import EarlierLabels, JudgeWorth, judge_worth
from . import present as _present
from .diagnostics import DIAGNOSTICS_SCHEMA, diagnose
from .models import NOISE_SCHEMA, EntrySummary, conform, entry_summaries, models_frame, noise_rows
from .page import write_page

__all__ = ["REPORT_FILES", "BenchmarkReport"]

log = logging.getLogger("gradebench")

REPORT_FILES = (
    "runs.parquet",
    "models.parquet",
    "calls.parquet",
    "noise.parquet",
    "controls.parquet",
    VERDICTS_FILE,
    "meta.json",
)
"""What `BenchmarkReport.to_parquet` writes (``verdicts.parquet`` for a panel of judges only)."""
_LATER = ("noise.parquet", "controls.parquet", VERDICTS_FILE)
_FILES = tuple(name for name in REPORT_FILES if name not in _LATER)  # what read_parquet needs (older: none of _LATER)


class BenchmarkReport:
    """What a benchmark measured: ``runs``, ``calls`` and ``models`` frames, the reference, diagnostics and a table.

    Made from `Run` records and the `ReportMeta` they were measured under (a mapping of its fields works too); ``noise``
    holds the judge-noise rows once measured (`Benchmark.judge_noise`); ``labels`` a person's scores (`with_labels`).
    """

    def __init__(
        self,
        runs: Iterable[Run],
        meta: ReportMeta | Mapping[str, Any],
        noise: pl.DataFrame | Iterable[Mapping[str, Any]] | None = None,
        labels: HumanLabels | None = None,
        *,
        _frames: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    ):
        self._records = list(runs)
        self.meta: ReportMeta = meta if isinstance(meta, ReportMeta) else ReportMeta.from_dict(meta)
        """What the runs were measured under: job, grade, reference and judge entries, rubric, margin, inputs, ..."""
        if isinstance(noise, pl.DataFrame):
            self.noise: pl.DataFrame = conform(noise, NOISE_SCHEMA, "noise")
        else:
            self.noise = frame(noise or [], NOISE_SCHEMA)
        """The judge-noise floor: one row per re-judged run (empty until `Benchmark.judge_noise`)."""
        # the runs and controls frames made from these records already (read back: the files hold them)
        self._runs: pl.DataFrame | None = _frames[0] if _frames is not None else None
        self._controls: pl.DataFrame | None = _frames[1] if _frames is not None else None
        self._calls: pl.DataFrame | None = None
        self._call_facts: pl.DataFrame | None = None
        self._summaries: pl.DataFrame | None = None
        self._pipeline: EntryVerdicts | None = None
        self._models: pl.DataFrame | None = None
        self._model_rows: list[EntrySummary] | None = None
        self._verdicts: pl.DataFrame | None = None
        self._agreement: tuple[JudgeAgreement | None] | None = None
        if labels is not None:
            labels.validate(self.runs)
        self.labels: HumanLabels | None = labels
        """A person's scores of some runs (None without): the verdicts are label-corrected where they allow it."""
        self.earlier: EarlierLabels | None = None  # an earlier report's labels of this job (`_report.earlier`)

    def __repr__(self) -> str:
        return (
            f"BenchmarkReport(job={self.meta.job!r}, grade={self.meta.spec.grade!r}, runs={self.runs.height}, "
            f"entries={self.models.height})"
        )

    def __str__(self) -> str:
        return self.table()

    # ----------------------------------------------------------------------------------------------------- frames

    @property
    def runs(self) -> pl.DataFrame:
        """One row per run, reference and candidates (columns of `RUNS_SCHEMA`); never a negative control."""
        if self._runs is None:
            self._runs = frame((r.to_row() for r in self._records if r.role is not Role.CONTROL), RUNS_SCHEMA)
        return self._runs

    @property
    def controls(self) -> pl.DataFrame:
        """One row per negative control judged (columns of `RUNS_SCHEMA`, role ``control``, entry ``(control:
        kind)``): planted wrong answers, kept apart from ``runs`` so that no figure of the candidates counts them.
        What they say about the judge is `controls_outcome`."""
        if self._controls is None:
            self._controls = frame((r.to_row() for r in self._records if r.role is Role.CONTROL), RUNS_SCHEMA)
        return self._controls

    @property
    def calls(self) -> pl.DataFrame:
        """One row per model call, judge calls included (columns of `CALLS_SCHEMA`), transcripts untruncated (the
        negative controls' verdicts too: ``run_id`` is the control's)."""
        if self._calls is None:
            self._calls = frame((c.to_row() for r in self._records for c in _all_calls(r)), CALLS_SCHEMA)
        return self._calls

    def call_facts(self) -> pl.DataFrame:
        """One row per model call without its bodies (columns of `CALL_FACTS_SCHEMA`): what the report's own checks
        read, so that a large race's table never builds its every transcript as a frame."""
        if self._call_facts is None:
            self._call_facts = frame((c.facts_row() for r in self._records for c in _all_calls(r)), CALL_FACTS_SCHEMA)
        return self._call_facts

    @property
    def models(self) -> pl.DataFrame:
        """Per candidate entry, in order of first appearance (columns of `MODELS_SCHEMA`).

        ``score_*``, ``accuracy_mean``, ``work_mean`` and ``scorer_mean`` average the runs that have the value (a
        failed run scores 0); ``calls_mean``, tokens, latency and wall average the ok runs; ``cost_per_run`` spreads
        the cost of every run (failed ones included) over ``runs``; ``spent_now`` is the entry's total spent this time.
        """
        if self._models is None:
            summaries = self._entry_summaries()
            self._models = models_frame(summaries, self._entry_verdicts(), self.runs, self.noise, self.meta)
        return self._models

    def _entry_summaries(self) -> pl.DataFrame:
        """Each candidate entry's means, before its verdict is joined in (what the controls' yardstick reads)."""
        if self._summaries is None:
            self._summaries = entry_summaries(self.runs, self.meta)
        return self._summaries

    def _entry_verdicts(self) -> EntryVerdicts:
        """The verdicts against the reference entry, made once (`gradebench._verdict.pipeline`): ``models`` joins
        them in, ``agreement`` and `controls_outcome` are theirs."""
        if self._pipeline is None:
            self._pipeline = entry_verdicts(
                self.runs, self._entry_summaries(), self.meta, controls=self.controls, labels=self.labels
            )
        return self._pipeline

    @property
    def verdicts(self) -> pl.DataFrame:
        """A panel of judges' verdicts: one row per candidate run and judge (columns of `VERDICTS_SCHEMA`); empty for
        a one-judge race, whose one verdict is each run's own row. A run's ``score`` in ``runs`` is its judges' mean."""
        if self._verdicts is None:
            self._verdicts = verdicts_frame(self._records)
        return self._verdicts

    def judge_agreement(self) -> JudgeAgreement | None:
        """How far a panel's judges agree (weighted κ and the mean difference, per pair and entry; see
        `gradebench._judge.agreement`); None for a one-judge race."""
        if self._agreement is None:
            self._agreement = (judge_agreement(self.verdicts, self.meta.judges),)
        return self._agreement[0]

    @property
    def agreement(self) -> pl.DataFrame:
        """How far the judge agrees with the labels (`with_labels`): per entry and over all, κ, ρ and bias with their
        intervals and a sentence, and each tested entry's judge-only verdict beside (columns of `AGREEMENT_SCHEMA`;
        empty without labels)."""
        return self._entry_verdicts().agreement

    def model_rows(self) -> list[EntrySummary]:
        """The rows of ``models`` as `EntrySummary` records, in its order: the same figures, read by attribute."""
        if self._model_rows is None:
            self._model_rows = [EntrySummary.from_row(row) for row in self.models.iter_rows(named=True)]
        return list(self._model_rows)

    def to_runs(self) -> list[Run]:
        """The `Run` records, with their calls and verdicts: what a rejudge starts from."""
        return list(self._records)

    # ------------------------------------------------------------------------------------------------------ views

    @property
    def reference(self) -> dict[str, Any] | None:
        """The reference row as a dict (the first one when there are several inputs), or None."""
        refs = self.runs.filter(pl.col("role") == Role.REFERENCE)
        return refs.row(0, named=True) if refs.height else None

    @property
    def output(self) -> Any:
        """The reference's output (None when there is no reference or it failed)."""
        return next((r.output for r in self._records if r.role == Role.REFERENCE), None)

    def calls_for(self, run_id: str, role: str | None = None) -> list[Call]:
        """The `Call` records of one run (its judge's included); ``role="judge"`` for its judge's calls only."""
        run = self._run(run_id, missing_ok=True)
        calls = _all_calls(run) if run is not None else []
        return [c for c in calls if role is None or c.role == role]

    def transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run as the judge reads it: messages, tool calls with arguments and results, the answer or the error (a
        negative control's is its input's reference transcript with the answer it was given)."""
        run = self._run(run_id)
        if run.role is Role.CONTROL:
            plant = next((p for p in self.meta.controls if p.run_id == run_id), None)
            references = {r.input_id: r for r in self._records if r.role is Role.REFERENCE}
            if plant is not None and plant.input_id in references:
                run = planted_run(plant, references)
        return transcript_events(run.calls, run.output, run.error)

    def judge_prompts(self, run_id: str) -> list[list[dict[str, Any]]]:
        """The messages of every judge request about one run, exactly as sent (both orders under the swap check)."""
        return [c.request["messages"] for c in self.calls_for(run_id, role=Role.JUDGE)]

    def with_margin(self, margin: float) -> BenchmarkReport:
        """The same runs, with the verdicts tested at another non-inferiority margin (points of 10)."""
        return BenchmarkReport(self._records, self.meta.with_spec(margin=margin), self.noise, self.labels)

    def with_labels(self, labels: HumanLabels | pl.DataFrame | Mapping[str, Any]) -> BenchmarkReport:
        """The same runs with a person's scores of some of them (`HumanLabels`, a frame of ``run_id, score``, or
        ``{run_id: score}``): ``agreement`` measures the judge against them, and each verdict with enough labels on
        both sides is label-corrected (``verdict_basis``). A label on a run this report lacks, or on a reference
        run, raises naming it."""
        if isinstance(labels, pl.DataFrame):
            labels = HumanLabels(labels)
        elif not isinstance(labels, HumanLabels):
            labels = HumanLabels.from_scores(labels)
        return BenchmarkReport(self._records, self.meta, self.noise, labels)

    def worth(self) -> JudgeWorth | None:
        """What the report leads with (`gradebench._verdict.worth`); None without a verdict to label."""
        return judge_worth(self.runs, self.models, self.meta, self.controls_outcome(), self.agreement, self.earlier)

    @property
    def labels_needed(self) -> int | None:
        """Labels a side that would likely settle the verdict the recommendation turns on (`JudgeWorth`)."""
        return None if (worth := self.worth()) is None else worth.labels_needed

    def with_noise(self, rows: Iterable[Mapping[str, Any]], *, k: int) -> BenchmarkReport:
        """This report with the judge-noise floor measured: rows of ``run_id, entry, input_id, score, replicas``."""
        return BenchmarkReport(self._records, self.meta.replace(judge_noise_k=k), noise_rows(rows), self.labels)

    def recommend(self) -> Recommendation | None:
        """The cheapest entry whose verdict is ``as good`` as the reference entry, with the evidence in one sentence
        (``.sentence``) a user can paste into a review; None when no entry was tested against the reference."""
        found = self._entry_verdicts()
        return report_recommendation(
            self.models, self.meta, found.controls, gold=found.gold, outages=found.evidence.outages
        )

    def diagnostics(self) -> pl.DataFrame:
        """Rows worth a look (kind, entry, run_id, detail), ordered by kind then entry (the negative controls' rows,
        ``control_*``, after the runs')."""
        controls = control_diagnostics(self.controls_outcome())
        found = diagnose(self.runs, self.call_facts(), meta=self.meta, agreement=self.judge_agreement())
        if not controls:
            return found
        return pl.concat([found, pl.DataFrame(controls, schema=DIAGNOSTICS_SCHEMA).sort("kind", maintain_order=True)])

    def gold_check(self) -> GoldCheck | None:
        """What the gold labels say of the reference and of the judge's verdicts (`gradebench._verdict.gold`); None
        when the race was not scored against gold labels."""
        return self._entry_verdicts().gold

    def controls_outcome(self) -> ControlOutcome:
        """The negative controls: the planted wrong answers, how the judge scored them against a right answer's score
        (the reference's self-agreement), and whether that voids the verdicts (`ControlOutcome.void`)."""
        return self._entry_verdicts().controls

    def _run(self, run_id: str, *, missing_ok: bool = False) -> Any:
        found = next((r for r in self._records if r.run_id == run_id), None)
        if found is None and not missing_ok:
            raise KeyError(f"no run {run_id!r} in this report")
        return found

    # ------------------------------------------------------------------------------------------------------- text

    def totals(self) -> str:
        """One line: what the runs cost, what the judge cost, and what was spent now (cache hits cost nothing now)."""
        return _present.totals(self)

    def table(self, width: int | None = None) -> str:
        """The text table logged after a race: one line per entry, then the verdicts and the recommendation.

        ``width`` (a terminal's columns) fits it: the least needed columns are left out, named, and sentences wrap
        between words; None: no limit."""
        return _present.render(self, width)

    def _repr_html_(self) -> Markup:
        return _present.html(self)

    def to_html(self, path: str | Path, *, lowest: int = 2) -> Path:
        """Write the report as one self-contained HTML file that opens offline in a browser: the header, the stop
        marker and the judge's headlines, the models table with the verdicts and the recommendation, the charts (inline
        SVG), the diagnostics, and each entry's ``lowest`` lowest-scoring runs beside the reference run of the same
        input with the judge's reason. Every text from a run is escaped; the file loads nothing. Returns the path."""
        return write_page(self, path, lowest=lowest)

    # ---------------------------------------------------------------------------------------------------- parquet

    def to_parquet(self, directory: str | Path) -> Path:
        """Write runs, models, calls, noise and controls (.parquet), a panel's verdicts (``verdicts.parquet``) and
        meta.json into ``directory`` (created if needed), and the labels (``labels.parquet``) when the report has
        them."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.runs.write_parquet(path / "runs.parquet")
        self.models.write_parquet(path / "models.parquet")
        self._write_calls(path / "calls.parquet")
        self.noise.write_parquet(path / "noise.parquet")
        if self.verdicts.height:
            self.verdicts.write_parquet(path / VERDICTS_FILE)
        else:  # a panel report written here before must not lend its judges' verdicts to this one
            (path / VERDICTS_FILE).unlink(missing_ok=True)
        self.controls.write_parquet(path / "controls.parquet")
        (path / "meta.json").write_text(json.dumps(self.meta.to_dict(), indent=2, ensure_ascii=False) + "\n")
        if self.labels is not None:
            self.labels.write(path / LABELS_FILE)
        log.info("report written to %s (%d runs, %d calls)", path, self.runs.height, self.call_facts().height)
        return path

    def _write_calls(self, file: Path) -> None:
        """calls.parquet, a part at a time: the transcripts of a large race are never one frame in memory."""
        if self._calls is not None:
            self._calls.write_parquet(file)
            return
        rows = (c.to_row() for r in self._records for c in _all_calls(r))
        with _ParquetParts(file) as out:
            for part in frames(rows, CALLS_SCHEMA, weigh=_body_chars, most_weight=CALLS_PART_CHARS):
                out.write(part)

    @classmethod
    def read_parquet(cls, directory: str | Path) -> BenchmarkReport:
        """Read a report written by `to_parquet`, with the labels beside it (``labels.parquet``, also what a
        `LabelPanel` writes there); a missing file or column raises an error naming it."""
        records, meta, noise, labels, frames = _read_files(Path(directory))
        return cls(records, meta, noise, labels, _frames=frames)


_Files = tuple[list[Run], ReportMeta, pl.DataFrame | None, HumanLabels | None, tuple[pl.DataFrame, pl.DataFrame] | None]


def _read_files(path: Path) -> _Files:
    """What `BenchmarkReport.read_parquet` makes a report of: its records (calls and a panel's verdicts in them), its
    meta, noise rows and labels, and the runs and controls frames as read (None for a panel, whose runs are rebuilt
    with their judges' verdicts)."""
    missing = [name for name in _FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path}: missing {', '.join(missing)} (a report directory holds {', '.join(_FILES)})")
    meta = ReportMeta.from_dict(json.loads((path / "meta.json").read_text()), source=str(path / "meta.json"))
    runs = conform(
        _with_later_columns(pl.read_parquet(path / "runs.parquet"), RUNS_ADDED_LATER),
        RUNS_SCHEMA,
        str(path / "runs.parquet"),
    ).select(list(RUNS_SCHEMA))
    controls = frame([], RUNS_SCHEMA)
    if (path / "controls.parquet").is_file():  # a report written before negative controls has none
        file = str(path / "controls.parquet")
        controls = conform(_with_later_columns(pl.read_parquet(file), RUNS_ADDED_LATER), RUNS_SCHEMA, file).select(
            list(RUNS_SCHEMA)
        )
    noise = pl.read_parquet(path / "noise.parquet") if (path / "noise.parquet").is_file() else None
    by_run: dict[str, list[Call]] = {}
    shared = _SharedText()
    for part in _read_parts(path / "calls.parquet"):  # a part at a time: its bodies go to the spool as read
        calls = conform(_with_later_columns(part, CALLS_ADDED_LATER), CALLS_SCHEMA, str(path / "calls.parquet"))
        for row in calls.iter_rows(named=True):
            by_run.setdefault(row["run_id"], []).append(Call.from_row(shared.row(row, _SHARED_CALL_TEXT)))
    records = []
    for row in pl.concat([runs, controls]).iter_rows(named=True):
        row = shared.row(row, _SHARED_RUN_TEXT)
        own = by_run.get(row["run_id"], [])
        made = [c for c in own if c.role != Role.JUDGE]
        judged = [c for c in own if c.role == Role.JUDGE] if row["role"] != Role.REFERENCE else []
        records.append(Run.from_row(row, made, judged, meta.judge_params))
    if (path / VERDICTS_FILE).is_file():
        panel = conform(pl.read_parquet(path / VERDICTS_FILE), VERDICTS_SCHEMA, str(path / VERDICTS_FILE))
        records = with_panels(records, panel, meta.judge_params, source=str(path / VERDICTS_FILE))
    labels = HumanLabels.read(path / LABELS_FILE) if (path / LABELS_FILE).is_file() else None
    panels = (path / VERDICTS_FILE).is_file()  # a panel's runs are rebuilt with their judges' verdicts
    return records, meta, noise, labels, None if panels else (runs, controls)


RUNS_ADDED_LATER: dict[str, pl.DataType] = {"wall_now_s": pl.Float64(), "endpoint_error": pl.String()}
"""Runs columns a report written by an earlier gradebench lacks: read back as unknown (null)."""
CALLS_ADDED_LATER: dict[str, pl.DataType] = {"asked_model": pl.String(), "price_source": pl.String()}
"""Calls columns a report written by an earlier gradebench lacks: read back as unknown (null)."""


def _with_later_columns(frame: pl.DataFrame, later: dict[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=dtype).alias(name) for name, dtype in later.items() if name not in frame.columns]
    return frame.with_columns(missing) if missing else frame


_SHARED_RUN_TEXT = (
    "benchmark_id", "job", "input_id", "run_id", "role", "entry", "model", "grade", "currency", "cost_source",
    "finish_reason", "judge_entry", "judge_path", "judge_schema",
)  # fmt: skip
_SHARED_CALL_TEXT = ("run_id", "role", "entry", "asked_model", "cost_source", "price_source", "finish_reason")


class _SharedText:
    """One text object for each value read many times (an entry's name on every row): records read back from
    parquet share their texts as the records of a race do, instead of holding a copy per row."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def row(self, row: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
        for name in names:
            value = row.get(name)
            if isinstance(value, str):
                row[name] = self._seen.setdefault(value, value)
        return row


CALLS_PART_CHARS = 2 << 20
"""Characters of bodies in one part of ``calls.parquet`` (a row group): the part is held three times as it is written
(the rows' texts, the frame, arrow's copy), so it is bounded by its bodies, not only by its count of calls (a
tool agent's call can carry 100 times a plain one's text)."""


def _body_chars(row: Mapping[str, Any]) -> int:
    return sum(len(row[name] or "") for name in BODY_COLUMNS)


class _ParquetParts:
    """One parquet file written a frame at a time (as polars writes a whole one: zstd, the frame's own types)."""

    def __init__(self, file: Path):
        self._file = file
        self._writer: Any = None  # a pyarrow ParquetWriter, made (and pyarrow imported) by the first part

    def __enter__(self) -> _ParquetParts:
        return self

    def write(self, part: pl.DataFrame) -> None:
        table = part.to_arrow()
        if self._writer is None:
            import pyarrow.parquet as pq  # writing only: importing gradebench need not load arrow's parquet

            self._writer = pq.ParquetWriter(self._file, table.schema, compression="zstd")
        self._writer.write_table(table)

    def __exit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()


def _read_parts(file: Path) -> Iterator[pl.DataFrame]:
    """A parquet file's rows, `FRAME_CHUNK` at a time (an empty file: one empty frame of its columns). Polars reads
    just the row groups a slice needs, and what it read goes back once the part is done with (a reader that keeps
    its buffers would grow the process with the file)."""
    rows = pl.scan_parquet(file).select(pl.len()).collect().item()
    for offset in range(0, max(rows, 1), FRAME_CHUNK):
        yield pl.scan_parquet(file).slice(offset, FRAME_CHUNK).collect()


def _all_calls(run: Run) -> list[Call]:
    """A run's model calls, then its judge's (a reference carries none)."""
    if run.verdict is None or run.role == Role.REFERENCE:
        return run.calls
    return [*run.calls, *run.verdict.calls]
