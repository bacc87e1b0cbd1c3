"""A chart is rendered once: within `rendered_charts_kept_in`, what vl-convert made of a spec is kept by the spec's
digest and read back when the same chart is saved again — a rerun the cache answers draws no chart again."""

from __future__ import annotations

import logging
from pathlib import Path

import altair as alt
import polars as pl
import pytest
import vl_convert

from gradebench._cli.main import main
from gradebench._report.offline import rendered_charts_kept_in, save_chart

CHARTS = ("cost_quality.png", "cost_quality.svg", "cost_quality.html", "latency_quality.png", "score_distribution.png")


def bar(height: int) -> alt.Chart:
    return alt.Chart(pl.DataFrame({"x": ["a", "b"], "y": [1, height]})).mark_bar().encode(x="x", y="y")


def count_renders(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    made = {"svg": 0, "png": 0, "html": 0}
    for form in made:
        real = getattr(vl_convert, f"vegalite_to_{form}")

        def counted(*args, _form=form, _real=real, **kwargs):
            made[_form] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(vl_convert, f"vegalite_to_{form}", counted)
    return made


def test_a_chart_saved_again_is_read_back_and_a_changed_one_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    made = count_renders(monkeypatch)
    with rendered_charts_kept_in(tmp_path / "kept"):
        first = [save_chart(bar(2), tmp_path / "one" / f"c.{form}").read_bytes() for form in ("svg", "png", "html")]
        again = [save_chart(bar(2), tmp_path / "two" / f"c.{form}").read_bytes() for form in ("svg", "png", "html")]
        assert made == {"svg": 1, "png": 1, "html": 1} and first == again
        save_chart(bar(3), tmp_path / "three.png")  # other data: another chart
        assert made["png"] == 2 and len(list((tmp_path / "kept").iterdir())) == 4
    save_chart(bar(2), tmp_path / "outside.png")  # outside the block nothing is kept or read
    assert made["png"] == 3 and (tmp_path / "outside.png").read_bytes() == first[1]


def test_a_reports_chart_is_made_once_within_the_block_and_afresh_outside(tmp_path: Path):
    from gradebench import charts

    from .test_charts import report

    one, other = report.__wrapped__(), report.__wrapped__()  # the fixture's report, made twice
    with rendered_charts_kept_in(tmp_path / "kept"):
        made = charts.cost_quality(one)
        assert charts.cost_quality(one) is made and charts.cost_quality(other) is not made
        assert charts.latency_quality(one) is not made
    assert charts.cost_quality(one) is not charts.cost_quality(one)
    assert charts.cost_quality(one).to_dict() == made.to_dict()


def test_a_folder_that_cannot_keep_charts_says_so_and_the_chart_is_still_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    (tmp_path / "kept").write_text("a file where the folder would be")
    with caplog.at_level(logging.WARNING, "gradebench"), rendered_charts_kept_in(tmp_path / "kept"):
        out = save_chart(bar(2), tmp_path / "c.png")
    assert out.read_bytes().startswith(b"\x89PNG") and "a rendered chart was not kept" in caplog.text


@pytest.mark.slow
def test_the_demo_run_again_draws_no_chart_and_writes_the_same_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    demo = ["demo", "--runs", "1", "--inputs", "2", "--out"]
    assert main([*demo, str(tmp_path / "first")]) == 0
    made = count_renders(monkeypatch)
    assert main([*demo, str(tmp_path / "again")]) == 0
    assert made == {"svg": 0, "png": 0, "html": 0}, capsys.readouterr().out
    for name in CHARTS:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    assert (tmp_path / "again" / "report.html").read_text().count("<svg") >= 3  # the page's charts, read back too
