"""The recommendation: the cheapest entry as good as the reference, in one sentence to paste into a review — and,
when none is, whether that is a finding (every cheaper entry settled) or a lack of evidence (what would settle them),
and why a race stopped early recommends nothing."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial

import polars as pl

from .._base.numbers import money
from .._base.vocab import Stopped, VerdictBasis
from .._records.meta import ReportMeta
from .._stats.paired import AS_GOOD, INCONCLUSIVE, MIN_INPUTS, number_text
from .controls import ControlOutcome
from .evidence import Outage
from .gold import DISAGREE, GoldCheck

__all__ = ["Recommendation", "recommend", "report_recommendation"]


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """The cheapest entry that is as good as the reference, with a sentence to paste into a review."""

    entry: str
    """The recommended entry (the reference entry itself when nothing cheaper is as good)."""
    reference: str
    """The reference entry."""
    sentence: str
    """One line a user can paste into a review."""
    cost_ratio: float | None
    """cost_per_run of ``entry`` over the reference's; None when the reference's cost is unknown or zero."""
    lower: float | None
    """The lower bound of ``entry``'s non-inferiority test (None for the fallback)."""
    n_pairs: int | None
    """Paired runs behind the verdict (None for the fallback)."""


def report_recommendation(
    models: pl.DataFrame,
    meta: ReportMeta,
    check: ControlOutcome,
    *,
    gold: GoldCheck | None = None,
    outages: Mapping[str, Outage] | None = None,
) -> Recommendation | None:
    """A report's recommendation from its models frame: `recommend`, unless the negative controls void the judge's
    verdicts (``check``) and no label-corrected verdict stands for it, when nothing is recommended and the sentence
    says what to do; None when no entry was tested against the reference. An entry as good by the judge alone is named,
    never recommended (`_judge_alone`)."""
    if not models.height:
        return None
    pick = _chosen(models, meta, check)
    return pick if pick is None else _with_gold(_with_unmeasured(pick, models, outages or {}), models, gold)


def _chosen(models: pl.DataFrame, meta: ReportMeta, check: ControlOutcome) -> Recommendation | None:
    """`report_recommendation` before the entries without a verdict are named."""
    tested = models.filter(pl.col("verdict").is_not_null())
    lifted = tested.height > 0 and (tested["verdict_basis"] == VerdictBasis.LABEL_CORRECTED).all()
    if check.void and not lifted:  # a judge the controls fooled recommends nothing, unless labels stand for it
        ref = meta.reference_entry
        sentence = check.recommendation(meta.job or "?")
        return Recommendation(entry=ref, reference=ref, sentence=sentence, cost_ratio=None, lower=None, n_pairs=None)
    currency = models["currency"].drop_nulls()
    pick = partial(
        recommend,
        job=meta.job or "?",
        reference_entry=meta.reference_entry,
        margin=meta.spec.margin,
        currency=currency[0] if currency.len() else "",
    )
    return _judge_alone(models, pick, check) or pick(models)


def _judge_alone(
    models: pl.DataFrame, pick: Callable[[pl.DataFrame], Recommendation | None], check: ControlOutcome
) -> Recommendation | None:
    """When the entry `recommend` would pick is ``as good`` by the judge alone (`ControlOutcome.unconfirmed`: nothing
    the controls show confirms it): no finding from it. The entry is named as good by the judge alone, unconfirmed,
    with what would confirm it; a label-corrected ``as good`` still recommends. None when the pick stands."""
    note = check.unconfirmed()
    first = pick(models)
    if first is None or first.entry == first.reference or "verdict_basis" not in models.columns:
        return None
    alone = (pl.col("verdict") == AS_GOOD) & (pl.col("verdict_basis") == VerdictBasis.JUDGE_ONLY.value)
    if not models.filter(alone & (pl.col("entry") == first.entry)).height:
        return None
    unconfirmed = f"{first.entry} is as good {note}"
    confirmed = pick(models.filter(~alone | (pl.col("entry") == first.reference)))
    if confirmed is not None and confirmed.entry != confirmed.reference:
        return replace(confirmed, sentence=f"{confirmed.sentence}; cheaper, {unconfirmed}")
    return Recommendation(
        entry=first.reference,
        reference=first.reference,
        sentence=f"not a finding: {first.sentence}, {note}",
        cost_ratio=None,
        lower=None,
        n_pairs=None,
    )


