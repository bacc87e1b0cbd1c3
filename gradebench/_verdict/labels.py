"""Human labels: a person's scores of a report's runs, on the judge's scale, and the seeded sample they are drawn from.

`HumanLabels` holds one score a run (``run_id``, ``score`` 0..10, who and when if known). It comes from a polars
frame (a spreadsheet: `HumanLabels(df)`), a mapping (`HumanLabels.from_scores`), a parquet file
(`HumanLabels.read`) or the notebook's `gradebench.widgets.LabelPanel`, which writes the file again after every answer
(`HumanLabels.write`: a temporary file in the same folder, then ``os.replace``, so a closed notebook or a crash
mid-write leaves the last complete file, never half of one).

**Pass/fail.** A label may be ``"pass"`` or ``"fail"`` (or ``True``/``False`` in a ``passed`` column) instead of a
number: it counts `PASS_SCORE` (10) or `FAIL_SCORE` (0) on the judge's scale, and ``passed`` keeps what was said.
The label-corrected verdict then compares pass rates ×10 (a margin of 1 point is 10 points of pass rate), and κ
compares the judge's 0..10 with the person's two ends. One set of labels is on one scale: labels that mix pass/fail
with 0..10 scores are refused, naming the runs on each (a pass is not a 10 a person chose; to count pass/fail as
scores, write them as 10 and 0).

**Duplicates.** A frame or mapping that labels a run twice is refused, naming the runs (which row is right is not
ours to guess); `HumanLabels.added` on a run already labelled replaces its label (a person who answers again has
changed their mind: the latest answer is theirs).

**Which runs.** Candidate runs only: the reference run is the yardstick the judge compares with, never judged, so
there is nothing to agree with. The reference *entry's* own candidate runs (its runs against its reference run) are
labelled like any other entry's: every verdict is a candidate minus those runs, so the judge's bias on them must be
measured too. A label on a failed run, or on one the judge gave no score, is kept but left out of the agreement and
the correction (a failed run scores 0 on both scales: it says nothing about the judge), and the agreement says so.
`draw_runs` draws the runs to label — a seeded random sample, stratified by entry — so that the corrected verdict,
which assumes each entry's labelled runs are a random sample of its runs, holds. Labels you choose yourself (say,
the runs that look wrong) bias the correction.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from .._base.vocab import Role
from .._stats.active import label_chances

__all__ = [
    "FAIL_SCORE",
    "LABELS_FILE",
    "LABELS_SCHEMA",
    "PASS_SCORE",
    "HumanLabels",
    "ask_runs",
    "asked_chances",
    "draw_runs",
    "labellable",
]

PASS_SCORE: Final = 10.0
"""What a ``pass`` label counts on the judge's 0..10 scale."""
FAIL_SCORE: Final = 0.0
"""What a ``fail`` label counts on the judge's 0..10 scale."""
LABELS_FILE: Final = "labels.parquet"
"""The labels' file name beside a report's parquet files (`BenchmarkReport.to_parquet` writes it, `read_parquet`
reads it back)."""
LABELS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "score": pl.Float64(),
    "passed": pl.Boolean(),
    "labeller": pl.String(),
    "labelled_at": pl.Datetime("us", "UTC"),
    "chance": pl.Float64(),
}
"""One row per labelled run: its score on the judge's scale, the pass/fail said (null for a score), who and when, and
the chance it was asked with when the runs were chosen by active labelling (`gradebench._stats.active`; null: drawn
as a simple random sample, as `draw_runs` does)."""
_OPTIONAL = ("passed", "labeller", "labelled_at", "chance")


