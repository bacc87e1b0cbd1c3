"""What differs between two races of one job, besides the models: the terms `gradebench.compare` says, never hides.

A score change between two races is the model's only when everything else held still. Each `Difference` names one
thing that did not — the job, its instructions, the reference, the judge (its entry, model, params, fixed prompt,
options), the rubric, the input set, the runs per input, an entry's catalog terms, a race stopped early — with how
much it weighs: ``refuse`` (nothing to pair: different jobs, no input in common), ``warn`` (a score change may be
this difference's, not the model's) or ``note`` (said, and the numbers still read as they are).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import polars as pl

from .._base.importing import reference_name
from .._base.vocab import Design, Role
from .._records.codec import dumps
from .._records.meta import ReportMeta
from .._report.report import BenchmarkReport
from .._stats.paired import plural

__all__ = [
    "JUDGE_KINDS",
    "NOTE",
    "REFUSE",
    "WARN",
    "Difference",
    "InputSet",
    "differences",
    "input_set",
]

REFUSE: Final = "refuse"
WARN: Final = "warn"
NOTE: Final = "note"
Weight = Literal["refuse", "warn", "note"]

JUDGE_KINDS = frozenset({"judge", "judge_model", "judge_params", "judge_prompt", "judge_options", "rubric"})
"""Differences in how runs were judged: with any of them, a score change may be the judge's."""

_SHOWN = 6  # input ids named in a sentence before "and N more"


@dataclass(frozen=True, kw_only=True)
class Difference:
    """One thing, other than the models, that differs between the two races."""

    kind: str
    """What differs: ``job``, ``instructions``, ``reference``, ``judge``, ``judge_model``, ``judge_params``,
    ``judge_prompt``, ``judge_options``, ``rubric``, ``inputs``, ``runs``, ``design``, ``grade``, ``scorer``,
    ``entry_model``, ``entry_params``, ``entry_prices``, ``entry_terms``, ``stopped``, ``cache``, ``version``,
    ``order``."""
    weight: Weight
    """``refuse`` (no comparison), ``warn`` (a score change may be this one's) or ``note`` (said only)."""
    entry: str | None
    """The entry it concerns, or None for the whole race."""
    before: str
    """Its value in the before race, as text."""
    after: str
    """Its value in the after race, as text."""
    sentence: str
    """What it means for the comparison, in one sentence."""
    cause: str = ""
    """What it could explain a score change by, as a clause of an entry's sentence ("" when nothing)."""


@dataclass(frozen=True, kw_only=True)
class InputSet:
    """The inputs two races share: the ones compared, and those left out on each side."""

    common: list[str]
    """Ids raced in both with the same content, sorted."""
    only_before: list[str]
    """Ids raced only before."""
    only_after: list[str]
    """Ids raced only after."""
    changed: list[str]
    """Ids raced in both whose content differs: not the same input, so left out."""


def input_set(before: BenchmarkReport, after: BenchmarkReport) -> InputSet:
    """The inputs of two reports by id (from their meta; from their runs when a meta lists none)."""
    b, a = _inputs(before), _inputs(after)
    both = sorted(set(b) & set(a))
    changed = [i for i in both if b[i] is not None and a[i] is not None and dumps(b[i]) != dumps(a[i])]
    return InputSet(
        common=[i for i in both if i not in changed],
        only_before=sorted(set(b) - set(a)),
        only_after=sorted(set(a) - set(b)),
        changed=changed,
    )


def _inputs(report: BenchmarkReport) -> dict[str, Any]:
    if report.meta.inputs:
        return dict(report.meta.inputs)
    return {str(i): None for i in report.runs["input_id"].unique().to_list()}


def differences(before: BenchmarkReport, after: BenchmarkReport, inputs: InputSet) -> list[Difference]:
    """Every difference found, refusals first, then warnings, then notes (each in the order checked)."""
    b, a = before.meta, after.meta
    found = [
        *_job(b, a),
        *_judge(before, after),
        *_inputs_said(inputs),
        *_design(b, a),
        *_entry_terms(before, after),
        *_stops(b, a),
    ]
    order = {REFUSE: 0, WARN: 1, NOTE: 2}
    return sorted(found, key=lambda d: order[d.weight])


def _differ(
    kind: str, weight: Weight, before: Any, after: Any, sentence: str, entry: str | None = None, cause: str = ""
) -> Difference:
    return Difference(
        kind=kind, weight=weight, entry=entry, before=_text(before), after=_text(after), sentence=sentence, cause=cause
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)


