"""Finding what a ``module:attribute`` reference names: a job, a scorer, a catalog factory or a tool of a spec."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

__all__ = ["imported", "module_in", "reference_name"]


def module_in(module: str, base: Path | None) -> bool:
    """Whether the top of ``module`` is a module or a package in the folder ``base``."""
    top = module.split(".", 1)[0]
    return base is not None and ((base / f"{top}.py").is_file() or (base / top / "__init__.py").is_file())


def reference_name(reference: str) -> str:
    """``module:attribute`` of a reference, without the folder a run may have recorded it with: the same job raced
    from two clones (a laptop, CI) is one job."""
    module, colon, attr = reference.rpartition(":")
    return f"{module.rpartition('/')[2]}{colon}{attr}"


def imported(reference: str, what: str, base: Path | None = None) -> Any:
    """The object ``module:attribute`` names (``attribute`` may be dotted), importing it from ``base`` when
    it is a module or package there (left on the path, for the imports a job makes while it runs).
    ``FOLDER/module:attribute`` (what a run records of a job it found in its config's folder) imports it from
    FOLDER, wherever the command that reads it runs."""
    module, colon, attr = reference.rpartition(":")  # a folder may hold ":"; an attribute never does
    folder, slash, module = module.rpartition("/")  # a module name never holds "/": a folder does
    if slash:
        base = Path(folder or "/")
    if not colon or not module or not attr:
        raise ValueError(f"{what} {reference!r} is not module:attribute")
    if module_in(module, base):
        assert base is not None
        # kept on the path: a job that imports a module of its folder while it runs must find it then too
        if str(base.resolve()) not in sys.path:
            sys.path.insert(0, str(base.resolve()))
    elif slash:
        raise ValueError(f"{what} {reference!r} cannot be imported: {folder} holds no module {module!r}")
    try:
        found: Any = importlib.import_module(module)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what} {reference!r} cannot be imported: {exc}") from None
    return found
