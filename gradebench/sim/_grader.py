"""The sim judge: grades a candidate transcript against the reference from the blind judge prompt alone.

It reads exactly what a real judge reads (the last user message with ``<task>``, ``<input>``, ``<rubric>`` sections and
two ``<transcript label="..." role="reference|candidate">`` sections, tags on their own lines, one JSON event per line,
in either order) and scores by comparing tool calls and answers:

- accuracy starts at 7; every reference tool call the candidate did not make (skipped, or made with other arguments)
  costs 3, every call to a tool the reference never used costs 3; a different answer costs 4, or for two JSON objects
  ``max(3, round(7 × share of differing fields))`` (explanation-like fields ignored); a candidate error scores 0/0;
- work (0..3) compares the length of the candidate's explanation with the reference's: ≥60% → 3, ≥30% → 2, >0 → 1.

A judge profile's ``judge_noise`` moves accuracy a point now and then, its ``position_bias`` favours a candidate shown
first, and its ``verbosity_bias`` lets a long-winded candidate's wrong answer pass; `human` scores with none of them.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from typing import Any

from .._base.canonical import canonical_json
from .._base.protocol import section, transcripts
from .._base.vocab import Role
from ._perturb import EXPLANATION_KEYS, strip_wording

__all__ = [
    "LONG",
    "SimVerdict",
    "Transcript",
    "human",
    "is_judge_request",
    "judge",
    "long_winded",
    "parse_transcript",
    "render",
    "section",
]

LONG = 1.5
"""A candidate whose shown work is at least this many times the reference's is long-winded (`long_winded`)."""


@dataclass(frozen=True, kw_only=True)
class SimVerdict:
    """What the sim judge decided."""

    accuracy: int
    """0..7."""
    work: int
    """0..3."""
    reason: str
    """One or two sentences naming the differences found."""


@dataclass(frozen=True, kw_only=True)
class Transcript:
    """The events of one side of the judge prompt, sorted by kind."""

    calls: list[tuple[str, Any]]
    """Tool calls as (name, arguments)."""
    results: list[tuple[str, Any]]
    """Tool results and errors as (name, result or {"error": ...})."""
    prose: list[str]
    """Assistant message texts that are not JSON."""
    answer: Any
    """The final output, or None."""
    has_answer: bool
    """Whether an ``answer`` event was present."""
    error: str | None
    """The run's error, when it failed."""


def is_judge_request(text: str) -> bool:
    """Whether a user message is a judge prompt."""
    return f'role="{Role.REFERENCE}">' in text and f'role="{Role.CANDIDATE}">' in text


