"""Judging a run of a race: what every verdict shares (`JudgeSetup`), the blind prompt about one run, both
presentation orders under the label-bias check, the judge-noise replicas and the scorer in code beside.

`judge_run` assesses one landed run: the tool-trace diff against the reference is computed first and handed to the
judge as a fact it must account for; under the label-bias check the run is judged twice, the two transcripts in
swapped order under neutral labels drawn by a seeded shuffle, and the verdict is the mean of the two; the scorer in
code scores it beside. Every verdict on one input repeats one prompt prefix (labels are drawn per input, never per
run), which a provider's prompt cache serves; a judge entry with ``prompt_cache_key`` also sends an opaque per-input
key to route them together. `judge_again` re-judges a run ``k`` more times with distinct salts: the spread is the
judge-noise floor. Asking for one verdict and reading it is `gradebench._judge.scoring`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .._base.protocol import transcripts
from .._base.vocab import SchemaUse, ScorePath
from .._calls.batch.api import batch_api_of
from .._calls.seat import JobLimits
from .._calls.session import Session
from .._catalog.catalog import Catalog, Entry
from .._records.keys import JudgeKey
from .._records.meta import ReportMeta
from .._records.records import JudgeScore, Run
from ..scorers import gold_path, without_gold
from .panel import combine
from .prompt import JudgePrompt, identifying_names, shown_transcript, transcript_events, transcript_labels
from .scoring import Quotes, ask_score, quoted_scores
from .tooldiff import ToolDiff, compare, judge_note

__all__ = [
    "JudgeSetup",
    "AnyScorer",
    "apply_scorer",
    "judge_again",
    "judge_messages",
    "judge_run",
    "prompt_cache_key",
    "reads_input",
    "score_reference",
]


# ------------------------------------------------------------------------------------------------------ judging a run


@dataclass(frozen=True, kw_only=True)
class JudgeSetup:
    """What every verdict of one benchmark shares, built once from the report's meta and the catalog."""

    entry: Entry
    """The entry that judges."""
    params: dict[str, Any]
    """Inference parameters of the judge (the catalog's ``judge_params``)."""
    rubric: str
    """The benchmark's rubric, beside the fixed one."""
    instructions: str
    """The job's instructions: the task the judge reads."""
    benchmark_id: str
    """Labels the judge's requests."""
    salt: str
    """The user salt."""
    model_names: tuple[str, ...] = ()
    """Every entry name and model id of the catalog: removed from the prompt wherever they occur."""
    swap: bool = False
    """Judge each run in both presentation orders (the label-bias check)."""
    reasoning: bool = False
    """Show the judge the models' reasoning where providers returned it (off: it grades what the job did)."""
    gold: str | None = None
    """The dotted path of the input's gold label (a gold scorer's): withheld from the judge, which scores against
    the reference as it would without labels, so the gold score stays a measure of its own."""
    schema_rejected: set[str] = field(default_factory=set)
    """Judge entries that answered ``response_format`` with a 400 in this race: asked in prose from then on."""
    panel: tuple[Entry, ...] = ()
    """A panel of judges (``entry`` first): every run is judged by each (see `gradebench._judge.panel`); empty:
    ``entry``
    alone."""
    batch: bool = False
    """The race asks for the judge through a Batch API (``judge_batch``; an entry's own ``batch`` asks alone)."""
    references: dict[int, _Reference] = field(default_factory=dict, compare=False, repr=False)
    """Each reference run as the judge is shown it, laid out on its first verdict (by the run's identity): every
    verdict on an input shows the same reference, so its transcript and names are not remade for each run."""

    def reference(self, run: Run) -> _Reference:
        """``run`` (a reference run) as every verdict against it shows it: laid out once, then kept."""
        kept = self.references.get(id(run))
        if kept is None or kept.run is not run:
            events, names = shown_transcript(
                run.calls, run.output, run.error, self.model_names, reasoning=self.reasoning
            )
            kept = self.references[id(run)] = _Reference(run=run, events=events, names=frozenset(names))
        return kept

    @property
    def judges(self) -> tuple[Entry, ...]:
        """Every entry that judges: the panel, or ``entry`` alone."""
        return self.panel or (self.entry,)

    def batches(self) -> dict[str, str]:
        """The judges whose verdicts go through a Batch API, and which one
        (`gradebench._calls.batch.api.batch_api_of`)."""
        return {j.name: api for j in self.judges if (api := batch_api_of(j, self.batch)) is not None}

    def alone(self, judge: Entry) -> JudgeSetup:
        """This setup with ``judge`` judging by itself (one judge of a panel; the schema refusals stay shared)."""
        return replace(self, entry=judge, panel=())

    @classmethod
    def from_meta(
        cls,
        meta: ReportMeta,
        catalog: Catalog,
        *,
        rubric: str | None = None,
        judge: str | None = None,
        judges: tuple[str, ...] | None = None,
        scorer: AnyScorer | None = None,
        batch: bool | None = None,
    ) -> JudgeSetup:
        """The judge (or panel) of a report: ``judges`` (entry names) or ``judge`` replace the report's own, and
        ``rubric`` its rubric; ``scorer``, the report's recorded one, whose gold label is withheld from the judge;
        ``batch``, the report's ``judge_batch``."""
        names = judges or ((judge,) if judge else None) or tuple(meta.judges) or (catalog.ceiling_name,)
        panel = tuple(catalog[name] for name in names)
        return cls(
            entry=panel[0],
            panel=panel if len(panel) > 1 else (),
            params=dict(catalog.judge_params),
            rubric=meta.spec.rubric or "" if rubric is None else rubric,
            instructions=meta.instructions,
            benchmark_id=meta.benchmark_id,
            salt=meta.spec.salt,
            model_names=tuple(n for e in catalog.entries for n in (e.name, e.model)),
            swap=meta.spec.judge_swap,
            reasoning=meta.spec.judge_reasoning,
            gold=gold_path(meta.spec.scorer or "") if scorer is None else gold_path(scorer),
            batch=meta.spec.judge_batch if batch is None else batch,
        )


