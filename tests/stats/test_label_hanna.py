"""benchmarks/label_hanna.py on a small file of HANNA's shape (the real one is in ../shared/data, not in the tests):
the 1–5 ratings read on 0..10, a judge's failed rating (below 1) left out of its mean, the truth the people's mean
difference, and a cell of random and active label draws run through the product's corrected verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ..scripts import benchmark

bench = benchmark("label_hanna")
PROMPTS = 24
QUALITY = {"Good": 4.0, "Fair": 3.0, "Poor": 2.0}
"""Each system's people's rating (1–5) on every story; a rater 1 point either way on some."""


def hanna_file(path: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for system, quality in QUALITY.items():
        for prompt in range(PROMPTS):
            for rater, shift in (("human-1", -1.0), ("human-2", 0.0), ("human-3", 1.0)):
                rows.append((system, prompt, rater, "human", 1, "RE", quality + shift))
            for judge in ("Mistral-7B", "Beluga-13B"):
                for repeat in range(1, 5):
                    rating = float(np.clip(quality + rng.integers(-1, 2) / 3, 1, 5))
                    rows.append((system, prompt, judge, "llm", repeat, "RE", rating))
    rows.append(("Good", 0, "Mistral-7B", "llm", 1, "RE", -1.0))  # a rating the judge failed to give
    rows = [r for r in rows if not (r[0] == "Good" and r[1] == 0 and r[2] == "Mistral-7B" and r[4] == 1 and r[6] > 0)]
    columns = ["system", "prompt", "rater", "kind", "repeat", "criterion", "score"]
    pl.DataFrame(rows, schema=columns, orient="row").write_csv(path / "hanna.csv")
    return path / "hanna.csv"


def test_ratings_are_read_on_the_0_to_10_scale_and_a_failed_judge_rating_is_left_out(tmp_path: Path) -> None:
    data = bench.load(hanna_file(tmp_path), "RE")
    assert data.systems == ["Fair", "Good", "Poor"]
    assert data.people.shape == (3, PROMPTS, 3)
    assert data.people[1, 0].tolist() == [5.0, 7.5, 10.0]  # Good's 3, 4, 5 → (r − 1) × 2.5
    truth = data.truth
    assert truth[1, 0] == pytest.approx(2.5) and truth[2, 1] == pytest.approx(-5.0)  # Good − Fair; Poor − Good
    assert not np.isnan(data.judge).any() and 6.0 < data.judge[1, 0] < 9.0  # the −1 left out, not averaged in
    assert np.all(data.spread >= 0)


def test_a_cell_of_label_draws_reads_every_pair_against_the_truth(tmp_path: Path) -> None:
    data = bench.load(hanna_file(tmp_path), "RE")
    for design in bench.DESIGNS:
        found = bench.cell(data, [0, 0, 10, 0], design=design, labels=10, draws=20, floor=0.6)
        assert found["wrong"]["of"] == 6 * 20 and found["target_settled"]["of"] == 6 * 20  # every pair ≥ 1 away
        assert found["cover_lower"]["rate"] >= 0.9 and found["wrong"]["rate"] <= 0.05
        assert found["target_settled"]["rate"] > 0.5  # 2.5 and 5 points apart: most draws settle
        assert found["labels_mean"] == pytest.approx([10, 10], abs=1.5)
    alone = bench.judge_only(data)
    assert alone[1, 0] == "as good" and alone[2, 1] == "worse"
