"""Judging stored runs again: `rejudge_report` (another rubric or judge) and `judge_noise_report` (the judge-noise
floor), on a report just made or read back from parquet. No candidate is called; only the judge."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tqdm.auto import tqdm

from .._base.fanout import fan_out, lane_width
from .._base.numbers import money
from .._base.vocab import Role
from .._calls.cache import CallCache
from .._calls.path import NotCached
from .._calls.session import Session, mounted
from .._catalog.catalog import Catalog
from .._judge.judge import JudgeSetup, Scorer, judge_again, judge_messages, judge_run, score_reference
from .._judge.panel import panel_label
from .._judge.tooldiff import compare, judge_note
from .._records.keys import short_hash
from .._records.meta import ReportMeta, entry_terms
from .._records.planted import ControlPlant, planted_run
from .._records.records import Run
from .._report.report import BenchmarkReport
from .controls import control_price, judge_control, plants_of
from .costs import JUDGE_OUTPUT_TOKENS, judge_prompt_tokens
from .plan import families

__all__ = ["RejudgeEstimate", "estimate_rejudge", "judge_noise_report", "rejudge_report"]


def _taken_up(report: BenchmarkReport) -> tuple[dict[str, Run], list[Run]]:
    """A report's runs taken up again: the references by input, and the candidates. None of their model calls is
    made now, so none costs anything now."""
    runs = [replace(r, calls=[replace(c, cache_hit=True) for c in r.calls]) for r in report.to_runs()]
    return {r.input_id: r for r in runs if r.role is Role.REFERENCE}, [r for r in runs if r.role is Role.CANDIDATE]


def _controls(report: BenchmarkReport, references: Mapping[str, Run]) -> list[ControlPlant]:
    """The negative controls to judge again: those the race planted, or — when it planted none before it stopped —
    the ones it would have planted on the reference runs it has."""
    meta = report.meta
    if meta.controls or not meta.spec.controls:
        return list(meta.controls)
    plants, _ = plants_of(references, meta.spec.controls, salt=meta.spec.salt, benchmark_id=meta.benchmark_id)
    return plants


@dataclass(frozen=True, kw_only=True)
class RejudgeEstimate:
    """What judging a report's runs again will cost, before any judge call: the runs, how many verdicts the cache
    already holds (free), the judge calls left to make and what they cost at most."""

    runs: int
    """Candidate runs that will be judged (a failed run is not sent to the judge)."""
    cached: int
    """Of those, the ones whose verdict the cache holds whole: judging them costs nothing."""
    judge_calls: int
    """Judge calls left to make (two a run under the label-bias check; each judge's, for a panel), the negative
    controls' included."""
    cost: float
    """What those calls cost at most: every prompt paid in full (a provider's prompt cache only lowers it)."""
    judge: str
    """The entry that judges (a panel's: ``a + b``)."""
    currency: str
    """Currency of ``cost``."""
    controls: int = 0
    """Negative controls that will be judged again too."""
    controls_cached: int = 0
    """Of those, the ones whose verdict the cache holds."""

    def line(self) -> str:
        """The estimate in one line, as the CLI prints it before it spends."""
        controls = f" (with {self.controls} negative controls, {self.controls_cached} cached)" if self.controls else ""
        return (
            f"{self.runs} runs to judge with {self.judge}: {self.cached} verdicts in the cache, "
            f"{self.judge_calls} judge calls to make, at most {money(self.cost)} {self.currency}{controls}"
        )


async def estimate_rejudge(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    rubric: str | None = None,
    judge: str | None = None,
    judges: Sequence[str] | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    judge_batch: bool | None = None,
    scorer: Scorer | None = None,
) -> RejudgeEstimate:
    """What `rejudge_report` with these options will cost: each run's verdict looked up in the cache alone (nothing is
    sent), the ones missing priced from their own prompts at the judge's prices (its batch price, batching). Give
    the same ``scorer`` as the rejudge: a gold scorer's labels are withheld from the judge's prompts."""
    setup, references, candidates = _judging(report, catalog, rubric, judge, judges, scorer, judge_batch)
    batched = setup.batches()
    judged = [r for r in candidates if r.ok]
    inputs = report.meta.inputs
    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    orders = (False, True) if setup.swap else (False,)
    async with Session(catalog, store, catalog.concurrency, mounted(), cache_only=True) as session:

        async def price(run: Run) -> float | None:
            """None when the cache holds the verdict; else what asking for it costs."""
            reference = references[run.input_id]
            try:
                await judge_run(session, run, reference, inputs.get(run.input_id), setup)
                return None
            except NotCached:
                pass
            facts = judge_note(compare(run.calls, run.output, reference.calls, reference.output))
            value = inputs.get(run.input_id)
            prompts = [judge_messages(run, reference, value, setup, facts=facts, candidate_first=o) for o in orders]
            return sum(
                one.cost(judge_prompt_tokens(p, setup.alone(one)), JUDGE_OUTPUT_TOKENS, batch=one.name in batched)
                for one in setup.judges
                for p in prompts
            )

        async def price_control(plant: ControlPlant) -> float | None:
            try:
                await judge_control(session, plant, references, inputs, setup)
                return None
            except NotCached:
                return control_price(plant, references, inputs, setup).cost

        priced = await fan_out(judged, price, width=lane_width(catalog.concurrency))
        plants = _controls(report, references)
        controls = await fan_out(plants, price_control, width=lane_width(catalog.concurrency))
    due = [p for p in priced if p is not None]
    controls_due = [p for p in controls if p is not None]
    return RejudgeEstimate(
        runs=len(judged),
        cached=len(judged) - len(due),
        judge_calls=(len(due) + len(controls_due)) * len(orders) * len(setup.judges),
        cost=sum(due) + sum(controls_due),
        judge=panel_label(e.name for e in setup.judges),
        currency=setup.entry.currency,
        controls=len(plants),
        controls_cached=len(plants) - len(controls_due),
    )


async def _judge_each(
    catalog: Catalog,
    runs: Sequence[Run],
    work: Callable[[Session, Run], Any],
    *,
    setup: JudgeSetup,
    cache: CallCache | str | os.PathLike[str] | None,
    concurrency: int | None,
    progress: bool,
    desc: str,
) -> list[Any]:
    """``work(session, run)`` for each stored run, through the race engine, with a progress bar. With a judge that
    batches every run asks at once (its verdict waits for the batch, not for a worker)."""
    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    limit = concurrency or catalog.concurrency
    batch = setup.batches()
    bar = tqdm(total=len(runs), desc=desc, unit="run", disable=not progress)
    async with Session(catalog, store, limit, mounted(), batch=batch, progress=progress) as session:

        async def one(run: Run) -> Any:
            result = await work(session, run)
            bar.update(1)
            return result

        try:
            return await fan_out(runs, one, width=max(1, len(runs)) if batch else lane_width(limit))
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
    judge_batch: bool | None = None,
) -> BenchmarkReport:
    """`Benchmark.judge_noise` for any report (e.g. one read back from parquet): that report with its noise floor
    (``judge_batch``: through the judge's Batch API; None: as the report's race judged)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    setup = JudgeSetup.from_meta(report.meta, catalog, batch=judge_batch)
    for one in setup.judges:
        one.api_key()  # fail before any call when a judge cannot be called
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
        setup=setup,
        cache=cache,
        concurrency=concurrency or report.meta.spec.concurrency,
        progress=progress,
        desc="judge noise",
    )
    return report.with_noise(rows, k=k)


def _judging(
    report: BenchmarkReport,
    catalog: Catalog,
    rubric: str | None,
    judge: str | None,
    judges: Sequence[str] | None,
    scorer: Scorer | None,
    batch: bool | None,
) -> tuple[JudgeSetup, dict[str, Run], list[Run]]:
    """What a rejudge and its estimate both judge with: the judges' setup, the reference run of each input (scored
    again by a ``scorer`` given now, when it reads the gold labels) and the runs to judge."""
    setup = JudgeSetup.from_meta(
        report.meta, catalog, rubric=rubric, judge=judge, judges=_names(judges), scorer=scorer, batch=batch
    )
    references, candidates = _taken_up(report)
    if scorer is not None:
        inputs = report.meta.inputs
        references = {k: score_reference(r, inputs.get(k), scorer) for k, r in references.items()}
    return setup, references, candidates


async def rejudge_report(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    rubric: str | None = None,
    judge: str | None = None,
    judges: Sequence[str] | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    scorer: Scorer | None = None,
    concurrency: int | None = None,
    progress: bool = True,
    judge_batch: bool | None = None,
) -> BenchmarkReport:
    """Judge the runs of a report again (e.g. one from `BenchmarkReport.read_parquet`); only the judge is called.

    The report's judges judge again (its panel, when it had one), unless ``judge`` (one entry) or ``judges`` (a
    panel) replace them. A ``scorer`` given now scores again; otherwise the scores stand (they do not depend on the
    judge). ``judge_batch``: through the judges' Batch API (None: as the report's race judged).
    """
    setup, references, candidates = _judging(report, catalog, rubric, judge, judges, scorer, judge_batch)
    for one in setup.judges:
        one.api_key()  # fail before any call when a judge cannot be called
    inputs = report.meta.inputs

    plants = _controls(report, references)
    planted = {p.run_id: p for p in plants}

    async def again(session: Session, run: Run) -> Run:
        if run.role is Role.CONTROL:  # a negative control is judged again as it was planted
            return await judge_control(session, planted[run.run_id], references, inputs, setup)
        return await judge_run(session, run, references[run.input_id], inputs.get(run.input_id), setup, scorer)

    rejudged = await _judge_each(
        catalog,
        [*candidates, *(planted_run(p, references) for p in plants)],
        again,
        setup=setup,
        cache=cache,
        concurrency=concurrency or report.meta.spec.concurrency,
        progress=progress,
        desc="rejudge",
    )
    return BenchmarkReport([*references.values(), *rejudged], _rejudged_meta(report, setup, judge, judges, plants))


def _names(judges: Sequence[str] | None) -> tuple[str, ...] | None:
    if judges is None:
        return None
    if isinstance(judges, str) or not judges:
        raise ValueError(f"judges must be a list of entry names, got {judges!r}")
    return tuple(judges)


def _rejudged_meta(
    report: BenchmarkReport,
    setup: JudgeSetup,
    judge: str | None,
    judges: Sequence[str] | None,
    plants: list[ControlPlant],
) -> ReportMeta:
    """A rejudged report's meta: its rubric and judges as judged now (the spec's too, so a rerun judges alike), and
    the judges' families beside the entries', and the negative controls as planted now."""
    spec = report.meta.spec
    if judges is not None or judge is not None:  # one judge given replaces a panel, and a panel one judge
        spec = spec.replace(judge=None, judges=None).replace(judges=_names(judges) or (judge,))
    spec = spec.replace(rubric=setup.rubric, judge_batch=setup.batch)
    return report.meta.replace(
        spec=spec,
        judge_entry=setup.entry.name,
        judge_params=dict(setup.params),
        controls=plants,
        families={**report.meta.families, **families(setup.judges)},
        entries={**report.meta.entries, **{j.name: entry_terms(j) for j in setup.judges}},  # the judges as they are now
    )