async def each_judge(setup: JudgeSetup, ask: Callable[[JudgeSetup], Awaitable[JudgeScore]]) -> JudgeScore:
    """``ask(setup)`` for a setup of one judge; for a panel, ``ask`` of each judge alone, at once, `combine`d."""
    if not setup.panel:
        return await ask(setup)
    verdicts = await asyncio.gather(*(ask(setup.alone(judge)) for judge in setup.panel))
    return combine(verdicts)


@dataclass(frozen=True, kw_only=True)
class _Reference:
    """A reference run as the judge is shown it."""

    run: Run
    """The reference run (kept, so the identity it is found by stays its own)."""
    events: list[dict[str, Any]]
    """Its transcript events."""
    names: frozenset[str]
    """The names that could identify a model in it, the catalog's own included (`identifying_names`)."""


AnyScorer = Callable[..., Any]
"""Any scorer in code a race takes, a `gradebench.scorers.Scorer` or a plain function: ``scorer(output,
reference_output)`` or, for a gold scorer, ``scorer(output, reference_output, input=...)``; a score in 0..1, or None
when the pair cannot be compared."""


async def judge_run(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, scorer: AnyScorer | None = None
) -> Run:
    """A landed run, judged: its tool diff checked in code, the judge's blind verdict and the scorer's score.

    A failed run is not sent to the judge (it costs no judge call): it scores 0 in every figure (see `Run.to_row`).
    Without a ``scorer`` a score the run already has stands (it does not depend on the judge).
    """
    diff = compare(run.calls, run.output, reference.calls, reference.output)
    found: dict[str, Any] = dict(
        tool_missing=diff.tool_missing,
        tool_extra=diff.tool_extra,
        tool_arg_mismatch=diff.tool_arg_mismatch,
        tool_diff=diff.text,
    )
    if not run.ok:
        return replace(run, **found, verdict=None)
    verdict = await each_judge(setup, lambda one: _score(session, run, reference, value, one, diff))
    score, score_error = run.scorer, run.scorer_error
    if scorer is not None:
        score, score_error = apply_scorer(scorer, run.output, reference.output, input=value)
    return replace(run, **found, verdict=verdict, scorer=score, scorer_error=score_error)  # one copy of the run


