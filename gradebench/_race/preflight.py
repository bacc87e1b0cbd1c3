"""The preflight check of a catalog: can each entry be called as a race will call it, and does the ceiling judge?

Per entry, in this order: is its key variable set; does its endpoint answer a one-line request for its model; does it
accept that request with the parameters a race sends (the entry's ``params`` and a ``max_tokens`` cap, through its
``rename_params`` and ``drop_params``); and, for the ceiling, does it give a valid verdict on a tiny probe through
the judge's own path (`ask_score`, the catalog's ``judge_params``, the JSON schema). Every request goes through
gradebench's own client and call path (a `Session` seat: admission, the SDK's retries, key scrubbing).

A 400 that names a parameter the request sent is answered with the catalog line that fixes it (``max_tokens`` →
``rename_params = { max_tokens = "max_completion_tokens" }`` when the endpoint asks for that name, anything else →
``drop_params``), and the request is tried again with the fix, so the row says whether the fix is enough and lists
every line it needs.

**No cache.** The check asks every time and stores nothing: an answer served from the cache would say an endpoint
answers when it no longer does, and a probe's answer must never be served to a race (its calls carry their own run
ids and the ``preflight`` benchmark label besides).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._base.errors import CallError, GradebenchError, ToolLoopError
from .._base.redact import scrub
from .._base.sync import run_sync
from .._base.vocab import Role
from .._calls.cache import Cached, CallCache
from .._calls.seat import JobLimits, Seat
from .._calls.session import Session
from .._catalog.catalog import Catalog, Entry
from .._judge.judge import prompt_cache_key
from .._judge.prompt import JudgePrompt, transcript_labels
from .._judge.scoring import ask_score
from .._records.keys import short_hash
from .._records.records import Call
from .checktable import CatalogCheck, EntryCheck

__all__ = ["CatalogCheck", "EntryCheck", "add_check_arguments", "check_catalog", "check_catalog_sync"]

PROBE: list[dict[str, str]] = [{"role": "user", "content": "Reply with the single word: ok"}]
"""The one-line request every entry is sent."""
PROBE_PARAMS: dict[str, Any] = {"max_tokens": 16}
"""What the probe sends over the entry's own ``params``: a length cap, as jobs send one (and cheap as a call gets)."""
CHECK_TIMEOUT_S = 60.0
"""At most this long for one probe call (an entry's ``timeout_s`` when shorter): a preflight must not hang."""
CHECK_RETRIES = 1
"""At most this many retries of a 5xx or a dropped connection (an entry's ``max_retries`` when fewer)."""
CHECK_RATE_WAIT_S = 30.0
"""At most this long waiting out 429s (an entry's ``rate_limit_wait_s`` when shorter)."""
MAX_FIXES = 3
"""Requests tried again with a fixed parameter before the check gives up on one probe."""
FULL_MARKS = 10.0
"""The score a judge gives a run identical to the reference: anything less is a finding (see `_short_of_full`)."""
BENCHMARK = "preflight"
"""The ``x-gradebench-benchmark`` label of the check's requests: no race has it."""

_HTTP = re.compile(r"HTTP (\d{3})")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


# --------------------------------------------------------------------------------------------------------- the check


class _NoCache(CallCache):
    """A cache that holds nothing: the check's calls are always sent, and never stored (see the module's note)."""

    def __init__(self) -> None:  # opens no folder
        self.directory = Path("<no cache>")
        self.read_only = True

    def get(self, key: str) -> Cached | None:
        return None

    def set(self, key: str, value: Cached) -> None:
        pass

    def flush(self) -> None:
        pass

    def __repr__(self) -> str:
        return "CallCache(none: the preflight check)"


@dataclass(frozen=True, kw_only=True, slots=True)
class _CheckKey:
    """A check call's seat key: the ``preflight`` benchmark, a run id of its own per entry and probe."""

    run_id: str
    role: Role
    benchmark_id: str = BENCHMARK
    sample: int = 0

    def salt(self) -> dict[str, Any]:
        return {"check": self.run_id}


