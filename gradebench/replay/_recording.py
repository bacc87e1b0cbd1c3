"""A recording: the outputs models gave to inputs, one per input and model, read from a table and checked whole.

Its columns are ``input`` (the input's id), ``model`` (the model id), ``output`` (the text the model answered) and,
when recorded, ``prompt`` (the user message as sent, or the messages as sent, as JSON: then their last user message),
``usage`` (the answer's usage as the provider reported it: ``prompt_tokens``, ``completion_tokens``, details),
``cost`` (USD) and ``latency_ms``. Every problem is a `ValueError` naming the file (or ``<frame>``), the column and
the row. How a request finds its record is `Recording.find`'s docstring.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from .._base.canonical import canonical_json
from .._base.protocol import content_text
from .._race.prompt_job import PromptJob
from ._table import TableError, checked_columns, frame_of, json_cell, number, read_table, text, where

__all__ = ["OPTIONAL", "REQUIRED", "Record", "Recording", "normalised"]

REQUIRED = ("input", "model", "output")
"""The columns every recording has."""
OPTIONAL = ("prompt", "usage", "cost", "latency_ms")
"""The columns a recording may have."""
_EXCERPT = 80


def normalised(prompt: str) -> str:
    """A prompt with every run of whitespace made one space and the ends trimmed: the second way a prompt matches."""
    return " ".join(prompt.split())


@dataclass(frozen=True, kw_only=True)
class Record:
    """One recorded answer: what ``model`` said to ``input``."""

    input: str
    """The input's id."""
    model: str
    """The model id."""
    output: str
    """The text the model answered."""
    prompt: str | None
    """The user message it answered (the last one of the messages recorded), or None when none was recorded."""
    usage: dict[str, Any] | None
    """The usage the provider reported, as it reported it; None when none was recorded."""
    cost: float | None
    """What the call cost, in USD; None when not recorded."""
    latency_ms: float | None
    """How long the call took; None when not recorded."""
    row: int
    """Its row in the recording (from 1)."""


