"""The records of `gradebench check` (`EntryCheck` a row, `CatalogCheck` the whole check) and its table, fitted to a
terminal's width without dropping a word.

Every cell is one line (an endpoint's multi-line error is joined with spaces). With no width, or when it fits, the
table is one row per entry with the last column ("what to do") at its end. Narrower, that column moves under its row,
wrapped; narrower still (long entry names), each entry is a block of ``column value`` pairs, wrapped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.numbers import fit_line, money

__all__ = ["CatalogCheck", "EntryCheck", "fitted_table", "one_line"]


def one_line(text: str) -> str:
    """The text on one line: its line breaks and runs of spaces each one space."""
    return " ".join(text.split())


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as lines, each column but the last padded to its widest cell, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip()
        for row in rows
    ]


def fitted_table(
    head: Sequence[str], body: Sequence[Sequence[str]], last: Sequence[str], width: int | None
) -> list[str]:
    """The lines of a table whose columns are ``head`` (its last one's cells are ``last``), within ``width``
    columns when given: see the module for the three layouts."""
    title = head[-1]
    rows = [[one_line(c) for c in row] for row in body]
    said = [one_line(text) for text in last]
    wide = _aligned([list(head), *[[*row, s] for row, s in zip(rows, said, strict=True)]])
    if width is None or max(map(len, wide)) <= width:
        return wide
    narrow = _aligned([list(head[:-1]), *rows])
    if max(map(len, narrow)) <= width:
        lines = [narrow[0]]
        for line, text in zip(narrow[1:], said, strict=True):
            lines.append(line)
            if text != "-":  # nothing to do needs no line
                lines.append(fit_line(f"  {title}: {text}", width))
        return lines
    lines = []
    for row, text in zip(rows, said, strict=True):
        pairs = [f"{name} {cell}" for name, cell in zip(head[1:-1], row[1:], strict=True)]
        lines.append(fit_line(f"{row[0]}: {' · '.join(pairs)}", width))
        if text != "-":
            lines.append(fit_line(f"  {title}: {text}", width))
    return lines


# ----------------------------------------------------------------------------------------------------------- records


@dataclass(frozen=True, kw_only=True)
class EntryCheck:
    """One entry's row of the check."""

    entry: str
    """The entry checked."""
    key: str
    """``set``, ``unset`` (its variable is not in the environment) or ``not needed`` (the entry names none)."""
    answers: str
    """``yes`` when the endpoint answered the model with a completion, else what came instead (``HTTP 404``,
    ``unreachable``, ``timeout``, ...); ``-`` when nothing was sent."""
    params: str
    """``ok``, ``rejects max_tokens`` (the parameters a 400 named), ``rejected`` (a 400 naming none of them that a
    bare request does not get), or ``-`` when the model did not answer."""
    verdict: str
    """For the ceiling: ``10/10 honoured`` (the probe's score and what the endpoint did with the JSON schema) or
    ``invalid``; ``-`` for every other entry."""
    latency_s: float | None
    """Seconds of the probe call that answered; None when none did."""
    cost: float | None
    """What the check's calls to this entry cost, in its currency; None when a call's cost is unknown."""
    currency: str
    """The entry's currency."""
    fixes: tuple[str, ...] = ()
    """The catalog lines the entry needs, exactly as they go under its ``[[entries]]`` table (they replace a line of
    the same field: they keep what the entry had)."""
    todo: tuple[str, ...] = ()
    """What to do, one sentence a problem; empty when the entry passes."""
    calls: int = 0
    """Model calls the check made to this entry."""

    @property
    def ok(self) -> bool:
        """True when the entry can race as it is."""
        return not self.todo

    def to_row(self) -> dict[str, Any]:
        """The row as plain values (``fixes`` and ``todo`` joined)."""
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row.update(ok=self.ok, fixes="\n".join(self.fixes), todo=" ".join(self.todo))
        return row


@dataclass(frozen=True, kw_only=True)
class CatalogCheck:
    """The check of a catalog: one row per entry checked, in catalog order."""

    source: str
    """Where the catalog came from."""
    ceiling: str
    """The entry whose verdict was probed."""
    rows: tuple[EntryCheck, ...]
    """The entries checked."""
    wall_s: float = 0.0
    """How long the check took."""
    costs: Mapping[str, float | None] = field(default_factory=dict)
    """What the check cost in all, by currency (None when some call's cost is unknown)."""
    servers: tuple[str, ...] = ()
    """One line per local server: how many requests at once a race sends it, and why (its ``/props``, or none)."""

    @property
    def ok(self) -> bool:
        """True when every entry checked passed."""
        return all(row.ok for row in self.rows)

    @property
    def exit_status(self) -> int:
        """``gradebench check``'s exit status: 0 when every entry passed, 1 otherwise."""
        return 0 if self.ok else 1

    def __getitem__(self, entry: str) -> EntryCheck:
        for row in self.rows:
            if row.entry == entry:
                return row
        raise KeyError(f"no entry {entry!r} was checked; checked: {[r.entry for r in self.rows]}")

    def cost_text(self) -> str:
        """What the check cost, e.g. ``0.000123 USD``."""
        if not self.costs:
            return "0 (nothing was answered)"
        return " + ".join("unknown " + c if v is None else f"{money(v)} {c}" for c, v in self.costs.items())

    def table(self, width: int | None = None) -> str:
        """The check as a table, a line of totals under it; within ``width`` columns when given (every word kept:
        see `gradebench._race.checktable`)."""
        head = ("entry", "key", "answers", "params", "verdict", "latency", "cost", "what to do")
        body = [
            (
                r.entry,
                r.key,
                r.answers,
                r.params,
                r.verdict,
                "-" if r.latency_s is None else f"{r.latency_s:.2f}s",
                "-" if not r.calls else "?" if r.cost is None else money(r.cost),
            )
            for r in self.rows
        ]
        failed = sum(not r.ok for r in self.rows)
        verdict = f"{len(self.rows) - failed} of {len(self.rows)} entries pass" + (
            f", {failed} need{'s' * (failed == 1)} attention" if failed else ""
        )
        entries = f"{len(self.rows)} {'entry' if len(self.rows) == 1 else 'entries'}"
        lines = [
            f"check of {self.source} · {entries} · judge {self.ceiling}",
            *fitted_table(head, body, [" ".join(r.todo) or "-" for r in self.rows], width),
            f"cost of the check {self.cost_text()} · {verdict} · {self.wall_s:.1f} s (no cache)",
            *self.servers,
        ]
        return "\n".join(line if width is None else fit_line(line, width) for line in lines)

    def __str__(self) -> str:
        return self.table()
