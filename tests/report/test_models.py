"""gradebench._report.models: the per-entry record, the models frame's schema derived from it, its row form."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import polars as pl

from gradebench._report import models as _models
from gradebench._report.models import MODELS_SCHEMA, EntrySummary


def test_the_schema_is_the_records_fields_in_order():
    fields = dataclasses.fields(EntrySummary)
    assert list(MODELS_SCHEMA) == [f.name for f in fields]
    assert MODELS_SCHEMA["entry"] == pl.String() and MODELS_SCHEMA["simulated"] == pl.Boolean()
    assert MODELS_SCHEMA["runs"] == pl.Int64() and MODELS_SCHEMA["cost_per_run"] == pl.Float64()
    assert MODELS_SCHEMA["verdict"] == pl.String() and MODELS_SCHEMA["floor_runs"] == pl.Int64()
    assert set(MODELS_SCHEMA.values()) == {pl.String(), pl.Boolean(), pl.Int64(), pl.Float64()}  # no JSON columns


def test_every_field_says_what_it_is():
    tree = ast.parse(inspect.getsource(_models))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EntrySummary")
    documented = {
        node.target.id
        for node, after in zip(cls.body, cls.body[1:], strict=False)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)
    }
    assert documented == set(MODELS_SCHEMA)


def test_a_row_round_trips():
    row = {name: None for name in MODELS_SCHEMA} | {
        "entry": "acme/fast",
        "model": "fast-1",
        "grade": "standard",
        "simulated": False,
        "runs": 3,
        "ok_rate": 2 / 3,
        "score_mean": 7.5,
        "currency": "USD",
        "judged": 2,
        "is_reference": False,
        "verdict": "inconclusive",
        "n_pairs": 2,
    }
    summary = EntrySummary.from_row(row)
    assert summary.to_row() == row
    assert (summary.entry, summary.score_mean, summary.cost_per_run, summary.n_pairs) == ("acme/fast", 7.5, None, 2)
    frame = pl.DataFrame([summary.to_row()], schema=MODELS_SCHEMA)
    assert EntrySummary.from_row(frame.row(0, named=True)) == summary
