"""Group-sequential verdicts: a race to a verdict that looks a few planned times, with alpha-spending boundaries.

A race (``runs="gsd"``) does not need a bound that holds at every wave: it looks a handful of times, at planned
numbers of paired units (`planned_looks`: every eighth of ``max_runs``). Looking K times at a fixed-sample test
would still buy K lottery tickets; a group-sequential boundary prices them instead. The chance α of a false claim is
spent over the looks — α(t) at information fraction t — so that the chance of crossing the boundary at *any* look is
α. The two claims spend differently, because they are not equally dangerous. ``as good`` (a false one swaps in a
worse model) uses Lan & DeMets's O'Brien–Fleming type, α(t) = 2(1 − Φ(z_{1−α/2}/√t)) (Lan & DeMets, "Discrete
sequential boundaries for clinical trials", Biometrika 70(3), 1983): almost nothing early, nearly all of α at the last
look, so the last look's boundary is only a few percent above a one-look test's (2.01 against 1.96 at four looks,
α = 0.025). ``worse`` (a false one costs a candidate) uses the Lan–DeMets Pocock type, α(t) = α·ln(1 + (e − 1)t),
spent evenly, so a clearly worse entry stops at the first look or the second. The boundaries come from the recursive
numerical integration of Armitage, McPherson & Rowe (Jennison & Turnbull, "Group Sequential Methods with Applications
to Clinical Trials", 2000, ch. 19): at look k, c_k solves P(Z_1 < c_1, …, Z_{k−1} < c_{k−1}, Z_k ≥ c_k) =
α(t_k) − α(t_{k−1}) with Corr(Z_j, Z_k) = √(t_j/t_k).

The statistic at a look is a t-statistic on per-input means: each input's paired differences so far (candidate −
reference entry on one unit, a failed run 0) are averaged, and Z = (D̄ + margin)/(s/√n) over the n inputs (each input
weighs the same, as in the fixed design). The normal boundary is carried over to the t-distribution at the same
nominal level, c_k → t_{n−1}^{-1}(Φ(c_k)) (Jennison & Turnbull §3.8). The lower and upper bounds a verdict reports
are the repeated confidence bounds D̄ − c·s/√n (the ``as good`` side's c) and D̄ + c'·s/√n (the ``worse`` side's),
built to hold at every look at once with probability 1 − α and 1 − α' each. ``as good`` when the lower one clears
−margin, ``worse`` when the upper one stays under it.

What the looks' timing rests on. Inputs are the unit of inference: the job's mean is the mean over its inputs, and
an input raced again adds its run noise's worth of information, never its between-input variance's. The estimate at
look k, D̄_k, averages each input's mean over every unit so far, so it contains all earlier looks' data: with σ_b² the
between-input and σ_w² the run variance, Cov(D̄_j, D̄_k) = (1/n²)·Σ_i (σ_b² + σ_w²/r_ik) = Var(D̄_k) for j < k (r_ik:
input i's repeats at look k; the first r_ij of them are look j's), exactly when each input's repeats are nested,
which the cycles make so. That is the canonical joint distribution, Corr(Z_j, Z_k) = √(I_j/I_k) with information
I_k = 1/Var(D̄_k). The boundaries are computed at the planned fractions t_k = units_k / max_units, fixed before any
score is seen; the true fractions I_k/I_K are at least those, because I = 1/(σ_b²/n + σ_w²/(n·r)) is concave in the
repeats r (front-loaded: a new input is worth at least a repeat; equal to the plan over the first pass, when every
unit is a new input). So every true correlation √(I_j/I_k) is at least the planned √(t_j/t_k), and by Slepian's
inequality the chance that Z stays under every planned boundary is at least the planned 1 − α: the crossing
probability is at most α. The t carried for the estimated s is an approximation on top; `benchmarks/design_validity.py`
measures the whole: jobs whose inputs differ (normal, skewed, bimodal, a failing candidate; between-input sd 0–2
points), 16 inputs drawn fresh for each race, ``max_runs`` 64 and 256 — false ``as good`` at the margin at most
4.7% (exact 95% bound 5.7%, a long left tail of inputs), 1.9–3.1% for normal spreads (docs/performance.md, seeds and
counts). What no design can see is an input it was not given: where 10% of inputs are much worse, 16 inputs miss
them all in 18.5% of races, and there it is 8.6% at 64 runs and 17.2% at 256.

An entry stopped before the last look — settled, futile, the budget, a cancel — only gives up chances to cross, so
every stop keeps the error at α: futility is non-binding, and an entry stopped by the budget keeps the verdict of
its last look (runs after it are never looked at).

Small samples. ``as good`` spends one-sided α = `ALPHA` = 0.025 (the level non-inferiority trials use, and the fixed
design's: it reads the two-sided 95% interval). Paired score differences have long left tails (a failed run scores
0, a skipped tool call costs 3 or more), and over 16 inputs a t-statistic is then too sure of ``as good``: a
one-look t-test at 5% read at each of four looks says ``as good`` for an entry that fails 13% of its runs and sits
exactly on the margin in 16% of races; this boundary at 2.5% says it in 3.7% (tests/stats/test_groupseq.py, 3000
races). So the repeated lower bound, built at 97.5%, holds at 95% or better for such tails. For the same reason no
``as good`` is claimed before half the planned units (`AS_GOOD_FROM`: every input's second run with the default
``max_runs``): what crosses early is mostly a sample that happens to hold none of the tail. The same tails make the
t-statistic shy of ``worse``, so that side spends `WORSE_ALPHA` = 0.05 from the first look (a false ``worse`` costs
a candidate, never a swap to a worse model); for symmetric differences its repeated upper bound, read at all eight
looks, misses 6.3% against its nominal 5% (the t-scale reading of eight Pocock bounds), and a false ``worse`` on the
margin stays at 5% (tests/stats/test_groupseq.py). A verdict needs `MIN_INPUTS` inputs, and differences that do not
vary give none (a t-statistic cannot weigh them). Differences with many ties — a 0/1 score, a judge that scores alike
answers alike — make s too small when a look holds few or no discordant pairs (with no loss drawn the lower bound
sits near or above 0, whatever the truth): the standard error each bound (and so each Z) uses is at least the
pseudo-pair one of `gradebench._stats.adjusted` (Bonett and Price's for 0/1 scores). On MMLU's recorded answers at
16 questions that is what keeps the repeated interval from ending at 0 short of the truth (`docs/truth.md`); on
smooth differences it costs a clearly worse entry its first look now and then (8 inputs: 731 of 1000 settle there,
848 without it; all by the second).

Futility. From the first look that may say ``as good`` until the one before the last, an entry stops when the
predictive power of either claim — the chance, under a flat prior on the effect and given the looks so far, that the
last look would cross — is below `FUTILITY` for both: Φ((Z_k − c_K√t_k)/√(1 − t_k)). It saves the runs an entry
sitting on the margin would spend for nothing. The designs behind these choices were replayed on stored scores
(`benchmarks/gsd_designs.py`) before `benchmarks/verdict_validity.py` raced them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from statistics import NormalDist
from typing import Final

import numpy as np

from .adjusted import pseudo_pair_se
from .paired import AS_GOOD, INCONCLUSIVE, MIN_INPUTS, WORSE, VerdictLabel, number_text
from .t import t_isf

__all__ = [
    "ALPHA",
    "AS_GOOD_FROM",
    "FUTILITY",
    "LOOKS",
    "LOOK_RULE",
    "WORSE_ALPHA",
    "LookRule",
    "LookVerdict",
    "efficacy_bounds",
    "first_look_from",
    "look_verdict",
    "planned_looks",
    "spent",
]

ALPHA: Final = 0.025
"""One-sided error rate of the ``as good`` claim, over all looks at once."""
WORSE_ALPHA: Final = 0.05
"""One-sided error rate of the ``worse`` claim, over all looks at once."""
LOOKS: Final = 8
"""Planned looks: at every eighth of ``max_runs``."""
AS_GOOD_FROM: Final = 0.5
"""The share of the planned units before which no ``as good`` is claimed (and no entry stopped as futile): with the
default ``max_runs`` every input has had its second run."""
FUTILITY: Final = 0.12
"""An entry stops at a look when neither claim has this predictive power at the last look."""

_NORMAL = NormalDist()
_STEP = 0.01  # grid step of the recursive integration (z scale): boundaries accurate to ~1e-3
_FLOOR = -8.0  # below this a path's density under the null is negligible (Φ(−8) ≈ 6e-16)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _sf(z: np.ndarray) -> np.ndarray:
    """1 − Φ(z), elementwise, to full precision in the tail."""
    return np.asarray(_erfc(np.asarray(z, dtype=float) / math.sqrt(2.0)), dtype=float) / 2.0


def spent(t: float, alpha: float = ALPHA, spending: str = "obf") -> float:
    """α spent by information fraction ``t``: 0 at 0, ``alpha`` at 1 and after. ``spending`` "obf": Lan–DeMets
    O'Brien–Fleming type, almost nothing early; "pocock": Lan–DeMets Pocock type, α·ln(1 + (e − 1)t), spent evenly."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if spending == "pocock":
        return alpha * math.log(1.0 + (math.e - 1.0) * t)
    if spending != "obf":
        raise ValueError(f"spending must be 'obf' or 'pocock', got {spending!r}")
    return 2.0 * float(_sf(np.array(_NORMAL.inv_cdf(1.0 - alpha / 2.0) / math.sqrt(t))))


