"""What in a report deserves a look: failed or empty runs, truncation, judge trouble, suspicious verdicts, salting.

Kinds (one row each, ordered by kind then entry):

- ``failed``: a run that failed, with its error; ``empty_output``: an ok run that returned nothing;
- ``truncated``: a model call of the run stopped at the length limit (any call, with the count);
- ``refused``: a model refused in the run, or the provider's content filter stopped an answer (the refusal is in the
  transcript the judge reads);
- ``no_usage``: an entry's calls came back without token usage: their tokens and cost are unknown, not 0;
- ``usage_not_finite``: an entry's calls came back with NaN or Infinity in their usage (named, with the count): the
  answers are kept, their tokens and cost are unknown;
- ``price_mismatch``: the provider's reported cost differs from the entry's price table (a stale price);
- ``zero_score_nonempty``: the judge scored 0 a non-empty output (often an answer-extraction problem);
- ``judge_error``: no valid verdict; ``judge_fallback``: verdicts read from prose (one row per entry, with the count,
  saying whether the endpoint rejected the JSON schema or ignored it);
- ``verdict_inconsistent``: accuracy above 4 for a run that skipped or miscalled a tool the reference called;
- ``reference_disputed``: on one input, most candidate runs disagree with the reference: check the reference run;
- ``judge_family``: a judge shares its family with a candidate or the reference, or judges its own entry's runs:
  judges favour their own family's answers (Panickssery et al. 2024), so that entry's scores may be inflated; with a
  panel, how much more that judge gives the entry than a judge of another family does. An entry or judge whose family
  is unknown is never flagged (nothing is said that is not known);
- ``identical_outputs``: an entry whose repeats never differ on any input (fine for a deterministic job; collapsed
  salting when ``shared_generation`` fires too); ``shared_generation``: two runs were served one generation (the same
  response id and the same content: some servers reuse one id for different answers, which is not a shared one);
- ``batch_resent``: a judge that batches sent verdict requests alone, at the full price, because their batch did not
  run them (it expired, was cancelled, or failed them inside with a server error): one row per judge, with the count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import polars as pl

from .._base.numbers import money
from .._base.vocab import Role
from .._judge.agreement import JudgeAgreement
from .._records.meta import ReportMeta

__all__ = ["DIAGNOSTICS_SCHEMA", "GROUPED_SCHEMA", "JUDGE_FAMILY", "diagnose", "grouped", "judge_family"]

DIAGNOSTICS_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String(),
    "entry": pl.String(),
    "run_id": pl.String(),
    "detail": pl.String(),
}

DISPUTED_SHARE = 0.6
"""Share of an input's candidate runs scoring 4 accuracy or less that makes the reference run look like the odd one."""
DISPUTED_MIN_RUNS = 3
PRICE_TOLERANCE = 0.10
"""Relative difference between the provider's cost and the price table's past which ``price_mismatch`` fires."""


def _is_empty_output(text: str | None) -> bool:
    if text is None:
        return True
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return not text.strip()
    return value is None or value in ("", [], {}) or (isinstance(value, str) and not value.strip())


def _where(role: str, input_id: str, repeat: int) -> str:
    """Which run a run's row is about: how its detail begins (`grouped` reads it back)."""
    return f"{role} input {input_id} repeat {repeat}"


_WHERE = re.compile(r"(?P<where>\w+ input .*? repeat \d+): (?P<what>.*)", re.DOTALL)
"""A run's row's detail: which run (`_where`), then what of it."""

GROUPED_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String(),
    "entry": pl.String(),
    "rows": pl.Int64(),
    "detail": pl.String(),
    "runs": pl.String(),
}
"""`grouped`'s columns: rows saying the same thing of one entry's runs, once, with how many and which runs."""


