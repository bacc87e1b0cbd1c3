"""One of each: one Student t (`gradebench._stats.t`), one weighted κ (`gradebench._stats.kappa`) and one canonical
JSON (`gradebench._base.canonical`) — each right against a reference, every caller on it, and a scan of the package
source that fails when a second one appears (or a module reaches for another module's private name again)."""

from __future__ import annotations

import ast
import functools
import hashlib
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import gradebench
from gradebench._base.canonical import canonical_json
from gradebench._judge.agreement import judge_agreement
from gradebench._records import keys
from gradebench._stats.kappa import kappa, kappa_of_sums, weighted_kappa
from gradebench._stats.t import t_cdf, t_isf, t_quantile, t_sf, t_two_sided
from gradebench._verdict.label_agreement import agreement
from gradebench.sim._perturb import rng_for, stable_hex

PACKAGE = Path(gradebench.__file__).parent

# ---------------------------------------------------------------------------------------------------- Student's t

LEVELS = (0.9, 0.95, 0.975, 0.995)
T_TABLE = {
    1: (3.0777, 6.3138, 12.7062, 63.6567),
    2: (1.8856, 2.9200, 4.3027, 9.9248),
    5: (1.4759, 2.0150, 2.5706, 4.0321),
    10: (1.3722, 1.8125, 2.2281, 3.1693),
    30: (1.3104, 1.6973, 2.0423, 2.7500),
    120: (1.2886, 1.6577, 1.9799, 2.6174),
}
"""Student's t quantiles to four decimals, as the standard tables give them (the NIST/SEMATECH e-Handbook's table
1.3.6.7.2 prints the same to three)."""


@pytest.mark.parametrize("df", sorted(T_TABLE))
def test_the_t_quantiles_match_the_published_table(df: int) -> None:
    for p, printed in zip(LEVELS, T_TABLE[df], strict=True):
        assert t_quantile(p, df) == pytest.approx(printed, abs=5e-5), (p, df)  # the table's own rounding
        assert t_quantile(1 - p, df) == pytest.approx(-printed, abs=5e-5)
        assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-14)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995, 0.9999])
def test_the_t_quantile_is_exact_where_a_closed_form_exists(p: float) -> None:
    """df 1 is Cauchy, tan(π(p − ½)); df 2 has (2p − 1)/√(2p(1 − p)): both to the last digits double precision holds."""
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-12)


@pytest.mark.parametrize(("df", "x"), [(3, 2.1), (4, 0.7), (41, 2.5), (200, 1.96)])
def test_the_t_tail_matches_the_integral_of_the_density(df: int, x: float) -> None:
    """A reference that owes nothing to the series: Simpson's rule on the t density from 0 to x."""
    density_scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    steps = 4000
    grid = np.linspace(0.0, x, steps + 1)
    density = density_scale * (1 + grid**2 / df) ** (-(df + 1) / 2)
    weights = np.where(np.arange(steps + 1) % 2 == 1, 4.0, 2.0)
    weights[0] = weights[-1] = 1.0
    assert t_sf(x, df) == pytest.approx(0.5 - float(weights @ density) * (x / steps) / 3, abs=1e-12)


def test_the_two_sided_multiplier_and_the_far_tail() -> None:
    assert t_two_sided(0.95, 4) == pytest.approx(2.7764, abs=5e-5)  # the judges' agreement at 5 inputs
    assert t_two_sided(0.95, 4) == pytest.approx(t_quantile(0.975, 4), rel=1e-14)
    assert t_quantile(0.975, 4) == pytest.approx(t_isf(0.025, 4), rel=1e-14)
    assert t_isf(0.5, 7) == 0.0
    assert t_isf(1e-14, 7) == math.inf and t_isf(1 - 1e-14, 7) == -math.inf  # below what the series resolves
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="in \\(0, 1\\)"):
            t_quantile(bad, 3)
    with pytest.raises(ValueError, match="df must be >= 1"):
        t_sf(1.0, 0)


# ---------------------------------------------------------------------------------------------------- weighted κ


