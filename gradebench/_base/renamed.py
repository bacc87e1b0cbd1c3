"""A public module's old names, kept for one release after a rename: each answers with a `DeprecationWarning` that names
the new one (a module's ``__getattr__`` hands its misses here)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(module: str, renames: Mapping[str, str], name: str, namespace: Mapping[str, Any]) -> Any:
    """``namespace[renames[name]]``, with a warning naming ``module.<new>``; an `AttributeError` for any other name."""
    new = renames.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    # stacklevel 3: past this function and the module's __getattr__, to the line that read module.<name>
    warnings.warn(f"{module}.{name} is deprecated; use {module}.{new}", DeprecationWarning, stacklevel=3)
    return namespace[new]