def _job(b: ReportMeta, a: ReportMeta) -> Iterable[Difference]:
    if reference_name(b.job) != reference_name(a.job):  # the folder a job was found in is where it ran, not what
        yield _differ(
            "job", REFUSE, b.job, a.job, f"the two reports are of different jobs ({b.job} before, {a.job} after)"
        )
        return
    if b.instructions != a.instructions:
        yield _differ(
            "instructions",
            WARN,
            b.instructions,
            a.instructions,
            "the job's instructions changed: the models did, and the judge read, another task, so a score change "
            "may be the task's",
            cause="the job's instructions changed",
        )
    if b.reference_entry != a.reference_entry:
        yield _differ(
            "reference",
            WARN,
            b.reference_entry,
            a.reference_entry,
            f"the reference changed ({b.reference_entry} before, {a.reference_entry} after): every score is "
            "measured against its transcript, so every score may move with it",
            cause=f"the reference changed ({b.reference_entry} \u2192 {a.reference_entry})",
        )
    if b.spec.grade != a.spec.grade:
        yield _differ(
            "grade", NOTE, b.spec.grade, a.spec.grade, f"grade {b.spec.grade} was raced before, {a.spec.grade} after"
        )
    if b.spec.scorer != a.spec.scorer:
        yield _differ(
            "scorer",
            NOTE,
            b.spec.scorer or "none",
            a.spec.scorer or "none",
            f"the scorer in code changed ({b.spec.scorer or 'none'} before, {a.spec.scorer or 'none'} after): "
            "it is not part of this comparison",
        )


# ------------------------------------------------------------------------------------------------------------ judge


def _judge(before: BenchmarkReport, after: BenchmarkReport) -> Iterable[Difference]:
    b, a = before.meta, after.meta
    if b.judge_entry != a.judge_entry:
        yield _differ(
            "judge",
            WARN,
            b.judge_entry,
            a.judge_entry,
            f"the judge changed ({b.judge_entry} before, {a.judge_entry} after): a score change may be the judge's",
            cause=f"the judge changed ({b.judge_entry} \u2192 {a.judge_entry}): the change may be the judge's",
        )
    else:
        models_b, models_a = judge_models(before), judge_models(after)
        terms_b, terms_a = _identity(b.entries.get(b.judge_entry)), _identity(a.entries.get(a.judge_entry))
        if models_b and models_a and models_b != models_a:
            yield _differ(
                "judge_model",
                WARN,
                ", ".join(models_b),
                ", ".join(models_a),
                f"the judge {b.judge_entry} is another model ({', '.join(models_b)} before, "
                f"{', '.join(models_a)} after): a score change may be the judge's",
                cause="the judge is another model: the change may be the judge's",
            )
        elif terms_b is not None and terms_a is not None and terms_b != terms_a:
            yield _differ(
                "judge_model",
                WARN,
                terms_b,
                terms_a,
                f"the judge {b.judge_entry} is reached another way ({_changes(terms_b, terms_a)}): a score change "
                "may be the judge's",
                cause="the judge is reached another way: the change may be the judge's",
            )
    if b.judge_params != a.judge_params:
        yield _differ(
            "judge_params",
            WARN,
            b.judge_params,
            a.judge_params,
            f"the judge's params changed ({_changes(b.judge_params, a.judge_params)}): a score change may be the "
            "judge's",
            cause="the judge's params changed: the change may be the judge's",
        )
    prompt_b, prompt_a = judge_prompt_prints(before), judge_prompt_prints(after)
    if prompt_b and prompt_a and prompt_b != prompt_a:
        versions = f"gradebench {b.gradebench_version or '?'} before, {a.gradebench_version or '?'} after"
        yield _differ(
            "judge_prompt",
            WARN,
            ", ".join(sorted(prompt_b)),
            ", ".join(sorted(prompt_a)),
            f"the judge's fixed prompt differs ({versions}): a score change may be the prompt's",
            cause="the judge's prompt changed: the change may be the prompt's",
        )
    elif b.gradebench_version != a.gradebench_version:
        yield _differ(
            "version",
            NOTE,
            b.gradebench_version,
            a.gradebench_version,
            f"measured by gradebench {b.gradebench_version or '?'} before and {a.gradebench_version or '?'} after "
            "(the judge's fixed prompt is the same)"
            if prompt_b and prompt_a
            else f"measured by gradebench {b.gradebench_version or '?'} before and {a.gradebench_version or '?'} after",
        )
    if (b.spec.rubric or "") != (a.spec.rubric or ""):
        yield _differ(
            "rubric",
            WARN,
            b.spec.rubric or "",
            a.spec.rubric or "",
            "the rubric changed: the judge scored against other words, so a score change may be the rubric's",
            cause="the rubric changed: the change may be the rubric's",
        )
    options = [
        f"{name} {'on' if getattr(b.spec, name) else 'off'} before, {'on' if getattr(a.spec, name) else 'off'} after"
        for name in ("judge_swap", "judge_reasoning")
        if getattr(b.spec, name) != getattr(a.spec, name)
    ]
    if options:
        yield _differ(
            "judge_options",
            WARN,
            {n: getattr(b.spec, n) for n in ("judge_swap", "judge_reasoning")},
            {n: getattr(a.spec, n) for n in ("judge_swap", "judge_reasoning")},
            f"the judge was asked otherwise ({'; '.join(options)}): a score change may be the judging's",
            cause=f"the judge was asked otherwise ({'; '.join(options)})",
        )