async def check_catalog(catalog: Catalog, *, grades: Iterable[str] | None = None) -> CatalogCheck:
    """Check the entries of ``grades`` (all when None) and the ceiling, which judges every race; see the module."""
    wanted = None if grades is None else list(grades)
    for grade in wanted or ():
        catalog.of_grade(grade)  # an unknown grade raises here, naming it
    ceiling = catalog.ceiling()
    entries = [e for e in catalog.entries if wanted is None or e.grade in wanted or e.name == ceiling.name]
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with Session(catalog, _NoCache(), catalog.concurrency) as session:
        servers = await session.servers.read(entries)  # a local server's slots: the cap its race will keep to
        rows = await asyncio.gather(
            *(_Probe(session, e, catalog.judge_params if e.name == ceiling.name else None).checked() for e in entries)
        )
    costs: dict[str, float | None] = {}
    for row in rows:
        if row.calls:
            before = costs.get(row.currency, 0.0)
            costs[row.currency] = None if before is None or row.cost is None else before + row.cost
    # a file as the user named it (a resolved path can outrun the terminal); else what made the catalog
    source = (
        catalog.source if catalog.source and Path(catalog.source).is_file() else catalog.reference or catalog.source
    )
    return CatalogCheck(
        source=source,
        ceiling=ceiling.name,
        rows=tuple(rows),
        wall_s=loop.time() - started,
        costs=costs,
        servers=tuple(pace.text() for pace in servers),
    )


def check_catalog_sync(catalog: Catalog, *, grades: Iterable[str] | None = None) -> CatalogCheck:
    """`check_catalog` from plain code (a notebook cell too: see `gradebench._base.sync.run_sync`)."""
    return run_sync(lambda: check_catalog(catalog, grades=grades))


def _limited(entry: Entry) -> Entry:
    """The entry with the check's shorter limits (a preflight must not wait minutes on one endpoint)."""
    return dataclasses.replace(
        entry,
        timeout_s=min(entry.timeout_s, CHECK_TIMEOUT_S),
        max_retries=min(entry.max_retries, CHECK_RETRIES),
        rate_limit_wait_s=min(entry.rate_limit_wait_s, CHECK_RATE_WAIT_S),
    )


