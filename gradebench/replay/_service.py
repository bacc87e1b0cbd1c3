"""The replay: an OpenAI-compatible endpoint that answers from a recording, served as any provider is.

`Replay.handle` answers ``/v1/chat/completions`` and ``/v1/models``; `Replay.catalog` mounts it in-process (an
``httpx2.MockTransport`` under the real openai client, as the simulated fleet is mounted) and makes a catalog of its
entries, so a race, the judge, the cache and the report see a provider like any other.

How a request finds its record: by its ``model`` and its last user message, matched against the recording's prompts
(exactly, then with whitespace normalised; `Recording.find`). A request to the recorded judge reads the judge's prompt:
the input's id from its ``<input>`` section (a replay's inputs carry it; else the candidate transcript's user message is
matched as above), then which recorded output of that input the candidate transcript's answer is (exactly, then with
whitespace normalised, then with the names the judge's prompt redacts redacted the same way), and answers that
output's recorded verdict in the judge's JSON. Nothing is ever made up: a request no record answers is a 404 whose
message names the model and the input (as far as the request tells it), which fails that run or that verdict.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from .._base.canonical import canonical_json
from .._base.protocol import content_text, section, transcripts
from .._base.vocab import Role
from .._calls.session import mount
from .._catalog.catalog import Catalog, Entry
from ._judge import RecordedJudge
from ._recording import Record, Recording, normalised
from ._table import TableError, text

__all__ = ["JUDGE_GRADE", "JUDGE_MODEL", "Replay", "ReplayRequest"]

JUDGE_MODEL = "recorded-judge"
"""The model id (and entry name) of a recorded judge."""
JUDGE_GRADE = "judge"
"""The grade a replay's catalog puts its judge in (the ceiling)."""
_EXCERPT = 80


@dataclass(frozen=True, kw_only=True)
class ReplayRequest:
    """One request the replay answered."""

    path: str
    """The URL path, e.g. ``/v1/chat/completions``."""
    model: str | None
    """The model asked for."""
    input: str | None
    """The input the request was found to be (None: not found, or not a chat request)."""
    status: int
    """The status answered: 200, or 404 when no record answers it."""
    message: str = ""
    """Why no record answers it (the 404's message)."""


class _NotFound(Exception):
    """No record answers the request; the message says which input and model."""

    def __init__(self, message: str, input: str | None = None):
        super().__init__(message)
        self.input = input


