"""Judging stored runs again: `rejudge_report` (as a `JudgeSpec` says: another rubric, judge or panel, ...) and
`judge_noise_report` (the judge-noise floor), on a report just made or read back from parquet, and what a rejudge will
cost first (`estimate_rejudge`). No candidate is called; only the judge."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from tqdm.auto import tqdm

from .._base.fanout import fan_out, lane_width
from .._base.numbers import money
from .._base.vocab import Role
from .._calls.cache import CallCache
from .._calls.path import NotCached
from .._calls.session import Session, mounted
from .._catalog.catalog import Catalog
from .._judge.judge import JudgeSetup, judge_again, judge_messages, judge_run, score_reference
from .._judge.panel import panel_label
from .._judge.tooldiff import compare, judge_note
from .._records.keys import short_hash
from .._records.meta import ReportMeta, entry_terms, utc_stamp
from .._records.planted import ControlPlant, planted_run
from .._records.records import Run
from .._records.spec import JudgeSpec
from .._report.report import BenchmarkReport
from .controls import control_price, judge_control, plants_of
from .costs import JUDGE_OUTPUT_TOKENS, judge_prompt_tokens, predicted_cost
from .plan import families, scorer_reference

__all__ = ["RejudgeEstimate", "estimate_rejudge", "judge_noise_report", "judging_of", "rejudge_report"]

_OLD_KEYWORDS = {"rubric": "rubric", "judge": "judge", "judges": "judges", "scorer": "scorer", "judge_batch": "batch"}
"""The judge keywords the rejudge functions took before `JudgeSpec` (kept for one release), and its field for each."""


def judging_of(judging: JudgeSpec | None, old: Mapping[str, Any], name: str, new: str) -> JudgeSpec:
    """``judging`` (unset: `JudgeSpec()`, as the report's race judged), or the judge keywords of the form kept for one
    release made into one, with a `DeprecationWarning` that names the call ``name`` was and the call ``new`` is (up
    to its `JudgeSpec`). A keyword that never was one raises a `TypeError`, as a call would."""
    if judging is not None and not isinstance(judging, JudgeSpec):
        raise TypeError(f"{name}: judging must be a JudgeSpec, got {judging!r}")
    if not old:
        return judging or JudgeSpec()
    unknown = sorted(set(old) - set(_OLD_KEYWORDS))
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    if judging is not None:
        raise TypeError(f"{name}: give a JudgeSpec or the old keywords {sorted(old)}, not both")
    made = {_OLD_KEYWORDS[k]: v for k, v in old.items() if v is not None}  # None was the old keywords' unset
    given, spelled = ", ".join(f"{k}=..." for k in old), ", ".join(f"{k}=..." for k in made)
    warnings.warn(f"{name}({given}) is deprecated; use {new}JudgeSpec({spelled}))", DeprecationWarning, stacklevel=3)
    return JudgeSpec(**made)


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
    judging: JudgeSpec | None = None,
    *,
    cache: CallCache | str | os.PathLike[str] | None = None,
    **old: Any,
) -> RejudgeEstimate:
    """What `rejudge_report` with the same ``judging`` will cost: each run's verdict looked up in the cache alone
    (nothing is sent), the ones missing priced from their own prompts at the judge's prices (its batch price,
    batching). A gold scorer's labels are withheld from the judge's prompts, so give the rejudge's scorer too.
    (The judge keywords ``rubric``, ``judge``, ``judges``, ``scorer``, ``judge_batch`` are deprecated: give a
    `JudgeSpec`.)"""
    judging = judging_of(judging, old, "estimate_rejudge", "estimate_rejudge(report, catalog, ")
    setup, references, candidates = _judging(report, catalog, judging)
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
                predicted_cost(
                    one, judge_prompt_tokens(p, setup.alone(one)), JUDGE_OUTPUT_TOKENS, batch=one.name in batched
                )
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
    judging: JudgeSpec | None = None,
    *,
    k: int = 5,
    sample: int | Sequence[str] | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    concurrency: int | None = None,
    progress: bool = True,
    **old: Any,
) -> BenchmarkReport:
    """`Benchmark.judge_noise` for any report (e.g. one read back from parquet): that report with its noise floor.

    The floor is of the report's judges as they judged, so of ``judging`` only ``batch`` is read (through the judges'
    Batch API; unset: as the report's race judged); any other field set raises. (``judge_batch=`` is deprecated: give
    ``JudgeSpec(batch=...)``.)"""
    judging = judging_of(judging, old, "judge_noise_report", "judge_noise_report(report, catalog, ")
    other = [f.name for f in fields(judging) if f.name != "batch" and getattr(judging, f.name) is not None]
    if other:
        raise ValueError(
            f"judging sets {other[0]}, but the judge-noise floor is of the report's judges as they judged: of a "
            "JudgeSpec it reads batch alone"
        )
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    setup = JudgeSetup.from_meta(report.meta, catalog, batch=judging.batch)
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

    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    key, doing = _judging_noise(report, setup, chosen, k)
    async with store.hold(key, doing=doing):  # a second one alike waits, then is served the first's replicas
        rows = await _judge_each(
            catalog,
            chosen,
            replicas,
            setup=setup,
            cache=store,
            concurrency=concurrency or report.meta.spec.concurrency,
            progress=progress,
            desc="judge noise",
        )
    return report.with_noise(rows, k=k)


def _judging_noise(report: BenchmarkReport, setup: JudgeSetup, runs: Sequence[Run], k: int) -> tuple[str, str]:
    """What a judge-noise floor holds its cache by, as a rejudge does (`_rejudging`): the report, the runs sampled,
    the judging and ``k`` — the replicas two such measures would both ask for."""
    judges = [j.identity() for j in setup.judges]
    run_ids = sorted(r.run_id for r in runs)
    key = short_hash("noise", report.meta.benchmark_id, run_ids, judges, setup.rubric, setup.swap, setup.reasoning, k)
    judge = panel_label(j.name for j in setup.judges)
    return f"noise-{key}", f"measuring the judge noise of report {report.meta.benchmark_id} with {judge}"


def _judging(
    report: BenchmarkReport, catalog: Catalog, judging: JudgeSpec
) -> tuple[JudgeSetup, dict[str, Run], list[Run]]:
    """What a rejudge and its estimate both judge with: the judges' setup as ``judging`` changes the report's, the
    reference run of each input (scored again by a scorer given now, when it reads the gold labels) and the runs to
    judge."""
    spec, scorer = report.meta.spec, judging.scorer
    setup = JudgeSetup.from_meta(
        report.meta,
        catalog,
        rubric=judging.rubric,
        judge=judging.judge,
        judges=judging.judges,
        scorer=scorer,
        batch=judging.batch,
    )
    setup = replace(
        setup,
        swap=spec.judge_swap if judging.swap is None else judging.swap,
        reasoning=spec.judge_reasoning if judging.reasoning is None else judging.reasoning,
    )
    references, candidates = _taken_up(report)
    if scorer is not None:
        inputs = report.meta.inputs
        references = {k: score_reference(r, inputs.get(k), scorer) for k, r in references.items()}
    return setup, references, candidates


async def rejudge_report(
    report: BenchmarkReport,
    catalog: Catalog,
    judging: JudgeSpec | None = None,
    *,
    cache: CallCache | str | os.PathLike[str] | None = None,
    concurrency: int | None = None,
    progress: bool = True,
    **old: Any,
) -> BenchmarkReport:
    """Judge the runs of a report again (e.g. one from `BenchmarkReport.read_parquet`) as ``judging`` says; only the
    judge is called.

    Unset fields of ``judging`` judge as the report's race did: its judges (its panel, when it had one), rubric,
    label-bias check, reasoning shown and Batch API. ``judge`` (one entry) or ``judges`` (a panel) replace the
    report's judges. A ``scorer`` given scores again; otherwise the scores stand (they do not depend on the judge).
    (The judge keywords ``rubric``, ``judge``, ``judges``, ``scorer``, ``judge_batch`` are deprecated: give a
    `JudgeSpec`.)
    """
    judging = judging_of(judging, old, "rejudge_report", "rejudge_report(report, catalog, ")
    setup, references, candidates = _judging(report, catalog, judging)
    for one in setup.judges:
        one.api_key()  # fail before any call when a judge cannot be called
    inputs = report.meta.inputs

    plants = _controls(report, references)
    planted = {p.run_id: p for p in plants}

    async def again(session: Session, run: Run) -> Run:
        if run.role is Role.CONTROL:  # a negative control is judged again as it was planted
            return await judge_control(session, planted[run.run_id], references, inputs, setup)
        return await judge_run(session, run, references[run.input_id], inputs.get(run.input_id), setup, judging.scorer)

    runs = [*candidates, *(planted_run(p, references) for p in plants)]
    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    key, doing = _rejudging(report, setup, runs)
    async with store.hold(key, doing=doing):  # a second rejudge alike waits, then is served the first's verdicts
        rejudged = await _judge_each(
            catalog,
            runs,
            again,
            setup=setup,
            cache=store,
            concurrency=concurrency or report.meta.spec.concurrency,
            progress=progress,
            desc="rejudge",
        )
    return BenchmarkReport([*references.values(), *rejudged], _rejudged_meta(report, setup, judging, plants))


def _rejudging(report: BenchmarkReport, setup: JudgeSetup, runs: Sequence[Run]) -> tuple[str, str]:
    """What a rejudge holds its cache by (see `CallCache.hold`), and how a process waiting for it says so: the report
    (its benchmark and runs) and the judging (the judges, rubric, order check, reasoning shown) — the verdicts two
    rejudges would both ask for. Whether it batches is left out: a batch answer and a direct one are the same entry
    in the cache."""
    judges = [j.identity() for j in setup.judges]
    run_ids = sorted(r.run_id for r in runs)
    key = short_hash("rejudge", report.meta.benchmark_id, run_ids, judges, setup.rubric, setup.swap, setup.reasoning)
    judge = panel_label(j.name for j in setup.judges)
    return f"rejudge-{key}", f"rejudging report {report.meta.benchmark_id} with {judge}"


def _rejudged_meta(
    report: BenchmarkReport, setup: JudgeSetup, judging: JudgeSpec, plants: list[ControlPlant]
) -> ReportMeta:
    """A rejudged report's meta: its judging as judged now (the spec's too, so a rerun judges alike), the judges'
    families beside the entries', and the negative controls as planted now."""
    spec = report.meta.spec
    if judging.judge is not None or judging.judges is not None:  # one judge given replaces a panel, and a panel one
        spec = spec.replace(judge=None, judges=None).replace(judge=judging.judge, judges=judging.judges)
    spec = spec.replace(
        rubric=setup.rubric, judge_batch=setup.batch, judge_swap=setup.swap, judge_reasoning=setup.reasoning
    )
    if judging.scorer is not None:  # it scored every run again: the spec names what ran
        spec = spec.replace(scorer=scorer_reference(judging.scorer, None))
    return report.meta.replace(
        spec=spec,
        judge_entry=setup.entry.name,
        judge_params=dict(setup.params),
        controls=plants,
        families={**report.meta.families, **families(setup.judges)},
        entries={**report.meta.entries, **{j.name: entry_terms(j) for j in setup.judges}},  # the judges as they are now
        rejudged_at=utc_stamp(),
    )