class _Probe:
    """The check of one entry: its probes in order, the fixes found on the way and every call made."""

    def __init__(self, session: Session, entry: Entry, judge_params: Mapping[str, Any] | None):
        self.session = session
        self.entry = entry
        self.judge_params = judge_params
        """The catalog's judge params when this entry is the ceiling (its verdict is probed), else None."""
        self.rename: dict[str, str] = {}
        self.drop: list[str] = []
        self.rejected: list[str] = []
        """The parameters 400s named, in the order met."""
        self.calls: list[Call] = []
        self.latency_s: float | None = None
        self.todo: list[str] = []

    def fixed(self, **changes: Any) -> Entry:
        """The entry as the check calls it: its limits shortened and the fixes found so far applied."""
        entry = dataclasses.replace(
            _limited(self.entry),
            rename_params={**self.entry.rename_params, **self.rename},
            drop_params=(*self.entry.drop_params, *self.drop),
        )
        return dataclasses.replace(entry, **changes) if changes else entry

    def seat(self, entry: Entry, probe: str, role: Role, limits: JobLimits | None = None) -> Seat:
        key = _CheckKey(run_id=short_hash(BENCHMARK, entry.name, probe), role=role)
        return self.session.seat(entry, key, limits)

    async def checked(self) -> EntryCheck:
        """The entry's row, whatever goes wrong on the way: one odd entry is its own row, never the whole check's
        end."""
        try:
            return await self.run()
        except GradebenchError as exc:
            said = _said(str(exc), self.entry.name)
            key = "set" if self.entry.api_key_env else "not needed"
            return self.row(key=key, answers="error", params="-", verdict="-", todo=[f"the check failed: {said}"])

    async def run(self) -> EntryCheck:
        entry = self.entry
        if (reason := entry.callable_reason()) is not None:
            return self.row(
                key="unset", answers="-", params="-", verdict="-", todo=[f"{reason}: set it and check again."]
            )
        answers, params = await self.answer()
        verdict = "-"
        if self.judge_params is not None:
            verdict = await self.verdict() if answers == "yes" else "not asked"
            if self.rejected and (params == "ok" or params.startswith("rejects ")):  # judge_params refused too
                params = "rejects " + ", ".join(self.rejected)
        return self.row(
            key="set" if entry.api_key_env else "not needed", answers=answers, params=params, verdict=verdict
        )

    def row(self, *, key: str, answers: str, params: str, verdict: str, todo: list[str] | None = None) -> EntryCheck:
        fixes = self.fix_lines()
        todo = [*(todo or []), *self.todo]
        if fixes:
            todo.insert(0, f"add to entry {self.entry.name!r}: {'  '.join(fixes)}")
        answered = [c for c in self.calls if c.answered]
        cost: float | None = 0.0
        for call in answered:
            cost = None if cost is None or call.cost is None else cost + call.cost
        return EntryCheck(
            entry=self.entry.name,
            key=key,
            answers=answers,
            params=params,
            verdict=verdict,
            latency_s=self.latency_s,
            cost=cost,
            currency=self.entry.currency,
            fixes=tuple(fixes),
            todo=tuple(scrub(t) for t in todo),
            calls=len(self.calls),
        )

    async def answer(self) -> tuple[str, str]:
        """``answers`` and ``params``: the one-line request with the entry's params, fixed and tried again on a 400
        that names one of them."""
        last = ""
        for _ in range(MAX_FIXES + 1):
            # one model call: an answer that is a tool call ends the probe at once, not after a job's max_steps
            seat = self.seat(self.fixed(), f"answer-{len(self.rejected)}", Role.CANDIDATE, JobLimits(max_steps=1))
            try:
                reply = await seat.chat(PROBE, **PROBE_PARAMS)
            except ToolLoopError:
                self.calls += seat.calls
                self.latency_s = seat.calls[-1].latency_s
                self.todo.append(
                    "it answered the one-line request with a tool call though no tool was offered: a job's plain "
                    "request gets no text from it either (check the endpoint's chat template or tool settings)"
                )
                return "tool call", "rejects " + ", ".join(self.rejected) if self.rejected else "ok"
            except CallError as exc:
                self.calls += seat.calls
                last = _said(str(exc), self.entry.name)
                if self.learn(exc.status, str(exc), sent=seat.params_for(PROBE_PARAMS)):
                    continue
                return await self.failed(exc)
            self.calls += seat.calls
            self.latency_s = reply.calls[-1].latency_s
            return "yes", "rejects " + ", ".join(self.rejected) if self.rejected else "ok"
        self.todo.append(f"it still refuses the request after {MAX_FIXES} fixes: {last}")
        return "yes", "rejects " + ", ".join(self.rejected)

    async def failed(self, exc: CallError) -> tuple[str, str]:
        """What a probe that failed for good says: a 400 naming none of the params sent is tried once bare."""
        said = _said(str(exc), self.entry.name)
        if self.rejected:  # it answered before, with a parameter named: the rest of its trouble is the params'
            self.todo.append(f"with the fix it still fails: {said}")
            return "yes", "rejects " + ", ".join(self.rejected)
        if exc.status in (400, 422):
            bare = self.seat(self.fixed(params={}), "bare", Role.CANDIDATE)
            try:
                reply = await bare.chat(PROBE)
            except CallError:
                self.calls += bare.calls
            else:
                self.calls += bare.calls
                self.latency_s = reply.calls[-1].latency_s
                sent = ", ".join(sorted(self.fixed().params)) or "none"
                self.todo.append(
                    f"it answers a bare request but refuses the one with the entry's params ({sent}, and "
                    f"max_tokens): {said}"
                )
                return "yes", "rejected"
        answers, todo = _failure(self.entry, exc.status, said)
        self.todo.append(todo)
        return answers, "-"

    async def verdict(self) -> str:
        """The ceiling's verdict on the probe, through the judge's own path (fixed and asked again on a 400 that
        names a parameter it sent)."""
        assert self.judge_params is not None
        params = dict(self.judge_params)
        for _ in range(MAX_FIXES + 1):
            entry = self.fixed()
            seat = self.seat(entry, f"verdict-{len(self.rejected)}", Role.JUDGE, JobLimits(params=params, max_steps=1))
            cache_key = prompt_cache_key(BENCHMARK, entry.name) if entry.prompt_cache_key else None
            try:
                got = await ask_score(seat, _judge_probe(), params=params, prompt_cache_key=cache_key)
            except ToolLoopError:  # a race's verdicts would all fail alike
                self.calls += seat.calls
                self.todo.append("the judge answered the verdict probe with a tool call, not a verdict")
                return "invalid"
            self.calls += seat.calls
            if got.score is not None:
                if got.score < FULL_MARKS:
                    self.todo.append(_short_of_full(got.score))
                return f"{got.score:g}/10 {got.schema or ''}".rstrip()
            error = got.error or "no verdict"
            status = int(m.group(1)) if (m := _HTTP.search(error)) else None
            sent = seat.params_for({} if cache_key is None else {"prompt_cache_key": cache_key})
            if self.learn(status, error, sent=sent):
                continue
            self.todo.append(f"the judge gave no valid verdict on a tiny probe: {_said(error, entry.name)}")
            return "invalid"
        self.todo.append("the judge still refuses its params after the fixes above")
        return "invalid"

    def learn(self, status: int | None, message: str, *, sent: Mapping[str, Any]) -> bool:
        """Take the fix a 400 asks for when it names a parameter sent (True: try again with it)."""
        if status not in (400, 422):
            return False
        said = _said(message, self.entry.name)
        back = {new: old for old, new in {**self.entry.rename_params, **self.rename}.items()}
        learned = False
        for name in sent:
            if name in ("model", "messages") or not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", said):
                continue
            original = back.get(name, name)
            if original in self.drop or name in self.rejected:
                continue
            self.rejected.append(name)
            if original == "max_tokens" and name == "max_tokens" and "max_completion_tokens" in said:
                self.rename["max_tokens"] = "max_completion_tokens"
            else:
                self.rename.pop(original, None)
                self.drop.append(original)
            learned = True
        return learned

    def fix_lines(self) -> list[str]:
        """The catalog lines the fixes found make, each whole (what the entry had is kept in it)."""
        lines = []
        if self.rename:
            merged = {k: v for k, v in {**self.entry.rename_params, **self.rename}.items() if k not in self.drop}
            pairs = ", ".join(f"{_key(k)} = {json.dumps(v)}" for k, v in merged.items())
            lines.append(f"rename_params = {{ {pairs} }}")
        if self.drop:
            dropped = [*self.entry.drop_params, *(d for d in self.drop if d not in self.entry.drop_params)]
            lines.append(f"drop_params = [{', '.join(json.dumps(d) for d in dropped)}]")
        return lines