def test_kappa_against_a_hand_computed_value() -> None:
    """a = 0, 5, 10, 5 and b = 0, 10, 10, 5 on the 0..10 scale, weights ((i − j)/10)²: observed Σ w·p_ij = 0.25/4 =
    0.0625; the margins (a: ¼ ½ ¼, b: ¼ ¼ ½ at 0, 5, 10) give Σ w·p_i·q_j = 1/64 + 1/8 + 1/32 + 1/16 + 1/16 + 1/64 =
    0.3125; κ = 1 − 0.0625/0.3125 = 0.8. By moments the same: 1 − 6.25 / (12.5 + 17.1875 + 1.25²) = 0.8."""
    a, b = [0, 5, 10, 5], [0, 10, 10, 5]
    assert kappa(a, b) == pytest.approx(0.8, abs=1e-12)
    assert kappa(b, a) == pytest.approx(0.8, abs=1e-12)  # symmetric
    x, y = np.array(a), np.array(b)
    sums = (4, x.sum(), y.sum(), (x * x).sum(), (y * y).sum(), ((x - y) ** 2).sum())  # 20, 25, 150, 225, 25
    assert float(kappa_of_sums(*sums)) == pytest.approx(0.8, abs=1e-12)
    assert kappa([7, 7, 7], [6, 8, 7]) == 0.0  # a side that never varies: exactly chance's disagreement
    assert kappa([], []) is None and kappa([7, 7, 7], [7, 7, 7]) is None  # no runs, or neither side varies


def _judge_vs_judge(first: np.ndarray, second: np.ndarray) -> float | None:
    """κ of two judges of a panel over the same runs, as ``report.judge_agreement()`` figures it."""
    n = len(first)
    rows = {"run_id": [f"r{i}" for i in range(n)] * 2, "entry": ["e"] * 2 * n}
    rows |= {"input_id": [f"i{i % 6}" for i in range(n)] * 2, "judge_entry": ["a"] * n + ["b"] * n}
    found = judge_agreement(pl.DataFrame({**rows, "score": np.concatenate([first, second])}), ["a", "b"])
    assert found is not None
    return found.pairs[0].kappa


