"""What one run is predicted to cost before it is made, its verdict included: the estimate sums these, and the
budget reserves them.

A prediction starts from the reference run of the input: a candidate run is taken to make the reference's calls with
the reference's tokens, priced at the candidate's own prices; its verdict reads a prompt of the judge's real layout
built from the reference (the candidate's transcript as long as the reference's) and answers with
`JUDGE_OUTPUT_TOKENS`; when the judge entry prices cached input, every verdict of an input after the first is served
from the provider's cache what its prompt shares with the earlier ones: for runs that make the reference's calls,
everything up to the first words the candidate's model wrote itself (`cacheable_prefix`). Tokens of text a provider
has not counted are characters / `CHARS_PER_TOKEN`. An entry with no price table, whose endpoint reports each call's
cost (`Entry.reports_cost`), is predicted to cost NaN: unknown until the endpoint reports it, which every sum carries
and `money` shows as ``unknown``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._base.canonical import canonical_json
from .._catalog.catalog import Entry
from .._judge.judge import JudgeSetup, judge_messages
from .._judge.prompt import transcript_events
from .._judge.scoring import RESPONSE_FORMAT
from .._judge.tooldiff import compare, judge_note
from .._records.records import Run

__all__ = [
    "CHARS_PER_TOKEN",
    "JUDGE_OUTPUT_TOKENS",
    "RunCost",
    "cacheable_prefix",
    "judge_prompt_tokens",
    "predicted_cost",
    "run_costs",
]

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


def predicted_cost(
    entry: Entry, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0, *, batch: bool = False
) -> float:
    """What a call of these tokens is predicted to cost at ``entry``'s prices (`Entry.cost`); NaN, unknown, for an
    entry whose endpoint reports the cost and that has no price table (it is known once the endpoint answers)."""
    if not entry.priced:
        return math.nan
    return entry.cost(input_tokens, output_tokens, cached_input_tokens, batch=batch)


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


_SCHEMA_CHARS = len(canonical_json(RESPONSE_FORMAT))


def _judge_chars(messages: Sequence[Mapping[str, Any]], schema: bool) -> int:
    """Characters of a judge request as a provider reads it: the JSON schema when it is sent (providers put it
    first, with the system prompt), then the messages (a few characters of framing each)."""
    chars = sum(len(str(m.get("content") or "")) + 4 for m in messages)
    return chars + (_SCHEMA_CHARS if schema else 0)


def judge_prompt_tokens(messages: Sequence[Mapping[str, Any]], setup: JudgeSetup) -> int:
    """The tokens a judge request of these messages is taken to read (its JSON schema included when it is sent)."""
    return _tokens(_judge_chars(messages, setup.entry.name not in setup.schema_rejected))


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
    prices cached input. A panel's verdicts are every judge's: their calls, tokens and costs summed.
    """
    if setup.panel:
        return _summed([run_costs(references, values, entries, setup.alone(judge)) for judge in setup.panel])
    judge = setup.entry
    batch = judge.name in setup.batches()  # verdicts through a Batch API: at its price
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
        first = sum(predicted_cost(judge, p, JUDGE_OUTPUT_TOKENS, batch=batch) for p in prompt)
        for entry in entries:
            out[(entry.name, input_id)] = RunCost(
                calls=len(answered),
                input_tokens=tin,
                output_tokens=tout,
                cost=predicted_cost(entry, tin, tout),
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
            judge_cost=sum(
                predicted_cost(judge, p, JUDGE_OUTPUT_TOKENS, c, batch=batch)
                for p, c in zip(prompt, cached, strict=True)
            ),
            latency_s=0.0,
        )
    return out


def _summed(per_judge: Sequence[Mapping[tuple[str, str], RunCost]]) -> dict[tuple[str, str], RunCost]:
    """Each run's cost with every judge's verdict: the run itself once, the judges' calls, tokens and costs added."""
    out = {}
    for key, one in per_judge[0].items():
        judged = [costs[key] for costs in per_judge]
        out[key] = replace(
            one,
            judge_calls=sum(c.judge_calls for c in judged),
            judge_input_tokens=sum(c.judge_input_tokens for c in judged),
            judge_cached_tokens=sum(c.judge_cached_tokens for c in judged),
            judge_output_tokens=sum(c.judge_output_tokens for c in judged),
            judge_cost=sum(c.judge_cost for c in judged),
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
