"""The report of one benchmark: polars frames of runs, calls and per-entry means, diagnostics, parquet and a text table.

The frames are the truth: a report read back from parquet is as good as one just made, transcripts included
(``calls_for`` rebuilds the `Call` records from the ``calls`` frame).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import _present, _stats
from ._diagnostics import DIAGNOSTICS_SCHEMA
from ._judge import transcript_events
from ._records import Run, Verdict
from ._seat import Call

__all__ = ["CALLS_SCHEMA", "DIAGNOSTICS_SCHEMA", "MODELS_SCHEMA", "NOISE_SCHEMA", "RUNS_SCHEMA", "BenchmarkReport"]

log = logging.getLogger("gradebench")

RUNS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark_id": pl.String(),
    "job": pl.String(),
    "input_id": pl.String(),
    "run_id": pl.String(),
    "role": pl.String(),
    "entry": pl.String(),
    "model": pl.String(),
    "grade": pl.String(),
    "simulated": pl.Boolean(),
    "repeat": pl.Int64(),
    "ok": pl.Boolean(),
    "error": pl.String(),
    "calls": pl.Int64(),
    "tool_calls": pl.Int64(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cached_input_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "latency_s": pl.Float64(),
    "wall_s": pl.Float64(),
    "cost": pl.Float64(),
    "cost_source": pl.String(),
    "price_table_cost": pl.Float64(),
    "spent_now": pl.Float64(),
    "currency": pl.String(),
    "cached": pl.Boolean(),
    "finish_reason": pl.String(),
    "truncated": pl.Int64(),
    "refused": pl.Boolean(),
    "output": pl.String(),
    "score": pl.Float64(),
    "accuracy": pl.Float64(),
    "work": pl.Float64(),
    "reason": pl.String(),
    "judge_entry": pl.String(),
    "judge_path": pl.String(),
    "judge_schema": pl.String(),
    "judge_error": pl.String(),
    "scorer": pl.Float64(),
    "scorer_error": pl.String(),
    "judge_attempts": pl.Int64(),
    "judge_cost": pl.Float64(),
    "swap_gap": pl.Float64(),
    "tool_missing": pl.Int64(),
    "tool_extra": pl.Int64(),
    "tool_arg_mismatch": pl.Int64(),
    "tool_diff": pl.String(),
}
"""One row per run (reference and candidates)."""

CALLS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "seq": pl.Int64(),
    "role": pl.String(),
    "entry": pl.String(),
    "request": pl.String(),
    "response": pl.String(),
    "tool_results": pl.String(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cached_input_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "latency_s": pl.Float64(),
    "cost": pl.Float64(),
    "cost_source": pl.String(),
    "price_table_cost": pl.Float64(),
    "cache_hit": pl.Boolean(),
    "generation_id": pl.String(),
    "finish_reason": pl.String(),
    "error": pl.String(),
}
"""One row per model call, judge calls included."""

MODELS_SCHEMA: dict[str, pl.DataType] = {
    "entry": pl.String(),
    "model": pl.String(),
    "grade": pl.String(),
    "simulated": pl.Boolean(),
    "runs": pl.Int64(),
    "ok_rate": pl.Float64(),
    "score_mean": pl.Float64(),
    "score_lo": pl.Float64(),
    "score_hi": pl.Float64(),
    "accuracy_mean": pl.Float64(),
    "work_mean": pl.Float64(),
    "scorer_mean": pl.Float64(),
    "calls_mean": pl.Float64(),
    "input_tokens_mean": pl.Float64(),
    "output_tokens_mean": pl.Float64(),
    "cached_input_tokens_mean": pl.Float64(),
    "reasoning_tokens_mean": pl.Float64(),
    "latency_s_mean": pl.Float64(),
    "wall_s_mean": pl.Float64(),
    "cost_per_run": pl.Float64(),
    "spent_now": pl.Float64(),
    "currency": pl.String(),
    "judged": pl.Int64(),
    "is_reference": pl.Boolean(),
    "verdict": pl.String(),
    "margin": pl.Float64(),
    "mean_diff": pl.Float64(),
    "lower": pl.Float64(),
    "upper": pl.Float64(),
    "p_value": pl.Float64(),
    "n_inputs": pl.Int64(),
    "n_pairs": pl.Int64(),
    "more_runs": pl.Int64(),
    "verdict_reason": pl.String(),
    "cost_ratio": pl.Float64(),
    "latency_ratio": pl.Float64(),
    "cost_per_point": pl.Float64(),
    "cost_per_point_ratio": pl.Float64(),
    "swap_gap_mean": pl.Float64(),
    "floor_runs": pl.Int64(),
    "floor_std": pl.Float64(),
    "floor_range": pl.Float64(),
    "floor_moved": pl.Float64(),
}
"""One row per candidate entry: means and intervals, the verdict against the reference, ratios, the judge's floor."""

