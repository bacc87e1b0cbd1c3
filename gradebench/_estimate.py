"""What a race will cost before it runs: calls, tokens and money (the candidates and the judge apart) and wall time.

The estimate starts from the reference runs, which the race needs first anyway: each candidate run is predicted to
make the reference's calls with the reference's tokens, priced at the candidate's own prices; each verdict reads a
prompt of the judge's real layout built from the reference (the candidate's transcript taken as long as the
reference's), answered with `JUDGE_OUTPUT_TOKENS`; when the judge entry prices cached input, every verdict of an
input after the first is served from the provider's cache what its prompt shares with the earlier ones: for runs
that make the reference's calls, everything up to the first words the candidate's model wrote itself
(`cacheable_prefix`). Tokens of text a provider has not counted are characters / `CHARS_PER_TOKEN`. A run already in the
cache costs nothing: the estimate replays every planned run against the cache alone (nothing is sent) and counts the
ones that come back whole, verdict included. Wall time assumes every entry answers as fast as the reference did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ._catalog import Entry
from ._judge import RESPONSE_FORMAT, JudgeSetup, judge_messages
from ._present import plural
from ._prompt import transcript_events
from ._records import Run
from ._tooldiff import compare, judge_note

__all__ = ["CHARS_PER_TOKEN", "JUDGE_OUTPUT_TOKENS", "EntryEstimate", "Estimate", "RunCost", "estimate", "run_costs"]

CHARS_PER_TOKEN = 4
"""Characters a token, for text whose tokens no provider has counted yet (English prose and JSON run near 4)."""
JUDGE_OUTPUT_TOKENS = 50
"""Tokens of a verdict: the JSON object (about 15 tokens) with a reason of one to two sentences (the prompt asks for
one to three). How long a judge's reasons run is the estimate's least certain figure: the sim judge's average 25 to
40 tokens a verdict on the order agent and 80 to 150 on the selecting agent, where it quotes differing answers whole."""
CACHED_FROM_TOKENS = 1024
CACHED_STEP_TOKENS = 128
"""A provider caches a repeated prompt prefix of at least 1024 tokens, in 128-token steps (OpenAI's rule)."""


@dataclass(frozen=True, kw_only=True)
class RunCost:
    """What one run of an entry on one input is predicted to cost, verdict included."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    judge_calls: int
    judge_input_tokens: int
    judge_cached_tokens: int
    judge_output_tokens: int
    judge_cost: float
    latency_s: float
    """The model calls' latency (the reference's)."""

    @property
    def total(self) -> float:
        return self.cost + self.judge_cost


@dataclass(frozen=True, kw_only=True)
class EntryEstimate:
    """One entry's share of the race."""

    entry: str
    """The entry."""
    runs: int
    """Candidate runs planned."""
    cached_runs: int
    """Of those, runs the cache holds whole, verdict included: free."""
    calls: int
    """Model calls to be made (cached runs make none)."""
    input_tokens: int
    """Their input tokens."""
    output_tokens: int
    """Their output tokens."""
    cost: float
    """What the runs will cost."""
    judge_calls: int
    """Judge calls to be made for them."""
    judge_input_tokens: int
    """The judge's input tokens (cached ones included)."""
    judge_cached_tokens: int
    """Of those, tokens the judge's provider is expected to serve from its prompt cache."""
    judge_output_tokens: int
    """The judge's output tokens."""
    judge_cost: float
    """What judging the runs will cost."""
    wall_s: float
    """How long the entry's runs take on their own, at the entry's concurrency."""


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """The predicted race: per entry, and the totals. ``str(estimate)`` is a small table."""

    entries: tuple[EntryEstimate, ...]
    """One per candidate entry, in race order."""
    currency: str
    """Currency of every cost."""
    judge_entry: str
    """The entry that judges."""
    wall_s: float
    """Wall time of the race (the references aside), at the global and per-entry limits."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What the estimate assumes."""

    @property
    def runs(self) -> int:
        return sum(e.runs for e in self.entries)

    @property
    def cached_runs(self) -> int:
        return sum(e.cached_runs for e in self.entries)

    @property
    def calls(self) -> int:
        return sum(e.calls for e in self.entries)

    @property
    def judge_calls(self) -> int:
        return sum(e.judge_calls for e in self.entries)

    @property
    def candidates_cost(self) -> float:
        """What the candidate runs will cost."""
        return sum(e.cost for e in self.entries)

    @property
    def judge_cost(self) -> float:
        """What judging them will cost."""
        return sum(e.judge_cost for e in self.entries)

    @property
    def cost(self) -> float:
        """Everything the race will spend now: the runs and the judge."""
        return self.candidates_cost + self.judge_cost

    def frame(self) -> pl.DataFrame:
        """The per-entry figures as a frame."""
        rows = [{f: getattr(e, f) for f in EntryEstimate.__dataclass_fields__} for e in self.entries]
        return pl.DataFrame(rows, schema=_SCHEMA)

    def line(self) -> str:
        """One line: the spend and the time."""
        cached = f", {self.cached_runs} of them cached" if self.cached_runs else ""
        return (
            f"estimate: {plural(self.runs, 'run')}{cached} · {plural(self.calls, 'call')} + "
            f"{plural(self.judge_calls, 'judge call')} · {self.cost:.6f} {self.currency} (runs "
            f"{self.candidates_cost:.6f} + judge {self.judge_cost:.6f}) · about {_duration(self.wall_s)}"
        )

    def __str__(self) -> str:
        width = max([len("entry"), *(len(e.entry) for e in self.entries)])
        lines = [self.line(), f"{'entry':<{width}} {'runs':>5} {'cached':>6} {'calls':>6} {'cost':>12} {'judge':>12}"]
        for e in self.entries:
            lines.append(
                f"{e.entry:<{width}} {e.runs:>5} {e.cached_runs:>6} {e.calls:>6} {e.cost:>12.6f} {e.judge_cost:>12.6f}"
            )
        lines.extend(f"  {note}" for note in self.notes)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{self}</pre>"


