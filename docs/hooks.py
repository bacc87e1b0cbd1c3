"""What the site generates from the code when it is built, so it cannot drift from it.

- The report's columns one by one (`columns_markdown`): every column of ``report.runs``, ``report.calls`` and
  ``report.models``, described by the docstring under the record field (or over the property) it is read from: the
  frames' schemas are derived from those records (`gradebench._records.codec.Columns`), so the page is too.
- The command line's reference (`cli_markdown`): each command of ``gradebench``, its options and defaults, read from
  the parsers ``gradebench`` itself builds.

A page asks for one with a marker line (`MARKERS`); `on_page_markdown` is the mkdocs hook that puts it there.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# the site describes the code beside it, whichever gradebench the environment has installed
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from gradebench._cli.main import build_parser  # noqa: E402
from gradebench._records import call, records  # noqa: E402
from gradebench._records.codec import Columns  # noqa: E402
from gradebench._report import models  # noqa: E402


@dataclass(frozen=True)
class Frame:
    """One frame of a report: where it is read, what a row is, and the record columns it is made of, in order."""

    name: str
    """How a user reads it, e.g. ``report.runs``."""
    anchor: str
    """The heading's id on the page."""
    row: str
    """What one row is."""
    schema: dict[str, pl.DataType]
    """The frame's declared schema."""
    parts: Sequence[tuple[type, Columns]]
    """The record classes and their columns, in the frame's order."""


FRAMES = [
    Frame(
        "report.runs",
        "runs",
        "run: the reference runs and every candidate's (a negative control's are in ``report.controls``, with "
        "the same columns)",
        records.RUNS_SCHEMA,
        records.RUNS_PARTS,
    ),
    Frame(
        "report.models",
        "models",
        "candidate entry (the fields of `gradebench.results.EntrySummary`; ``report.model_rows()`` gives them "
        "as records)",
        models.MODELS_SCHEMA,
        models.MODELS_PARTS,
    ),
    Frame(
        "report.calls",
        "calls",
        "model call, the judge's included (``role`` says whose)",
        records.CALLS_SCHEMA,
        call.CALLS_PARTS,
    ),
]


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings under a class's annotated fields, by field name (the house rule: one under every field)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for field, after in zip(body, body[1:], strict=False):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def attribute_doc(cls: type, attr: str) -> str:
    """What a record's field or property holds, from its docstring ("" when it has none)."""
    found = field_docs(cls).get(attr)
    if found is None:
        prop = getattr(cls, attr, None)
        found = inspect.getdoc(prop) if isinstance(prop, property) else None
    return " ".join((found or "").split())


_KINDS = {pl.Int64: "integer", pl.Float64: "number", pl.String: "text", pl.Boolean: "flag"}


def column_kind(column: Any) -> str:
    """A column's type in words: a number, a flag, text, the words of an enum, or JSON text."""
    if column.json:
        return "JSON text"
    if column.enum is not None:  # its words are listed under the enum's name in gradebench.vocab
        return f"text ([`{column.enum.__name__}`][gradebench.vocab.{column.enum.__name__}])"
    return _KINDS.get(type(column.dtype), str(column.dtype))


def frame_columns(frame: Frame) -> Iterator[tuple[str, str, str]]:
    """Each column of a frame: its name, its type in words and its description."""
    for cls, columns in frame.parts:
        for column in columns.columns:
            yield column.name, column_kind(column), attribute_doc(cls, column.attr)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def columns_markdown() -> str:
    """The report's frames, every column described from the record it is read from."""
    out = []
    for frame in FRAMES:
        out += [
            f"## `{frame.name}` {{#{frame.anchor}}}",
            "",
            f"One row per {frame.row}; {len(frame.schema)} columns, in this order.",
            "",
            "| column | type | what it holds |",
            "|---|---|---|",
        ]
        out += [f"| `{name}` | {kind} | {_cell(doc)} |" for name, kind, doc in frame_columns(frame)]
        out.append("")
    return "\n".join(out)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_row(action: argparse.Action) -> str:
    if action.option_strings:
        shown = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            shown += f" `{action.metavar or action.dest.upper()}`"
    else:
        shown = f"`{action.metavar or action.dest}`" + (" ..." if action.nargs in ("*", "+") else "")
        if action.choices:
            shown = " \\| ".join(f"`{c}`" for c in action.choices)
    default = action.default
    given = default not in (None, False, argparse.SUPPRESS) and "default" not in (action.help or "")
    return f"| {shown} | {_cell(action.help or '')} | {f'`{default!r}`' if given else ''} |"


def cli_markdown() -> str:
    """Each command of ``gradebench``: its description, its arguments and options, and its notes."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # the usage lines wrap at one width, whatever terminal builds the site
    try:
        return "\n".join(_command_lines(build_parser()))
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _command_lines(parser: argparse.ArgumentParser) -> Iterator[str]:
    for name, command in _subcommands(parser).items():
        yield from [f"### `gradebench {name}`", "", command.description or "", "", "```", command.format_usage(), "```"]
        yield from ["", "| argument or option | what it does | default |", "|---|---|---|"]
        yield from (_option_row(a) for a in command._actions if a.help not in (None, argparse.SUPPRESS))
        if command.epilog:
            yield from ["", "```", command.epilog.strip(), "```"]
        yield ""


MARKERS: dict[str, Callable[[], str]] = {
    "<!-- gradebench: the report's columns -->": columns_markdown,
    "<!-- gradebench: the command line -->": cli_markdown,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The mkdocs hook: each marker line replaced by what it asks for."""
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return re.sub(r"\n{3,}", "\n\n", markdown)
