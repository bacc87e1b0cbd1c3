"""Reading the TOML files gradebench takes (catalogs, run configs): one error that names the file, then the field;
writing the ones it generates (`write_toml`).

The writer is gradebench's own because the files it writes carry comments with text a model list chose: tomli-w
writes no comments, and tomlkit 0.15 copies a NUL or escape character in a comment raw (a file tomllib then
refuses). Values are serialised by type and every file is parsed back before it is returned.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from .errors import GradebenchError

__all__ = ["UNKNOWN_FIELD", "TomlTable", "first_problem", "problem_text", "read_toml", "toml_comment", "write_toml"]

UNKNOWN_FIELD = "unknown field"

TomlValue = str | bool | int | float | Sequence["TomlValue"]
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_NOT_PRINTABLE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\ud800-\udfff]")


@dataclass(frozen=True)
class TomlTable:
    """A ``[name]`` table (``array``: one ``[[name]]`` of an array of tables): its fields in order, each with an
    optional comment after it (``comments``), and ``comment`` on the line above the table's fields."""

    name: str
    fields: Mapping[str, TomlValue]
    array: bool = False
    comment: str = ""
    comments: Mapping[str, str] = field(default_factory=dict)


def write_toml(
    top: Mapping[str, TomlValue],
    tables: Sequence[TomlTable] = (),
    *,
    comments: Mapping[str, str] | None = None,
    opening: str = "",
) -> str:
    """A TOML document of ``top``'s fields, then ``tables``: every key and value serialised by its type (strings
    escaped), every comment kept to its own line (`toml_comment`), so no value or comment can add a key or a table.
    What is written is parsed back and must be exactly the data given: anything else raises, nothing is written."""
    lines = [toml_comment(line) for line in opening.splitlines()]
    lines += _fields(top, comments or {})
    for table in tables:
        header = f"[[{_key(table.name)}]]" if table.array else f"[{_key(table.name)}]"
        lines += ["", header] + ([toml_comment(table.comment)] if table.comment else [])
        lines += _fields(table.fields, table.comments)
    text = "\n".join(lines) + "\n"
    expected: dict[str, Any] = {k: _plain(v) for k, v in top.items()}
    for table in tables:
        body = {k: _plain(v) for k, v in table.fields.items()}
        if table.array:
            expected.setdefault(table.name, []).append(body)
        else:
            expected[table.name] = body
    if tomllib.loads(text) != expected:  # the writer's own promise, checked: a bug here must not write a file
        raise ValueError("the TOML written does not read back to the data given")
    return text


def toml_comment(text: str) -> str:
    """``# text`` on one line: a line break or other control character in ``text`` is shown escaped, never kept."""
    shown = _NOT_PRINTABLE.sub(lambda m: json.dumps(m.group())[1:-1] if m.group() != "\x7f" else "\\u007f", text)
    return f"# {shown}".rstrip()


def _fields(fields: Mapping[str, TomlValue], comments: Mapping[str, str]) -> list[str]:
    lines = []
    for key, value in fields.items():
        note = comments.get(key)
        lines.append(f"{_key(key)} = {_value(value)}" + (f"    {toml_comment(note)}" if note else ""))
    return lines


def _value(value: TomlValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a number a catalog may hold")
        return repr(value)  # repr round-trips exactly
    if isinstance(value, str):
        return _string(value)
    return "[" + ", ".join(_value(v) for v in value) + "]"


def _plain(value: TomlValue) -> Any:
    return value if isinstance(value, str | bool | int | float) else [_plain(v) for v in value]


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's; DEL (which JSON leaves raw) and lone surrogates are escaped
    (``ensure_ascii`` keeps every other character as it is)."""
    if re.search(r"[\ud800-\udfff]", text):
        raise ValueError(f"{text!r} holds a lone surrogate: TOML cannot hold it")
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(text: str) -> str:
    return text if _BARE_KEY.fullmatch(text) else _string(text)


def read_toml(path: Path, *, what: str, error: Callable[..., GradebenchError]) -> dict[str, Any]:
    """The parsed file, or ``error`` naming the file when it is missing or not TOML."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file", path=str(path)) from None
    if not text.strip():  # a shell's `> FILE` makes it before the command runs: a command that failed leaves it so
        raise error(
            f"{path}: the {what} file is empty (a command whose output went to it with > and failed leaves it so): "
            "make it again",
            path=str(path),
        )
    try:
        return tomllib.loads(text)
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