NOISE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "entry": pl.String(),
    "input_id": pl.String(),
    "score": pl.Float64(),
    "replicas": pl.List(pl.Float64()),
    "std": pl.Float64(),
    "range": pl.Float64(),
    "moved": pl.Boolean(),
}
"""One row per re-judged run (`Benchmark.judge_noise`): its verdict's score, the replica scores and their spread."""

_FILES = ("runs.parquet", "models.parquet", "calls.parquet", "meta.json")

FAILED_REASON = "not judged: the run failed, and a failed run scores 0"
"""The ``reason`` of a failed candidate run: it is never sent to the judge, and counts as 0 in every figure."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _frame(rows: list[dict[str, Any]], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    columns = {name: [row.get(name) for row in rows] for name in schema}
    return pl.DataFrame(columns, schema=dict(schema))


def _conform(df: pl.DataFrame, schema: Mapping[str, pl.DataType], what: str) -> pl.DataFrame:
    """Columns in the declared order and dtypes (extra columns kept after them); a missing column raises."""
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise ValueError(f"{what} frame lacks columns {missing}")
    extra = [c for c in df.columns if c not in schema]
    return df.select([pl.col(c).cast(t) for c, t in schema.items()] + [pl.col(c) for c in extra])


def _total(values: Iterable[float | None]) -> float | None:
    """The sum, or None when any value is unknown."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _mean(series: pl.Series) -> float | None:
    values = series.drop_nulls()
    return float(values.mean()) if len(values) else None  # type: ignore[arg-type]


def _known_mean(series: pl.Series) -> float | None:
    """The mean, or None when any value is unknown (a mean over the runs that reported would flatter the entry)."""
    return None if series.null_count() else _mean(series)


def _run_row(run: Run) -> dict[str, Any]:
    verdict = run.verdict
    if verdict is not None and run.role == "reference":
        log.warning("report: the reference run %s carries a verdict; reference rows are not judged", run.run_id)
        verdict = None
    row: dict[str, Any] = {
        "benchmark_id": run.benchmark_id,
        "job": run.job,
        "input_id": run.input_id,
        "run_id": run.run_id,
        "role": run.role,
        "entry": run.entry,
        "model": run.model,
        "grade": run.grade,
        "simulated": run.simulated,
        "repeat": run.repeat,
        "ok": run.ok,
        "error": run.error,
        "calls": len(run.calls),
        "tool_calls": run.tool_calls,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cached_input_tokens": run.cached_input_tokens,
        "reasoning_tokens": run.reasoning_tokens,
        "latency_s": float(run.latency_s),
        "wall_s": float(run.wall_s),
        "cost": run.cost,
        "cost_source": run.cost_source,
        "price_table_cost": run.price_table_cost,
        "spent_now": run.spent_now,
        "currency": run.currency,
        "cached": run.cached,
        "finish_reason": run.finish_reason,
        "truncated": run.truncated,
        "refused": run.refused,
        "output": run.output_json,
        "scorer": None if run.scorer is None else float(run.scorer),
        "scorer_error": run.scorer_error,
    }
    if verdict is not None:
        row.update(
            score=verdict.score,
            accuracy=verdict.accuracy,
            work=verdict.work,
            reason=verdict.reason,
            judge_entry=verdict.judge_entry,
            judge_path=verdict.path,
            judge_schema=verdict.schema,
            judge_error=verdict.error,
            judge_attempts=verdict.attempts,
            judge_cost=_total(c.cost for c in verdict.calls),
            swap_gap=verdict.swap_gap,
        )
    elif run.role == "candidate" and not run.ok:
        # One rule for failed runs, in every figure: not judged (no judge call), and scored 0.
        row.update(score=0.0, accuracy=0.0, work=0.0, reason=FAILED_REASON, judge_attempts=0, judge_cost=0.0)
    if run.tool_diff is not None:
        diff = run.tool_diff
        row.update(tool_missing=diff.tool_missing, tool_extra=diff.tool_extra, tool_arg_mismatch=diff.tool_arg_mismatch,
                   tool_diff=diff.text)  # fmt: skip
    return row