def _loads(value: Any) -> Any:
    """An output given as JSON text compares as the value it encodes."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def parse_transcript(body: str | None) -> Transcript:
    """Read one transcript section; lines that do not parse as JSON objects with a ``kind`` are ignored."""
    calls, results, prose = [], [], []
    answer, has_answer, error = None, False, None
    for line in (body or "").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("kind")
        if kind == "tool_call":
            calls.append((str(event.get("name")), _loads(event.get("arguments"))))
        elif kind == "tool_result":
            results.append((str(event.get("name")), event.get("result")))
        elif kind == "tool_error":
            results.append((str(event.get("name")), {"error": event.get("error")}))
        elif kind == "assistant" and isinstance(event.get("content"), str):
            text = event["content"].strip()
            try:
                json.loads(text)
            except json.JSONDecodeError:
                if text:
                    prose.append(text)
        elif kind == "answer":
            answer, has_answer = _loads(event.get("output")), True
        elif kind == "error":
            error = str(event.get("error") or "error")
    return Transcript(calls=calls, results=results, prose=prose, answer=answer, has_answer=has_answer, error=error)


def _norm(value: Any) -> str:
    if isinstance(value, str):
        return value.strip().casefold()
    return canonical_json(value)


def _explanation_chars(t: Transcript) -> int:
    answer = t.answer
    own = len(answer) if isinstance(answer, str) else _explained(answer)
    return own + sum(len(p) for p in t.prose)


def _explained(v: Any) -> int:
    """The characters of the explanation fields in a structured answer. (A module function: a nested one that calls
    itself is a reference cycle, left for the garbage collector after every grading.)"""
    if isinstance(v, dict):
        return sum(len(x) if k in EXPLANATION_KEYS and isinstance(x, str) else _explained(x) for k, x in v.items())
    if isinstance(v, list):
        return sum(_explained(x) for x in v)
    return 0


def _quote(value: Any) -> str:
    """A value as the reason quotes it: whole (a value cut short can hide the very difference it names)."""
    return value if isinstance(value, str) else canonical_json(value)


def _same_text(a: str, b: str) -> bool:
    """Plain-text answers agree when one is the other with sentences added or trailing words cut.

    Verbosity pads or trims free text; a changed word (a wrong letter, number or verdict) still breaks the match.
    """

    def norm(text: str) -> str:
        return " ".join(strip_wording(text).casefold().split()).rstrip(" .!?")

    a, b = norm(a), norm(b)
    short, long = sorted((a, b), key=len)
    return bool(short) and long.startswith(short) and (len(long) == len(short) or long[len(short)] in " .,;:!?")


def _compare_answers(ref: Any, cand: Any) -> tuple[int, str | None]:
    """The accuracy cost of the candidate's answer and a phrase naming the difference."""
    if _norm(ref) == _norm(cand):
        return 0, None
    if isinstance(ref, str) and isinstance(cand, str) and _same_text(ref, cand):
        return 0, None
    if isinstance(ref, dict) and isinstance(cand, dict):
        keys = sorted((set(ref) | set(cand)) - EXPLANATION_KEYS)
        wrong = [k for k in keys if _norm(ref.get(k)) != _norm(cand.get(k))]
        if not wrong:
            return 0, None
        cost = max(3, round(7 * len(wrong) / len(keys)))
        shown = ", ".join(f"{k} ({_quote(cand.get(k))} instead of {_quote(ref.get(k))})" for k in wrong[:3])
        more = f" and {len(wrong) - 3} more" if len(wrong) > 3 else ""
        return cost, f"its answer differs in {shown}{more}"
    return 4, f"its answer {_quote(canonical_json(cand))} differs from the reference's {_quote(canonical_json(ref))}"


def _score(ref: Transcript, cand: Transcript, *, swayed: bool = False) -> SimVerdict:
    if cand.error is not None:
        return SimVerdict(accuracy=0, work=0, reason=f"The candidate run failed ({_quote(cand.error)}).")
    accuracy, tool_notes = 7, []
    pool = [(name, canonical_json(args)) for name, args in cand.calls]
    for name, args in ref.calls:
        if (name, canonical_json(args)) in pool:
            pool.remove((name, canonical_json(args)))
            continue
        accuracy -= 3
        if any(n == name for n, _ in cand.calls):
            tool_notes.append(f"called {name} wrongly")
        else:
            tool_notes.append(f"skipped {name}")
    ref_names = {n for n, _ in ref.calls}
    for name, _ in cand.calls:
        if name not in ref_names:
            accuracy -= 3
            tool_notes.append(f"made an unneeded call to {name}")

    answer_note = None
    if not cand.has_answer:
        accuracy -= 4
        answer_note = "it gave no answer"
    else:
        cost, answer_note = _compare_answers(ref.answer, cand.answer)
        if swayed:  # talked out of it by a long explanation: the answer passes as right
            cost, answer_note = 0, None
        accuracy -= cost
        same_facts = not tool_notes and ref.results and canonical_json(ref.results) == canonical_json(cand.results)
        if answer_note and same_facts:
            answer_note += " although its tool results were the same as the reference's"

    ref_len, cand_len = _explanation_chars(ref), _explanation_chars(cand)
    if ref_len == 0:
        work = 3 if cand.has_answer else 0
    else:
        ratio = cand_len / ref_len
        work = 3 if ratio >= 0.6 else 2 if ratio >= 0.3 else 1 if cand_len > 0 else 0

    sentences = []
    if tool_notes:
        sentences.append("The candidate " + _join(tool_notes) + ".")
    if answer_note:
        if tool_notes:
            sentences.append(f"Also, {answer_note}.")
        elif ref.calls:
            sentences.append(f"The candidate made the same tool calls but {answer_note}.")
        else:  # "its answer ..." reads as "The candidate's answer ..."
            if answer_note.startswith("its "):
                sentences.append("The candidate's " + answer_note.removeprefix("its ") + ".")
            else:
                sentences.append("The candidate " + answer_note.removeprefix("it ") + ".")
    if not sentences:
        sentences.append("The candidate matches the reference.")
    if work < 3 and not tool_notes and not answer_note:
        sentences.append("Its explanation is shorter than the reference's.")
    return SimVerdict(accuracy=max(0, min(7, accuracy)), work=work, reason=" ".join(sentences))


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def long_winded(ref: Transcript, cand: Transcript) -> bool:
    """Whether the candidate explains at length: at least `LONG` times the reference's shown work."""
    ref_len = _explanation_chars(ref)
    return ref_len > 0 and _explanation_chars(cand) >= LONG * ref_len


