"""A run's tool calls compared with the reference's, in code: what it skipped, added, called differently or misread.

Comparison goes through `normalise`, a canonical form of a JSON value:

- a dict compares order-insensitively (keys as given, sorted); a list keeps its order; a tuple is a list;
- ``True``/``False`` stay booleans (``True`` is not ``1``); an int stays exact; a float that is a whole number is that
  int (``1.0 == 1``); any other float is rounded to 9 significant digits (``0.1 + 0.2 == 0.3``); NaN and infinities
  stay as they are;
- a string is stripped, its whitespace runs collapsed to one space and case-folded (``" A-1001" == "a-1001"``,
  ``"Electronics" == "electronics"``): the example tools read ids, categories and conditions case-blind, and a
  difference of case or spacing is not a different call. A numeric string stays a string (``"5" != 5``);
- a string that holds a JSON object or array (raw argument text) is parsed first; anything else is compared as its str.
Steps keep their values as the run sent and got them (parsed, keys sorted), so summaries quote them as they were.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .._base.canonical import canonical_json
from .._records.records import Call

__all__ = [
    "DECISION_FIELDS",
    "ToolDiff",
    "ToolStep",
    "compare",
    "diff_traces",
    "judge_note",
    "misread_fields",
    "normalise",
    "tool_trace",
]

DECISION_FIELDS = ("answer", "choice", "decision", "label", "order_id", "refund_amount")
"""Output fields that state a decision: a difference in one after the same tool evidence is a misread."""

MAX_TEXT = 200
"""Longest `ToolDiff.text`, in characters."""

_SCALAR_TEXT = 64  # a string longer than this is prose, not a value a tool result states
_WS = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class ToolStep:
    """One tool call of a run: the tool, the arguments sent and what came back."""

    name: str
    """The tool's function name."""
    arguments: Any
    """The arguments as sent: a dict (keys sorted), or the raw text when it is not JSON."""
    result: Any = None
    """What the tool returned (keys sorted), or None when it failed."""
    error: str | None = None
    """Why the tool call failed (bad arguments, unknown tool, the tool raised), or None."""


@dataclass(frozen=True, kw_only=True)
class ToolDiff:
    """A run's tool trace against the reference's, and the answer fields it misread."""

    missing: list[ToolStep] = field(default_factory=list)
    """Reference steps the run did not make (nor made with other arguments)."""
    extra: list[ToolStep] = field(default_factory=list)
    """Run steps the reference did not make (nor made with other arguments)."""
    arg_mismatch: list[tuple[ToolStep, ToolStep]] = field(default_factory=list)
    """(run step, reference step): the same tool called with different arguments, paired in order of appearance."""
    matched: list[tuple[ToolStep, ToolStep]] = field(default_factory=list)
    """(run step, reference step): the same tool called with the same arguments."""
    misread: list[str] = field(default_factory=list)
    """Output fields that contradict the tool results (see `misread_fields`); filled by `compare`."""

    @property
    def tool_missing(self) -> int:
        """How many reference tool calls the run skipped."""
        return len(self.missing)

    @property
    def tool_extra(self) -> int:
        """How many tool calls the run made that the reference did not."""
        return len(self.extra)

    @property
    def tool_arg_mismatch(self) -> int:
        """How many tool calls the run made with other arguments than the reference."""
        return len(self.arg_mismatch)

    @property
    def clean(self) -> bool:
        """True when nothing is missing, extra, called differently or misread."""
        return not (self.missing or self.extra or self.arg_mismatch or self.misread)

    @property
    def text(self) -> str:
        """A one-line summary, e.g. ``missing check_return_policy; lookup_order args differ (order_id: ...)``."""
        parts = []
        if self.missing:
            parts.append("missing " + _names(s.name for s in self.missing))
        if self.extra:
            parts.append("extra " + _names(s.name for s in self.extra))
        for run, ref in self.arg_mismatch:
            parts.append(f"{run.name} args differ ({_first_difference(run.arguments, ref.arguments)})")
        if not parts:
            parts.append("same tool calls as the reference")
        if self.misread:
            parts.append("misread " + ", ".join(self.misread))
        text, kept = "; ".join(parts), len(parts)
        while len(text) > MAX_TEXT and kept > 1:
            kept -= 1
            text = "; ".join(parts[:kept]) + f"; +{len(parts) - kept} more"
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