def grouped(diagnostics: pl.DataFrame) -> pl.DataFrame:
    """The ``diagnostics`` rows that say the same thing (kind, entry and detail) of different runs as one row (in the
    order of their first), with how many (``rows``) and which runs (``runs``: ``candidate input q1 repeat 0; ...``):
    twenty runs that failed on one error are one row, not twenty."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for kind, entry, detail in diagnostics.select("kind", "entry", "detail").iter_rows():
        found = _WHERE.fullmatch(detail or "")
        where, what = (found["where"], found["what"]) if found else ("", detail or "")
        groups.setdefault((kind, entry, what), []).append(where)
    rows = [
        {"kind": k, "entry": e, "rows": len(ws), "detail": what, "runs": "; ".join(w for w in ws if w)}
        for (k, e, what), ws in groups.items()
    ]
    return pl.DataFrame(rows, schema=GROUPED_SCHEMA)


def diagnose(
    runs: pl.DataFrame, calls: pl.DataFrame, *, meta: ReportMeta | None = None, agreement: JudgeAgreement | None = None
) -> pl.DataFrame:
    """The diagnostics of a report's ``runs`` and its calls' facts (a frame of `CALL_FACTS_SCHEMA`: the calls
    without their bodies), and, with its ``meta``, the judges' families; with a panel's ``agreement``, what the other
    judges give the entries flagged."""
    found: list[dict[str, Any]] = []
    if meta is not None:
        found += judge_family(meta, agreement)
        found += _batch_resent(calls, meta)

    def flag(kind: str, row: Mapping[str, Any], detail: str, run_id: str | None = None) -> None:
        found.append({"kind": kind, "entry": row["entry"], "run_id": run_id or row.get("run_id"), "detail": detail})

    for r in runs.iter_rows(named=True):
        where = _where(r["role"], r["input_id"], r["repeat"])
        if not r["ok"]:
            flag("failed", r, f"{where}: {r['error'] or 'no error text'}")
        elif _is_empty_output(r["output"]):
            flag("empty_output", r, f"{where}: the job returned {r['output'] or 'nothing'}")
        if r["truncated"]:
            flag("truncated", r, f"{where}: {r['truncated']} of {r['calls']} model calls stopped at the length limit")
        if r["refused"]:
            who = "the provider's content filter stopped the answer" if r["finish_reason"] == "content_filter" else ""
            flag("refused", r, f"{where}: {who or 'the model refused'}; the judge reads the refusal")
        if r["score"] == 0 and not _is_empty_output(r["output"]):
            flag("zero_score_nonempty", r, f"{where}: judge scored 0 a non-empty output: {r['reason'] or ''}")
        if r["judge_error"] is not None:
            flag("judge_error", r, f"{where}: {r['judge_error']} (attempts: {r['judge_attempts']})")
        wrong_tools = (r["tool_missing"] or 0) + (r["tool_arg_mismatch"] or 0)
        if wrong_tools and r["accuracy"] is not None and r["accuracy"] > 4:
            flag("verdict_inconsistent", r, f"{where}: accuracy {r['accuracy']:g} > 4 despite {r['tool_diff']}")
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    fallback = (
        candidates.filter(pl.col("judge_path") == "fallback")
        .group_by("entry", maintain_order=True)
        .agg(pl.len(), (pl.col("judge_schema") == "rejected").sum().alias("rejected"))
    )
    for row in fallback.iter_rows(named=True):
        n, rejected = row["len"], row["rejected"]
        if rejected == n:
            how = "the judge's endpoint rejected the JSON schema (HTTP 400), so it was asked in prose"
        elif not rejected:
            how = "the judge ignored the JSON schema"
        else:
            how = f"the judge's endpoint rejected the JSON schema for {rejected} and ignored it for {n - rejected}"
        detail = f"{n} verdict{'s' * (n != 1)} read from prose: {how}"
        found.append({"kind": "judge_fallback", "entry": row["entry"], "run_id": None, "detail": detail})
    _usage(calls, found)
    _disputed(candidates, runs, found)
    _identical(candidates, found)
    _shared(runs, calls, found)
    return pl.DataFrame({k: [row.get(k) for row in found] for k in DIAGNOSTICS_SCHEMA}, schema=DIAGNOSTICS_SCHEMA).sort(
        "kind", "entry", maintain_order=True
    )


def _batch_resent(calls: pl.DataFrame, meta: ReportMeta) -> list[dict[str, Any]]:
    """Per judge that batches: its verdict requests made now at a price that is not the batch's (sent alone)."""
    batching = [j for j in meta.judges if meta.spec.judge_batch or meta.entries.get(j, {}).get("batch")]
    alone = calls.filter(
        (pl.col("role") == Role.JUDGE)
        & pl.col("entry").is_in(batching)
        & pl.col("answered")
        & ~pl.col("cache_hit")
        & ~pl.col("price_source").fill_null("").str.contains(" batch")
    )
    rows = []
    for row in alone.group_by("entry", maintain_order=True).len().iter_rows(named=True):
        n = row["len"]
        detail = (
            f"{n} verdict request{'s' * (n != 1)} sent alone at the full price: {'their' if n != 1 else 'its'} batch "
            "did not run them (expired, cancelled, or a server error inside it; the log says which)"
        )
        rows.append({"kind": "batch_resent", "entry": row["entry"], "run_id": None, "detail": detail})
    return rows