def judge(
    prompt: str,
    rng: random.Random,
    *,
    noise: float = 0.0,
    position_bias: float = 0.0,
    favours: tuple[str, int] | None = None,
    verbosity_bias: float = 0.0,
    skims: bool = False,
) -> SimVerdict:
    """Grade the candidate against the reference.

    With probability ``noise`` accuracy moves by one point; with probability ``position_bias`` a candidate shown first
    gains a point (the order effect the label-bias check measures). ``favours`` (a house style's signature, points):
    a candidate whose transcript carries the signature gains those points, as a judge favours its own family's
    answers (it recognises them by their style: nothing in the prompt names the model). With probability
    ``verbosity_bias`` a long-winded candidate's wrong answer passes as right (a judge swayed by verbosity). A judge
    that ``skims`` never reads the answers: it scores the tool calls alone and gives full marks for shown work (a weak
    judge, which negative controls catch). `human` grades the same prompt with none of these.
    """
    sections = transcripts(prompt)
    by_role = dict(sections)
    ref, cand = parse_transcript(by_role.get(Role.REFERENCE)), parse_transcript(by_role.get(Role.CANDIDATE))
    if skims and cand.error is None:
        unread = [dataclasses.replace(t, answer=None, has_answer=True, prose=[]) for t in (ref, cand)]
        skimmed = _score(*unread)
        verdict = SimVerdict(accuracy=skimmed.accuracy, work=3, reason=skimmed.reason)
    else:
        # drawn only for a swayable judge, so every other judge's draws (and verdicts) are as they were
        swayed = verbosity_bias > 0 and long_winded(ref, cand) and rng.random() < verbosity_bias
        verdict = _score(ref, cand, swayed=swayed)
    # A failed run scores 0 however the judge feels; noise and bias only blur the judgement of real answers.
    if cand.error is None:
        accuracy = verdict.accuracy
        if noise > 0 and rng.random() < noise:
            accuracy += rng.choice([-1, 1])
        if position_bias > 0 and sections and sections[0][0] == Role.CANDIDATE and rng.random() < position_bias:
            accuracy += 1
        if favours is not None and favours[0] in (by_role.get(Role.CANDIDATE) or ""):
            accuracy += favours[1]
        accuracy = max(0, min(7, accuracy))
        if accuracy != verdict.accuracy:
            verdict = SimVerdict(accuracy=accuracy, work=verdict.work, reason=verdict.reason)
    return verdict


def human(prompt: str) -> SimVerdict:
    """What a careful person scores the candidate in a judge prompt: the sim judge's rubric with no noise, no order
    effect and no verbosity bias (the sim's truth for `gradebench.sim.human_score`)."""
    by_role = dict(transcripts(prompt))
    return _score(parse_transcript(by_role.get(Role.REFERENCE)), parse_transcript(by_role.get(Role.CANDIDATE)))


def render(verdict: SimVerdict, *, as_json: bool) -> str:
    """The judge's reply: plain JSON under a schema, else prose with a fenced json block."""
    text = json.dumps({"accuracy": verdict.accuracy, "work": verdict.work, "reason": verdict.reason})
    if as_json:
        return text
    return f"I compared the candidate transcript with the reference. {verdict.reason}\n\n```json\n{text}\n```"
