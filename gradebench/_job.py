"""The job contract: a class with ``async def run(self, input, seat)``, or a plain async function."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ._seat import Seat

__all__ = ["Job", "JobSpec"]


class Job:
    """Base class of a job. Subclass it, write the instructions in the docstring and implement ``run``.

    Class attributes a job may set: ``name`` (labels its rows), ``grade`` (the grade it is declared to need: the
    default grade of its benchmarks), ``instructions`` (defaults to the docstring; the task
    the judge reads), ``rubric`` (what a good answer does, for the judge), ``params`` (inference parameters),
    ``fixed_params`` (parameters no call may override, e.g. a temperature a result depends on), ``max_steps``
    (tool-loop limit), ``timeout_s`` (limit of one run), ``scorer`` (the job's own scorer in code).
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

    def __init__(self, factory: Callable[..., Any]):
        if isinstance(factory, type) and issubclass(factory, Job):
            cls: Any = factory
            self._make: Callable[[], Any] = factory
        elif inspect.iscoroutinefunction(factory):
            cls = factory
            self._make = lambda: _FunctionJob(factory)
        elif callable(factory):
            probe = factory()  # a factory function: look at one instance for the job's attributes
            if not callable(getattr(probe, "run", None)):
                raise TypeError(f"factory {factory!r} must build objects with an async run(input, seat) method")
            cls = probe
            self._make = factory
        else:
            raise TypeError(f"a job must be a Job subclass, a factory or an async function, got {factory!r}")
        self.name: str = getattr(cls, "name", "") or getattr(cls, "__name__", "") or type(cls).__name__
        doc = getattr(cls, "instructions", "") or inspect.getdoc(cls) or ""
        if doc == inspect.getdoc(Job):
            doc = ""
        self.instructions: str = doc.strip()
        self.grade: str = getattr(cls, "grade", "") or ""
        self.rubric: str = getattr(cls, "rubric", "") or ""
        self.params: dict[str, Any] = dict(getattr(cls, "params", {}) or {})
        self.fixed_params: dict[str, Any] = dict(getattr(cls, "fixed_params", {}) or {})
        self.max_steps: int = int(getattr(cls, "max_steps", Job.max_steps))
        self.timeout_s: float = float(getattr(cls, "timeout_s", Job.timeout_s))
        self.scorer = getattr(cls, "scorer", None)
        if not self.instructions:
            raise ValueError(
                f"job {self.name!r} has no instructions: give it a docstring (the judge reads it as the task)"
            )

    def build(self) -> Any:
        """A fresh job instance for one run."""
        return self._make()


class _FunctionJob:
    """A plain ``async def job(input, seat)`` seen as a job."""

    def __init__(self, fn: Callable[..., Any]):
        self._fn = fn

    async def run(self, input: Any, seat: Seat) -> Any:
        return await self._fn(input, seat)