def _judge_requests(report: BenchmarkReport, limit: int = 50) -> list[dict[str, Any]]:
    """The bodies of the first judge requests of a report (enough to see its model and fixed prompt)."""
    judged = (c for r in report.to_runs() if r.verdict is not None for c in r.verdict.calls)
    return [call.request for call in itertools.islice(judged, limit)]


def judge_models(report: BenchmarkReport) -> list[str]:
    """The model ids the judge's requests named (usually one), sorted."""
    return sorted({str(body.get("model")) for body in _judge_requests(report) if body.get("model")})


def judge_prompt_prints(report: BenchmarkReport) -> set[str]:
    """Short fingerprints of the judge's fixed prompt (system message, the fixed rubric, the answer schema) as its
    requests carried it: what changes when gradebench's judge prompt does, and not with the job's own rubric."""
    prints = set()
    for body in _judge_requests(report):
        messages = body.get("messages") or []
        system = "".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        user = "".join(str(m.get("content")) for m in messages if m.get("role") == "user")
        fixed = _fixed_rubric(user)
        material = dumps({"system": system, "rubric": fixed, "format": body.get("response_format")})
        prints.add(hashlib.sha256(material.encode()).hexdigest()[:12])
    return prints


def _fixed_rubric(user: str) -> str:
    """The fixed part of the ``<rubric>`` section: up to the job's own rubric (the first section: the one the
    prompt opens with, never one inside a transcript)."""
    start = user.find("<rubric>\n")
    if start < 0:
        return ""
    body = user[start + len("<rubric>\n") :]
    ends = [i for i in (body.find("\n\nFor this task specifically:"), body.find("\n</rubric>")) if i >= 0]
    return body[: min(ends)] if ends else body


# ----------------------------------------------------------------------------------------------- inputs and design


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _inputs_said(inputs: InputSet) -> Iterable[Difference]:
    if not inputs.common:
        yield _differ(
            "inputs",
            REFUSE,
            inputs.only_before + inputs.changed,
            inputs.only_after + inputs.changed,
            "the two races have no input in common"
            + (
                f" ({plural(len(inputs.changed), 'input')} share an id but not their content)" if inputs.changed else ""
            ),
        )
        return
    left = [
        f"{plural(len(ids), 'input')} only {side} ({_ids(ids)})"
        for ids, side in ((inputs.only_before, "before"), (inputs.only_after, "after"))
        if ids
    ]
    if inputs.changed:
        left.append(
            f"{plural(len(inputs.changed), 'input')} that share an id but not their content ({_ids(inputs.changed)})"
        )
    if left:
        yield _differ(
            "inputs",
            NOTE,
            inputs.only_before,
            inputs.only_after,
            f"compared on the {plural(len(inputs.common), 'input')} both raced; left out: {'; '.join(left)}",
        )


def _design(b: ReportMeta, a: ReportMeta) -> Iterable[Difference]:
    if b.spec.runs != a.spec.runs:
        yield _differ(
            "runs",
            NOTE,
            str(b.spec.runs),
            str(a.spec.runs),
            f"runs per input and entry: {b.spec.runs} before, {a.spec.runs} after (each input's runs are averaged "
            "first, so the comparison stays paired by input)",
        )
    auto = [side for side, meta in (("before", b), ("after", a)) if meta.spec.design.to_verdict]
    if auto:
        yield _differ(
            "design",
            NOTE,
            b.spec.design.value,
            a.spec.design.value,
            f"the {' and the '.join(auto)} race raced to a verdict: entries got different numbers of runs, and "
            "each input's runs are averaged as they landed",
        )


