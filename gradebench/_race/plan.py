"""A race ready to run: a spec held against a catalog, with its job, scorer, inputs and cache (`RacePlan`), and how a
spec's references to a job, a scorer and a catalog are found again (`resolve_job`, `resolve_scorer`, `load_catalog`).

The race (`gradebench._race.race`), the estimate (`gradebench._race.estimate`) and the report's meta all read one plan:
who
races, the run keys, one run of the job, the reference runs and what the judge shares.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from .. import scorers
from .._base.fanout import fan_out, lane_width
from .._base.importing import imported, module_in
from .._base.protocol import content_text
from .._base.vocab import Role
from .._calls.batch.api import batch_api_of
from .._calls.cache import CallCache
from .._calls.session import Session
from .._catalog.catalog import Catalog, Entry
from .._judge.judge import AnyScorer, JudgeSetup, score_reference
from .._records.inputs import RaceInput
from .._records.keys import RunKey, benchmark_id
from .._records.meta import ReportMeta, entry_terms
from .._records.records import Run
from .._records.spec import JOB_SCORER, NO_SCORER, Lineup, RaceSpec
from .._version import __version__
from .budget import Budget, one_currency
from .controls import ControlJudging, plants_of
from .job import JobSpec
from .prompt_job import PROMPT_PREFIX, PromptJob

__all__ = [
    "RacePlan",
    "RunErrors",
    "families",
    "for_job",
    "is_scorer_spec",
    "job_reference",
    "load_catalog",
    "reference_failed",
    "resolve_job",
    "resolve_scorer",
    "scorer_reference",
]

RunErrors = dict[str, BaseException]
"""The exception each failed run raised, by run id (a failed reference run's is raised again)."""


@dataclass(frozen=True, kw_only=True)
class RacePlan:
    """One race ready to run: the spec (its grade, rubric and scorer filled in), who races, the job, the inputs."""

    spec: RaceSpec
    """The race as asked for."""
    catalog: Catalog
    """Where the entries come from."""
    lineup: Lineup
    """The spec against the catalog: reference, judge, candidates, skipped."""
    job: JobSpec
    """The job, built fresh for every run."""
    scorer: AnyScorer | None
    """The scorer in code, or None."""
    inputs: tuple[RaceInput, ...]
    """The inputs, in order."""
    cache: CallCache
    """Where every answer is kept."""
    transports: Mapping[str, httpx2.AsyncBaseTransport]
    """The in-process endpoints by origin (the simulated fleet, scripted ones)."""
    progress: bool = True
    """Show a progress bar."""

    @functools.cached_property
    def benchmark_id(self) -> str:
        """The race's id, made once: every run's key carries it, and one text serves them all."""
        return benchmark_id(self.job.name, str(self.spec.grade), self.spec.salt, self.lineup.reference.name)

    @property
    def concurrency(self) -> int:
        """Requests in flight at once."""
        return self.spec.concurrency or self.catalog.concurrency

    @property
    def most_runs(self) -> int:
        """The most candidate runs an entry gets."""
        return self.spec.most_runs(len(self.inputs))

    def session(self, *, cache_only: bool = False) -> Session:
        """A session for this race (``cache_only``: one that answers from the cache alone and sends nothing); its
        judges that batch send their verdicts through their Batch API."""
        return Session(
            self.catalog,
            self.cache,
            self.concurrency,
            self.transports,
            cache_only=cache_only,
            batch=self.batches(),
            progress=self.progress,
        )

    def batches(self) -> dict[str, str]:
        """The judges whose verdicts go through a Batch API, and which one (see `gradebench._calls.batch.layer`)."""
        asked = self.spec.judge_batch
        return {j.name: api for j in self.lineup.judges if (api := batch_api_of(j, asked)) is not None}

    def ready(self) -> RacePlan:
        """This plan, once it can run: inputs set, the reference and the judge callable, one currency under a budget
        (else the reason is raised, before any call)."""
        if not self.inputs:
            raise ValueError("no input: call set_input(...) or set_inputs([...]) first")
        self.lineup.reference.api_key()
        for judge in self.lineup.judges:
            judge.api_key()
        if self.spec.budget is not None:
            self.currency()
        return self

    def currency(self) -> str:
        """The one currency of every entry the race spends on (`one_currency`)."""
        return one_currency([self.lineup.reference, *self.lineup.judges, *self.lineup.candidates])

    def judge_setup(self) -> JudgeSetup:
        """What every verdict of the race shares."""
        return JudgeSetup.from_meta(self.meta(), self.catalog, scorer=self.scorer)

    def fixed_plan(self, repeats: int) -> list[tuple[Entry, RaceInput, int]]:
        """Every candidate run of ``repeats`` runs per input and entry, in race order: input by input, every entry on
        each, its repeats together."""
        return [(e, x, k) for x in self.inputs for e in self.lineup.candidates for k in range(repeats)]

    async def one_run(
        self, session: Session, entry: Entry, item: RaceInput, role: Role, repeat: int, errors: RunErrors
    ) -> Run:
        """One run of the job on ``entry`` (its exception, when it fails, kept in ``errors`` by run id)."""
        key = RunKey(
            benchmark_id=self.benchmark_id,
            user_salt=self.spec.salt,
            input_id=item.id,
            role=role,
            entry=entry.name,
            repeat=repeat,
        )
        run, error = await self.job.run_once(session, entry, key, item.value)
        if error is not None:
            errors[key.run_id] = error
        return run

    async def reference_runs(
        self, session: Session, errors: RunErrors, *, budget: Budget | None, landed: Callable[[Run], Any]
    ) -> list[Run]:
        """The reference run of every input, ``landed(run)`` as each lands (scored against the input's gold labels
        when the scorer reads the input). Under a budget the first runs alone, and the rest reserve what the dearest
        one so far cost (no estimate exists before a reference has run); those the budget does not admit are left
        out."""
        entry = self.lineup.reference

        async def one(item: RaceInput) -> Run | None:
            held = budget.reservation("(reference)", 0.0) if budget is not None else 0.0
            if budget is not None and not await budget.admit(held):
                return None
            run = score_reference(
                await self.one_run(session, entry, item, Role.REFERENCE, 0, errors), item.value, self.scorer
            )
            if budget is not None:
                budget.settle("(reference)", held, run.spent_now)
            landed(run)
            return run

        width = lane_width(self.concurrency, entry.max_concurrency)
        first = await fan_out(self.inputs[:1], one, width=1) if budget is not None else []
        rest = await fan_out(self.inputs[len(first) :], one, width=width)
        return [r for r in [*first, *rest] if r is not None]

    def controls(
        self, session: Session, references: Mapping[str, Run], setup: JudgeSetup, *, budget: Budget | None
    ) -> ControlJudging:
        """The race's negative controls, planted on its reference runs, ready to be judged
        (`gradebench._race.controls`)."""
        plants, _ = plants_of(references, self.spec.controls, salt=self.spec.salt, benchmark_id=self.benchmark_id)
        values = {x.id: x.value for x in self.inputs}
        return ControlJudging(plants, session, references, values, setup, budget=budget, concurrency=self.concurrency)

    def meta(self) -> ReportMeta:
        """What the race is measured under, as its report carries it."""
        return ReportMeta(
            spec=self.spec,
            benchmark_id=self.benchmark_id,
            job=self.job.name,
            instructions=self.job.instructions,
            reference_entry=self.lineup.reference.name,
            judge_entry=self.lineup.judge.name,
            judge_params=dict(self.catalog.judge_params),
            candidates=[e.name for e in self.lineup.candidates],
            skipped=dict(self.lineup.skipped),
            inputs={x.id: x.value for x in self.inputs},
            gradebench_version=__version__,
            families=families(self.lineup.judges, [self.lineup.reference, *self.lineup.candidates]),
            entries={
                e.name: entry_terms(e) for e in (self.lineup.reference, *self.lineup.candidates, *self.lineup.judges)
            },
        )


def families(*groups: Iterable[Entry]) -> dict[str, str]:
    """The family of each entry of ``groups`` whose family is known, by name (a report's ``meta.families``)."""
    return {e.name: e.family for group in groups for e in group if e.family}


def for_job(spec: RaceSpec, job: JobSpec, catalog: Catalog, scorer: AnyScorer | None) -> RaceSpec:
    """``spec`` as a race of ``job`` on ``catalog`` scored by ``scorer``: where the job and the catalog come from, the
    job's grade and rubric where the spec leaves them unset, and the scorer as a reference."""
    spec = spec.replace(
        job=spec.job or job_reference(job.factory),
        catalog=spec.catalog or catalog.reference,
        grade=spec.grade or job.grade or None,
        rubric=job.rubric if spec.rubric is None else spec.rubric,
        scorer=scorer_reference(scorer, job),
    )
    if spec.grade is None:
        raise ValueError(f"no grade: pass grade=... or declare the job's grade (job {job.name!r})")
    return spec


def reference_failed(run: Run, error: BaseException) -> BaseException:
    """The exception a failed reference run raised, with a note that says which run it was and what the model said
    last (the exception alone may say only ``Expecting value: line 1 column 1``)."""
    said = next((c for c in reversed(run.calls) if c.answered), None)
    heard = content_text(said.message.get("content")) if said is not None else ""
    excerpt = f"; the model's last answer began: {heard[:200]!r}" if heard else "; no call was answered"
    error.add_note(
        f"gradebench: the reference run on {run.entry} failed on input {run.input_id!r}: {run.error}{excerpt}"
    )
    return error


# ------------------------------------------------------------------------------------------------------ references


def job_reference(factory: Any, found_in: Path | None = None) -> str | None:
    """Where a job can be imported from again (``module:attribute``; a prompt job records its fields, see
    `PromptJob.reference`), or None (a job defined inside a function). A job whose module was found in the folder
    ``found_in`` (a run config's) is ``FOLDER/module:attribute``, that folder absolute: every command that reads the
    report (a rejudge, a rerun) imports it from there, wherever it runs."""
    if isinstance(factory, PromptJob):
        return factory.reference
    module, name = getattr(factory, "__module__", None), getattr(factory, "__qualname__", "")
    if not module or not name or "<" in name:
        return None
    if found_in is not None and module_in(module, found_in) and _loaded_from(module, found_in):
        return f"{found_in.resolve().as_posix()}/{module}:{name}"
    return f"{module}:{name}"


def _loaded_from(module: str, folder: Path) -> bool:
    """Whether the module was imported from a file in ``folder`` (not one of the same name found elsewhere first)."""
    file = getattr(sys.modules.get(module), "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(folder.resolve())


def resolve_job(reference: str, base: Path | None = None) -> Any:
    """The job ``module:attribute`` names (a module in ``base``, e.g. a run config's folder, is found too), or the
    prompt job ``prompt:{...}`` records; one that cannot be imported raises a `ValueError` saying why."""
    if reference.startswith(PROMPT_PREFIX):
        return PromptJob.from_reference(reference, base=base)
    return imported(reference, "job", base)


def scorer_reference(scorer: AnyScorer | None, job: JobSpec | None) -> str:
    """What a spec records of a scorer: ``job`` for the job's own (``job`` None: not known), its spec when it was made
    from one, else its name (``none`` for no scorer)."""
    if scorer is None:
        return NO_SCORER
    if job is not None and scorer is job.scorer:
        return JOB_SCORER
    made = getattr(scorer, "spec", None)
    if isinstance(made, str):
        return made
    return str(getattr(scorer, "name", None) or getattr(scorer, "__name__", None) or type(scorer).__name__)


def resolve_scorer(reference: str | None, job: JobSpec) -> AnyScorer | None:
    """The scorer a spec names: None (the job's own, when it has one), ``none``, ``job`` (the job's own: a job
    without one raises) or a spec of `gradebench.scorers.from_spec`. A name of a scorer given as code raises: pass
    the scorer itself."""
    if reference is None:
        return job.scorer
    if reference == NO_SCORER:
        return None
    if reference == JOB_SCORER:
        if job.scorer is None:
            raise ValueError(f"scorer = 'job' but the job {job.name!r} has no scorer of its own")
        return job.scorer
    if not is_scorer_spec(reference):
        raise ValueError(
            f"scorer {reference!r} is not one of {', '.join(scorers.SPECS)}, {JOB_SCORER} or {NO_SCORER} (a "
            "scorer given as code is passed as itself, e.g. set_spec(scorer=...))"
        )
    return scorers.from_spec(reference)


def is_scorer_spec(reference: str | None) -> bool:
    """Whether `resolve_scorer` can make a scorer from ``reference`` (a scorer given as code is recorded by name)."""
    kinds = {spec.split(":")[0].split("[")[0] for spec in scorers.SPECS}
    kind = str(reference).strip().partition("@")[0].partition(":")[0]  # field_equals:label@gold, choice_letter@gold
    return reference in (None, JOB_SCORER, NO_SCORER) or kind in kinds


def load_catalog(reference: str, base: Path | None = None) -> Catalog:
    """The catalog a spec names: a TOML file (relative to ``base``), or ``module:function`` that makes one (the
    simulated fleet's is ``gradebench.sim:catalog``)."""
    path = Path(reference) if base is None else base / reference
    if ":" in reference and not path.is_file():
        made = imported(reference, "catalog", base)()
        if not isinstance(made, Catalog):
            raise ValueError(f"catalog {reference!r} made {type(made).__name__}, not a Catalog")
        return made
    return Catalog.load(path)