class Replay:
    """A recording (and a judge) served as an OpenAI-compatible endpoint.

    ``judge``: a `RecordedJudge` (verdicts from another evaluation, each keyed to a recorded output: served as the
    model ``recorded-judge``) or an `Entry` that judges live. ``latency_scale`` multiplies each record's
    ``latency_ms``, waited before it is answered (0: answered at once), so the report's latency is the recorded one.
    """

    def __init__(self, recording: Recording, *, judge: RecordedJudge | Entry, latency_scale: float = 1.0):
        if not isinstance(recording, Recording):
            raise TypeError(f"recording must be a gradebench.replay.Recording, got {type(recording).__name__}")
        if not isinstance(judge, RecordedJudge | Entry):
            raise TypeError(f"judge must be a RecordedJudge or an Entry, got {type(judge).__name__}")
        if not (isinstance(latency_scale, int | float) and 0 <= latency_scale < float("inf")):
            raise ValueError(f"latency_scale must be a number >= 0, got {latency_scale!r}")
        self.recording = recording
        self.judge = judge
        self.latency_scale = float(latency_scale)
        self.requests: list[ReplayRequest] = []
        """Every request answered, in order."""
        if isinstance(judge, RecordedJudge):
            _check_judged(recording, judge)
            if JUDGE_MODEL in recording.models:
                raise TableError(f"{recording.source}: a recorded model is named {JUDGE_MODEL!r}, the recorded judge's")
        self._names: list[str] = [*recording.models, JUDGE_MODEL]

    @property
    def base_url(self) -> str:
        """Where the replay is mounted: a host of its own per recording (and judge), so the call cache never serves
        an answer that another version of the recording gave."""
        digest = self.recording.digest
        if isinstance(self.judge, RecordedJudge):
            digest = _digest(digest, sorted((k, v.verdict()) for k, v in self.judge.records.items()))
        return f"http://replay-{digest}.gradebench.invalid/v1"

    def transport(self) -> httpx2.MockTransport:
        """An in-process transport for ``httpx2.AsyncClient(transport=...)``."""
        return httpx2.MockTransport(self.handle)

    def catalog(
        self,
        pick: str,
        *,
        grade: str = "replay",
        add: Sequence[Entry] = (),
        prices: Mapping[str, tuple[float, float]] | None = None,
        base_url: str | None = None,
    ) -> Catalog:
        """The recording as a catalog: an entry per recorded model (named by its model id) in ``grade``, whose pick
        (the race's reference) is ``pick``; the entries in ``add`` (live models, e.g. a new candidate) race in the
        same grade; the judge is the ceiling, in grade ``judge``. ``prices`` (model id → price per 1M tokens in, out)
        price a model whose records carry token counts but no cost (a recorded cost, in USD, is the call's cost as
        a provider's reported cost is). Mounted in-process at `base_url` (replacing what was there), or, given
        ``base_url``, pointing there (the replay served over a socket).
        """
        models = self.recording.models
        if grade == JUDGE_GRADE:
            raise ValueError(f"grade {grade!r} is where the replay's judge sits: name the racing grade otherwise")
        if pick not in models:
            raise KeyError(f"pick {pick!r} is not a recorded model; the recording's models: {models}")
        given = dict(prices or {})
        unknown = [m for m in given if m not in models]
        if unknown:
            raise KeyError(f"prices name {unknown[0]!r}, not a recorded model; the recording's models: {models}")
        url = base_url or self.base_url
        if base_url is None:
            mount(url, self.transport())
        entries = [self._entry(m, grade, url, given.get(m)) for m in models]
        if isinstance(self.judge, RecordedJudge):
            judge = Entry(name=JUDGE_MODEL, model=JUDGE_MODEL, grade=JUDGE_GRADE, base_url=url, max_retries=0)
        else:
            judge = dataclasses.replace(self.judge, grade=JUDGE_GRADE)
        added = [dataclasses.replace(e, grade=grade) for e in add]
        everyone = [*entries, *added, judge]
        self._names = sorted({n for e in everyone for n in (e.name, e.model)}, key=len, reverse=True)
        return Catalog(
            everyone,
            grades=[grade, JUDGE_GRADE],
            picks={grade: pick},
            ceiling=judge.name,
            source=f"replay of {self.recording.source}",
        )

    def _entry(self, model: str, grade: str, url: str, price: tuple[float, float] | None) -> Entry:
        records = [r for r in self.recording.records if r.model == model]
        if price is None and any(r.cost is None and _has_tokens(r.usage) for r in records):
            raise ValueError(
                f"model {model!r}: its records carry token counts but no cost: give its prices "
                f"(prices={{{model!r}: (per 1M in, per 1M out)}}), or record a cost"
            )
        latencies = [r.latency_ms for r in records if r.latency_ms is not None]
        typical = statistics.median(latencies) / 1000 * self.latency_scale if latencies else None
        price_in, price_out = price if price is not None else (0.0, 0.0)
        return Entry(
            name=model,
            model=model,
            grade=grade,
            base_url=url,
            price_in=price_in,
            price_out=price_out,
            max_retries=0,  # a record is there or not: nothing to retry
            latency_s=typical,
        )

    # ---------------------------------------------------------------------------------------------------- serving

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one HTTP request: ``/v1/chat/completions`` from the recording, ``/v1/models`` with its models."""
        path = request.url.path
        if request.method == "GET" and path.endswith("/models"):
            self.requests.append(ReplayRequest(path=path, model=None, input=None, status=200))
            return httpx2.Response(200, json={"object": "list", "data": [_card(m) for m in self._models()]})
        if request.method != "POST" or not path.endswith("/chat/completions"):
            return self._refused(path, None, 404, f"the replay serves /v1/chat/completions and /v1/models, not {path}")
        try:
            body = json.loads(await request.aread())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._refused(path, None, 400, "the request body is not JSON")
        model = body.get("model") if isinstance(body, dict) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(model, str) or not isinstance(messages, list):
            return self._refused(path, None, 400, "a chat completion request names a model and sends messages")
        prompt = _last_user(messages)
        try:
            if model == JUDGE_MODEL and isinstance(self.judge, RecordedJudge):
                ident, verdict = self._verdict(prompt)
                answer = json.dumps(verdict)
                usage: dict[str, Any] | None = None
            else:
                record = self._record(model, prompt)
                ident, answer, usage = record.input, record.output, _usage(record)
                if record.latency_ms and self.latency_scale:
                    await asyncio.sleep(record.latency_ms / 1000 * self.latency_scale)
        except _NotFound as exc:
            return self._refused(path, model, 404, str(exc), exc.input)
        self.requests.append(ReplayRequest(path=path, model=model, input=ident, status=200))
        return httpx2.Response(200, json=_completion(model, ident, answer, usage))

    def _models(self) -> list[str]:
        return [*self.recording.models, *([JUDGE_MODEL] if isinstance(self.judge, RecordedJudge) else [])]

    def _refused(self, path: str, model: str | None, status: int, message: str, ident: str | None = None):
        self.requests.append(ReplayRequest(path=path, model=model, input=ident, status=status, message=message))
        body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "no_record"}}
        return httpx2.Response(status, json=body)

    def _record(self, model: str, prompt: str) -> Record:
        rec = self.recording
        if model not in rec.models:
            raise _NotFound(f"the replay has no model {model!r}: the recording's models are {', '.join(rec.models)}")
        if f'role="{Role.CANDIDATE}">' in prompt:
            raise _NotFound(f"a judge's prompt reached recorded model {model!r}: it holds outputs, not verdicts")
        ident = rec.find(prompt)
        if ident is None:
            raise _NotFound(
                f"no record of model {model!r} answers this prompt (no recorded input's): {_short(prompt)!r}"
            )
        record = rec.record(ident, model)
        if record is None:
            raise _NotFound(f"model {model!r} has no recorded output for input {ident!r}", ident)
        return record

    def _verdict(self, prompt: str) -> tuple[str, dict[str, Any]]:
        """The recorded verdict on the output the judge's prompt shows as the candidate's."""
        assert isinstance(self.judge, RecordedJudge)
        events = _candidate_events(prompt)
        ident = _input_id(prompt, events, self.recording)
        answers = [e.get("output") for e in events if e.get("kind") == "answer"]
        if not answers:
            raise _NotFound(f"the judged run on input {ident!r} has no answer: no recorded verdict judges it", ident)
        shown = answers[-1]
        models = [m for m in self.recording.models if self._shows(self.recording.record(ident, m), shown)]
        if not models:
            raise _NotFound(
                f"the output judged on input {ident!r} is no recorded output of that input "
                f"(it began {_short(str(shown))!r}): no recorded verdict judges it",
                ident,
            )
        found = [j for j in (self.judge.get(ident, m) for m in models) if j is not None]
        if not found:
            raise _NotFound(f"no recorded verdict on the output of model {models[0]!r} for input {ident!r}", ident)
        if len({(j.accuracy, j.work) for j in found}) > 1:
            raise _NotFound(
                f"the output judged on input {ident!r} is the recorded output of {', '.join(models)}, whose recorded "
                "scores differ: which one judges it cannot be told",
                ident,
            )
        return ident, found[0].verdict()  # one output, one score: the first model's reason says it

    def _shows(self, record: Record | None, shown: Any) -> bool:
        """Whether ``shown`` (a judged answer, as the judge's prompt shows it) is ``record``'s output."""
        if record is None:
            return False
        if not isinstance(shown, str):  # a job that answers JSON: the output parsed
            try:
                return json.loads(record.output) == shown
            except json.JSONDecodeError:
                return False
        if record.output == shown or normalised(record.output) == normalised(shown):
            return True
        redacted = _redacted(record.output, self._names)
        return redacted != record.output and normalised(redacted) == normalised(shown)


# ------------------------------------------------------------------------------------------------------- helpers


def _check_judged(recording: Recording, judge: RecordedJudge) -> None:
    for (ident, model), verdict in judge.records.items():
        if recording.record(ident, model) is None:
            raise TableError(
                f"{judge.source}: row {verdict.row} scores model {model!r} on input {ident!r}, "
                f"which {recording.source} holds no output of"
            )


def _digest(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:12]


def _has_tokens(usage: Mapping[str, Any] | None) -> bool:
    return usage is not None and ("prompt_tokens" in usage or "completion_tokens" in usage)


def _usage(record: Record) -> dict[str, Any] | None:
    """The usage a replayed answer reports: the recorded one, with the recorded cost as a provider's ``cost``; None
    when neither was recorded (never invented tokens)."""
    usage = dict(record.usage or {})
    if record.cost is not None:
        usage["cost"] = record.cost
    return usage or None


def _completion(model: str, ident: str, content: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-replay-{_digest(model, ident)}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _card(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "gradebench-replay"}


def _last_user(messages: list[Any]) -> str:
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return content_text(users[-1].get("content")) if users else ""


def _candidate_events(prompt: str) -> list[dict[str, Any]]:
    bodies = [body for role, body in transcripts(prompt) if role == Role.CANDIDATE]
    if not bodies:
        raise _NotFound("the recorded judge was sent no judge's prompt (no candidate transcript in it)")
    events = []
    for line in bodies[-1].splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _input_id(prompt: str, events: list[dict[str, Any]], recording: Recording) -> str:
    """The judged run's input: its id in the prompt's ``<input>`` section, else found by its user message."""
    shown = section(prompt, "input")
    try:
        value = json.loads(shown) if shown is not None else None
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and value.get("id") is not None and text(value["id"]) in recording.input_ids:
        return text(value["id"])
    users = [str(e.get("content", "")) for e in events if e.get("kind") == "user"]
    found = recording.find(users[-1]) if users else None
    if found is None:
        raise _NotFound(
            "the judge's prompt names no recorded input (its <input> has no recorded id, and no user "
            "message of the candidate's is a recorded prompt)"
        )
    return found


def _redacted(output: str, names: Iterable[str]) -> str:
    """``output`` with the names the judge's prompt removes removed as it removes them (longest first, any case)."""
    lowered = output.lower()
    found = sorted({n for n in names if len(n) >= 3 and n.lower() in lowered}, key=len, reverse=True)
    if not found:
        return output
    return re.sub("|".join(re.escape(n) for n in found), "[redacted]", output, flags=re.IGNORECASE)


def _short(value: str) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"