async def judge_again(session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, k: int) -> list[float]:
    """The scores of ``k`` more judgements of one run, each with a salt of its own (the judge-noise replicas; each
    a panel's mean, for a panel)."""
    diff = compare(run.calls, run.output, reference.calls, reference.output)

    def replica(sample: int) -> Awaitable[JudgeScore]:
        return each_judge(setup, lambda one: _score(session, run, reference, value, one, diff, sample=sample))

    verdicts = await asyncio.gather(*(replica(i) for i in range(1, k + 1)))
    return [v.score for v in verdicts if v.score is not None]


def apply_scorer(
    scorer: AnyScorer, output: Any, reference: Any, *, input: Any = None
) -> tuple[float | None, str | None]:
    """The scorer's score of an output against the reference's (a scorer that reads the input is given it: see
    `reads_input`), or why it has none."""
    call: Callable[..., Any] = scorer  # the input keyword is beyond the plain two-argument contract
    try:
        value = call(output, reference, input=input) if reads_input(scorer) else call(output, reference)
    except Exception as exc:  # a scorer that raises is a row with scorer_error, not a crash
        return None, f"{type(exc).__name__}: {exc}"
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        return None, f"scorer returned {value!r}, not a number in 0..1 or None"
    return float(value), None


def reads_input(scorer: AnyScorer) -> bool:
    """Whether a scorer compares with the input (a gold label it carries): its own ``reads_input`` flag says so (the
    ready scorers' is True when given ``gold=``), else a parameter named ``input`` in its signature. Such a scorer is
    passed ``input=`` and scores the reference run too."""
    flag = getattr(scorer, "reads_input", None)
    if isinstance(flag, bool):
        return flag
    try:
        parameter = inspect.signature(scorer).parameters.get("input")
    except (TypeError, ValueError):  # a callable without a signature (a builtin) takes no input keyword
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


def score_reference(run: Run, value: Any, scorer: AnyScorer | None) -> Run:
    """A reference run as ``scorer`` scores it: against the gold labels of its input when the scorer reads the input
    (its own output stands for the reference's), and no score otherwise (against itself it would always agree)."""
    if scorer is None or not run.ok or not reads_input(scorer):
        return replace(run, scorer=None, scorer_error=None)
    score, error = apply_scorer(scorer, run.output, run.output, input=value)
    return replace(run, scorer=score, scorer_error=error)


@dataclass(frozen=True, kw_only=True)
class _Shown:
    """One run as the judge is shown it, laid out once for both orders and every replica."""

    run: Run
    """The run judged."""
    reference: Run
    """The reference run of its input."""
    value: Any
    """The input."""
    facts: str
    """The facts checked in code (the tool diff)."""
    events: list[dict[str, Any]]
    """The run's transcript events."""
    reference_shown: _Reference
    """The reference as every verdict against it shows it (`JudgeSetup.reference`)."""
    redact: frozenset[str]
    """The names that could identify a model in either run, the catalog's own included (`identifying_names`)."""

    def quoted(self, messages: list[dict[str, str]]) -> Quotes:
        """The verdict-shaped objects of both transcripts, as events and as the prompt shows them (a name scrubbed
        from a forged verdict changes its value): a quote, never the verdict. Found only when a reply is prose."""
        prompt = messages[-1]["content"]
        return Quotes(
            lambda: quoted_scores(self.events, self.reference_shown.events, *(body for _, body in transcripts(prompt)))
        )


async def _score(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, diff: ToolDiff, *, sample: int = 0
) -> JudgeScore:
    """The blind verdict on one run against the reference (both orders, averaged, under the label-bias check)."""
    reference_shown = setup.reference(reference)
    events, redact = shown_transcript(
        run.calls, run.output, run.error, reference_shown.names, reasoning=setup.reasoning
    )
    shown = _Shown(
        run=run,
        reference=reference,
        value=value,
        facts=judge_note(diff),
        events=events,
        reference_shown=reference_shown,
        redact=frozenset(redact),
    )
    orders = [False, True] if setup.swap else [False]
    verdicts = await asyncio.gather(*(_one_order(session, shown, setup, first, sample) for first in orders))
    return verdicts[0] if len(verdicts) == 1 else _combine(verdicts[0], verdicts[1])


