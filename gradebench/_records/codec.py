"""One codec for the records of a report: their row form, the frames made of rows, and bodies kept compactly.

`Columns` is the row form of a record class: a list of its attributes (fields or properties) under column names;
the column types come from the attributes' annotations (a `enum.StrEnum` of `gradebench._base.vocab` is its text, and
anything that is not a number, a string or a flag is JSON text), so a frame's schema is derived from the record,
never written a second time. `frame` makes rows a frame of exactly a schema, a chunk at a time (`frames`: the
chunks, for what is written a part at a time). `pack` keeps a request or response body off the heap
(`gradebench._records.spool`), compressed when long.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .spool import Packed, body_bytes, keep, spool

__all__ = [
    "FRAME_CHUNK",
    "PACK_FROM",
    "SPOOLED_PACK_FROM",
    "Columns",
    "dumps",
    "frame",
    "frames",
    "pack",
    "unpack",
]

_SCALARS: dict[Any, pl.DataType] = {int: pl.Int64(), float: pl.Float64(), str: pl.String(), bool: pl.Boolean()}


def _dtype(hint: Any) -> tuple[pl.DataType, bool, type[enum.StrEnum] | None]:
    """The column type of an annotation, whether the value is stored as JSON text, and the string enum it is read
    back as (None: none)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = inner[0] if len(inner) == 1 else Any
    if isinstance(hint, type) and issubclass(hint, enum.StrEnum):
        return pl.String(), False, hint
    if hint in _SCALARS:
        return _SCALARS[hint], False, None
    return pl.String(), True, None


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class _Column:
    name: str
    attr: str
    dtype: pl.DataType
    json: bool
    field: bool
    enum: type[enum.StrEnum] | None = None

    def read(self, value: Any) -> Any:
        """The attribute's value from its cell."""
        if value is None:
            return None
        if self.json:
            return json.loads(value)
        return self.enum(value) if self.enum is not None else value


class Columns:
    """The row form of a record class: these attributes (fields or properties), in this order, under these names."""

    def __init__(self, cls: type, attrs: Sequence[str], *, names: Mapping[str, str] | None = None):
        hints = typing.get_type_hints(cls)
        fields = {f.name for f in dataclasses.fields(cls)}
        names = names or {}
        self.columns: list[_Column] = []
        for attr in attrs:
            if attr in fields:
                hint = hints[attr]
            else:
                hint = typing.get_type_hints(getattr(cls, attr).fget)["return"]
            dtype, as_json, kind = _dtype(hint)
            self.columns.append(_Column(names.get(attr, attr), attr, dtype, as_json, attr in fields, kind))
        # what `row` reads of each column, in plain tuples: it runs for every run, call and verdict of a race
        self._reads = [(c.name, c.attr, c.json, c.enum is not None) for c in self.columns]

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return {c.name: c.dtype for c in self.columns}

    def row(self, record: Any, *, known: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The record's columns (JSON text for structured values; None stays None). ``known``: attributes' values the
        record has already computed, by attribute name, taken instead of reading them again."""
        out = {}
        for name, attr, as_json, is_member in self._reads:
            value = known[attr] if known is not None and attr in known else getattr(record, attr)
            if value is not None:
                if as_json:
                    value = dumps(value)
                elif is_member:
                    value = str(value)  # a member is stored as its plain text
            out[name] = value
        return out

    def values(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The record's fields taken back from a row (computed columns are left to the record to recompute)."""
        return {c.attr: c.read(row[c.name]) for c in self.columns if c.field}


FRAME_CHUNK = 4096
"""Rows turned into a frame at a time: a report of 100,000 runs never holds 100,000 row dicts at once."""


def frame(rows: Iterable[Mapping[str, Any]], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Rows as a frame of exactly ``schema`` (an empty frame still has every column). Its parts stay separate chunks:
    copying them into one would hold the frame twice at once, and the allocator keeps what the copy freed (20,000
    runs: 10 MB of a race's peak)."""
    parts = list(frames(rows, schema))
    return parts[0] if len(parts) == 1 else pl.concat(parts, rechunk=False)


def frames(
    rows: Iterable[Mapping[str, Any]],
    schema: Mapping[str, pl.DataType],
    *,
    weigh: Callable[[Mapping[str, Any]], int] | None = None,
    most_weight: int | None = None,
) -> Iterator[pl.DataFrame]:
    """Rows as frames of exactly ``schema``, `FRAME_CHUNK` rows each — or fewer, once the rows' ``weigh`` (their bytes
    of text, say) reaches ``most_weight``: what is written a part at a time is never held whole (no rows: one empty
    frame, which still has every column). Each row goes into the columns as it comes, so one row's dict is alive at
    a time."""
    if (weigh is None) != (most_weight is None):
        raise ValueError("frames: weigh and most_weight go together")
    names = list(schema)
    columns: list[list[Any]] = [[] for _ in names]
    count, weight, made = 0, 0, False
    for row in rows:
        for column, name in zip(columns, names, strict=True):
            column.append(row.get(name))
        count += 1
        if weigh is not None:
            weight += weigh(row)
        if count == FRAME_CHUNK or (most_weight is not None and weight >= most_weight):
            yield _chunk(names, columns, schema)
            columns, count, weight, made = [[] for _ in names], 0, 0, True
    if count or not made:
        yield _chunk(names, columns, schema)


def _chunk(names: list[str], columns: list[list[Any]], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(dict(zip(names, columns, strict=True)), schema=dict(schema))


PACK_FROM = 2048
"""Bodies of this many bytes or more are kept zlib-compressed while they stay on the heap (when the spool cannot be
written): a judge's request holds both transcripts, and a race of 100,000 runs holds 100,000 of them."""

SPOOLED_PACK_FROM = 16384
"""Bodies of this many bytes or more are compressed in the spool file too. A shorter one goes there as it is: on
disk it costs no memory, while compressing a judge's request of 3 kB took about as much CPU as the rest of
gradebench's own work on a call."""


def pack(text: str | bytes) -> Packed:
    """A body's text (or its UTF-8 bytes) as a call keeps it: off the heap (`keep`), compressed when long (see
    `PACK_FROM`, `SPOOLED_PACK_FROM`)."""
    raw = text if isinstance(text, bytes) else text.encode()
    long = SPOOLED_PACK_FROM if spool().writable else PACK_FROM
    return keep(b"z" + zlib.compress(raw, 1) if len(raw) >= long else b"=" + raw)


def unpack(packed: Packed) -> str:
    data = body_bytes(packed)
    return (zlib.decompress(data[1:]) if data[:1] == b"z" else data[1:]).decode()
