"""Reading a recorded table (parquet, JSONL or CSV) into polars, and the checks both recorded tables share: which
columns it has, and a value's type by row, each problem raised as one `ValueError` naming the file, the column and
the row (rows count from 1, as a person reading the file counts its records)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "SUFFIXES",
    "TableError",
    "checked_columns",
    "frame_of",
    "json_cell",
    "number",
    "read_table",
    "text",
    "where",
]

SUFFIXES = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
"""The file suffixes a recorded table may have, and the format each one is read as."""


class TableError(ValueError):
    """A recorded table that cannot be used as it is: the message names the file (or ``<frame>``), the column and
    the row."""


def read_table(path: str | os.PathLike[str], *, strings: Iterable[str] = ()) -> pl.DataFrame:
    """The table in a parquet, JSONL (``.jsonl``/``.ndjson``) or CSV file; ``strings``: columns a CSV keeps as text
    (an id of digits stays ``"007"``). A file polars cannot read raises a `TableError` naming it."""
    p = Path(path)
    kind = SUFFIXES.get(p.suffix.lower())
    if kind is None:
        raise TableError(f"{p}: a recording is a .parquet, .jsonl (or .ndjson) or .csv file, not {p.suffix or 'this'}")
    if not p.is_file():
        raise TableError(f"{p}: no such file")
    try:
        if kind == "parquet":
            return pl.read_parquet(p)
        if kind == "jsonl":
            return pl.read_ndjson(p, infer_schema_length=None)
        return pl.read_csv(p, schema_overrides={name: pl.String for name in strings}, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TableError(f"{p}: not a readable {kind} table: {first}") from None


def frame_of(data: Any, source: str) -> pl.DataFrame:
    """A polars DataFrame from one, or from a list of dicts; anything else raises naming ``source``."""
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, Sequence) and not isinstance(data, str | bytes) and all(isinstance(r, Mapping) for r in data):
        return pl.DataFrame(list(data), infer_schema_length=None)
    raise TableError(f"{source}: give a polars DataFrame (or a list of dicts), got {type(data).__name__}")


def checked_columns(frame: pl.DataFrame, source: str, required: Sequence[str], optional: Sequence[str]) -> None:
    """Every required column is there and none is unknown; else a `TableError` that names them."""
    missing = [c for c in required if c not in frame.columns]
    known = [*required, *optional]
    if missing:
        raise TableError(
            f"{source}: missing column {missing[0]!r} (a recording's columns: {', '.join(known)}; "
            f"this one has {', '.join(frame.columns) or 'none'})"
        )
    unknown = [c for c in frame.columns if c not in known]
    if unknown:
        raise TableError(f"{source}: unknown column {unknown[0]!r} (the columns read: {', '.join(known)})")
    if frame.height == 0:
        raise TableError(f"{source}: no rows")


def where(source: str, row: int, column: str, record: Mapping[str, Any] | None = None) -> str:
    """``file: row N (input 'a', model 'm'), column 'c'``: where a problem is, as an error says it."""
    said = ""
    if record is not None and record.get("input") is not None and record.get("model") is not None:
        said = f" (input {text(record['input'])!r}, model {record['model']!r})"
    return f"{source}: row {row}{said}, column {column!r}"


def text(value: Any) -> str:
    """An id as text: a string as it is, a whole number without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def number(value: Any) -> float | None:
    """A finite number >= 0 from a cell (a number or numeric text), None for an empty cell; raises `ValueError`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be a finite number >= 0, got {value!r}")
    return float(value)


def json_cell(value: Any) -> Any:
    """A cell that holds JSON: a struct or list read as such, or JSON text parsed (raises `ValueError`)."""
    if isinstance(value, str):
        return json.loads(value)
    return value