# ------------------------------------------------------------------------------------------------------ normalising


def normalise(value: Any) -> Any:
    """The canonical form of a JSON value for comparison (the rules are in the module docstring)."""
    parsed = _json_text(value) if isinstance(value, str) else _NOT_JSON
    return _canonical(value if parsed is _NOT_JSON else parsed)


def _canonical(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        rounded = float(f"{value:.9g}")
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, str):
        return _WS.sub(" ", value.strip()).casefold()
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return _canonical(str(value))


_NOT_JSON = object()


def _json_text(text: str) -> Any:
    """The JSON object or array a text holds, or ``_NOT_JSON``."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return _NOT_JSON
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        return _NOT_JSON


def _key(value: Any) -> str:
    """A hashable, order-insensitive key of a value's canonical form."""
    return canonical_json(normalise(value))


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted_keys(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------------------------ traces


def tool_trace(calls: Sequence[Call]) -> list[ToolStep]:
    """The tool calls of a run, in order (raw argument text that is JSON is parsed; absent arguments are ``{}``)."""
    steps = []
    for call in calls:
        for record in call.tool_results:
            arguments = record.get("arguments")
            if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
                arguments = {}
            elif isinstance(arguments, str) and (parsed := _json_text(arguments)) is not _NOT_JSON:
                arguments = parsed
            error = record.get("error")
            steps.append(
                ToolStep(
                    name=str(record.get("name") or ""),
                    arguments=_sorted_keys(arguments),
                    result=None if error is not None else _sorted_keys(record.get("result")),
                    error=None if error is None else str(error),
                )
            )
    return steps


def diff_traces(run: Sequence[ToolStep], reference: Sequence[ToolStep]) -> ToolDiff:
    """Align two traces: same (name, arguments) as a multiset, then same name in order, then what is left over."""
    run_left = list(run)
    matched, ref_left = [], []
    for ref in reference:
        at = next((i for i, s in enumerate(run_left) if _same_call(s, ref)), None)
        if at is None:
            ref_left.append(ref)
        else:
            matched.append((run_left.pop(at), ref))
    mismatched, extra = [], []
    for step in run_left:
        at = next((i for i, r in enumerate(ref_left) if r.name == step.name), None)
        if at is None:
            extra.append(step)
        else:
            mismatched.append((step, ref_left.pop(at)))
    return ToolDiff(missing=ref_left, extra=extra, arg_mismatch=mismatched, matched=matched)


def _same_call(a: ToolStep, b: ToolStep) -> bool:
    return a.name == b.name and _key(a.arguments) == _key(b.arguments)


def _names(names: Iterable[str]) -> str:
    counts = Counter(names)
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in counts.items())


def _first_difference(run: Any, reference: Any) -> str:
    """``key: run value vs reference value`` for the first (sorted) key that differs; whole values otherwise."""
    if isinstance(run, Mapping) and isinstance(reference, Mapping):
        for k in sorted(set(run) | set(reference), key=str):
            a, b = run.get(k, _ABSENT), reference.get(k, _ABSENT)
            if a is _ABSENT or b is _ABSENT or _key(a) != _key(b):
                return f"{k}: {_quote(a)} vs {_quote(b)}"
    return f"{_quote(run)} vs {_quote(reference)}"


_ABSENT = object()


def _quote(value: Any, limit: int = 32) -> str:
    text = "absent" if value is _ABSENT else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------- misreads