_SCHEMA = {
    "entry": pl.String(),
    "runs": pl.Int64(),
    "cached_runs": pl.Int64(),
    "calls": pl.Int64(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cost": pl.Float64(),
    "judge_calls": pl.Int64(),
    "judge_input_tokens": pl.Int64(),
    "judge_cached_tokens": pl.Int64(),
    "judge_output_tokens": pl.Int64(),
    "judge_cost": pl.Float64(),
    "wall_s": pl.Float64(),
}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


_SCHEMA_CHARS = len(json.dumps(RESPONSE_FORMAT, sort_keys=True, separators=(",", ":")))


def _judge_chars(messages: Sequence[Mapping[str, Any]], schema: bool) -> int:
    """Characters of a judge request as a provider reads it: the JSON schema when it is sent (providers put it
    first, with the system prompt), then the messages (a few characters of framing each)."""
    chars = sum(len(str(m.get("content") or "")) + 4 for m in messages)
    return chars + (_SCHEMA_CHARS if schema else 0)


def _shared_prefix_chars(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> int:
    """Characters two judge requests share from their start (the system message and the user message's head)."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        tx, ty = str(x.get("content") or ""), str(y.get("content") or "")
        shared += 4  # the message's framing
        if tx == ty:
            shared += len(tx)
            continue
        n = 0
        for cx, cy in zip(tx, ty, strict=False):
            if cx != cy:
                break
            n += 1
        return shared + n
    return shared


def run_costs(
    references: Mapping[str, Run],
    values: Mapping[str, Any],
    entries: Sequence[Entry],
    setup: JudgeSetup,
) -> dict[tuple[str, str], RunCost]:
    """The predicted cost of one run of each entry on each input, verdict included: ``{(entry, input_id): RunCost}``.

    The first verdict of an input pays its whole prompt (``(entry, input_id)``); the ones after it (``("",
    input_id)``, every order of the label-bias check included) are served from the judge provider's cache the prefix
    they share with an earlier verdict of the input (`cacheable_prefix`), worth something only where the judge entry
    prices cached input.
    """
    judge = setup.entry
    schema = judge.name not in setup.schema_rejected
    orders = (False, True) if setup.swap else (False,)
    out: dict[tuple[str, str], RunCost] = {}
    for input_id, ref in references.items():
        value = values.get(input_id)
        facts = judge_note(compare(ref.calls, ref.output, ref.calls, ref.output))  # a candidate that did as the ref
        prompts = [judge_messages(ref, ref, value, setup, facts=facts, candidate_first=o) for o in orders]
        prompt = [_tokens(_judge_chars(p, schema)) for p in prompts]
        cached = [cacheable_prefix(ref, value, setup, facts, candidate_first=o, schema=schema) for o in orders]
        answered = [c for c in ref.calls if c.answered]
        tin = sum(c.input_tokens if c.input_tokens is not None else _tokens(len(c.request_json)) for c in answered)
        tout = sum(
            c.output_tokens if c.output_tokens is not None else _tokens(len(c.response_json or "")) for c in answered
        )
        latency = sum(c.latency_s for c in ref.calls)
        first = sum(judge.cost(p, JUDGE_OUTPUT_TOKENS) for p in prompt)
        for entry in entries:
            out[(entry.name, input_id)] = RunCost(
                calls=len(answered),
                input_tokens=tin,
                output_tokens=tout,
                cost=entry.cost(tin, tout),
                judge_calls=len(orders),
                judge_input_tokens=sum(prompt),
                judge_cached_tokens=0,
                judge_output_tokens=len(orders) * JUDGE_OUTPUT_TOKENS,
                judge_cost=first,
                latency_s=latency,
            )
        out[("", input_id)] = RunCost(  # a later verdict of this input: the cached prefixes priced as cached
            calls=0,
            input_tokens=0,
            output_tokens=0,
            cost=0.0,
            judge_calls=len(orders),
            judge_input_tokens=sum(prompt),
            judge_cached_tokens=sum(cached),
            judge_output_tokens=len(orders) * JUDGE_OUTPUT_TOKENS,
            judge_cost=sum(judge.cost(p, JUDGE_OUTPUT_TOKENS, c) for p, c in zip(prompt, cached, strict=True)),
            latency_s=0.0,
        )
    return out


def cacheable_prefix(
    reference: Run, value: Any, setup: JudgeSetup, facts: str, *, candidate_first: bool, schema: bool
) -> int:
    """Tokens of a later verdict's prompt that a provider serves from its cache, for a run like the reference.

    Runs of one input that make the reference's calls differ first where the model writes words of its own (a
    message, its reasoning, the answer): the judge's prompts about them are the same bytes up to there — the shared
    part (task, input, rubric, reference), the facts checked in code, and the candidate transcript's opening messages,
    tool calls and results. A later verdict is served that much (from ``CACHED_FROM_TOKENS``, in steps of
    ``CACHED_STEP_TOKENS``): an earlier verdict of the input laid it down.
    """
    events = transcript_events(reference.calls, reference.output, reference.error, reasoning=setup.reasoning)
    same = next((i for i, e in enumerate(events) if e["kind"] not in _NOT_WORDS), len(events))
    a, b = (
        judge_messages(
            reference,
            reference,
            value,
            setup,
            facts=facts,
            candidate_first=candidate_first,
            events=[*events[:same], {"kind": "assistant", "content": words}],
        )
        for words in ("A", "B")
    )
    prefix = _tokens(_shared_prefix_chars(a, b) + (_SCHEMA_CHARS if schema else 0))
    return (prefix // CACHED_STEP_TOKENS) * CACHED_STEP_TOKENS if prefix >= CACHED_FROM_TOKENS else 0


_NOT_WORDS = frozenset({"system", "user", "tool_call", "tool_result", "tool_error"})
"""Transcript events that runs making the same calls share: what the job sent, the calls, what the tools returned."""


def estimate(
    plan: Sequence[tuple[Entry, str]],
    cached: Sequence[bool],
    costs: Mapping[tuple[str, str], RunCost],
    *,
    setup: JudgeSetup,
    concurrency: int,
    currency: str,
) -> Estimate:
    """The estimate of a race: ``plan`` is every candidate run as (entry, input id), ``cached`` which of them the
    cache holds whole; ``costs`` from `run_costs`."""
    by_entry: dict[str, list[tuple[str, bool]]] = {}
    entries: dict[str, Entry] = {}
    for (entry, input_id), hit in zip(plan, cached, strict=True):
        by_entry.setdefault(entry.name, []).append((input_id, hit))
        entries[entry.name] = entry
    judged_inputs: set[str] = set()  # inputs whose first verdict (the one that fills the provider's cache) is counted
    made: list[EntryEstimate] = []
    call_seconds = 0.0
    slowest = 0.0
    for name, runs in by_entry.items():
        entry = entries[name]
        calls = tin = tout = jcalls = jin = jcached = jout = 0
        cost = jcost = seconds = 0.0
        for input_id, hit in runs:
            if hit:
                continue
            one = costs[(name, input_id)]
            calls, tin, tout = calls + one.calls, tin + one.input_tokens, tout + one.output_tokens
            cost += one.cost
            seconds += one.latency_s
            later = costs[("", input_id)]
            jcalls += one.judge_calls
            jin += one.judge_input_tokens
            if input_id in judged_inputs:  # the prompt's prefix is in the provider's cache by now
                jcached += later.judge_cached_tokens
                jcost += later.judge_cost
            else:
                judged_inputs.add(input_id)
                jcost += one.judge_cost
            jout += one.judge_output_tokens
        limit = min(entry.max_concurrency or concurrency, concurrency)
        wall = seconds / limit
        if entry.rpm:
            wall = max(wall, calls / entry.rpm * 60)
        call_seconds += seconds
        slowest = max(slowest, wall)
        made.append(
            EntryEstimate(
                entry=name,
                runs=len(runs),
                cached_runs=sum(hit for _, hit in runs),
                calls=calls,
                input_tokens=tin,
                output_tokens=tout,
                cost=cost,
                judge_calls=jcalls,
                judge_input_tokens=jin,
                judge_cached_tokens=jcached,
                judge_output_tokens=jout,
                judge_cost=jcost,
                wall_s=wall,
            )
        )
    per_call = call_seconds / max(1, sum(e.calls for e in made))
    judge_seconds = sum(e.judge_calls for e in made) * per_call
    judge_limit = min(setup.entry.max_concurrency or concurrency, concurrency)
    wall = max(slowest, (call_seconds + judge_seconds) / concurrency, judge_seconds / judge_limit)
    notes = (
        "candidate runs are taken to make the reference's calls with its tokens; verdicts read a prompt as long as "
        f"the reference's and answer {JUDGE_OUTPUT_TOKENS} tokens",
        "wall time assumes every entry, the judge included, answers as fast as the reference did",
    )
    return Estimate(entries=tuple(made), currency=currency, judge_entry=setup.entry.name, wall_s=wall, notes=notes)