def _check_fractions(fractions: Sequence[float], alpha: float) -> None:
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not fractions:
        raise ValueError("fractions must name at least one look")
    rising = all(a < b for a, b in zip(fractions, fractions[1:], strict=False))
    if not rising or any(not 0.0 < t <= 1.0 for t in fractions):
        raise ValueError(f"fractions must rise strictly within (0, 1], got {list(fractions)}")


@lru_cache(maxsize=256)
def efficacy_bounds(fractions: tuple[float, ...], alpha: float = ALPHA, spending: str = "obf") -> tuple[float, ...]:
    """The one-sided boundary (z scale) at looks taken at information ``fractions``: under the null, the chance that
    any look's Z reaches its boundary is ``alpha``, spent as `spent` says (module docstring)."""
    _check_fractions(fractions, alpha)
    first = spent(fractions[0], alpha, spending)
    c = -_NORMAL.inv_cdf(first) if first > 1e-300 else 40.0
    bounds = [c]
    grid = np.arange(_FLOOR, min(c, 12.0), _STEP)  # the paths still going after a look: Z on a grid, and
    density = np.exp(-(grid**2) / 2.0) / math.sqrt(2.0 * math.pi) * _STEP  # the chance of each cell
    for previous, t in zip(fractions, fractions[1:], strict=False):
        c = _next_bound(grid, density, previous, t, spent(t, alpha, spending) - spent(previous, alpha, spending))
        bounds.append(c)
        grid, density = _carry(grid, density, previous, t, c)
    return tuple(bounds)