def _disputed(candidates: pl.DataFrame, runs: pl.DataFrame, found: list[dict[str, Any]]) -> None:
    """Inputs where most candidates disagree with the reference: the yardstick itself may have slipped."""
    judged = candidates.filter(pl.col("accuracy").is_not_null() & pl.col("ok"))
    by_input = judged.group_by("input_id", maintain_order=True).agg(
        pl.len().alias("n"), (pl.col("accuracy") <= 4).sum().alias("low")
    )
    references = dict(runs.filter(pl.col("role") == Role.REFERENCE).select("input_id", "run_id").iter_rows())
    for row in by_input.iter_rows(named=True):
        if row["n"] >= DISPUTED_MIN_RUNS and row["low"] / row["n"] >= DISPUTED_SHARE:
            detail = (
                f"input {row['input_id']}: {row['low']} of {row['n']} candidate runs score accuracy 4 or less "
                "against the reference: check the reference run"
            )
            reference = references.get(row["input_id"])
            found.append({"kind": "reference_disputed", "entry": "(reference)", "run_id": reference, "detail": detail})


def _identical(candidates: pl.DataFrame, found: list[dict[str, Any]]) -> None:
    """An entry whose repeats never differ on any input."""
    ok = candidates.filter(pl.col("ok"))
    for part in ok.partition_by("entry", maintain_order=True) if ok.height else []:
        groups = part.group_by("input_id").agg(pl.len().alias("n"), pl.col("output").n_unique().alias("distinct"))
        groups = groups.filter(pl.col("n") >= 2)
        if groups.height and (groups["distinct"] == 1).all():
            detail = (
                f"all {groups.height} inputs: every repeat gave the same output (fine for a deterministic job; "
                "collapsed salting if shared_generation fires too)"
            )
            found.append({"kind": "identical_outputs", "entry": part["entry"][0], "run_id": None, "detail": detail})


def _usage(calls: pl.DataFrame, found: list[dict[str, Any]]) -> None:
    """Per entry: calls without usage (unknown tokens and cost), and provider costs the price table disagrees with."""
    answered = calls.filter(pl.col("answered"))
    not_finite = answered.filter(pl.col("usage_not_finite").is_not_null())
    for row in (
        not_finite.group_by("entry", maintain_order=True)
        .agg(pl.len(), pl.col("usage_not_finite").unique(maintain_order=True))
        .iter_rows(named=True)
    ):
        n, fields = row["len"], "; ".join(row["usage_not_finite"])
        detail = (
            f"{n} call{'s' * (n != 1)} reported usage that is not a number ({fields}): the answers are kept, their "
            "tokens and cost are unknown (null), not 0; cost figures for this entry are unknown"
        )
        found.append({"kind": "usage_not_finite", "entry": row["entry"], "run_id": None, "detail": detail})
    answered = answered.filter(pl.col("usage_not_finite").is_null())  # said above, not again as no usage
    missing = answered.filter(pl.col("input_tokens").is_null() | pl.col("output_tokens").is_null())
    for row in missing.group_by("entry", maintain_order=True).len().iter_rows(named=True):
        n = row["len"]
        detail = (
            f"{n} call{'s' * (n != 1)} came back without token usage: their tokens and cost are unknown "
            "(null), not 0; cost figures for this entry are unknown"
        )
        found.append({"kind": "no_usage", "entry": row["entry"], "run_id": None, "detail": detail})
    priced = answered.filter((pl.col("cost_source") == "provider") & pl.col("price_table_cost").is_not_null())
    sums = priced.group_by("entry", maintain_order=True).agg(
        pl.len(), pl.col("cost").sum().alias("provider"), pl.col("price_table_cost").sum().alias("table")
    )
    for row in sums.iter_rows(named=True):
        provider, table = row["provider"], row["table"]
        if abs(provider - table) > PRICE_TOLERANCE * max(provider, table, 1e-12):
            off = f" ({(table / provider - 1) * 100:+.0f}%)" if provider else ""
            detail = (
                f"the provider reported {money(provider)} for {row['len']} calls; the entry's price table (its "
                f"catalog prices, or genai-prices' for an entry priced by its provider) gives {money(table)}{off}: is "
                "that price stale?"
            )
            found.append({"kind": "price_mismatch", "entry": row["entry"], "run_id": None, "detail": detail})