@pytest.mark.parametrize("step", [1.0, 0.5])
def test_the_judges_and_the_labels_agree_on_one_kappa(step: float) -> None:
    """The same pairs of scores, read once as two judges of a panel and once as a judge against a person's labels,
    give one κ: in whole points, in half points (a judge's mean over a swap check's two orders), 0 alike where one
    side never varies, and undefined alike where neither does."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        judge = rng.integers(0, round(10 / step) + 1, 30) * step
        person = np.clip(judge + rng.choice([-2, -1, 0, 0, 1, 3], 30) * step, 0, 10)
        by_labels = agreement(judge, person).kappa
        assert by_labels is not None
        assert _judge_vs_judge(judge, person) == pytest.approx(by_labels, abs=1e-12)
    flat = np.full(30, 9.0)
    assert _judge_vs_judge(flat, person) == 0.0 and agreement(flat, person).kappa == 0.0
    assert _judge_vs_judge(flat, flat) is None and agreement(flat, flat).kappa is None


def test_kappa_by_rows_is_kappa_of_each_row() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 11, (5, 12)), rng.integers(0, 11, (5, 12))
    by_rows = weighted_kappa(a, b)
    assert by_rows.shape == (5,)
    for row, found in enumerate(by_rows):
        assert found == kappa(a[row], b[row])
    with pytest.raises(ValueError, match="same runs"):
        weighted_kappa(a, b[:, :3])


# ---------------------------------------------------------------------------------------------------- canonical JSON


def test_canonical_json_is_one_text_for_one_value() -> None:
    assert canonical_json({"b": [1, 2.5, None], "a": {"é": True}}) == '{"a":{"é":true},"b":[1,2.5,null]}'
    assert canonical_json({"z": 1, "a": 2}) == canonical_json({"a": 2, "z": 1})
    assert canonical_json({"when": Path("x")}) == '{"when":"x"}'  # what JSON cannot hold is its str


def test_the_key_and_the_simulated_fleet_hash_the_one_canonical_json() -> None:
    assert keys.canonical_json is canonical_json  # the cache-key contract names it
    parts = ["seed", {"b": 1, "a": "ü"}]
    assert keys.short_hash(*parts) == hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:12]
    assert stable_hex(*parts) == hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:24]
    assert rng_for(*parts).random() == rng_for("seed", {"a": "ü", "b": 1}).random()


# ---------------------------------------------------------------------------------------------------- no second one

T_HOME = PACKAGE / "_stats" / "t.py"
KAPPA_HOME = PACKAGE / "_stats" / "kappa.py"
CANONICAL_HOME = PACKAGE / "_base" / "canonical.py"
SORTED_BUT_NOT_CANONICAL = {
    "_calls/batch/journal.py": "a batch's note written whole to a file and read back with json.loads: its keys are "
    "sorted so a person reading the file finds them, and nothing hashes or compares its text",
    "scorers/_ready.py": "a hashable stand-in for one item of a collection, with repr (not str) for what JSON cannot "
    "hold, so an object never equals the string it prints as",
}
"""The sorted-key ``json.dumps`` calls that are not a canonical encoder, and why."""


@functools.cache
def _sources() -> tuple[tuple[Path, str, ast.Module], ...]:
    """Every module of the package: its path, its text and its syntax tree (parsed once for the four scans)."""
    texts = {p: p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}
    return tuple((p, text, ast.parse(text)) for p, text in texts.items())


def _where(path: Path, node: ast.AST | None = None) -> str:
    return f"{path.relative_to(PACKAGE)}" + (f":{getattr(node, 'lineno', '?')}" if node is not None else "")


def test_there_is_one_student_t() -> None:
    """Student's t is computed in `gradebench._stats.t` only: no function of the t distribution elsewhere, and
    neither the A&S series (26.7.3–4) nor the Cornish-Fisher expansion (26.7.5) written out again."""
    named = re.compile(r"(^|_)t_(quantile|cdf|sf|isf|ppf|tail|two_sided)$|^student", re.IGNORECASE)
    found = []
    for path, text, tree in _sources():
        if path == T_HOME:
            continue
        found += [_where(path, n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and named.search(n.name)]
        found += [f"{_where(path)}: {m.group(0)!r}" for m in re.finditer(r"26\.7\.\d|Cornish", text)]
    assert not found, f"a second Student's t: {found}; use gradebench._stats.t"


def test_there_is_one_weighted_kappa() -> None:
    """κ is computed in `gradebench._stats.kappa` only: no other function of κ, and every κ imported comes from it."""
    found = []
    for path, _, tree in _sources():
        if path == KAPPA_HOME:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and "kappa" in node.name.lower():
                found.append(_where(path, node))
            if isinstance(node, ast.ImportFrom) and any("kappa" in a.name.lower() for a in node.names):
                if (node.module or "").split(".")[-1] != "kappa":
                    found.append(_where(path, node))
    assert not found, f"a second weighted κ: {found}; use gradebench._stats.kappa"


def test_there_is_one_canonical_json() -> None:
    """Text that is hashed or compared is written by `gradebench._base.canonical.canonical_json` only: any other
    ``json.dumps(..., sort_keys=True)`` is a second canonical encoder, unless it is listed, with its reason, above."""
    found = []
    for path, _, tree in _sources():
        where = str(path.relative_to(PACKAGE))
        if path == CANONICAL_HOME or where in SORTED_BUT_NOT_CANONICAL:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dumps":
                sorted_keys = [k for k in node.keywords if k.arg == "sort_keys"]
                if sorted_keys and not (isinstance(v := sorted_keys[0].value, ast.Constant) and v.value is False):
                    found.append(_where(path, node))
    assert not found, f"a second canonical JSON encoder: {found}; use gradebench._base.canonical.canonical_json"
    listed = [where for where in SORTED_BUT_NOT_CANONICAL if "sort_keys=True" not in (PACKAGE / where).read_text()]
    assert not listed, f"listed as sorting keys but no longer does: {listed}"


def test_no_module_imports_another_modules_private_name() -> None:
    """A name with a leading underscore stays in its module: what another module needs is a public name of its own
    (a private module of a package, e.g. ``sim._grader``, may be imported; its private names may not)."""
    found = []
    for path, _, tree in _sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            source = base.joinpath(*(node.module or "").split(".")) if node.module else base
            for alias in node.names:
                is_module = (source / f"{alias.name}.py").exists() or (source / alias.name).is_dir()
                if alias.name.startswith("_") and not alias.name.startswith("__") and not is_module:
                    found.append(f"{_where(path, node)} imports {alias.name}")
    assert not found, f"private names crossing modules: {found}"
