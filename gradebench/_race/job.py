"""The job contract: a class with ``async def run(self, input, seat)``, a plain async function, or a job value (an
object with that ``run``, e.g. a `gradebench.PromptJob`)."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from .._base.redact import scrub, utf8_safe
from .._calls.seat import JobLimits, Seat
from .._calls.session import Session
from .._catalog.catalog import Entry
from .._records.keys import RunKey
from .._records.records import Run

__all__ = ["Job", "JobSpec"]


class Job:
    """Base class of a job. Subclass it, write the instructions in the docstring and implement ``run``.

    Class attributes a job may set: ``name`` (labels its rows), ``grade`` (the grade it is declared to need: the
    default grade of its benchmarks), ``instructions`` (defaults to the docstring; the task
    the judge reads), ``rubric`` (what a good answer does, for the judge), ``params`` (inference parameters),
    ``fixed_params`` (parameters no call may override, e.g. a temperature a result depends on), ``max_steps``
    (tool-loop limit), ``timeout_s`` (limit of one run), ``scorer`` (the job's own scorer in code). A job may also
    define ``check_input(self, input)``: raise a `ValueError` for an input it cannot run, and `Benchmark.set_inputs`
    refuses that input at once, naming it, before anything is sent.
    """

    name: ClassVar[str] = ""
    grade: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    rubric: ClassVar[str] = ""
    params: ClassVar[Mapping[str, Any]] = {}
    fixed_params: ClassVar[Mapping[str, Any]] = {}
    max_steps: ClassVar[int] = 8
    timeout_s: ClassVar[float] = 300.0
    scorer: ClassVar[Any] = None

    async def run(self, input: Any, seat: Seat) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.run is not implemented")


class JobSpec:
    """What the benchmark knows of a job: how to build one per run, and its name, instructions and limits."""

    def __init__(self, factory: Any):
        self.factory = factory
        """What the job was given as: a `Job` subclass, a factory, an async function or a job value."""
        if isinstance(factory, type) and issubclass(factory, Job):
            cls: Any = factory
            self._make: Callable[[], Any] = factory
        elif isinstance(factory, Job):
            raise TypeError(
                f"pass the job class {type(factory).__name__}, not an instance of it: every run gets a fresh one"
            )
        elif inspect.iscoroutinefunction(factory):
            cls = factory
            self._make = lambda: _FunctionJob(factory)
        elif not isinstance(factory, type) and inspect.iscoroutinefunction(getattr(factory, "run", None)):
            cls = factory  # a job value (a PromptJob): immutable, so one value serves every run
            self._make = lambda: factory
        elif callable(factory):
            probe = factory()  # a factory function: look at one instance for the job's attributes
            if not callable(getattr(probe, "run", None)):
                raise TypeError(f"factory {factory!r} must build objects with an async run(input, seat) method")
            cls = probe
            self._make = factory
        else:
            raise TypeError(
                f"a job must be a Job subclass, a factory, an async function or a PromptJob, got {factory!r}"
            )
        self.name: str = getattr(cls, "name", "") or getattr(cls, "__name__", "") or type(cls).__name__
        doc = getattr(cls, "instructions", "") or inspect.getdoc(cls) or ""
        if doc == inspect.getdoc(Job):
            doc = ""
        self.instructions: str = doc.strip()
        self.grade: str = getattr(cls, "grade", "") or ""
        self.rubric: str = getattr(cls, "rubric", "") or ""
        self.limits = JobLimits(
            params=dict(getattr(cls, "params", {}) or {}),
            fixed_params=dict(getattr(cls, "fixed_params", {}) or {}),
            max_steps=int(getattr(cls, "max_steps", Job.max_steps)),
        )
        """The parameters the job sends and how long its tool loop may run."""
        self.timeout_s: float = float(getattr(cls, "timeout_s", Job.timeout_s))
        self.scorer = getattr(cls, "scorer", None)
        if not self.instructions:
            raise ValueError(
                f"job {self.name!r} has no instructions: give it a docstring (the judge reads it as the task)"
            )

    def build(self) -> Any:
        """A fresh job instance for one run."""
        return self._make()

    def check_input(self, value: Any, *, input_id: str | None = None) -> None:
        """Raise a `ValueError` naming the input (by ``input_id``) when the job's own ``check_input`` refuses it (a
        prompt job's template reads a field the input lacks); a job without that hook takes every input."""
        hook = getattr(self.build(), "check_input", None)
        if not callable(hook):
            return
        try:
            hook(value)
        except Exception as exc:  # whatever the hook raised, the input is refused now, not sent
            what = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            name = "the input" if input_id is None else f"input {input_id!r}"
            raise ValueError(f"{name} cannot run job {self.name!r}: {what}") from None

    async def run_once(
        self, session: Session, entry: Entry, key: RunKey, value: Any
    ) -> tuple[Run, BaseException | None]:
        """Run a fresh job once on a seat at ``entry``: the run's record, and the exception it raised (a failed run is
        a record that says why; the exception is kept for a reference run, whose failure is raised)."""
        seat = session.seat(entry, key, self.limits)
        made: dict[str, Any] = dict(
            benchmark_id=key.benchmark_id,
            job=self.name,
            input_id=key.input_id,
            run_id=key.run_id,
            role=key.role,
            entry=entry.name,
            model=entry.model,
            grade=entry.grade,
            simulated=entry.simulated,
            repeat=key.repeat,
            currency=entry.currency,
        )
        started = time.perf_counter()
        limit = asyncio.timeout(self.timeout_s)
        try:
            async with limit:
                output = await self.build().run(value, seat)
            json.dumps(output)
            output = utf8_safe(output)  # a lone surrogate (from a model's "\ud800") would fail every frame
        except Exception as exc:  # a failed run is a row that says why
            if isinstance(exc, TimeoutError) and limit.expired():
                exc = TimeoutError(f"{entry.name}: the run took longer than the job's timeout_s={self.timeout_s:g}")
            elif isinstance(exc, TypeError) and "JSON serializable" in str(exc):
                exc = TypeError(f"{self.name}: the job's output is not JSON-serialisable: {exc}")
            error = utf8_safe(scrub(f"{type(exc).__name__}: {exc}"))
            wall = time.perf_counter() - started
            return Run(**made, ok=False, error=error, calls=list(seat.calls), wall_s=wall, wall_now_s=wall), exc
        now = time.perf_counter() - started
        wall = _wall_kept(session, entry, key, seat.calls, now)
        return Run(**made, ok=True, output=output, calls=list(seat.calls), wall_s=wall, wall_now_s=now), None


def _wall_kept(session: Session, entry: Entry, key: RunKey, calls: list[Any], now: float) -> float:
    """The wall time a run had: kept when it was made now, read back when every call came from the cache."""
    where = key.wall_key(entry.identity())
    if calls and all(c.cache_hit for c in calls):
        kept = session.cache.get_wall(where)
        return now if kept is None else kept
    if not any(c.cache_hit for c in calls):
        session.cache.set_wall(where, now)
    return now


class _FunctionJob:
    """A plain ``async def job(input, seat)`` seen as a job."""

    def __init__(self, fn: Callable[..., Any]):
        self._fn = fn

    async def run(self, input: Any, seat: Seat) -> Any:
        return await self._fn(input, seat)
