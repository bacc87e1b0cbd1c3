"""What a verdict may rest on, beside its bounds: whether the judge told runs apart, whether an entry answered at all,
and whether the judge gave verdicts, and whether the endpoint answered.

A bound over scores that do not vary is no evidence: a judge that gives every run one score makes every difference 0,
and every entry would clear the margin. An entry whose answers were cut off at the length limit, or refused, on most
of its runs may still be scored well by a lenient judge; it does not do the job. `Evidence` holds both findings for a
report's runs and `Evidence.hold` keeps a verdict open when they say it cannot stand. `judge_failure` counts the runs
the judge gave no verdict, for the one headline a report shows about it.

A run the endpoint failed (a refused connection, a 404 for a misspelt model id, a 5xx after the retries, a call past
its timeout: the run's ``endpoint_error``) says nothing of the model's answers; a failed run's 0 would make an outage
read as a quality finding. So such runs are left out of the verdict's pairs (`measured_runs`), the reason says how
many were lost (`Outage`), and an entry that lost more than half its runs so (`MOST`) has no quality verdict at all:
it is ``unmeasured``. A run whose job failed on the model's answer (invalid JSON, the job raising) is the model's
failure and still scores 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from .._base.vocab import Role
from .._stats.paired import AS_GOOD, INCONCLUSIVE, WORSE

__all__ = [
    "MOST",
    "Evidence",
    "JudgeFailure",
    "Outage",
    "evidence",
    "flawed_entries",
    "judge_failure",
    "measured_runs",
    "outages",
]

MOST = 0.5
"""An entry truncated or refused on more than this share of its runs is never as good; one whose endpoint failed more
than this share of its runs is unmeasured."""


def flawed_entries(marks: Iterable[tuple[str, bool]]) -> set[str]:
    """The entries cut off or refused on more than `MOST` of their runs, from (entry, that run was cut off or
    refused) pairs: what a race to a verdict never settles as good, live and when replayed."""
    made: dict[str, list[bool]] = {}
    for entry, flawed in marks:
        made.setdefault(entry, []).append(flawed)
    return {entry for entry, flaws in made.items() if sum(flaws) > MOST * len(flaws)}


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What a report's runs say about whether its verdicts can stand."""

    same_score: float | None = None
    """The one score the judge gave every judged candidate run, when it gave them all the same (at least two); None
    when it told runs apart."""
    judged: int = 0
    """Candidate runs the judge scored."""
    flawed: dict[str, str] = field(default_factory=dict)
    """Per entry, why it cannot be as good: its answers were cut off or refused on most of its runs."""
    outages: dict[str, Outage] = field(default_factory=dict)
    """Per candidate entry whose endpoint failed some of its runs, how many and why (`outages`)."""

    def unmeasured(self) -> list[str]:
        """The entries the endpoint failed on more than `MOST` of their runs, in order: no quality verdict."""
        return [entry for entry, outage in self.outages.items() if outage.unmeasured]

    def notes(self, entry: str) -> list[str]:
        """Why ``entry``'s verdict is held open, in words (empty when nothing holds it)."""
        notes = []
        if self.same_score is not None:
            notes.append(
                f"the judge gave every run the same score ({self.same_score:.2f} on {self.judged} runs) and so "
                "cannot tell runs apart: no verdict is settled on it"
            )
        if entry in self.flawed:
            notes.append(self.flawed[entry])
        return notes

    def hold(self, entry: str, verdict: str | None, reason: str | None) -> tuple[str | None, str | None]:
        """The verdict ``entry`` may have, and why: ``as good`` (and ``worse``) kept open when the judge cannot tell
        runs apart, ``as good`` when most of the entry's answers were cut off or refused."""
        notes = self.notes(entry)
        if verdict is None or not notes:
            return verdict, reason
        held = verdict in (AS_GOOD, WORSE) and self.same_score is not None
        held = held or (verdict == AS_GOOD and entry in self.flawed)
        bounds = f"the bounds alone: {reason}" if held else reason
        return (INCONCLUSIVE if held else verdict), "; ".join([*notes, *([bounds] if bounds else [])])