class Recording:
    """Recorded outputs, checked: ``Recording(frame)`` (a polars DataFrame or a list of dicts) or
    ``Recording.read(path)`` (parquet, JSONL or CSV). See the module docstring for the columns."""

    def __init__(self, data: pl.DataFrame | Sequence[Mapping[str, Any]], *, source: str = "<frame>"):
        self.source = source
        """Where it was read from (the file, or ``<frame>``): what its errors name."""
        frame = frame_of(data, source)
        checked_columns(frame, source, REQUIRED, OPTIONAL)
        self.records: tuple[Record, ...] = tuple(
            _deduplicated(source, [_record(source, i, r) for i, r in _rows(frame)])
        )
        """Every record, in the recording's order (a repeated identical row once)."""
        self.has_prompts = "prompt" in frame.columns
        """Whether the recording holds the prompts (else `with_prompts` gives them)."""
        self._by_key = {(r.input, r.model): r for r in self.records}
        self._prompts = _prompts(source, self.records) if self.has_prompts else {}
        self._exact = {prompt: ident for ident, prompt in self._prompts.items()}
        self._loose = _loose(source, self._prompts)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Recording:
        """Read and check a recording file: ``.parquet``, ``.jsonl`` (``.ndjson``) or ``.csv``."""
        return cls(read_table(path, strings=("input", "model", "output", "prompt")), source=str(path))

    def __repr__(self) -> str:
        return f"Recording({self.source}, {len(self.records)} records, models={self.models})"

    def __len__(self) -> int:
        return len(self.records)

    @property
    def models(self) -> list[str]:
        """The models recorded, in order of first appearance."""
        return list(dict.fromkeys(r.model for r in self.records))

    @property
    def input_ids(self) -> list[str]:
        """The inputs recorded, in order of first appearance."""
        return list(dict.fromkeys(r.input for r in self.records))

    def record(self, input: str, model: str) -> Record | None:
        """What ``model`` answered to ``input``, or None when that was not recorded."""
        return self._by_key.get((input, model))

    def prompt_of(self, input: str) -> str | None:
        """The prompt recorded for ``input`` (None: the recording holds no prompts, or not this input)."""
        return self._prompts.get(input)

    def find(self, prompt: str) -> str | None:
        """The input whose recorded prompt is ``prompt`` (a request's last user message): matched exactly, then with
        whitespace normalised (`normalised`); None when no input's is. Prompts are checked unique when the recording
        is read, in both forms, so a match is never a guess between two inputs."""
        found = self._exact.get(prompt)
        return found if found is not None else self._loose.get(normalised(prompt))

    @functools.cached_property
    def digest(self) -> str:
        """12 hex digits that change whenever a record does: the replay's base URL holds it, so the call cache never
        serves an answer an earlier version of the recording gave."""
        made = hashlib.sha256()
        for r in self.records:
            made.update(canonical_json([r.input, r.model, r.output, r.prompt, r.usage, r.cost, r.latency_ms]).encode())
        return made.hexdigest()[:12]

    # ------------------------------------------------------------------------------------------------------ racing

    def with_prompts(self, template: str, fields: pl.DataFrame | Sequence[Mapping[str, Any]]) -> Recording:
        """This recording with its prompts made, for one recorded without them: ``template`` formatted
        (``str.format_map``) over each input's ``fields`` (a frame or dicts with an ``input`` column naming the
        recorded input, and the fields the template reads). An input with no fields, or a field the template reads
        that it lacks, raises naming it."""
        if self.has_prompts:
            raise TableError(f"{self.source}: already holds prompts (its prompt column): nothing to make")
        given = frame_of(fields, "fields")
        if "input" not in given.columns:
            raise TableError(f"fields: no 'input' column naming the recorded input (it has {', '.join(given.columns)})")
        by_input = {text(row["input"]): row for row in given.to_dicts()}
        made = {}
        for ident in self.input_ids:
            row = by_input.get(ident)
            if row is None:
                raise TableError(f"fields: no row for recorded input {ident!r}")
            try:
                made[ident] = template.format_map(row)
            except KeyError as exc:
                raise TableError(
                    f"fields: input {ident!r} lacks the field {{{exc.args[0]}}} the template reads"
                ) from None
        rows = [{**_plain(r), "prompt": made[r.input]} for r in self.records]
        return Recording(pl.DataFrame(rows, infer_schema_length=None), source=self.source)

    def inputs(self) -> list[dict[str, str]]:
        """The race's inputs: ``{"id": ..., "prompt": ...}`` for each recorded input, in order (`job` sends the
        ``prompt``; a field added to them, such as a gold answer for a scorer, goes along unread)."""
        self._need_prompts()
        return [{"id": ident, "prompt": self._prompts[ident]} for ident in self.input_ids]

    def job(
        self,
        name: str,
        instructions: str,
        *,
        rubric: str = "",
        output: Literal["text", "json"] = "text",
        grade: str = "replay",
    ) -> PromptJob:
        """The job that asks each input's recorded prompt: a `gradebench.PromptJob` whose user message is the input's
        ``prompt`` (after a system message of ``instructions``, the task the judge reads). A recorded model answers
        it from the recording; any other entry is asked it as sent."""
        self._need_prompts()
        return PromptJob(
            name=name, instructions=instructions, template="{prompt}", rubric=rubric, output=output, grade=grade
        )

    def _need_prompts(self) -> None:
        if not self.has_prompts:
            raise TableError(
                f"{self.source}: holds no prompts (no prompt column): make them with "
                "recording.with_prompts(template, fields) first"
            )


# ------------------------------------------------------------------------------------------------------- reading


def _rows(frame: pl.DataFrame) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(frame.to_dicts(), start=1))


def _record(source: str, row: int, raw: dict[str, Any]) -> Record:
    for column in REQUIRED:
        value = raw[column]
        if value is None or (column != "output" and isinstance(value, str) and not value.strip()):
            raise TableError(f"{where(source, row, column, raw)}: is empty")
    if not isinstance(raw["output"], str):
        raise TableError(f"{where(source, row, 'output', raw)}: must be text, got {raw['output']!r}")
    values: dict[str, Any] = {}
    for column, read in (("cost", number), ("latency_ms", number), ("usage", _usage), ("prompt", _prompt)):
        try:
            values[column] = read(raw.get(column))
        except (ValueError, TypeError) as exc:
            raise TableError(f"{where(source, row, column, raw)}: {exc}") from None
    if "prompt" in raw and values["prompt"] is None:
        raise TableError(f"{where(source, row, 'prompt', raw)}: is empty (every row of a prompt column needs one)")
    return Record(input=text(raw["input"]), model=str(raw["model"]), output=raw["output"], row=row, **values)