def misread_fields(
    output: Any,
    reference_output: Any,
    run_steps: Sequence[ToolStep],
    reference_steps: Sequence[ToolStep],
    *,
    fields: Sequence[str] = DECISION_FIELDS,
) -> list[str]:
    """Fields of the run's output that contradict the tool results it received. Two rules, both dict outputs only:

    1. Against the reference: the run made the same tool calls as the reference (the same multiset of name and
       arguments, at least one) and every pair got the same result or error, yet a field of ``fields`` that either
       output has differs (``normalise``) from the reference's. Different traces are a missing/extra/argument story,
       never a misread.
    2. Against its own tools: a top-level output key with a scalar value (bool, number, or a string of at most 64
       characters; not null) that a dict result of the run's own successful tool calls also holds as such a scalar,
       where no such result agrees with the output and the reference's output does not state the same value.
    3. Passed on wrongly: a scalar argument of a later tool call contradicts the same-named scalar of an earlier
       result of the run (the value was read wrongly and handed on), listed as ``"<key> (passed to <tool>)"``.

    Fields are listed once: rule 1 in ``fields`` order, then rule 2 in output order, then rule 3 in call order.
    """
    found: list[str] = []
    for i, step in enumerate(run_steps):
        if not isinstance(step.arguments, Mapping):
            continue
        for key, value in step.arguments.items():
            seen = [
                s.result[key] for s in run_steps[:i] if isinstance(s.result, Mapping) and _is_scalar(s.result.get(key))
            ]
            passed_on = f"{key} (passed to {step.name})"
            if seen and _is_scalar(value) and all(_key(v) != _key(value) for v in seen) and passed_on not in found:
                found.append(passed_on)
    if not isinstance(output, Mapping):
        return found
    passed = found
    found = []
    diff = diff_traces(run_steps, reference_steps)
    same_evidence = (
        diff.matched
        and not (diff.missing or diff.extra or diff.arg_mismatch)
        and all(_key(a.result) == _key(b.result) and a.error == b.error for a, b in diff.matched)
    )
    if same_evidence and isinstance(reference_output, Mapping):
        changed = [f for f in fields if _key(output.get(f)) != _key(reference_output.get(f))]
        found += [f for f in changed if f in output or f in reference_output]
    reference = reference_output if isinstance(reference_output, Mapping) else {}
    for name, value in output.items():
        if name in found or not _is_scalar(value):
            continue
        stated = [s.result[name] for s in run_steps if isinstance(s.result, Mapping) and _is_scalar(s.result.get(name))]
        if not stated or any(_key(v) == _key(value) for v in stated):
            continue
        if name in reference and _key(reference[name]) == _key(value):
            continue
        found.append(str(name))
    return found + passed


def _is_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= _SCALAR_TEXT
    return isinstance(value, bool | int | float)


def compare(
    run_calls: Sequence[Call], run_output: Any, reference_calls: Sequence[Call], reference_output: Any
) -> ToolDiff:
    """`diff_traces` of two runs' calls, with `misread_fields` of their outputs filled in."""
    run, reference = tool_trace(run_calls), tool_trace(reference_calls)
    diff = diff_traces(run, reference)
    return replace(diff, misread=misread_fields(run_output, reference_output, run, reference))


def judge_note(diff: ToolDiff) -> str:
    """One or two neutral sentences for the judge prompt: what the code found in the candidate's tool calls."""
    facts = []
    if diff.missing:
        facts.append(f"skipped {_names(s.name for s in diff.missing)}, which the reference called")
    if diff.extra:
        extra = "an extra call" if len(diff.extra) == 1 else "extra calls"
        facts.append(f"made {extra} to {_names(s.name for s in diff.extra)}, which the reference did not make")
    for run, ref in diff.arg_mismatch:
        differs = _first_difference(run.arguments, ref.arguments)
        facts.append(f"called {run.name} with other arguments than the reference ({differs})")
    if facts:
        note = "Checked in code: the candidate " + "; it ".join(facts) + "."
    else:
        note = "Checked in code: the candidate made the same tool calls as the reference, with the same arguments."
    if diff.misread:
        fields = " and ".join(", ".join(diff.misread).rsplit(", ", 1))
        verb = "does" if len(diff.misread) == 1 else "do"
        note += f" Its answer's {fields} {verb} not follow from the tool results it received (a misread)."
    return note
