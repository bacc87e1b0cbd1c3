"""Reading the TOML files gradebench takes (catalogs, run configs): one error that names the file, then the field."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic

from ._errors import GradebenchError

__all__ = ["first_problem", "read_toml"]


def read_toml(path: Path, *, what: str, error: Callable[..., GradebenchError]) -> dict[str, Any]:
    """The parsed file, or ``error`` naming the file when it is missing or not TOML."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file", path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}", path=str(path)) from None


def first_problem(exc: pydantic.ValidationError) -> tuple[list[Any], str]:
    """Where the first validation problem is (its location) and what it is, in words."""
    err = exc.errors()[0]
    return list(err["loc"]), "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