def _shared(runs: pl.DataFrame, calls: pl.DataFrame, found: list[dict[str, Any]]) -> None:
    """Two runs served the very same generation: the cache returned one answer for two samples."""
    keyed = calls.filter(pl.col("answer").is_not_null())  # a candidate's generation with an id
    keyed = keyed.join(runs.select("run_id", "input_id"), on="run_id")
    shared = keyed.group_by("entry", "input_id", "generation_id", "answer", maintain_order=True).agg(
        pl.col("run_id").unique(maintain_order=True)
    )
    for row in shared.filter(pl.col("run_id").list.len() > 1).iter_rows(named=True):
        detail = f"input {row['input_id']}: runs {', '.join(row['run_id'])} share generation {row['generation_id']}"
        found.append({"kind": "shared_generation", "entry": row["entry"], "run_id": None, "detail": detail})


JUDGE_FAMILY = "judges favour their own family's answers (Panickssery et al. 2024)"
"""Why a judge of an entry's family is flagged."""


def judge_family(meta: ReportMeta, agreement: JudgeAgreement | None = None) -> list[dict[str, Any]]:
    """A ``judge_family`` row for each judge and entry raced (the reference's included) of one family, and for a judge
    whose own entry is raced; with a panel, what each other judge of another family gives that entry beside."""
    families, found = meta.families, []
    reference = meta.reference_entry
    entries = list(dict.fromkeys([*([reference] if reference else []), *meta.candidates]))
    for judge in meta.judges:
        family = families.get(judge)
        for entry in entries:
            if entry == judge:
                why = f"the judge {judge} judges its own entry's runs: a model favours its own answers"
            elif family and families.get(entry) == family:
                why = f"the judge {judge} is of family {family}, as {entry} is: {JUDGE_FAMILY}"
            else:
                continue
            if entry == reference:
                why += f"; {entry} is the reference: its own runs may score high, and answers like it be favoured"
            else:
                why += f", so {entry}'s scores may be inflated"
            why += _measured(judge, entry, families, meta.judges, agreement)
            found.append({"kind": "judge_family", "entry": entry, "run_id": None, "detail": why})
    by_family: dict[str, list[str]] = {}
    for judge in meta.judges:
        if families.get(judge):
            by_family.setdefault(families[judge], []).append(judge)
    for family, judges in by_family.items():
        if len(judges) > 1:
            detail = (
                f"the judges {' and '.join(judges)} are all of family {family}: a panel of one family shares its "
                "bias, so their agreement says little of it; a judge of another family would measure it"
            )
            found.append({"kind": "judge_family", "entry": "(judges)", "run_id": None, "detail": detail})
    return found


def _measured(
    judge: str, entry: str, families: Mapping[str, str], judges: list[str], agreement: JudgeAgreement | None
) -> str:
    """What the panel's judges of other families (or of none known) give the flagged entry beside that judge, or how
    to find out."""
    own = families.get(judge)
    others = [j for j in judges if j not in (judge, entry) and (families.get(j) is None or families.get(j) != own)]
    if not others:
        return " (judge it with a second judge of another family too, judges=[...], to measure it)"
    said = []
    for pair in agreement.pairs if agreement is not None else ():
        other = pair.second if pair.first == judge else pair.first if pair.second == judge else None
        apart = [e for e in pair.by_entry if not own or families.get(e) != own]  # entries the judge has no stake in
        beyond = pair.difference_of(entry, apart) if other in others else None
        if other is None or beyond is None:
            continue
        more = beyond if pair.second == judge else -beyond  # the flagged judge's score minus the other's
        said.append(
            f"{judge} scores {entry}'s runs {_points(more)}, against {other}, than it scores other families' runs"
        )
    return ("; measured: " + "; ".join(said)) if said else ""


def _points(value: float) -> str:
    return f"{abs(value):.2f} {'higher' if value >= 0 else 'lower'}"
