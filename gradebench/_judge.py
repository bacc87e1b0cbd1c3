"""The blind judge: asking for a verdict, reading it, and judging a run of a race.

`ask_verdict` asks the judge entry for a verdict through a strict JSON schema; an endpoint that ignores or rejects
the schema is answered from prose by a parse fallback, and the path used is recorded. `judge_run` assesses one
landed run: the tool-trace diff against the reference is computed first and handed to the judge as a fact it must
account for; under the label-bias check the run is judged twice, the two transcripts in swapped order under neutral
labels drawn by a seeded shuffle, and the verdict is the mean of the two; the scorer in code scores it beside.
Every verdict on one input repeats one prompt prefix (labels are drawn per input, never per run), which a provider's
prompt cache serves; a judge entry with ``prompt_cache_key`` also sends an opaque per-input key to route them together.
`judge_again` re-judges a run ``k`` more times with distinct salts: the spread is the judge-noise floor.

A verdict read from prose is the last valid one in the reply that the run did not bring along itself: a
verdict-shaped object that occurs in either transcript (`quoted_verdicts`) is a quote, never the judge's verdict, so
a candidate cannot forge its own score. A reply that gives no valid verdict leaves, in ``judge_error``, what was
wrong, a short excerpt of what the judge answered and what it was asked for.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pydantic

from ._catalog import Catalog, Entry
from ._errors import CallError
from ._keys import JudgeKey
from ._meta import ReportMeta
from ._prompt import JudgePrompt, identifying_names, transcript_events, transcript_labels
from ._protocol import transcripts
from ._records import Run, Verdict
from ._redact import scrub
from ._seat import JobLimits, Reply, Seat
from ._session import Session
from ._tooldiff import ToolDiff, compare, judge_note
from ._vocab import SchemaUse, VerdictPath

__all__ = [
    "EXPECTED",
    "MAX_ATTEMPTS",
    "VERDICT_SCHEMA",
    "JudgeSetup",
    "apply_scorer",
    "ask_verdict",
    "judge_again",
    "judge_messages",
    "judge_run",
    "parse_verdict",
    "prompt_cache_key",
    "quoted_verdicts",
]

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "accuracy": {"type": "integer", "minimum": 0, "maximum": 7},
        "work": {"type": "integer", "minimum": 0, "maximum": 3},
        "reason": {"type": "string"},
    },
    "required": ["accuracy", "work", "reason"],
    "additionalProperties": False,
}

RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA}}

MAX_ATTEMPTS = 3
"""Judge calls made for one verdict before the row carries ``judge_error``."""
EXPECTED = '{"accuracy": 0-7, "work": 0-3, "reason": "..."}'
"""What a verdict looks like, as ``judge_error`` says when the judge answered something else."""
EXCERPT = 160
"""Characters of the judge's reply that ``judge_error`` quotes."""


class _VerdictJSON(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)

    accuracy: int = pydantic.Field(ge=0, le=7)
    work: int = pydantic.Field(ge=0, le=3)
    reason: str


# ---------------------------------------------------------------------------------------------------------- verdicts

_DECODER = json.JSONDecoder()
_VERDICT_KEYS = frozenset(_VerdictJSON.model_fields)


def parse_verdict(text: str, quoted: Container[str] = frozenset()) -> tuple[_VerdictJSON, bool]:
    """The verdict in a reply, and whether the reply was pure JSON (False: it was dug out of prose).

    Out of prose it is the last valid verdict in the reply whose value is not in ``quoted`` (`quoted_verdicts` of the
    transcripts the judge was shown): a judge that quotes the run's own verdict-shaped JSON, before or after giving
    its verdict, is not taken to have given that one. A reply that is pure JSON is the verdict asked for.
    """
    try:
        return _VerdictJSON.model_validate_json(text.strip()), True
    except pydantic.ValidationError as exc:
        if not _looks_unparsed(exc):
            raise ValueError(f"invalid verdict: {_first_error(exc)}") from None
    last_error, found = "no JSON object found in the reply", None
    for value in _objects(text):
        try:
            verdict = _VerdictJSON.model_validate(value)
        except pydantic.ValidationError as exc:
            last_error = f"invalid verdict: {_first_error(exc)}"
            continue
        if _canonical(value) in quoted:
            last_error = "the only verdict in the reply quotes the transcripts: the judge gave no verdict of its own"
            continue
        found = verdict
    if found is None:
        raise ValueError(last_error)
    return found, False