async def _one_order(
    session: Session, shown: _Shown, setup: JudgeSetup, candidate_first: bool, sample: int
) -> JudgeScore:
    run, reference = shown.run, shown.reference
    messages = judge_messages(
        run,
        reference,
        shown.value,
        setup,
        facts=shown.facts,
        candidate_first=candidate_first,
        shown=shown,
    )
    key = JudgeKey(
        benchmark_id=setup.benchmark_id,
        user_salt=setup.salt,
        run_id=run.run_id,
        candidate_first=candidate_first,
        sample=sample,
    )
    seat = session.seat(setup.entry, key, JobLimits(params=setup.params, max_steps=1))
    cache_key = prompt_cache_key(setup.benchmark_id, reference.input_id) if setup.entry.prompt_cache_key else None
    return await ask_score(
        seat,
        messages,
        params=setup.params,
        schema_rejected=setup.schema_rejected,
        prompt_cache_key=cache_key,
        quoted=shown.quoted(messages),
    )


def judge_messages(
    run: Run,
    reference: Run,
    value: Any,
    setup: JudgeSetup,
    *,
    facts: str,
    candidate_first: bool = False,
    events: list[dict[str, Any]] | None = None,
    shown: _Shown | None = None,
) -> list[dict[str, str]]:
    """The blind prompt about one run, laid out for the provider's prompt cache: everything before the run's own part
    (facts, candidate transcript, closing) depends on the input alone — the labels are drawn per input and order,
    never per run — so every verdict on one input repeats one prefix. ``events`` stands in for the run's own
    transcript events (the estimate lays out prompts of runs that have not happened), and ``shown`` for both runs as
    every verdict on the run shows them, laid out once (`_Shown`): the run's events, the reference's (as
    `JudgeSetup.reference` keeps them) and the names that could identify a model in either, the catalog's included.
    They are made from the runs when not given."""
    if shown is not None:
        events, reference_events, redact = shown.events, shown.reference_shown.events, shown.redact
    else:
        if events is None:
            events = transcript_events(run.calls, run.output, run.error, reasoning=setup.reasoning)
        reference_events = transcript_events(
            reference.calls, reference.output, reference.error, reasoning=setup.reasoning
        )
        redact = frozenset(identifying_names([*run.calls, *reference.calls], setup.model_names))
    return JudgePrompt(
        instructions=setup.instructions,
        input=without_gold(value, setup.gold),
        rubric=setup.rubric,
        reference=reference_events,
        candidate=events,
        redact=redact,
        facts=facts,
        labels=transcript_labels(f"{setup.benchmark_id}:{reference.input_id}:{int(candidate_first)}"),
        candidate_first=candidate_first,
    ).messages()


def prompt_cache_key(benchmark_id: str, input_id: str) -> str:
    """The ``prompt_cache_key`` of the judge's requests about one input: an opaque short hash that names nothing.

    One key per input keeps the verdicts that share a prefix together (a provider routes by prefix and key), while
    the inputs of a race spread over the provider's machines.
    """
    digest = hashlib.sha256(f"gradebench-judge\x00{benchmark_id}\x00{input_id}".encode()).hexdigest()
    return f"gb-{digest[:16]}"


def _combine(first: JudgeScore, swapped: JudgeScore) -> JudgeScore:
    """One verdict from both presentation orders: their mean and how far apart they were; one order when the other
    gave no verdict."""
    calls = [*first.calls, *swapped.calls]
    attempts = first.attempts + swapped.attempts
    if first.score is None or swapped.score is None:
        kept = swapped if first.score is None else first
        return replace(kept, calls=calls, attempts=attempts)
    assert first.accuracy is not None and first.work is not None
    assert swapped.accuracy is not None and swapped.work is not None
    return replace(
        first,
        accuracy=(first.accuracy + swapped.accuracy) / 2,
        work=(first.work + swapped.work) / 2,
        reason=first.reason if first.reason == swapped.reason else f"{first.reason} / swapped: {swapped.reason}",
        path=ScorePath.SCHEMA if first.path == swapped.path == ScorePath.SCHEMA else ScorePath.FALLBACK,
        schema=_schema_of(first.schema, swapped.schema),
        calls=calls,
        attempts=attempts,
        swap_gap=abs(first.score - swapped.score),
    )


def _schema_of(first: SchemaUse | None, swapped: SchemaUse | None) -> SchemaUse | None:
    """What the endpoint did with the schema over both orders: the worse of the two."""
    for state in (SchemaUse.REJECTED, SchemaUse.IGNORED, SchemaUse.HONOURED):
        if state in (first, swapped):
            return state
    return None