def recommend(
    models_with_verdicts: pl.DataFrame, *, job: str, reference_entry: str, margin: float, currency: str | None
) -> Recommendation | None:
    """The cheapest entry (by ``cost_per_run``; ties in frame order) whose verdict is ``as good``.

    ``models_with_verdicts`` needs ``entry, cost_per_run, verdict, lower, n_pairs`` (the models frame joined with
    `verdicts`). When the reference entry is in the frame, only entries strictly cheaper than it count, and if none is
    as good the reference itself is returned ("no cheaper entry is as good as …"). None when nothing qualifies. The
    cost ratio has 2 decimals (2 significant digits when it would round to 0.00); without a reference cost the
    sentence gives the cost per run in ``currency`` instead. An entry with no ok run (``ok_rate`` 0) is never
    recommended. When an entry's ``stopped`` says the race was cut short before its runs landed (cancelled, or the
    budget ran out), the recommendation is withheld: the reference is returned with a sentence saying why and how to
    finish.
    """
    missing = [
        c for c in ("entry", "cost_per_run", "verdict", "lower", "n_pairs") if c not in models_with_verdicts.columns
    ]
    if missing:
        raise ValueError(f"models_with_verdicts lacks columns {missing}")
    ref_rows = models_with_verdicts.filter(pl.col("entry") == reference_entry)
    ref_cost = ref_rows["cost_per_run"][0] if ref_rows.height else None
    fallback = partial(Recommendation, entry=reference_entry, reference=reference_entry, lower=None, n_pairs=None)
    if (withheld := _withheld(models_with_verdicts)) is not None:
        return fallback(sentence=withheld, cost_ratio=None)
    answered = pl.col("ok_rate") > 0 if "ok_rate" in models_with_verdicts.columns else pl.lit(True)
    as_good = models_with_verdicts.filter(
        (pl.col("verdict") == AS_GOOD) & (pl.col("entry") != reference_entry) & answered
    )
    unknown = as_good.filter(pl.col("cost_per_run").is_null())["entry"].to_list()
    unknown_note = f"; as good, cost unknown: {', '.join(unknown)}" if unknown else ""
    if ref_rows.height and ref_cost is None:
        # Unknown is not cheap: nothing is ranked against a reference whose cost is unknown.
        names = as_good["entry"].to_list()
        sentence = (
            f"cost unknown for {reference_entry} (no usage reported, or no run of it succeeded): no entry is ranked "
            "cheaper than it "
            f"on {job} (margin {number_text(margin)})" + (f"; as good: {', '.join(names)}" if names else "")
        )
        return fallback(sentence=sentence, cost_ratio=None)
    good = as_good.filter(pl.col("cost_per_run").is_not_null())
    if ref_cost is not None:
        good = good.filter(pl.col("cost_per_run") < ref_cost)
    if not good.height:
        if not ref_rows.height:
            return None
        sentence = (
            f"no cheaper entry is as good as {reference_entry} on {job} (margin {number_text(margin)}){unknown_note}"
        )
        if (unsettled := _unsettled(models_with_verdicts, reference_entry, ref_cost)) is not None:
            sentence = f"not settled yet: {sentence}: {unsettled}"
        return fallback(sentence=sentence, cost_ratio=1.0 if ref_cost else None)
    best = good.sort("cost_per_run", maintain_order=True).select("entry", "cost_per_run", "n_pairs", "lower")
    entry, best_cost, n_pairs, lower = best.row(0)
    ratio = best_cost / ref_cost if ref_cost else None
    if ratio is None:
        cost = f"at {money(best_cost)} {currency or ''}".rstrip() + " per run"
    else:
        cost = f"at {f'{ratio:.2f}' if round(ratio, 2) else f'{ratio:.2g}'}\u00d7 the cost"
    runs_text = f"{n_pairs} paired run{'' if n_pairs == 1 else 's'}{_basis(models_with_verdicts, entry)}"
    bound = "" if lower is None else f", lower bound {number_text(lower, 2)}"  # as the verdict lines show it
    sentence = (
        f"{entry} is as good as {reference_entry} on {job} (margin {number_text(margin)}, {runs_text}{bound}) {cost}"
        f"{unknown_note}"
    )
    return Recommendation(
        entry=entry,
        reference=reference_entry,
        sentence=sentence,
        cost_ratio=ratio,
        lower=lower,
        n_pairs=n_pairs,
    )


def _unsettled(models: pl.DataFrame, reference_entry: str, ref_cost: float | None) -> str | None:
    """Which cheaper entries are still inconclusive, and what would settle them: "no cheaper entry is as good" is
    then a lack of evidence, not a finding. None when every cheaper entry is settled."""
    if not {"n_inputs", "more_runs"} <= set(models.columns):
        return None
    cheaper = pl.col("cost_per_run").is_null() | (pl.col("cost_per_run") < ref_cost) if ref_cost else pl.lit(True)
    answered = pl.col("ok_rate") > 0 if "ok_rate" in models.columns else pl.lit(True)
    held = pl.col("verdict_held").fill_null(False) if "verdict_held" in models.columns else pl.lit(False)
    inconclusive = (pl.col("verdict") == INCONCLUSIVE) & (pl.col("entry") != reference_entry)
    open_ = models.filter(inconclusive & cheaper & answered)
    if not open_.height:
        return None
    # A held verdict is open whatever more runs show (e.g. the judge gave every run one score): say why, never
    # leave it out, or "no cheaper entry is as good" would read as a finding.
    held_open = open_.filter(held)
    waiting = open_.filter(~held)
    parts = []
    if waiting.height:
        names = waiting["entry"].to_list()
        few = waiting.filter(pl.col("n_inputs").fill_null(0) < MIN_INPUTS)
        if few.height:
            have = max(int(n) for n in few["n_inputs"].fill_null(0).to_list())
            need = f"a verdict needs at least {MIN_INPUTS} inputs, it has {have}"
        elif more := [int(n) for n in waiting["more_runs"].drop_nulls().to_list()]:
            need = f"about {min(more)} more paired runs would likely settle the nearest"
        elif labels := [int(n) for n in waiting.get_column("more_labels", default=pl.Series([])).drop_nulls()]:
            need = f"about {min(labels)} more labels would likely settle the nearest"
        elif "verdict_basis" in waiting.columns and (waiting["verdict_basis"] == VerdictBasis.LABEL_CORRECTED).all():
            them = "it" if len(names) == 1 else "them"
            need = f"even labelling every run would likely not settle {them}: more runs would"
        else:
            need = "they sit on the margin: only very many more runs would settle them"
        parts.append(f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} inconclusive; {need}")
    if held_open.height:
        names = held_open["entry"].to_list()
        reason = (held_open["verdict_reason"][0] or "") if "verdict_reason" in held_open.columns else ""
        because = f": {reason.split(': ')[0]}" if reason else ""
        parts.append(f"more runs would not settle {', '.join(names)}{because}")
    return "; ".join(parts)