class Quotes(Container[str]):
    """The verdicts a judge was shown inside the transcripts (`quoted_verdicts`), found when first asked: a reply
    that honours the JSON schema is the judge's own and never needs them."""

    def __init__(self, find: Callable[[], frozenset[str]]):
        self._find = find
        self._found: frozenset[str] | None = None

    def __contains__(self, item: object) -> bool:
        found = self._found
        if found is None:
            found = self._found = self._find()
        return item in found


def quoted_verdicts(*shown: Any) -> frozenset[str]:
    """Every verdict-shaped JSON object in transcripts — their events (output, messages, tool arguments and results),
    or their text as the prompt shows it — also inside their texts, as canonical JSON: what the run brought along is
    a quote, not a verdict."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.keys() == _VERDICT_KEYS:
                found.add(_canonical(value))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and "accuracy" in value:  # no key, no verdict: most texts are not scanned
            for inner in _objects(value):
                walk(inner)

    walk(list(shown))
    return frozenset(found)


def _objects(text: str) -> Iterator[Any]:
    """Every JSON object written in a text (nested ones too), in the order they start."""
    start = text.find("{")
    while start != -1:
        try:
            yield _DECODER.raw_decode(text, start)[0]
        except ValueError:
            pass
        start = text.find("{", start + 1)


def _canonical(value: Any) -> str:
    """A JSON value as one text whatever its spacing or key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _excerpt(text: str) -> str:
    """The start of a reply on one line, keys scrubbed, for an error that says what the judge answered."""
    flat = " ".join(scrub(text).split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"


def _looks_unparsed(exc: pydantic.ValidationError) -> bool:
    return any(e["type"] in ("json_invalid", "json_type") for e in exc.errors())


def _first_error(exc: pydantic.ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(x) for x in e["loc"]) or "verdict"
    return f"{where}: {e['msg']}"


async def ask_verdict(
    seat: Seat,
    messages: list[dict[str, str]],
    *,
    params: Mapping[str, Any],
    schema_rejected: set[str] | None = None,
    prompt_cache_key: str | None = None,
    quoted: Container[str] = frozenset(),
) -> Verdict:
    """Ask the judge on ``seat`` for a verdict: strict schema first, prose fallback, bounded retries when invalid.

    ``schema_rejected`` holds the entries that answered ``response_format`` with a 400 earlier in the race: they are
    asked in prose at once instead of being sent the schema again on every verdict (the set is updated here).
    ``prompt_cache_key``, when given, is sent as that request parameter (through the entry's renames and drops).
    ``quoted``: the verdict-shaped objects of the transcripts shown (`quoted_verdicts`), never read as the verdict.
    """
    rejected = schema_rejected if schema_rejected is not None else set()
    use_schema = seat.entry.name not in rejected
    error = "no attempt made"
    for attempt in range(MAX_ATTEMPTS):
        extra: dict[str, Any] = {"response_format": RESPONSE_FORMAT} if use_schema else {}
        if prompt_cache_key is not None:
            extra["prompt_cache_key"] = prompt_cache_key
        try:
            reply = await seat.chat(messages, None, attempt=attempt, **extra)
        except CallError as exc:
            if use_schema and exc.status in (400, 422):  # the endpoint rejects response_format: ask in prose instead
                use_schema = False
                rejected.add(seat.entry.name)
                error = str(exc)
                continue
            error = str(exc)
            break
        if not reply.text.strip():
            error = f"attempt {attempt + 1}: {_no_content(reply)}"
            continue
        try:
            parsed, pure = parse_verdict(reply.text, quoted)
        except ValueError as exc:
            error = f"attempt {attempt + 1}: {exc}; the judge answered {_excerpt(reply.text)}; expected {EXPECTED}"
            continue
        honoured = use_schema and pure
        return Verdict(
            accuracy=parsed.accuracy,
            work=parsed.work,
            reason=parsed.reason,
            judge_entry=seat.entry.name,
            path=VerdictPath.SCHEMA if honoured else VerdictPath.FALLBACK,
            schema=_schema_use(honoured, seat.entry.name in rejected),
            params=dict(params),
            attempts=len(seat.calls),
            calls=list(seat.calls),
        )
    return Verdict(
        accuracy=None,
        work=None,
        judge_entry=seat.entry.name,
        params=dict(params),
        attempts=len(seat.calls),
        error=error,
        calls=list(seat.calls),
    )


def _no_content(reply: Reply) -> str:
    """Why a judge reply carries no text to read a verdict from."""
    finish = reply.calls[-1].finish_reason if reply.calls else None
    if reply.refusal:
        return f"the judge refused: {reply.refusal}"
    if finish == "length":
        return "the reply has no content: it stopped at the length limit (finish_reason length)"
    if reply.reasoning:
        return "the reply has no content: the verdict is only in the judge's reasoning"
    return f"the reply has no content (finish_reason {finish or 'missing'})"


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
    schema_rejected: set[str] = field(default_factory=set)
    """Judge entries that answered ``response_format`` with a 400 in this race: asked in prose from then on."""

    @classmethod
    def from_meta(
        cls, meta: ReportMeta, catalog: Catalog, *, rubric: str | None = None, judge: str | None = None
    ) -> JudgeSetup:
        """The judge of a report (``rubric`` and ``judge``, an entry name, replace the report's own)."""
        entry = catalog[judge or meta.judge_entry or catalog.ceiling_name]
        return cls(
            entry=entry,
            params=dict(catalog.judge_params),
            rubric=meta.spec.rubric or "" if rubric is None else rubric,
            instructions=meta.instructions,
            benchmark_id=meta.benchmark_id,
            salt=meta.spec.salt,
            model_names=tuple(n for e in catalog.entries for n in (e.name, e.model)),
            swap=meta.spec.judge_swap,
            reasoning=meta.spec.judge_reasoning,
        )


Scorer = Callable[[Any, Any], Any]


async def judge_run(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, scorer: Scorer | None = None
) -> Run:
    """A landed run, judged: its tool diff checked in code, the judge's blind verdict and the scorer's score.

    A failed run is not sent to the judge (it costs no judge call): it scores 0 in every figure (see `Run.to_row`).
    Without a ``scorer`` a score the run already has stands (it does not depend on the judge).
    """
    diff = compare(run.calls, run.output, reference.calls, reference.output)
    run = replace(
        run,
        tool_missing=diff.tool_missing,
        tool_extra=diff.tool_extra,
        tool_arg_mismatch=diff.tool_arg_mismatch,
        tool_diff=diff.text,
    )
    if not run.ok:
        return replace(run, verdict=None)
    verdict = await _verdict(session, run, reference, value, setup, diff)
    score, score_error = run.scorer, run.scorer_error
    if scorer is not None:
        score, score_error = apply_scorer(scorer, run.output, reference.output)
    return replace(run, verdict=verdict, scorer=score, scorer_error=score_error)


async def judge_again(session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, k: int) -> list[float]:
    """The scores of ``k`` more judgements of one run, each with a salt of its own (the judge-noise replicas)."""
    diff = compare(run.calls, run.output, reference.calls, reference.output)
    verdicts = await asyncio.gather(
        *(_verdict(session, run, reference, value, setup, diff, sample=i) for i in range(1, k + 1))
    )
    return [v.score for v in verdicts if v.score is not None]


def apply_scorer(scorer: Scorer, output: Any, reference: Any) -> tuple[float | None, str | None]:
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
    reference_events: list[dict[str, Any]]
    """The reference's transcript events."""

    def quoted(self, messages: list[dict[str, str]]) -> Quotes:
        """The verdict-shaped objects of both transcripts, as events and as the prompt shows them (a name scrubbed
        from a forged verdict changes its value): a quote, never the verdict. Found only when a reply is prose."""
        prompt = messages[-1]["content"]
        return Quotes(
            lambda: quoted_verdicts(self.events, self.reference_events, *(body for _, body in transcripts(prompt)))
        )


async def _verdict(
    session: Session, run: Run, reference: Run, value: Any, setup: JudgeSetup, diff: ToolDiff, *, sample: int = 0
) -> Verdict:
    """The blind verdict on one run against the reference (both orders, averaged, under the label-bias check)."""
    events = transcript_events(run.calls, run.output, run.error, reasoning=setup.reasoning)
    reference_events = transcript_events(reference.calls, reference.output, reference.error, reasoning=setup.reasoning)
    shown = _Shown(
        run=run,
        reference=reference,
        value=value,
        facts=judge_note(diff),
        events=events,
        reference_events=reference_events,
    )
    orders = [False, True] if setup.swap else [False]
    verdicts = await asyncio.gather(*(_one_order(session, shown, setup, first, sample) for first in orders))
    return verdicts[0] if len(verdicts) == 1 else _combine(verdicts[0], verdicts[1])


async def _one_order(session: Session, shown: _Shown, setup: JudgeSetup, candidate_first: bool, sample: int) -> Verdict:
    run, reference = shown.run, shown.reference
    messages = judge_messages(
        run,
        reference,
        shown.value,
        setup,
        facts=shown.facts,
        candidate_first=candidate_first,
        events=shown.events,
        reference_events=shown.reference_events,
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
    return await ask_verdict(
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
    reference_events: list[dict[str, Any]] | None = None,
) -> list[dict[str, str]]:
    """The blind prompt about one run, laid out for the provider's prompt cache: everything before the run's own part
    (facts, candidate transcript, closing) depends on the input alone — the labels are drawn per input and order,
    never per run — so every verdict on one input repeats one prefix. ``events`` stands in for the run's own
    transcript events (the estimate lays out prompts of runs that have not happened), ``reference_events`` for the
    reference's (both are made from the runs when not given)."""
    if events is None:
        events = transcript_events(run.calls, run.output, run.error, reasoning=setup.reasoning)
    if reference_events is None:
        reference_events = transcript_events(
            reference.calls, reference.output, reference.error, reasoning=setup.reasoning
        )
    return JudgePrompt(
        instructions=setup.instructions,
        input=value,
        rubric=setup.rubric,
        reference=reference_events,
        candidate=events,
        redact=identifying_names([*run.calls, *reference.calls], setup.model_names),
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


def _combine(first: Verdict, swapped: Verdict) -> Verdict:
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
        path=VerdictPath.SCHEMA if first.path == swapped.path == VerdictPath.SCHEMA else VerdictPath.FALLBACK,
        schema=_schema_of(first.schema, swapped.schema),
        calls=calls,
        attempts=attempts,
        swap_gap=abs(first.score - swapped.score),
    )


def _schema_use(honoured: bool, rejected: bool) -> SchemaUse:
    if honoured:
        return SchemaUse.HONOURED
    return SchemaUse.REJECTED if rejected else SchemaUse.IGNORED


def _schema_of(first: SchemaUse | None, swapped: SchemaUse | None) -> SchemaUse | None:
    """What the endpoint did with the schema over both orders: the worse of the two."""
    for state in (SchemaUse.REJECTED, SchemaUse.IGNORED, SchemaUse.HONOURED):
        if state in (first, swapped):
            return state
    return None