def _stops(b: ReportMeta, a: ReportMeta) -> Iterable[Difference]:
    for side, meta in (("before", b), ("after", a)):
        if meta.stopped is not None:
            where = (
                "each entry is compared on the inputs where all its runs landed in both races"
                if meta.spec.design is Design.FIXED
                else "its entries are compared on the runs that landed"
            )
            yield _differ(
                "stopped",
                NOTE,
                str(b.stopped or ""),
                str(a.stopped or ""),
                f"the {side} race stopped early ({meta.stopped.value}): {where}",
            )


# ------------------------------------------------------------------------------------------------ catalog entries

_IDENTITY = ("model", "base_url", "routing")
_PARAMS = ("params", "rename_params", "drop_params")
_PRICES = ("price_in", "price_out", "price_cached_in", "currency", "price_source")


def _identity(terms: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if terms is None else {k: terms.get(k) for k in _IDENTITY}


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``key a → b`` for every key whose value differs, ``;``-joined."""
    keys = list(dict.fromkeys([*before, *after]))
    parts = [
        f"{k} {_text(before.get(k, '(unset)'))} \u2192 {_text(after.get(k, '(unset)'))}"
        for k in keys
        if before.get(k) != after.get(k)
    ]
    return "; ".join(parts)


def _models_raced(report: BenchmarkReport) -> dict[str, list[str]]:
    candidates = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    return {e: sorted(set(m)) for e, m in candidates.group_by("entry").agg("model").iter_rows()}


def _entry_terms(before: BenchmarkReport, after: BenchmarkReport) -> Iterable[Difference]:
    models_b, models_a = _models_raced(before), _models_raced(after)
    common = [e for e in models_b if e in models_a]
    for entry in common:
        if models_b[entry] != models_a[entry]:
            yield _differ(
                "entry_model",
                WARN,
                ", ".join(models_b[entry]),
                ", ".join(models_a[entry]),
                f"{entry} is another model in the after catalog ({', '.join(models_b[entry])} before, "
                f"{', '.join(models_a[entry])} after): its change is the catalog's",
                entry,
                cause=f"the catalog names another model ({', '.join(models_b[entry])} \u2192 "
                f"{', '.join(models_a[entry])})",
            )
    terms_b, terms_a = before.meta.entries, after.meta.entries
    if not terms_b or not terms_a:
        sides = " and ".join(s for s, t in (("before", terms_b), ("after", terms_a)) if not t)
        yield _differ(
            "entry_terms",
            NOTE,
            "recorded" if terms_b else "not recorded",
            "recorded" if terms_a else "not recorded",
            f"the {sides} report does not record its entries' catalog terms (written by an earlier gradebench): "
            "prices, endpoints and params are not compared, so a cost change may be a price change",
        )
        return
    for entry in common:
        b, a = terms_b.get(entry), terms_a.get(entry)
        if b is None or a is None:
            continue
        identity = {k: b.get(k) for k in _IDENTITY}, {k: a.get(k) for k in _IDENTITY}
        if identity[0] != identity[1] and models_b[entry] == models_a[entry]:
            yield _differ(
                "entry_model",
                WARN,
                identity[0],
                identity[1],
                f"{entry} is reached another way in the after catalog ({_changes(*identity)}): its change may be that",
                entry,
                cause=f"the catalog reaches it another way ({_changes(*identity)})",
            )
        params = {k: b.get(k) for k in _PARAMS}, {k: a.get(k) for k in _PARAMS}
        if params[0] != params[1]:
            yield _differ(
                "entry_params",
                WARN,
                params[0],
                params[1],
                f"{entry} was sent other params ({_changes(*params)}): its change may be the params'",
                entry,
                cause=f"it was sent other params ({_changes(*params)})",
            )
        prices = {k: b.get(k) for k in _PRICES}, {k: a.get(k) for k in _PRICES}
        if prices[0] != prices[1]:
            yield _differ(
                "entry_prices",
                NOTE,
                prices[0],
                prices[1],
                f"{entry}'s prices changed ({_changes(*prices)}): its cost change is partly the catalog's",
                entry,
            )
