"""Judging stored runs again: `rejudge_report` (another rubric or judge) and `judge_noise_report` (the judge-noise
floor), on a report just made or read back from parquet. No candidate is called; only the judge."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tqdm.auto import tqdm

from ._cache import CallCache
from ._catalog import Catalog
from ._fanout import fan_out, lane_width
from ._judge import JudgeSetup, Scorer, judge_again, judge_run
from ._keys import short_hash
from ._records import Run
from ._report import BenchmarkReport
from ._session import Session, mounted
from ._vocab import Role

__all__ = ["judge_noise_report", "rejudge_report"]


def _taken_up(report: BenchmarkReport) -> tuple[dict[str, Run], list[Run]]:
    """A report's runs taken up again: the references by input, and the candidates. None of their model calls is
    made now, so none costs anything now."""
    runs = [replace(r, calls=[replace(c, cache_hit=True) for c in r.calls]) for r in report.to_runs()]
    return {r.input_id: r for r in runs if r.role is Role.REFERENCE}, [r for r in runs if r.role is Role.CANDIDATE]


async def _judge_each(
    catalog: Catalog,
    runs: Sequence[Run],
    work: Callable[[Session, Run], Any],
    *,
    cache: CallCache | str | os.PathLike[str] | None,
    concurrency: int | None,
    progress: bool,
    desc: str,
) -> list[Any]:
    """``work(session, run)`` for each stored run, through the race engine, with a progress bar."""
    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    limit = concurrency or catalog.concurrency
    bar = tqdm(total=len(runs), desc=desc, unit="run", disable=not progress)
    async with Session(catalog, store, limit, mounted()) as session:

        async def one(run: Run) -> Any:
            result = await work(session, run)
            bar.update(1)
            return result

        try:
            return await fan_out(runs, one, width=lane_width(limit))
        finally:
            bar.close()


async def judge_noise_report(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    k: int = 5,
    sample: int | Sequence[str] | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    concurrency: int | None = None,
    progress: bool = True,
) -> BenchmarkReport:
    """`Benchmark.judge_noise` for any report (e.g. one read back from parquet): that report with its noise floor."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    setup = JudgeSetup.from_meta(report.meta, catalog)
    setup.entry.api_key()  # fail before any call when the judge cannot be called
    references, candidates = _taken_up(report)
    judged = [r for r in candidates if r.verdict is not None and r.verdict.score is not None]
    if isinstance(sample, int):
        if sample < 1:
            raise ValueError(f"sample must be >= 1 runs, got {sample}")
        chosen = sorted(judged, key=lambda r: short_hash("noise-sample", r.run_id))[:sample]
    elif sample is not None:
        wanted = set(sample)
        unknown = wanted - {r.run_id for r in judged}
        if unknown:
            raise ValueError(f"sample names runs that are not judged candidate runs: {sorted(unknown)}")
        chosen = [r for r in judged if r.run_id in wanted]
    else:
        chosen = judged
    inputs = report.meta.inputs

    async def replicas(session: Session, run: Run) -> dict[str, Any]:
        scores = await judge_again(session, run, references[run.input_id], inputs.get(run.input_id), setup, k)
        assert run.verdict is not None
        return {
            "run_id": run.run_id,
            "entry": run.entry,
            "input_id": run.input_id,
            "score": run.verdict.score,
            "replicas": scores,
        }

    rows = await _judge_each(
        catalog,
        chosen,
        replicas,
        cache=cache,
        concurrency=concurrency or report.meta.spec.concurrency,
        progress=progress,
        desc="judge noise",
    )
    return report.with_noise(rows, k=k)


async def rejudge_report(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    rubric: str | None = None,
    judge: str | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    scorer: Scorer | None = None,
    concurrency: int | None = None,
    progress: bool = True,
) -> BenchmarkReport:
    """Judge the runs of a report again (e.g. one from `BenchmarkReport.read_parquet`); only the judge is called.

    A ``scorer`` given now scores again; otherwise the scores stand (they do not depend on the judge).
    """
    setup = JudgeSetup.from_meta(report.meta, catalog, rubric=rubric, judge=judge)
    setup.entry.api_key()  # fail before any call when the judge cannot be called
    references, candidates = _taken_up(report)
    inputs = report.meta.inputs

    async def again(session: Session, run: Run) -> Run:
        return await judge_run(session, run, references[run.input_id], inputs.get(run.input_id), setup, scorer)

    rejudged = await _judge_each(
        catalog,
        candidates,
        again,
        cache=cache,
        concurrency=concurrency or report.meta.spec.concurrency,
        progress=progress,
        desc="rejudge",
    )
    meta = report.meta.with_spec(rubric=setup.rubric, judge=judge or report.meta.spec.judge).replace(
        judge_entry=setup.entry.name, judge_params=dict(setup.params)
    )
    return BenchmarkReport([*references.values(), *rejudged], meta)