def evidence(runs: pl.DataFrame) -> Evidence:
    """The `Evidence` of a runs frame: the judge's spread over its judged candidate runs (every entry's together), and
    each entry truncated (a call at finish reason ``length``) or refused on more than half of its runs."""
    # the columns read, before any copy: a filter or a part copies every column it carries, texts too
    candidates = runs.select("role", "entry", "ok", "score", "truncated", "refused").filter(
        pl.col("role") == Role.CANDIDATE
    )
    scores = candidates.filter(pl.col("ok").fill_null(False) & pl.col("score").is_not_null())["score"]
    same = float(scores[0]) if scores.len() >= 2 and scores.n_unique() == 1 else None
    flawed = {}
    counts = candidates.group_by("entry", maintain_order=True).agg(
        pl.len().alias("n"),
        (pl.col("truncated").fill_null(0) > 0).sum().alias("truncated"),
        pl.col("refused").fill_null(False).sum().alias("refused"),
    )
    for row in counts.iter_rows(named=True):
        n, why = row["n"], []
        if row["truncated"] > MOST * n:
            why.append(f"truncated on {row['truncated']} of {n} runs: its answers were cut off (raise max_tokens)")
        if row["refused"] > MOST * n:
            why.append(
                f"refused on {row['refused']} of {n} runs: the model or the provider's filter declined to answer"
            )
        if why:
            flawed[row["entry"]] = "; ".join(why) + ": never as good"
    return Evidence(same_score=same, judged=scores.len(), flawed=flawed, outages=outages(runs))


@dataclass(frozen=True, kw_only=True)
class Outage:
    """The runs of one entry that its endpoint failed (`gradebench.results.Run.endpoint_error`)."""

    entry: str
    """The entry."""
    failed: int
    """Its candidate runs the endpoint failed."""
    runs: int
    """Its candidate runs."""
    error: str
    """The most frequent of their errors (without the entry's name it starts with)."""
    same: int
    """How many of them failed with it."""

    @property
    def unmeasured(self) -> bool:
        """More than `MOST` of the entry's runs never reached the model: too few to measure it."""
        return self.failed > MOST * self.runs

    def note(self) -> str:
        """How many runs the verdict lost, short (a verdict line's note; `reason` has the error)."""
        return f"{self.failed} of {self.runs} runs lost to the endpoint"

    def reason(self) -> str:
        """Why the entry is unmeasured, or how many of its runs its verdict lost."""
        also = f"; {self.failed - self.same} failed otherwise" if self.failed > self.same else ""
        if self.failed == self.runs:
            return f"no run reached the model: {self.error} ({self.same} of {self.runs} runs{also})"
        if self.unmeasured:
            return (
                f"too few runs reached the model to measure it: the endpoint failed {self.failed} of {self.runs} "
                f"runs ({self.error}: {self.same}{also})"
            )
        return (
            f"{self.failed} of {self.runs} runs left out: the endpoint failed them ({self.error}: {self.same}{also}), "
            "which says nothing of the model's answers"
        )


def outages(runs: pl.DataFrame) -> dict[str, Outage]:
    """Per candidate entry whose endpoint failed any of its runs, the `Outage`, in order of first appearance."""
    candidates = runs.select("role", "entry", "endpoint_error").filter(pl.col("role") == Role.CANDIDATE)
    found = {}
    for entry, part in candidates.group_by("entry", maintain_order=True):
        name = str(entry[0])
        errors = part["endpoint_error"].drop_nulls()
        if not errors.len():
            continue
        top = errors.value_counts(sort=True).row(0)
        error = str(top[0]).removeprefix(f"{name}: ")
        found[name] = Outage(entry=name, failed=errors.len(), runs=part.height, error=error, same=int(top[1]))
    return found


def measured_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs as a verdict reads them: a candidate run the endpoint failed carries no score (left out of the pairs,
    as a run the judge gave no verdict is), instead of a failed run's 0."""
    lost = (pl.col("role") == Role.CANDIDATE) & pl.col("endpoint_error").is_not_null()
    return runs.with_columns(
        pl.when(lost).then(pl.lit(True)).otherwise(pl.col("ok")).alias("ok"),
        pl.when(lost).then(pl.lit(None, dtype=pl.Float64)).otherwise(pl.col("score")).alias("score"),
    )


@dataclass(frozen=True, kw_only=True)
class JudgeFailure:
    """The candidate runs the judge gave no verdict: how many, of how many it was sent, and the first one's error."""

    failed: int
    """Runs the judge gave no valid verdict (``judge_error``)."""
    sent: int
    """Runs sent to the judge (the candidate runs that did not fail)."""
    first: str
    """The first such run's ``judge_error``: what was wrong, what the judge answered and what was expected."""

    def text(self) -> str:
        """``the judge failed on N of M runs: <the first error>``."""
        return f"the judge failed on {self.failed} of {self.sent} runs: {self.first}"


def judge_failure(runs: pl.DataFrame) -> JudgeFailure | None:
    """The runs the judge failed on, or None when it gave a verdict on every run sent to it."""
    candidates = runs.select("role", "ok", "judge_error").filter(
        (pl.col("role") == Role.CANDIDATE) & pl.col("ok").fill_null(False)
    )
    errors = candidates["judge_error"].drop_nulls()
    if not errors.len():
        return None
    return JudgeFailure(failed=errors.len(), sent=candidates.height, first=str(errors[0]))