def _usage(value: Any) -> dict[str, Any] | None:
    value = json_cell(value)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"must be an object of token counts (prompt_tokens, completion_tokens), got {value!r}")
    usage = {k: v for k, v in value.items() if v is not None}  # a struct column's fields absent from this row
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        count = usage.get(key)
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"{key} must be a whole number >= 0, got {count!r}")
    return usage or None


def _prompt(value: Any) -> str | None:
    """The user message a recorded prompt holds: the text itself, or the last user message of messages recorded
    as JSON (a list of ``{"role", "content"}``)."""
    if value is None:
        return None
    messages: Any = value
    if isinstance(value, str):
        if not value.lstrip().startswith("["):
            return value if value.strip() else None
        try:
            messages = json.loads(value)
        except json.JSONDecodeError:
            return value  # text that happens to start with a bracket
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise ValueError(f"must be the user message's text or a JSON list of chat messages, got {str(value)[:80]!r}")
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        raise ValueError("the messages recorded hold no user message")
    return content_text(users[-1].get("content")) or None


def _deduplicated(source: str, records: list[Record]) -> list[Record]:
    """The records, a repeated (input, model) once when it says the same; two different outputs raise."""
    seen: dict[tuple[str, str], Record] = {}
    kept = []
    for r in records:
        first = seen.get((r.input, r.model))
        if first is None:
            seen[(r.input, r.model)] = r
            kept.append(r)
        elif first.output != r.output:
            raise TableError(
                f"{source}: rows {first.row} and {r.row} both record model {r.model!r} on input {r.input!r}, with "
                f"different outputs: a replay answers one (keep the one to race)"
            )
    return kept


def _prompts(source: str, records: tuple[Record, ...]) -> dict[str, str]:
    """Each input's prompt: one per input (whitespace aside), and no two inputs with the same one."""
    prompts: dict[str, Record] = {}
    owner: dict[str, Record] = {}
    for r in records:
        assert r.prompt is not None  # a prompt column holds one in every row (checked by _record)
        first = prompts.setdefault(r.input, r)
        if normalised(first.prompt or "") != normalised(r.prompt):
            raise TableError(
                f"{source}: rows {first.row} and {r.row} give input {r.input!r} two different prompts "
                f"({_short(first.prompt or '')!r} and {_short(r.prompt)!r}): a race sends every model one prompt"
            )
        other = owner.setdefault(r.prompt, r)
        if other.input != r.input:
            raise TableError(
                f"{source}: rows {other.row} and {r.row}: inputs {other.input!r} and {r.input!r} have the same prompt "
                f"({_short(r.prompt)!r}): a request could not tell which input it is"
            )
    return {ident: r.prompt or "" for ident, r in prompts.items()}


def _loose(source: str, prompts: dict[str, str]) -> dict[str, str]:
    loose: dict[str, str] = {}
    for ident, prompt in prompts.items():
        other = loose.setdefault(normalised(prompt), ident)
        if other != ident:
            raise TableError(
                f"{source}: inputs {other!r} and {ident!r} have the same prompt but for whitespace "
                f"({_short(prompt)!r}): a request could not tell which input it is"
            )
    return loose


def _short(prompt: str) -> str:
    return prompt if len(prompt) <= _EXCERPT else prompt[: _EXCERPT - 1] + "…"


def _plain(r: Record) -> dict[str, Any]:
    """A record as a row of the table it came from (its usage as JSON text)."""
    usage = None if r.usage is None else json.dumps(r.usage)
    return {
        "input": r.input,
        "model": r.model,
        "output": r.output,
        "usage": usage,
        "cost": r.cost,
        "latency_ms": r.latency_ms,
    }