def _basis(models: pl.DataFrame, entry: str) -> str:
    """``, label-corrected`` or ``, judge-only`` when some verdict of the report is label-corrected; '' otherwise."""
    if "verdict_basis" not in models.columns or VerdictBasis.LABEL_CORRECTED not in models["verdict_basis"].to_list():
        return ""
    return f", {models.filter(pl.col('entry') == entry)['verdict_basis'][0]}"


CUT_SHORT = (Stopped.CANCELLED.value, Stopped.BUDGET.value)
"""How an entry's ``stopped`` starts when the race ended before its runs landed (``settled`` and ``max_runs`` are a
race to a verdict ending as planned)."""


def _withheld(models: pl.DataFrame) -> str | None:
    """Why nothing is recommended from a race cut short before its runs landed, and how to finish; else None."""
    stops = models.select("entry", "stopped").rows() if "stopped" in models.columns else []
    short = [(e, str(why)) for e, why in stops if why is not None and str(why).split(":", 1)[0] in CUT_SHORT]
    if not short:
        return None
    finish = (
        "raise the budget and run it again" if any(w.startswith(Stopped.BUDGET) for _, w in short) else "run it again"
    )
    return (
        f"withheld: the race stopped before every run landed (on {', '.join(e for e, _ in short)}), and the runs "
        "still out are often failures being retried, so its verdicts rest only on what was complete before the stop; "
        f"{finish} to finish: it resumes from the cache"
    )


def _with_unmeasured(pick: Recommendation, models: pl.DataFrame, outages: Mapping[str, Outage]) -> Recommendation:
    """The recommendation naming the entries it could not weigh (their endpoint failed most of their runs: neither
    as good nor worse, an outage being no finding about the model), and the runs the recommended entry's endpoint
    failed: left out of its verdict, they are still what a switch to it would meet."""
    notes = []
    if (lost := outages.get(pick.entry)) is not None and pick.entry != pick.reference:
        notes.append(f"but its endpoint failed {lost.failed} of {lost.runs} runs (left out of the verdict)")
    if "verdict_basis" in models.columns:
        unmeasured = models.filter(pl.col("verdict_basis") == VerdictBasis.UNMEASURED)["entry"].to_list()
        notes += [f"unmeasured (the endpoint failed, so not weighed): {', '.join(unmeasured)}"] if unmeasured else []
        notes += [f"its labels are {short}"] if (short := _few_labels(pick, models)) else []
    return replace(pick, sentence="; ".join([pick.sentence, *notes])) if notes else pick


_FEW_LABELS = re.compile(r"fewer than the \d+ a side the simulation supports[^:]*: [^:;(]*before acting")


def _few_labels(pick: Recommendation, models: pl.DataFrame) -> str | None:
    """What the recommended entry's label-corrected verdict says is missing before acting on it (fewer labels a side
    than the simulation supports), so the recommendation does not read as settled where its verdict does not."""
    if pick.entry == pick.reference or "verdict_reason" not in models.columns:
        return None
    row = models.filter((pl.col("entry") == pick.entry) & (pl.col("verdict_basis") == VerdictBasis.LABEL_CORRECTED))
    found = _FEW_LABELS.search(row["verdict_reason"][0] or "") if row.height else None
    return found.group(0) if found else None


def _with_gold(pick: Recommendation, models: pl.DataFrame, gold: GoldCheck | None) -> Recommendation:
    """The recommendation saying what the gold labels say against it: the entries whose judge's verdict they
    contradict (held open: nothing rests on the judge there), and a reference that is mostly wrong or answered every
    input alike (a candidate as good as it is no better)."""
    if gold is None:
        return pick
    reasons = models.select("entry", pl.col("verdict_reason").fill_null("")).rows()
    disputed = [entry for entry, reason in reasons if reason.startswith(DISAGREE)]
    notes = [f"{DISAGREE} on {', '.join(disputed)}: not recommended on the judge's word"] if disputed else []
    notes += [caveat] if (caveat := gold.caveat()) is not None else []
    return replace(pick, sentence="; ".join([pick.sentence, *notes])) if notes else pick