def _next_bound(grid: np.ndarray, density: np.ndarray, previous: float, t: float, share: float) -> float:
    """The c at fraction ``t`` that the paths still going at ``previous`` cross with chance ``share`` (bisection:
    the chance falls as c rises). Z_t√t = Z_prev√prev + N(0, t − prev): independent increments."""
    if share <= 1e-300:
        return 40.0
    start, to, step = grid * math.sqrt(previous), math.sqrt(t), math.sqrt(t - previous)
    lo, hi = -10.0, 40.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if float(density @ _sf((mid * to - start) / step)) > share else (lo, mid)
    return hi


def _carry(grid: np.ndarray, density: np.ndarray, previous: float, t: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """The paths still going after the look at ``t`` (Z below ``c``): their grid and the chance of each cell."""
    start, to, step = grid * math.sqrt(previous), math.sqrt(t), math.sqrt(t - previous)
    nxt = np.arange(_FLOOR, min(c, 12.0), _STEP)
    kernel = np.exp(-(((nxt[:, None] * to - start[None, :]) / step) ** 2) / 2.0)
    return nxt, kernel @ density * (to / step) / math.sqrt(2.0 * math.pi) * _STEP


def planned_looks(max_units: int, looks: int = LOOKS) -> list[int]:
    """The paired units at which a race of at most ``max_units`` looks: every ``1/looks`` of it, rounded up."""
    if max_units < 1 or looks < 1:
        raise ValueError(f"need max_units >= 1 and looks >= 1, got {max_units} and {looks}")
    return sorted({math.ceil(k * max_units / looks) for k in range(1, looks + 1)})


@dataclass(frozen=True, kw_only=True)
class LookVerdict:
    """A non-inferiority verdict from a group-sequential race: the first look that settled it, or the last taken."""

    verdict: VerdictLabel
    """``as good``, ``worse`` or ``inconclusive``."""
    lower: float | None
    """Repeated lower confidence bound of the mean difference at the look (holds at every look at once, 1 − alpha)."""
    upper: float | None
    """Repeated upper confidence bound of the mean difference at the look (1 − worse_alpha)."""
    mean: float | None
    """Mean over inputs of each input's mean paired difference at the look; None before one."""
    n: int
    """Paired units the look read."""
    n_inputs: int
    """Inputs the look read."""
    look: int
    """The look the verdict rests on (1-based; 0: none taken yet)."""
    looks: int
    """Looks planned."""
    futile: bool
    """Stopped for futility at ``look``: neither claim could likely be made by the last look."""
    settled_at: int | None
    """For a settled verdict: the planned units of the look that settled it."""
    margin: float
    """How many points worse still counts as as good."""
    alpha: float
    """One-sided error rate of the ``as good`` claim over all looks."""
    worse_alpha: float
    """One-sided error rate of the ``worse`` claim over all looks."""
    reason: str
    """One sentence saying why."""


@dataclass(frozen=True, kw_only=True)
class LookRule:
    """How a group-sequential verdict is read at its looks: what each claim spends, from which look each may be made,
    and when an entry is futile (the race's own rule is `LOOK_RULE`)."""

    alpha: float = ALPHA
    """One-sided error rate of ``as good`` over all looks (O'Brien–Fleming spending)."""
    worse_alpha: float = WORSE_ALPHA
    """One-sided error rate of ``worse`` over all looks (Pocock spending)."""
    min_inputs: int = MIN_INPUTS
    """Fewest inputs a look must have read to settle anything."""
    futility: float = FUTILITY
    """An entry is futile at a look when neither claim has this predictive power at the last look (0: never)."""
    first_verdict_look: int | None = None
    """The first look (1-based) that may say ``as good`` or find an entry futile; None: the first at `AS_GOOD_FROM`
    of the planned units."""
    worse_first_look: int = 1
    """The first look that may say ``worse``."""


LOOK_RULE = LookRule()
"""The rule a race with ``runs="gsd"`` reads its verdicts by."""


@dataclass(frozen=True)
class _Look:
    index: int
    units: int
    n: int
    inputs: int
    mean: float
    se: float
    crit: float
    """The ``as good`` side's critical value (t scale) at the look."""
    crit_worse: float
    """The ``worse`` side's."""
    floor: float
    """The pseudo-pair standard error of the inputs' means (`gradebench._stats.adjusted`): the least ``se`` the
    bounds use, for differences with few or no discordant pairs; 0 before a look has read an input."""

    @property
    def bounds(self) -> tuple[float, float]:
        """The repeated bounds, each at least its critical value's worth of `floor` from the mean."""
        se = max(self.se, self.floor)
        return self.mean - self.crit * se, self.mean + self.crit_worse * se


def _read(draws: Sequence[tuple[str, float | None]], units: int) -> tuple[int, list[float]]:
    """The pairs among the first ``units`` draws and each input's mean difference (inputs in first-drawn order)."""
    per: dict[str, list[float]] = {}
    for input_id, value in draws[:units]:
        if value is not None:
            per.setdefault(input_id, []).append(value)
    return sum(len(v) for v in per.values()), [sum(v) / len(v) for v in per.values()]


def first_look_from(looks: Sequence[int], share: float = AS_GOOD_FROM) -> int:
    """The first look (1-based) at or past ``share`` of the planned units."""
    return next(k for k, units in enumerate(looks, start=1) if units >= share * looks[-1])


def look_verdict(
    draws: Sequence[tuple[str, float | None]], looks: Sequence[int], margin: float, rule: LookRule = LOOK_RULE
) -> LookVerdict:
    """Is the candidate at most ``margin`` points worse than the reference entry, at the looks taken so far?

    ``draws`` are the race's units in draw order as (input id, paired difference — None when either run has no
    score); ``looks`` the planned cumulative units of every look (the last is the race's most), of which those that
    ``draws`` reach have been taken. The looks are read in order and the first that settles or finds the entry
    futile ends it: that look's verdict stands, whatever later units say. ``as good`` (O'Brien–Fleming spending of
    ``rule.alpha``) and futility are read from ``rule.first_verdict_look`` on (default: the first at `AS_GOOD_FROM`
    of the units), ``worse`` (Pocock spending of ``rule.worse_alpha``) from ``rule.worse_first_look`` on.
    """
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if list(looks) != sorted(set(looks)) or not looks or looks[0] < 1:
        raise ValueError(f"looks must be rising unit counts >= 1, got {list(looks)}")
    first_good = first_look_from(looks) if rule.first_verdict_look is None else rule.first_verdict_look
    total = looks[-1]
    fractions = tuple(u / total for u in looks)
    good_bounds = efficacy_bounds(fractions, rule.alpha)
    worse_bounds = efficacy_bounds(fractions, rule.worse_alpha, "pocock")
    make = partial(LookVerdict, looks=len(looks), margin=margin, alpha=rule.alpha, worse_alpha=rule.worse_alpha)
    taken: _Look | None = None
    for k, units in enumerate(looks, start=1):
        if units > len(draws):
            break
        n, means = _read(draws, units)
        taken = _look(k, units, n, means, good_bounds[k - 1], worse_bounds[k - 1])
        if taken.se <= 0 or taken.inputs < rule.min_inputs:
            continue
        low, high = taken.bounds
        if k >= first_good and low > -margin:
            return _settled(make, taken, AS_GOOD, margin)
        if k >= rule.worse_first_look and high < -margin:
            return _settled(make, taken, WORSE, margin)
        if first_good <= k < len(looks) and rule.futility > 0:
            z, t = (taken.mean + margin) / taken.se, units / total
            power = max(_power(z, t, good_bounds[-1]), _power(-z, t, worse_bounds[-1]))
            if power < rule.futility:
                return _futile(make, taken, margin, power)
    return _open(make, taken, margin, rule.min_inputs, first_good, looks)


def _crit(bound: float, inputs: int) -> float:
    """A boundary's nominal level carried to the t with ``inputs`` − 1 degrees of freedom."""
    level = float(_sf(np.array(bound)))
    return t_isf(level, inputs - 1) if inputs >= 2 and 0 < level < 0.5 else math.inf


def _look(k: int, units: int, n: int, means: list[float], bound: float, worse_bound: float) -> _Look:
    inputs = len(means)
    mean = float(np.mean(means)) if means else math.nan
    se = float(np.std(means, ddof=1)) / math.sqrt(inputs) if inputs >= 2 else 0.0
    return _Look(
        index=k,
        units=units,
        n=n,
        inputs=inputs,
        mean=mean,
        se=se,
        crit=_crit(bound, inputs),
        crit_worse=_crit(worse_bound, inputs),
        floor=pseudo_pair_se(means) if means else 0.0,
    )


def _power(z: float, t: float, final: float) -> float:
    """Predictive power of reaching the last look's boundary ``final`` from Z = ``z`` at fraction ``t``."""
    return float(_sf(np.array((final * math.sqrt(t) - z) / math.sqrt(1.0 - t))))


def _where(look: _Look, looks: int) -> str:
    return f"look {look.index} of {looks} ({look.n} paired units, {look.inputs} inputs)"


def _settled(make: partial[LookVerdict], look: _Look, verdict: VerdictLabel, margin: float) -> LookVerdict:
    low, high = look.bounds
    line, where = number_text(-margin), _where(look, make.keywords["looks"])
    if verdict == AS_GOOD:
        reason = f"repeated lower bound {number_text(low, 2)} > {line} at {where}: within the margin"
    else:
        reason = f"repeated upper bound {number_text(high, 2)} < {line} at {where}: worse by more than the margin"
    return make(verdict=verdict, **_fields(look), futile=False, settled_at=look.units, reason=reason)


def _futile(make: partial[LookVerdict], look: _Look, margin: float, power: float) -> LookVerdict:
    low, high = look.bounds
    reason = (
        f"bounds [{number_text(low, 2)}, {number_text(high, 2)}] straddle {number_text(-margin)} "
        f"at {_where(look, make.keywords['looks'])}"
        f", and the last look would settle it either way with chance {power:.1%} at most: stopped for futility"
    )
    return make(verdict=INCONCLUSIVE, **_fields(look), futile=True, settled_at=None, reason=reason)


def _fields(look: _Look) -> dict[str, float | int | None]:
    low, high = look.bounds
    finite = math.isfinite(low) and math.isfinite(high)
    return {
        "lower": low if finite else None,
        "upper": high if finite else None,
        "mean": look.mean if look.inputs else None,
        "n": look.n,
        "n_inputs": look.inputs,
        "look": look.index,
    }


def _open(
    make: partial[LookVerdict],
    look: _Look | None,
    margin: float,
    min_inputs: int,
    first_good: int,
    looks: Sequence[int],
) -> LookVerdict:
    """Not settled at any look taken: say why."""
    if look is None:
        reason = f"no look taken yet: the first comes at {looks[0]} paired units"
        return make(
            verdict=INCONCLUSIVE,
            lower=None,
            upper=None,
            mean=None,
            n=0,
            n_inputs=0,
            look=0,
            futile=False,
            settled_at=None,
            reason=reason,
        )
    where = _where(look, len(looks))
    if look.inputs < min_inputs:
        reason = f"{look.inputs} inputs at {where}: a verdict needs at least {min_inputs}"
    elif look.se <= 0:
        reason = f"every input's paired difference is the same at {where}: no spread to test"
    else:
        low, high = look.bounds
        bounds = f"bounds [{number_text(low, 2)}, {number_text(high, 2)}]"
        if look.index < first_good:
            reason = f"{bounds} at {where}: from look {first_good} on it may also be called as good"
        elif look.index < len(looks):
            reason = f"{bounds} straddle {number_text(-margin)} at {where}: the next look may settle it"
        else:
            reason = f"{bounds} straddle {number_text(-margin)} at the last look, {where}"
    return make(verdict=INCONCLUSIVE, **_fields(look), futile=False, settled_at=None, reason=reason)
