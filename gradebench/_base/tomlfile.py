"""Reading the TOML files gradebench takes (catalogs, run configs): one error that names the file, then the field."""

from __future__ import annotations

import difflib
import tomllib
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic

from .errors import GradebenchError

__all__ = ["UNKNOWN_FIELD", "first_problem", "problem_text", "read_toml"]

UNKNOWN_FIELD = "unknown field"


def read_toml(path: Path, *, what: str, error: Callable[..., GradebenchError]) -> dict[str, Any]:
    """The parsed file, or ``error`` naming the file when it is missing or not TOML."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file", path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}", path=str(path)) from None


def first_problem(
    exc: pydantic.ValidationError, model: type[pydantic.BaseModel] | None = None
) -> tuple[list[Any], str]:
    """Where the first validation problem is (its location) and what it is, in words; for a field ``model`` does not
    have (at that place), the one it most likely meant."""
    errors = exc.errors()
    # a misspelt field is also a missing one: the misspelling is the problem to name
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = list(err["loc"])
    if err["type"] != "extra_forbidden":
        return loc, err["msg"]
    known = _fields_at(model, loc[:-1]) if model is not None else []
    near = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    return loc, UNKNOWN_FIELD + (f" (did you mean {near[0]!r}?)" if near else "")


def problem_text(field: str, message: str) -> str:
    """``field 'x': <message>``, or ``unknown field 'x' (did you mean 'y'?)``."""
    if message.startswith(UNKNOWN_FIELD):
        return f"{UNKNOWN_FIELD} {field!r}{message[len(UNKNOWN_FIELD) :]}"
    return f"field {field!r}: {message}"


def _fields_at(model: type[pydantic.BaseModel], path: list[Any]) -> list[str]:
    """The field names of the model found at ``path`` inside ``model`` (through lists and optionals)."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", {})
        if part not in fields:
            return []
        current = _model_in(fields[part].annotation)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (``X``, ``list[X]``, ``X | None``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    if typing.get_origin(annotation) in (list, tuple, types.UnionType, typing.Union):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
