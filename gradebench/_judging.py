"""Judging a run within a race: the tool diff checked in code, one or both presentation orders, noise replicas.

`judge_run` gives the blind verdict on one run: the tool-trace diff against the reference is computed first and handed
to the judge as a fact it must account for; under the label-bias check the run is judged twice, the two transcripts
in swapped order under neutral labels drawn by a seeded shuffle, and the verdict is the mean of the two. `noise_scores`
re-judges a run ``k`` more times with distinct salts: the spread is the judge-noise floor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ._catalog import Catalog, Entry
from ._judge import build_judge_messages, identifying_names, judge, transcript_events, transcript_labels
from ._records import Run, Verdict
from ._session import Session
from ._tooldiff import compare, judge_note

__all__ = ["JudgeSetup", "apply_scorer", "assess", "judge_run", "noise_scores"]


@dataclass(frozen=True, kw_only=True)
class JudgeSetup:
    """What every verdict of one benchmark shares."""

    entry: Entry
    """The entry that judges."""
    rubric: str
    """The benchmark's rubric, beside the fixed one."""
    instructions: str
    """The job's instructions: the task the judge reads."""
    benchmark_id: str
    """Labels the judge's requests."""
    salt: str
    """The user salt."""
    swap: bool = False
    """Judge each run in both presentation orders (the label-bias check)."""
    reasoning: bool = False
    """Show the judge the models' reasoning where providers returned it (off: it grades what the job did)."""
    schema_rejected: set[str] = field(default_factory=set)
    """Judge entries that answered ``response_format`` with a 400 in this race: asked in prose from then on."""


async def assess(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, scorer: Callable[[Any, Any], Any] | None
) -> Run:
    """A landed run, assessed: its tool diff checked in code, the judge's verdict and the scorer's score.

    A failed run is not sent to the judge (it costs no judge call): it scores 0 in every figure (see `Run.score`).
    """
    diff = compare(run.calls, run.output, reference.calls, reference.output)
    run = replace(run, tool_diff=diff)
    if not run.ok:
        return replace(run, verdict=None)
    verdict = await judge_run(session, run, reference, value, setup)
    score, score_error = run.scorer, run.scorer_error
    if scorer is not None and run.ok:
        score, score_error = apply_scorer(scorer, run.output, reference.output)
    return replace(run, verdict=verdict, scorer=score, scorer_error=score_error)


def apply_scorer(scorer: Callable[[Any, Any], Any], output: Any, reference: Any) -> tuple[float | None, str | None]:
    """The scorer's score of an output against the reference's, or why it has none."""
    try:
        value = scorer(output, reference)
    except Exception as exc:  # a scorer that raises is a row with scorer_error, not a crash
        return None, f"{type(exc).__name__}: {exc}"
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        return None, f"scorer returned {value!r}, not a number in 0..1 or None"
    return float(value), None


async def judge_run(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, *, sample: int = 0
) -> Verdict:
    """The blind verdict on one run against the reference (both orders, averaged, under the label-bias check)."""
    diff = run.tool_diff or compare(run.calls, run.output, reference.calls, reference.output)
    facts = judge_note(diff)
    orders = [False, True] if setup.swap else [False]
    verdicts = await asyncio.gather(
        *(_one_order(session, run, reference, value, setup, facts, first, sample) for first in orders)
    )
    return verdicts[0] if len(verdicts) == 1 else _combine(verdicts[0], verdicts[1])


async def _one_order(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, facts: str, candidate_first: bool,
    sample: int,
) -> Verdict:  # fmt: skip
    labels = transcript_labels(f"{run.run_id}:{int(candidate_first)}")
    messages = build_judge_messages(
        instructions=setup.instructions,
        input=value,
        rubric=setup.rubric,
        reference=transcript_events(reference.calls, reference.output, reference.error, reasoning=setup.reasoning),
        candidate=transcript_events(run.calls, run.output, run.error, reasoning=setup.reasoning),
        redact=identifying_names([*run.calls, *reference.calls], _model_names(session.catalog)),
        facts=facts,
        labels=labels,
        candidate_first=candidate_first,
    )
    params = dict(session.catalog.judge_params)
    seat = session.seat(
        setup.entry,
        run_id=run.run_id,
        role="judge",
        benchmark_id=setup.benchmark_id,
        salt={"user": setup.salt, "judged": run.run_id, "role": "judge", "order": int(candidate_first)},
        job_params=params,
        max_steps=1,
        sample=sample,
    )
    return await judge(seat, messages, params=params, schema_rejected=setup.schema_rejected)


def _combine(first: Verdict, swapped: Verdict) -> Verdict:
    """One verdict from both presentation orders: their mean, and how far apart they were."""
    calls = [*first.calls, *swapped.calls]
    attempts = first.attempts + swapped.attempts
    if first.score is None or swapped.score is None:  # one order failed: keep the other, say so
        kept = swapped if first.score is None else first
        lost = first if first.score is None else swapped
        note = f"only one order judged ({lost.error})" if kept.score is not None else kept.error
        return replace(kept, calls=calls, attempts=attempts, error=None if kept.score is not None else note)
    assert first.accuracy is not None and first.work is not None
    assert swapped.accuracy is not None and swapped.work is not None
    return replace(
        first,
        accuracy=(first.accuracy + swapped.accuracy) / 2,
        work=(first.work + swapped.work) / 2,
        reason=first.reason if first.reason == swapped.reason else f"{first.reason} / swapped: {swapped.reason}",
        path="schema" if first.path == swapped.path == "schema" else "fallback",
        schema=_schema_of(first.schema, swapped.schema),
        calls=calls,
        attempts=attempts,
        swap_gap=abs(first.score - swapped.score),
    )


def _schema_of(first: str | None, swapped: str | None) -> str | None:
    """What the endpoint did with the schema over both orders: the worse of the two."""
    for state in ("rejected", "ignored", "honoured"):
        if state in (first, swapped):
            return state
    return None


async def noise_scores(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, k: int
) -> list[float]:
    """The scores of ``k`` more judgements of one run, each with a salt of its own (the judge-noise replicas)."""
    verdicts = await asyncio.gather(
        *(judge_run(session, run, reference, value, setup, sample=i) for i in range(1, k + 1))
    )
    return [v.score for v in verdicts if v.score is not None]


def _model_names(catalog: Catalog) -> list[str]:
    return [n for e in catalog.entries for n in (e.name, e.model)]
