"""Asking the judge for one verdict and reading it.

`ask_score` asks the judge entry for a verdict through a strict JSON schema; an endpoint that ignores or rejects the
schema is answered from prose by a parse fallback, and the path used is recorded. A verdict read from prose is the
last valid one in the reply that the run did not bring along itself: a verdict-shaped object that occurs in either
transcript (`quoted_scores`) is a quote, never the judge's verdict, so a candidate cannot forge its own score. A
reply that gives no valid verdict leaves, in ``judge_error``, what was wrong, a short excerpt of what the judge
answered and what it was asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any

import pydantic

from .._base.canonical import canonical_json
from .._base.errors import CallError
from .._base.redact import scrub
from .._base.vocab import SchemaUse, ScorePath
from .._calls.seat import Reply, Seat
from .._records.records import JudgeScore

__all__ = [
    "EXPECTED",
    "MAX_ATTEMPTS",
    "RESPONSE_FORMAT",
    "VERDICT_SCHEMA",
    "Quotes",
    "ask_score",
    "parse_verdict",
    "quoted_scores",
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

    Out of prose it is the last valid verdict in the reply whose value is not in ``quoted`` (`quoted_scores` of the
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
        if canonical_json(value) in quoted:
            last_error = "the only verdict in the reply quotes the transcripts: the judge gave no verdict of its own"
            continue
        found = verdict
    if found is None:
        raise ValueError(last_error)
    return found, False


class Quotes(Container[str]):
    """The verdicts a judge was shown inside the transcripts (`quoted_scores`), found when first asked: a reply
    that honours the JSON schema is the judge's own and never needs them."""

    def __init__(self, find: Callable[[], frozenset[str]]):
        self._find = find
        self._found: frozenset[str] | None = None

    def __contains__(self, item: object) -> bool:
        found = self._found
        if found is None:
            found = self._found = self._find()
        return item in found


def quoted_scores(*shown: Any) -> frozenset[str]:
    """Every verdict-shaped JSON object in transcripts — their events (output, messages, tool arguments and results),
    or their text as the prompt shows it — also inside their texts, as canonical JSON: what the run brought along is
    a quote, not a verdict."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.keys() == _VERDICT_KEYS:
                found.add(canonical_json(value))
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


_PARAMS_KEPT: dict[int, tuple[Mapping[str, Any], dict[str, Any]]] = {}
"""One copy of a judge's params for all the verdicts asked with them (a race of 100,000 verdicts kept 100,000 equal
dicts), by the mapping they were asked with: kept with it, so its id stays its own."""


def _kept_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The copy of ``params`` a verdict keeps: the one the verdicts before it kept, while ``params`` is unchanged."""
    kept = _PARAMS_KEPT.get(id(params))
    if kept is not None and kept[0] is params and kept[1] == params:
        return kept[1]
    if len(_PARAMS_KEPT) >= 64:  # a process judges with a few setups at a time
        _PARAMS_KEPT.clear()
    copy = dict(params)
    _PARAMS_KEPT[id(params)] = (params, copy)
    return copy


async def ask_score(
    seat: Seat,
    messages: list[dict[str, str]],
    *,
    params: Mapping[str, Any],
    schema_rejected: set[str] | None = None,
    prompt_cache_key: str | None = None,
    quoted: Container[str] = frozenset(),
) -> JudgeScore:
    """Ask the judge on ``seat`` for a verdict: strict schema first, prose fallback, bounded retries when invalid.

    ``schema_rejected`` holds the entries that answered ``response_format`` with a 400 earlier in the race: they are
    asked in prose at once instead of being sent the schema again on every verdict (the set is updated here).
    ``prompt_cache_key``, when given, is sent as that request parameter (through the entry's renames and drops).
    ``quoted``: the verdict-shaped objects of the transcripts shown (`quoted_scores`), never read as the verdict.
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
        return JudgeScore(
            accuracy=parsed.accuracy,
            work=parsed.work,
            reason=parsed.reason,
            judge_entry=seat.entry.name,
            path=ScorePath.SCHEMA if honoured else ScorePath.FALLBACK,
            schema=_schema_use(honoured, seat.entry.name in rejected),
            params=_kept_params(params),
            attempts=len(seat.calls),
            calls=list(seat.calls),
        )
    return JudgeScore(
        accuracy=None,
        work=None,
        judge_entry=seat.entry.name,
        params=_kept_params(params),
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


def _schema_use(honoured: bool, rejected: bool) -> SchemaUse:
    if honoured:
        return SchemaUse.HONOURED
    return SchemaUse.REJECTED if rejected else SchemaUse.IGNORED