def _judge_probe() -> list[dict[str, str]]:
    """The judge's real prompt about two identical, correct runs of a one-line task."""
    question = "Is 7 a prime number?"
    answer = "Yes: 7 has no divisors other than 1 and itself."
    events = [{"kind": "user", "content": question}, {"kind": "assistant", "content": answer}]
    events.append({"kind": "answer", "output": answer})
    return JudgePrompt(
        instructions="Answer the question in one sentence.",
        input={"question": question},
        rubric="",
        reference=events,
        candidate=events,
        labels=transcript_labels(BENCHMARK),
    ).messages()


def _short_of_full(score: float) -> str:
    """What a judge that marks a run identical to the reference below full marks means for a race's verdicts."""
    if score <= 0:
        return (
            f"the judge gave {score:g}/10 to a run identical to the reference: it cannot tell a right answer from a "
            "wrong one, and its verdicts would mean nothing; use another ceiling"
        )
    return (
        f"the judge gave {score:g}/10 to a run identical to the reference, where a right answer gets "
        f"{FULL_MARKS:g}: it marks down answers it cannot fault, so it has {FULL_MARKS - score:g} points fewer to tell "
        f"right from wrong, every difference between entries reads smaller than it is, and a margin of 1 point "
        f"passes what a judge using the whole scale would read as {FULL_MARKS / score:.1f}; use another ceiling (or "
        "change its judge_params), or label runs to correct the verdicts"
    )


def _said(message: str, entry: str) -> str:
    """An error's text without the entry's name in front (the row names it)."""
    return message.removeprefix(f"{entry}: ")


def _failure(entry: Entry, status: int | None, said: str) -> tuple[str, str]:
    """``answers`` and what to do when the endpoint gave no completion."""
    if status in (401, 403):
        return f"HTTP {status}", f"the endpoint refuses the key in {entry.api_key_env}: check it ({said})"
    if status == 404:
        return "HTTP 404", (
            f"the endpoint does not serve model {entry.model!r} at {entry.base_url}: check the entry's model and "
            f"base_url ({said})"
        )
    if status == 429:
        return "HTTP 429", f"rate limited: try again later, or give the entry an rpm ({said})"
    if status is not None and status != 200:
        return f"HTTP {status}", said
    if status == 200:
        return "bad answer", f"the endpoint answered 200 but not with a completion: {said}"
    if "timed out" in said or "timeout_s" in said:
        return "timeout", f"no answer in time from {entry.base_url}: {said}"
    if "connection" in said:
        return "unreachable", f"nothing answers at {entry.base_url}: check base_url ({said})"
    return "no", said


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def add_check_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``gradebench check CATALOG [--grade G ...]``'s arguments."""
    parser.description = (
        "Preflight a catalog: per entry, is its key variable set, does its endpoint answer its model, does it accept "
        "the params a race sends (a 400 naming one suggests the catalog line that fixes it), and does the ceiling "
        "give a valid verdict on a tiny probe. One table; exit status 1 when any entry fails. Nothing is cached."
    )
    parser.add_argument("catalog", help="a catalog TOML file, 'sim', or module:function")
    parser.add_argument(
        "--grade", action="extend", nargs="+", metavar="G", help="check only these grades' entries (and the ceiling)"
    )
    return parser