class HumanLabels:
    """A person's scores of runs, one per run, on the judge's 0..10 scale (see the module docstring).

    ``labels``: a polars frame (or rows) with ``run_id`` and ``score`` (a number 0..10, or ``"pass"``/``"fail"``),
    or ``run_id`` and ``passed`` (booleans); ``labeller`` and ``labelled_at`` are optional. A bad value raises a
    `ValueError` naming the column and the run; ``source`` names where the labels came from in that message.
    """

    def __init__(self, labels: pl.DataFrame | Iterable[Mapping[str, Any]] | None = None, *, source: str = "labels"):
        df = labels if isinstance(labels, pl.DataFrame) else pl.DataFrame(list(labels or []), infer_schema_length=None)
        self.frame: pl.DataFrame = _validated(df, source)
        """The labels, one row per run (columns of `LABELS_SCHEMA`), in the order given."""
        self.source = source
        """Where the labels came from (a file's path, ``from_scores``, ...): what an error about them names."""

    def __repr__(self) -> str:
        return f"HumanLabels({self.frame.height} labels)"

    def __len__(self) -> int:
        return self.frame.height

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.scores

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HumanLabels) and self.frame.equals(other.frame)

    __hash__ = None  # type: ignore[assignment]  # mutable frame inside: equal by value, not hashable

    @property
    def scores(self) -> dict[str, float]:
        """``{run_id: score}``."""
        return dict(self.frame.select("run_id", "score").iter_rows())

    @property
    def chances(self) -> dict[str, float]:
        """``{run_id: chance}`` for the runs asked by active labelling with a recorded chance (the others were drawn
        as a simple random sample)."""
        return dict(self.frame.filter(pl.col("chance").is_not_null()).select("run_id", "chance").iter_rows())

    @classmethod
    def from_scores(cls, scores: Mapping[str, float | int | str | bool], *, labeller: str | None = None) -> HumanLabels:
        """Labels from ``{run_id: score}``: a number 0..10, ``"pass"``/``"fail"`` or ``True``/``False`` (pass/fail)."""
        rows = [{"run_id": run_id, "score": score, "labeller": labeller} for run_id, score in scores.items()]
        return cls(_as_frame(rows), source="from_scores")

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> HumanLabels:
        """The labels written to ``path`` (`write`, or a `LabelPanel`); a missing file raises naming it."""
        where = Path(path)
        if not where.is_file():
            raise FileNotFoundError(f"{where}: no labels file there")
        return cls(pl.read_parquet(where), source=str(where))

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the labels to ``path`` (a parquet file; its folder made if needed), atomically: a temporary file in
        the same folder, then ``os.replace``, so the file is always a whole set of labels."""
        where = Path(path)
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{where.name}.", suffix=".tmp", dir=where.parent)
        os.close(fd)
        try:
            self.frame.write_parquet(tmp)
            os.replace(tmp, where)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return where

    def added(
        self,
        run_id: str,
        score: float | int | str | bool,
        *,
        labeller: str | None = None,
        at: datetime | None = None,
        chance: float | None = None,
    ) -> HumanLabels:
        """These labels with ``run_id`` labelled ``score`` (now, unless ``at``; ``chance``: the chance active
        labelling asked it with): a run labelled before gets the new label in its place (the latest answer is the
        person's)."""
        row = {"run_id": run_id, "score": score, "labeller": labeller, "labelled_at": at or datetime.now(UTC)}
        row["chance"] = chance
        new = _validated(_as_frame([row]), "added")
        kept = self.frame.filter(pl.col("run_id") != run_id)
        return HumanLabels(pl.concat([kept, new]), source=self.source)

    def with_chances(self, chances: Mapping[str, float]) -> HumanLabels:
        """These labels with the chance of each run in ``chances`` set to it (active labelling: a person who has
        answered more runs of an entry was, in effect, asked with the chances of the larger budget)."""
        column = [chances.get(r, c) for r, c in self.frame.select("run_id", "chance").iter_rows()]
        frame = self.frame.with_columns(pl.Series("chance", column, dtype=pl.Float64()))
        return HumanLabels(frame, source=self.source)

    def validate(self, runs: pl.DataFrame) -> None:
        """Refuse labels that cannot belong to these runs (a report's ``runs`` frame): a run id it does not have, or
        a reference run (the yardstick is not judged, so there is nothing to agree with). The error names them."""
        roles = dict(runs.select("run_id", "role").iter_rows())
        unknown = [r for r in self.frame["run_id"] if r not in roles]
        if unknown:
            raise ValueError(
                f"{self.source}: run_id {_few(unknown)} not in this report ({len(unknown)} of {len(self)} labels): "
                "labels of another race?"
            )
        yardsticks = [r for r in self.frame["run_id"] if roles[r] == Role.REFERENCE]
        if yardsticks:
            raise ValueError(
                f"{self.source}: run_id {_few(yardsticks)} is a reference run: the yardstick is never judged, so a "
                "label on it measures nothing; label candidate runs (the reference entry's own runs are candidate runs)"
            )


def _as_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows as a frame; ``score`` as text when any is pass/fail (a mapping may mix numbers and pass/fail)."""
    columns: dict[str, list[Any]] = {k: [r.get(k) for r in rows] for k in dict.fromkeys(k for r in rows for k in r)}
    if "score" in columns:
        columns["score"] = [_plain(v) for v in columns["score"]]
        if any(isinstance(v, str) for v in columns["score"]):
            columns["score"] = [None if v is None else str(v) for v in columns["score"]]
    return pl.DataFrame(columns)


def _plain(value: Any) -> float | str | None:
    """A label's score as a frame can hold it: a number as a float, anything else as its text (checked later)."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return str(value)


def _few(ids: list[str], shown: int = 5) -> str:
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(repr(i) for i in ids[:shown]) + more


def _scores(df: pl.DataFrame, ids: list[str], source: str) -> tuple[list[float], list[bool | None]]:
    """The ``score`` (or ``passed``) column as scores on the judge's scale, and the pass/fail said."""
    if "passed" in df.columns and "score" not in df.columns:
        if df.schema["passed"] not in (pl.Boolean(), pl.Null()):
            raise ValueError(f"{source}: column 'passed' must be true/false, got {df.schema['passed']}")
        passed = df["passed"].to_list()
        if empty := [i for i, p in zip(ids, passed, strict=True) if p is None]:
            raise ValueError(f"{source}: 'passed' is empty for run_id {_few(empty)}")
        return [PASS_SCORE if p else FAIL_SCORE for p in passed], passed
    scores: list[float] = []
    said: list[bool | None] = []
    for run_id, value in zip(ids, df["score"].to_list(), strict=True):
        score, verdict = _score(value)
        if score is None or not 0.0 <= score <= 10.0:
            raise ValueError(
                f"{source}: 'score' of run_id {run_id!r} is {value!r}: a label is a number from 0 to 10 on the "
                "judge's scale, or 'pass'/'fail'"
            )
        scores.append(score)
        said.append(verdict)
    return scores, said


def _score(value: Any) -> tuple[float | None, bool | None]:
    """A label's score and the pass/fail it said (None for a number); (None, None) when it is neither."""
    if isinstance(value, str):
        word = value.strip().casefold()
        if word in ("pass", "true"):
            return PASS_SCORE, True
        if word in ("fail", "false"):
            return FAIL_SCORE, False
        try:
            value = float(word)
        except ValueError:
            return None, None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return float(value), None
    return None, None


def _validated(df: pl.DataFrame, source: str) -> pl.DataFrame:
    """``df`` as a labels frame of exactly `LABELS_SCHEMA`, or a `ValueError` naming the column and the runs."""
    if not df.columns:
        return pl.DataFrame(schema=LABELS_SCHEMA)
    allowed = {"run_id", "score", *_OPTIONAL}
    if extra := [c for c in df.columns if c not in allowed]:
        raise ValueError(
            f"{source}: unknown columns {extra}; labels have run_id, score (or passed), labeller, labelled_at"
        )
    if "run_id" not in df.columns or not ({"score", "passed"} & set(df.columns)):
        raise ValueError(
            f"{source}: labels need a 'run_id' column and a 'score' (or 'passed') column, got {df.columns}"
        )
    ids = [None if v is None else str(v) for v in df["run_id"].to_list()]
    if any(not i for i in ids):
        raise ValueError(f"{source}: 'run_id' is empty in row {next(n for n, i in enumerate(ids) if not i)}")
    run_ids = [str(i) for i in ids]
    seen: dict[str, int] = {}
    for i in run_ids:
        seen[i] = seen.get(i, 0) + 1
    if twice := [i for i, n in seen.items() if n > 1]:
        raise ValueError(f"{source}: run_id {_few(twice)} labelled more than once: keep one label a run")
    scores, said = _scores(df, run_ids, source)
    if "passed" in df.columns and "score" in df.columns:  # a frame written by `write`: keep what was said
        said = df["passed"].cast(pl.Boolean).to_list()
        for run_id, score, passed in zip(run_ids, scores, said, strict=True):
            if passed is not None and score != (PASS_SCORE if passed else FAIL_SCORE):
                raise ValueError(
                    f"{source}: run_id {run_id!r} has 'passed' {passed} but 'score' {score:g}: a pass scores "
                    f"{PASS_SCORE:g} and a fail {FAIL_SCORE:g}"
                )
    _one_scale(run_ids, said, source)
    labeller = df["labeller"].cast(pl.String).to_list() if "labeller" in df.columns else [None] * len(ids)
    at = _times(df, source)
    chance = _chances(df, run_ids, source)
    return pl.DataFrame(
        {"run_id": run_ids, "score": scores, "passed": said, "labeller": labeller, "labelled_at": at, "chance": chance},
        schema=LABELS_SCHEMA,
    )


def _chances(df: pl.DataFrame, run_ids: list[str], source: str) -> list[float | None]:
    """The ``chance`` column: each a number in (0, 1], or null (a simple random sample)."""
    if "chance" not in df.columns or df["chance"].null_count() == df.height:
        return [None] * df.height
    values = df["chance"].to_list()
    for run_id, value in zip(run_ids, values, strict=True):
        if value is not None and not (isinstance(value, numbers.Real) and 0.0 < float(value) <= 1.0):
            raise ValueError(
                f"{source}: 'chance' of run_id {run_id!r} is {value!r}: the chance a run was asked with is in (0, 1]"
            )
    return [None if v is None else float(v) for v in values]


def _one_scale(run_ids: list[str], said: list[bool | None], source: str) -> None:
    """Refuse labels that mix pass/fail with 0..10 scores, naming the runs on each scale."""
    pass_fail = [i for i, s in zip(run_ids, said, strict=True) if s is not None]
    scored = [i for i, s in zip(run_ids, said, strict=True) if s is None]
    if pass_fail and scored:
        raise ValueError(
            f"{source}: labels mix two scales: run_id {_few(pass_fail)} labelled pass/fail ({len(pass_fail)}) and "
            f"run_id {_few(scored)} scored 0 to 10 ({len(scored)}); keep one scale a set of labels (to count a pass "
            f"as {PASS_SCORE:g} and a fail as {FAIL_SCORE:g}, write them as those scores)"
        )


def _times(df: pl.DataFrame, source: str) -> list[datetime | None]:
    if "labelled_at" not in df.columns:
        return [None] * df.height
    column = df["labelled_at"]
    if isinstance(column.dtype, pl.Datetime):
        zone = column.dtype.time_zone
        column = column.dt.replace_time_zone("UTC") if zone is None else column.dt.convert_time_zone("UTC")
        return column.cast(LABELS_SCHEMA["labelled_at"]).to_list()
    if column.null_count() == df.height:
        return [None] * df.height
    raise ValueError(f"{source}: column 'labelled_at' must be a datetime, got {column.dtype}")


def labellable() -> pl.Expr:
    """Which rows of a runs frame can be labelled: candidate runs that did not fail and that the judge scored."""
    return (pl.col("role") == Role.CANDIDATE) & pl.col("ok").fill_null(False) & pl.col("score").is_not_null()


def _entry_seed(seed: int, entry: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\x00{entry}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def draw_runs(runs: pl.DataFrame, n: int, *, seed: int = 0) -> list[str]:
    """``n`` run ids to label, drawn at random and stratified by entry, in the order to show them.

    Each entry's labellable runs (`labellable`) are shuffled by a generator seeded from ``seed`` and the entry's
    name, so its first m are a simple random sample of its runs whatever n is: asking for more later (the same seed)
    extends the sample, never redraws it. The runs are taken round by round — one run of each entry a round, the
    entries in a fresh seeded order every round — until ``n`` are drawn (an entry out of runs drops out), so the
    entries get as many labels as they have runs for, within one, and the order says nothing about the entry.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    pool = runs.filter(labellable()).select("entry", "run_id")
    by_entry: dict[str, list[str]] = {}
    for entry, run_id in pool.sort("run_id").iter_rows():
        by_entry.setdefault(entry, []).append(run_id)
    queues = {e: [ids[i] for i in _entry_seed(seed, e).permutation(len(ids))] for e, ids in sorted(by_entry.items())}
    return _round_robin(queues, n, seed)


def _round_robin(queues: dict[str, list[str]], n: int, seed: int) -> list[str]:
    """Up to ``n`` runs from the entries' queues, one of each entry a round, the entries in a fresh seeded order every
    round (an entry out of runs drops out)."""
    queues = {e: list(q) for e, q in queues.items()}
    rounds = np.random.default_rng(seed)
    drawn: list[str] = []
    while len(drawn) < n and any(queues.values()):
        names = [e for e in sorted(queues) if queues[e]]
        for k in rounds.permutation(len(names)):
            if len(drawn) < n:
                drawn.append(queues[names[k]].pop(0))
    return drawn


def _uncertainty(pool: pl.DataFrame) -> np.ndarray:
    """A run's judge uncertainty as the runs frame knows it: how far the judge's scores of the two presentation
    orders differed (``swap_gap``, under the label-bias check), 0 where not measured."""
    return pool["swap_gap"].cast(pl.Float64).abs().fill_nan(0.0).fill_null(0.0).to_numpy().astype(float)


def _entry_pools(runs: pl.DataFrame) -> dict[str, pl.DataFrame]:
    pool = runs.filter(labellable()).select("entry", "run_id", "swap_gap").sort("run_id")
    return {entry: pool.filter(pl.col("entry") == entry) for entry in sorted(pool["entry"].unique().to_list())}


def ask_runs(runs: pl.DataFrame, n: int, *, seed: int = 0) -> list[str]:
    """``n`` run ids to label by active labelling (`gradebench._stats.active`), stratified by entry, in the order to
    ask: each entry's labellable runs in the order of sequential Poisson sampling, led by how unsure the judge was
    of each (its swap gap; without one every run alike, and the order is a random sample's), taken round by round
    as `draw_runs` takes them. The same seed and a larger n extend the order. Record with each label the chance
    `asked_chances` gives, or the corrected verdict reads the labels as a random sample.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    queues = {}
    for entry, pool in _entry_pools(runs).items():
        shape = label_chances(_uncertainty(pool), 1.0)
        keys = _entry_seed(seed, entry).random(pool.height) / shape
        queues[entry] = [pool["run_id"][int(i)] for i in np.argsort(keys, kind="stable")]
    return _round_robin(queues, n, seed)


def asked_chances(runs: pl.DataFrame, asked: Iterable[str]) -> dict[str, float]:
    """The chance each run in ``asked`` (labelled in `ask_runs`'s order) had, for as many runs of its entry as were
    asked: `gradebench._stats.active.label_chances` with that many as the budget."""
    asked = set(asked)
    found: dict[str, float] = {}
    for pool in _entry_pools(runs).values():
        ids = pool["run_id"].to_list()
        count = sum(r in asked for r in ids)
        if count:
            chances = label_chances(_uncertainty(pool), float(count))
            found.update({r: float(p) for r, p in zip(ids, chances, strict=True) if r in asked})
    return found
