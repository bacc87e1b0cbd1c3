"""Where a `Benchmark`'s race spec comes from: the constructor's keywords, the changes `Benchmark.set_spec` is given,
and a report to race again (`Benchmark.from_report`). Each makes a `RaceSpec` (and the scorer in code it names); the
benchmark then adopts it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._catalog.catalog import Catalog
from .._judge.judge import AnyScorer
from .._records.spec import NO_SCORER, RaceSpec
from .._report.report import BenchmarkReport
from .job import JobSpec
from .plan import is_scorer_spec, load_catalog, resolve_job, resolve_scorer
from .prompt_job import PromptJob

__all__ = ["changed_spec", "keyword_spec", "rerun_spec"]


def keyword_spec(spec: RaceSpec | None, catalog: Catalog, keywords: Mapping[str, Any]) -> RaceSpec:
    """``spec`` (unset: the defaults) with the `Benchmark` keywords that are not None: ``candidates`` may be entries
    too, and a panel of ``judges`` replaces the spec's one judge (a ``judge`` given beside it: the spec refuses)."""
    changes = {k: v for k, v in keywords.items() if v is not None}
    if "candidates" in changes:
        changes["candidates"] = tuple(e.name for e in catalog.resolve(changes["candidates"]))
    if "judges" in changes:
        changes.update(judges=_panel(changes["judges"]), judge=keywords.get("judge"))
    return (spec or RaceSpec()).replace(**changes)


def changed_spec(
    spec: RaceSpec, changes: Mapping[str, Any], catalog: Catalog, job: JobSpec, scorer: AnyScorer | None
) -> tuple[RaceSpec, AnyScorer | None]:
    """``spec`` with ``changes`` (`Benchmark.set_spec`'s) and the scorer in code it names now (``scorer`` unless
    changed): ``candidates`` may be entries too, ``scorer`` a spec or a scorer in code, and ``judges`` given alone
    replaces the one ``judge``, ``judge`` alone a panel."""
    changes = dict(changes)
    if ("judge" in changes) != ("judges" in changes):
        changes.setdefault("judges" if "judge" in changes else "judge", None)
    if changes.get("judges") is not None:
        changes["judges"] = _panel(changes["judges"])
    if changes.get("candidates") is not None:
        changes["candidates"] = tuple(e.name for e in catalog.resolve(changes["candidates"]))
    if "scorer" in changes:
        scorer = _scorer(changes.pop("scorer"), job)  # the spec records it by reference when adopted
    return spec.replace(**changes), scorer


def rerun_spec(
    report: BenchmarkReport, catalog: Catalog | None, job: Callable[..., Any] | PromptJob | None, *, keep_scorer: bool
) -> tuple[Callable[..., Any] | PromptJob, Catalog, RaceSpec]:
    """The job, the catalog and the spec that race ``report``'s race again: the job and the catalog found again from
    its spec unless given (one given as code must be), and its scorer kept (``keep_scorer``: a scorer given as code
    must be passed again) or none, for another to be set."""
    spec, meta = report.meta.spec, report.meta
    if job is None and spec.job is None:
        raise ValueError(f"the report's job {meta.job!r} was given as code: pass job=... to rerun it")
    if catalog is None and spec.catalog is None:
        raise ValueError("the report's catalog was built in code: pass catalog=... to rerun it")
    if keep_scorer and not is_scorer_spec(spec.scorer):
        raise ValueError(f"the report's scorer {spec.scorer!r} was given as code: pass scorer=... to rerun it")
    return (
        job or resolve_job(str(spec.job)),
        catalog or load_catalog(str(spec.catalog)),
        spec if keep_scorer else spec.replace(scorer=NO_SCORER),
    )


def _scorer(given: Any, job: JobSpec) -> AnyScorer | None:
    """A scorer given to `Benchmark.set_spec`: a spec (see `resolve_scorer`; None: the job's own) or a scorer in
    code."""
    if given is None or isinstance(given, str):
        return resolve_scorer(given, job)
    if not callable(given):
        raise TypeError(f"scorer must be a scorer spec or callable, got {given!r}")
    return given


def _panel(judges: Iterable[str]) -> tuple[str, ...]:
    """Judges given as a list of names (a bare string is one name misread as many: refused)."""
    if isinstance(judges, str):
        raise ValueError(f"judges must be a list of entry names, got {judges!r}")
    return tuple(judges)