def _call_row(call: Call, run_id: str, role: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "seq": call.seq,
        "role": role,
        "entry": call.entry,
        "request": _dumps(call.request),
        "response": None if call.response is None else _dumps(call.response),
        "tool_results": _dumps(call.tool_results),
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "cached_input_tokens": call.cached_input_tokens,
        "reasoning_tokens": call.reasoning_tokens,
        "latency_s": float(call.latency_s),
        "cost": call.cost,
        "cost_source": call.cost_source,
        "price_table_cost": call.price_table_cost,
        "cache_hit": call.cache_hit,
        "generation_id": call.generation_id,
        "finish_reason": call.finish_reason,
        "error": call.error,
    }


_RUN_FIELDS = ("benchmark_id", "job", "input_id", "run_id", "role", "entry", "model", "grade", "simulated", "repeat",
               "currency", "ok", "error", "wall_s", "scorer", "scorer_error")  # fmt: skip


class BenchmarkReport:
    """What a benchmark measured: ``runs``, ``calls`` and ``models`` frames, the reference, diagnostics and a table."""

    def __init__(
        self, runs: pl.DataFrame, calls: pl.DataFrame, meta: Mapping[str, Any], noise: pl.DataFrame | None = None
    ):
        self.runs: pl.DataFrame = _conform(runs, RUNS_SCHEMA, "runs")
        """One row per run (columns of `RUNS_SCHEMA`)."""
        self.calls: pl.DataFrame = _conform(calls, CALLS_SCHEMA, "calls")
        """One row per model call, judge calls included (columns of `CALLS_SCHEMA`)."""
        # a JSON-clean copy, so the meta read back from meta.json is equal to it
        self.meta: dict[str, Any] = json.loads(_dumps(dict(meta)))
        """benchmark_id, job, grade, reference/judge entry, judge_params, rubric, version, skipped, salt, ..."""
        self.noise: pl.DataFrame = _conform(noise if noise is not None else _frame([], NOISE_SCHEMA), NOISE_SCHEMA,
                                            "noise")  # fmt: skip
        """The judge-noise floor: one row per re-judged run (empty until `Benchmark.judge_noise`)."""
        self._models: pl.DataFrame | None = None

    def with_noise(self, rows: Iterable[Mapping[str, Any]], *, k: int) -> BenchmarkReport:
        """This report with the judge-noise floor measured: rows of ``run_id, entry, input_id, score, replicas``."""
        noise = []
        for r in rows:
            scores = [float(x) for x in r["replicas"]]
            every = [float(r["score"]), *scores] if r["score"] is not None else scores
            noise.append({**r, "replicas": scores, "std": float(np.std(every)) if every else None,
                          "range": (max(every) - min(every)) if every else None,
                          "moved": any(x != r["score"] for x in scores)})  # fmt: skip
        return BenchmarkReport(self.runs, self.calls, {**self.meta, "judge_noise_k": k}, _frame(noise, NOISE_SCHEMA))

    @classmethod
    def from_runs(cls, runs: Iterable[Run], meta: Mapping[str, Any]) -> BenchmarkReport:
        """Build the frames from `Run` records (their calls and their verdicts' calls)."""
        run_rows: list[dict[str, Any]] = []
        call_rows: list[dict[str, Any]] = []
        for run in runs:
            run_rows.append(_run_row(run))
            call_rows.extend(_call_row(c, run.run_id, c.role) for c in run.calls)
            if run.verdict is not None and run.role != "reference":
                call_rows.extend(_call_row(c, run.run_id, "judge") for c in run.verdict.calls)
        return cls(_frame(run_rows, RUNS_SCHEMA), _frame(call_rows, CALLS_SCHEMA), meta)

    def __repr__(self) -> str:
        return (
            f"BenchmarkReport(job={self.meta.get('job')!r}, grade={self.meta.get('grade')!r}, "
            f"runs={self.runs.height}, entries={self.models.height})"
        )

    def __str__(self) -> str:
        return self.table()

    # ------------------------------------------------------------------------------------------------------- views

    @property
    def models(self) -> pl.DataFrame:
        """Per candidate entry, in order of first appearance (columns of `MODELS_SCHEMA`).

        ``score_*``, ``accuracy_mean``, ``work_mean`` and ``scorer_mean`` average the runs that have the value;
        ``calls_mean``, tokens, latency and wall average the ok runs; ``cost_per_run`` spreads the cost of every run
        (failed ones included) over ``runs``; ``spent_now`` is the entry's total spent this time.
        """
        if self._models is None:
            self._models = self._compute_models()
        return self._models

    def _compute_models(self) -> pl.DataFrame:
        candidates = self.runs.filter(pl.col("role") == "candidate")
        reference_entry = self.meta.get("reference_entry")
        rows = []
        for part in candidates.partition_by("entry", maintain_order=True) if candidates.height else []:
            first = part.row(0, named=True)
            ok = part.filter(pl.col("ok"))
            scores = part["score"].drop_nulls()
            lo, hi = self._interval(first["entry"], _mean(scores))
            rows.append(
                {
                    "entry": first["entry"],
                    "model": first["model"],
                    "grade": first["grade"],
                    "simulated": first["simulated"],
                    "runs": part.height,
                    "ok_rate": ok.height / part.height,
                    "score_mean": _mean(scores),
                    "score_lo": lo,
                    "score_hi": hi,
                    "accuracy_mean": _mean(part["accuracy"]),
                    "work_mean": _mean(part["work"]),
                    "scorer_mean": _mean(part["scorer"]),
                    "calls_mean": _mean(ok["calls"]),
                    "input_tokens_mean": _known_mean(ok["input_tokens"]),
                    "output_tokens_mean": _known_mean(ok["output_tokens"]),
                    "cached_input_tokens_mean": _known_mean(ok["cached_input_tokens"]),
                    "reasoning_tokens_mean": _known_mean(ok["reasoning_tokens"]),
                    "latency_s_mean": _mean(ok["latency_s"]),
                    "wall_s_mean": _mean(ok["wall_s"]),
                    "cost_per_run": None if (cost := _total(part["cost"])) is None else cost / part.height,
                    "spent_now": _total(part["spent_now"]),
                    "currency": first["currency"],
                    "judged": part.filter(pl.col("judge_entry").is_not_null() & pl.col("score").is_not_null()).height,
                    "is_reference": first["entry"] == reference_entry,
                }
            )
        return self._with_verdicts(_frame(rows, MODELS_SCHEMA))

    def _interval(self, entry: str, mean: float | None) -> tuple[float | None, float | None]:
        """95% paired bootstrap interval (inputs resampled, repeats nested) of an entry's mean over its judged runs."""
        if mean is None:
            return None, None
        # the runs the mean is over: every scored run (a failed run is not judged, and scores 0)
        judged = self.runs.filter((pl.col("entry") == entry) & pl.col("score").is_not_null())
        if judged.height < 2:
            return None, None
        ci = _stats.paired_bootstrap(judged, entry)
        if ci.lo is None or ci.hi is None:
            return None, None
        return min(ci.lo, mean), max(ci.hi, mean)  # inputs weigh equally there: keep the plain mean inside

    def _with_verdicts(self, models: pl.DataFrame) -> pl.DataFrame:
        """The verdict of each entry against the reference entry, the ratios to it, the swap gap and noise floor."""
        if not models.height:
            return models
        reference = str(self.meta.get("reference_entry") or "")
        verdicts = _stats.verdicts(self.runs, reference, margin=float(self.meta.get("margin", 1.0)))
        verdicts = verdicts.select(
            "entry", "verdict", "margin", "mean_diff", "lower", "upper", "p_value", "n_inputs", "n_pairs", "more_runs",
            pl.col("reason").alias("verdict_reason"),
        )  # fmt: skip
        candidates = self.runs.filter(pl.col("role") == "candidate")
        swap = candidates.group_by("entry").agg(pl.col("swap_gap").mean().alias("swap_gap_mean"))
        floor = self.noise.group_by("entry").agg(
            pl.len().cast(pl.Int64).alias("floor_runs"),
            pl.col("std").mean().alias("floor_std"),
            pl.col("range").mean().alias("floor_range"),
            pl.col("moved").cast(pl.Float64).mean().alias("floor_moved"),
        )
        extras = (verdicts, _stats.ratios(models, reference), swap, floor)
        out = models.drop([c for extra in extras for c in extra.columns if c != "entry"])
        for extra in extras:
            out = out.join(extra, on="entry", how="left", maintain_order="left")
        return _conform(out, MODELS_SCHEMA, "models")

    @property
    def reference(self) -> dict[str, Any] | None:
        """The reference row as a dict (the first one when there are several inputs), or None."""
        refs = self.runs.filter(pl.col("role") == "reference")
        return refs.row(0, named=True) if refs.height else None

    @property
    def output(self) -> Any:
        """The reference's output, parsed from its JSON (None when there is no reference or it failed)."""
        ref = self.reference
        return None if ref is None or ref["output"] is None else json.loads(ref["output"])

    def calls_for(self, run_id: str, role: str | None = None) -> list[Call]:
        """The `Call` records of one run, rebuilt from the ``calls`` frame; ``role="judge"`` for its judge's calls."""
        rows = self.calls.filter(pl.col("run_id") == run_id)
        if role is not None:
            rows = rows.filter(pl.col("role") == role)
        return [
            Call(
                run_id=r["run_id"],
                seq=r["seq"],
                role=r["role"],
                entry=r["entry"],
                request=json.loads(r["request"]),
                response=None if r["response"] is None else json.loads(r["response"]),
                tool_results=json.loads(r["tool_results"]) if r["tool_results"] is not None else [],
                input_tokens=r["input_tokens"],
                output_tokens=r["output_tokens"],
                cached_input_tokens=r["cached_input_tokens"],
                reasoning_tokens=r["reasoning_tokens"],
                latency_s=r["latency_s"],
                cost=r["cost"],
                cost_source=r["cost_source"],
                price_table_cost=r["price_table_cost"],
                cache_hit=r["cache_hit"],
                generation_id=r["generation_id"],
                finish_reason=r["finish_reason"],
                error=r["error"],
            )
            for r in rows.iter_rows(named=True)
        ]

    def with_margin(self, margin: float) -> BenchmarkReport:
        """The same runs, with the verdicts tested at another non-inferiority margin (points of 10)."""
        if not margin >= 0:
            raise ValueError(f"margin must be >= 0 (points of 10), got {margin!r}")
        return BenchmarkReport(self.runs, self.calls, {**self.meta, "margin": float(margin)}, self.noise)

    def transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run as the judge reads it: messages, tool calls with arguments and results, the answer or the error."""
        rows = self.runs.filter(pl.col("run_id") == run_id)
        if not rows.height:
            raise KeyError(f"no run {run_id!r} in this report")
        row = rows.row(0, named=True)
        calls = [c for c in self.calls_for(run_id) if c.role != "judge"]
        output = None if row["output"] is None else json.loads(row["output"])
        return transcript_events(calls, output, row["error"])

    def judge_prompts(self, run_id: str) -> list[list[dict[str, Any]]]:
        """The messages of every judge request about one run, exactly as sent (both orders under the swap check)."""
        return [c.request["messages"] for c in self.calls_for(run_id, role="judge")]

    def recommend(self) -> _stats.Recommendation | None:
        """The cheapest entry whose verdict is ``as good`` as the reference entry, with the evidence in one sentence
        (``.sentence``) a user can paste into a review; None when no entry was tested against the reference."""
        models = self.models
        if not models.height:
            return None
        currency = models["currency"].drop_nulls()
        return _stats.recommend(
            models, job=str(self.meta.get("job") or "?"), reference_entry=str(self.meta.get("reference_entry") or ""),
            margin=float(self.meta.get("margin", 1.0)), currency=currency[0] if currency.len() else "",
        )  # fmt: skip

    def to_runs(self) -> list[Run]:
        """The `Run` records, rebuilt from the frames (with their calls and verdicts): what a rejudge starts from."""
        runs = []
        params = dict(self.meta.get("judge_params") or {})
        for r in self.runs.iter_rows(named=True):
            calls = [c for c in self.calls_for(r["run_id"]) if c.role != "judge"]
            verdict = None
            if r["role"] == "candidate" and (r["judge_entry"] is not None or r["judge_error"] is not None):
                verdict = Verdict(
                    accuracy=r["accuracy"],
                    work=r["work"],
                    reason=r["reason"] or "",
                    judge_entry=r["judge_entry"] or "",
                    path=r["judge_path"],
                    schema=r["judge_schema"],
                    params=params,
                    attempts=r["judge_attempts"] or 0,
                    error=r["judge_error"],
                    calls=self.calls_for(r["run_id"], role="judge"),
                    swap_gap=r["swap_gap"],
                )
            runs.append(
                Run(
                    **{f: r[f] for f in _RUN_FIELDS},
                    output=None if r["output"] is None else json.loads(r["output"]),
                    calls=calls,
                    verdict=verdict,
                )
            )
        return runs

    def diagnostics(self) -> pl.DataFrame:
        """Rows worth a look (kind, entry, run_id, detail), ordered by kind then entry."""
        from ._diagnostics import diagnose

        return diagnose(self.runs, self.calls)

    # -------------------------------------------------------------------------------------------------------- text

    def totals(self) -> str:
        """One line: what the runs cost, what the judge cost, and what was spent now (cache hits cost nothing now)."""
        return _present.totals(self)

    def table(self) -> str:
        """The text table logged after a race: one line per entry, then the verdicts and the recommendation."""
        return _present.render(self)

    def _repr_html_(self) -> str:
        return _present.html(self)

    # ----------------------------------------------------------------------------------------------------- parquet

    def to_parquet(self, directory: str | Path) -> Path:
        """Write runs, models, calls and noise (.parquet) and meta.json into ``directory`` (created if needed)."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.runs.write_parquet(path / "runs.parquet")
        self.models.write_parquet(path / "models.parquet")
        self.calls.write_parquet(path / "calls.parquet")
        self.noise.write_parquet(path / "noise.parquet")
        (path / "meta.json").write_text(json.dumps(self.meta, indent=2, ensure_ascii=False, default=str) + "\n")
        log.info("report written to %s (%d runs, %d calls)", path, self.runs.height, self.calls.height)
        return path

    @classmethod
    def read_parquet(cls, directory: str | Path) -> BenchmarkReport:
        """Read a report written by `to_parquet`; a missing file raises `FileNotFoundError` naming it."""
        path = Path(directory)
        missing = [name for name in _FILES if not (path / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{path}: missing {', '.join(missing)} (a report directory holds {', '.join(_FILES)})"
            )
        meta = json.loads((path / "meta.json").read_text())
        noise = pl.read_parquet(path / "noise.parquet") if (path / "noise.parquet").is_file() else None
        report = cls(pl.read_parquet(path / "runs.parquet"), pl.read_parquet(path / "calls.parquet"), meta, noise)
        report._models = _conform(pl.read_parquet(path / "models.parquet"), MODELS_SCHEMA, "models")
        return report
