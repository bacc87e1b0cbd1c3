"""Names kept for one release after they moved, each a thin alias that says what to use instead.

They are attached here, at the top of the house, so the catalog (the ground floor every package stands on) never
imports the preflight check or the OpenRouter reader above it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ._catalog.catalog import Catalog
from ._catalog.openrouter import catalog_from_openrouter
from ._race.preflight import CatalogCheck, check_catalog, check_catalog_sync

F = TypeVar("F", bound=Callable[..., Any])


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
