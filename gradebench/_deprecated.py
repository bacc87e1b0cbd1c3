"""Names kept for one release after they moved, each a thin alias that says what to use instead.

They are attached here, at the top of the house, so the catalog (the ground floor every package stands on) never
imports the preflight check or the OpenRouter reader above it. The names that left the package's root (`MOVED`) are
answered by its module ``__getattr__``, through `moved`.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ._catalog.catalog import Catalog
from ._catalog.openrouter import catalog_from_openrouter
from ._race.preflight import CatalogCheck, check_catalog, check_catalog_sync

F = TypeVar("F", bound=Callable[..., Any])

MOVED: dict[str, str] = {
    **dict.fromkeys(
        [
            "ControlKind",
            "CostSource",
            "Design",
            "EventKind",
            "Role",
            "SchemaUse",
            "Stopped",
            "VerdictBasis",
            "VerdictPath",
        ],
        "gradebench.vocab",
    ),
    **dict.fromkeys(
        [
            "Call",
            "CallCache",
            "CatalogCheck",
            "Comparison",
            "ControlCheck",
            "ControlEstimate",
            "ControlScore",
            "EntryCheck",
            "EntryEstimate",
            "Estimate",
            "JudgeAgreement",
            "JudgePair",
            "RaceEvent",
            "ReportMeta",
            "Run",
            "Verdict",
        ],
        "gradebench.results",
    ),
    "Scorer": "gradebench.scorers",
}
"""The names that left ``gradebench``'s root, each to the public module that holds it now: ``gradebench.Role`` still
answers for one release, with a `DeprecationWarning` that names ``gradebench.vocab.Role``."""


def moved(name: str) -> Any:
    """The root name ``name`` from its new home (see `MOVED`), with a `DeprecationWarning` naming that home."""
    home = MOVED[name]
    # stacklevel 3: past this function and the root's __getattr__, to the line that read gradebench.<name>
    warnings.warn(f"gradebench.{name} is deprecated; use {home}.{name}", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(home), name)


def deprecated(old: str, new: str) -> Callable[[F], F]:
    """Mark ``old`` as a thin alias of ``new``: a `DeprecationWarning` at each call, naming both."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def alias(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)

        return alias  # type: ignore[return-value]

    return wrap


@deprecated("Catalog.check()", "gradebench.check_catalog(catalog)")
def _check(self: Catalog, *, grades: Iterable[str] | None = None) -> Any:
    return check_catalog(self, grades=grades)


@deprecated("Catalog.check_sync()", "gradebench.check_catalog_sync(catalog)")
def _check_sync(self: Catalog, *, grades: Iterable[str] | None = None) -> CatalogCheck:
    return check_catalog_sync(self, grades=grades)


@deprecated("Catalog.from_openrouter()", "gradebench.catalog_from_openrouter()")
def _from_openrouter(cls: type[Catalog], grades: Any, **kwargs: Any) -> Catalog:
    return catalog_from_openrouter(grades, **kwargs)


Catalog.check = _check  # type: ignore[attr-defined]
Catalog.check_sync = _check_sync  # type: ignore[attr-defined]
Catalog.from_openrouter = classmethod(_from_openrouter)  # type: ignore[attr-defined]
