"""`BenchmarkReport.to_html`: one self-contained HTML file of the whole report, every untrusted text escaped, nothing
loaded from anywhere; and the command line writes it beside the parquet files."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest

import gradebench as gb
from gradebench._cli.main import _print_report
from gradebench._report import present as _present
from gradebench._report.page import lowest_runs
from gradebench.testing import ScriptedEndpoint, completion

EVIL = "<script>alert(1)</script>"
LOADS = re.compile(
    r"<(?:script|link|img|image|iframe|source|video|audio|embed|object|use)\b[^>]*?"
    r"\b(?:src|href|data|srcset)\s*=\s*[\"']?\s*(?:https?:)?//",
    re.IGNORECASE,
)
"""A tag that would load something from another host (``//host`` too)."""


async def echo(input: dict, seat: gb.Seat) -> dict:
    """Repeat the message back, with a reply."""
    reply = await seat.chat([{"role": "user", "content": input["text"]}])
    return {"echo": input["text"], "reply": reply.text}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> gb.BenchmarkReport:
    """A sim race whose every run's answer holds a script tag, with a scorer (so a fourth chart)."""
    bench = gb.Benchmark(
        echo,
        catalog=gb.sim.catalog(latency_scale=0),
        grade="standard",
        candidates=["sim/steady", "sim/swift", "sim/flaky"],
        runs=2,
        cache=tmp_path_factory.mktemp("cache"),
        progress=False,
    )
    bench.set_spec(scorer=gb.scorers.field_equals("echo"), rubric="Echo <exactly> what was said.")
    bench.set_inputs([{"id": "evil", "text": EVIL}, {"id": "plain", "text": "hello there"}])
    bench.run_sync()
    return bench.report()


@pytest.fixture(scope="module")
def page(report: gb.BenchmarkReport, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("html") / "sub" / "report.html"
    assert report.to_html(path) == path  # the folder is made; the path comes back
    return path.read_text(encoding="utf-8")


def plain(text: str) -> str:
    """What a reader sees: tags and styles dropped, entities decoded."""
    return html.unescape(re.sub(r"<style>.*?</style>|<svg.*?</svg>|<[^>]+>", "", text, flags=re.DOTALL))


def test_the_file_holds_the_whole_report(report: gb.BenchmarkReport, page: str) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    said = plain(page)
    assert _present.header(report) in said and _present.totals(report) in said
    rows = report.model_rows()
    assert [r.entry for r in rows] == ["sim/steady", "sim/swift", "sim/flaky"]
    table = re.search(r'<table class="gb-models">.*?</table>', page, re.DOTALL)
    assert table is not None
    for r in rows:
        assert f"<td>{'★ ' if r.is_reference else ''}{r.entry} (sim)</td>" in table.group(0)
        assert f"<td><b>{r.verdict or 'reference'}</b></td>" in table.group(0)  # each entry's verdict
        assert f'<td class="n">{_present.score_interval(r)}</td>' in table.group(0)
    for v in _present.verdict_lines(report):
        assert f"{v.verdict} {v.entry}: {v.evidence()}" in said
    assert _present.recommendation(report) in said
    found = report.diagnostics()
    assert found.height  # the echo job answers alike on every repeat, and more
    for d in found.iter_rows(named=True):
        assert f"<td>{html.escape(d['kind'])}</td>" in page and html.escape(d["detail"]) in page
    assert "Echo &lt;exactly&gt; what was said." in page  # the rubric the judge read


def test_every_chart_is_inline_svg(page: str) -> None:
    figures = re.findall(r'<figure class="gb-chart" aria-label="([^"]+)">(.*?)</figure>', page, re.DOTALL)
    titles = [title for title, _ in figures]
    assert titles == ["cost vs quality", "latency vs quality", "judge scores per run", "judge vs scorer"]
    for title, body in figures:
        assert body.startswith("<svg") and body.count("<svg") == 1, title
    assert page.count("<svg") == 4 and "chart unavailable" not in page


def test_each_entry_shows_its_lowest_runs_beside_the_reference_with_the_reason(
    report: gb.BenchmarkReport, page: str
) -> None:
    chosen = lowest_runs(report)
    runs = report.runs.filter(role="candidate")
    for entry, ids in chosen.items():
        own = runs.filter(entry=entry)
        scores = sorted(s for s in own["score"].to_list() if s is not None)
        assert len(ids) == 2 and sorted(own.filter(pl.col("run_id").is_in(ids))["score"]) == scores[:2], entry
    shown = re.findall(r'<div class="gb-run" data-run="([^"]+)">', page)
    assert shown == [i for ids in chosen.values() for i in ids]
    for run_id, block in zip(shown, re.split(r'(?=<div class="gb-run")', page)[1:], strict=True):
        row = report.runs.filter(run_id=run_id).row(0, named=True)
        assert "<h4>candidate</h4>" in block and "<h4>reference</h4>" in block
        assert f"· input {row['input_id']} · " in plain(block)
        assert row["reason"] and html.escape(row["reason"], quote=True) in block  # the judge's reason
    one = lowest_runs(report, 1)
    assert all(len(ids) == 1 and ids[0] == chosen[e][0] for e, ids in one.items())


def test_a_runs_answer_is_escaped(report: gb.BenchmarkReport, page: str) -> None:
    answers = [json.loads(o) for o in report.runs["output"].drop_nulls().to_list()]
    assert any(a["echo"] == EVIL for a in answers)
    assert EVIL not in page and "<script" not in page.lower()
    assert html.escape(EVIL) in page  # in the transcripts, as text


def test_the_file_loads_nothing_from_anywhere(page: str) -> None:
    assert not LOADS.findall(page)
    assert "@import" not in page and not re.search(r"url\(\s*['\"]?(?:https?:)?//", page)
    assert not re.search(r"<(?:link|iframe|script|object|embed)\b", page, re.IGNORECASE)
    # the only URLs in it are the SVG namespaces: names, not loads
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, urls


def test_the_stop_marker_and_the_judges_headline_are_on_top(tmp_path: Path) -> None:
    async def say(input: dict, seat: gb.Seat) -> str:
        """Say something."""
        return (await seat.chat([{"role": "user", "content": input["text"]}])).text

    endpoint = ScriptedEndpoint(lambda body, request: completion("not a verdict"), verdict=None)
    bench = gb.Benchmark(say, catalog=endpoint.catalog(), grade="standard", runs=1, progress=False)
    bench.set_inputs([{"id": "a", "text": "one"}])
    bench.run_sync()
    failed = bench.report()
    stopped = gb.BenchmarkReport(failed.to_runs(), failed.meta.replace(stopped=gb.vocab.Stopped.CANCELLED))
    said = plain(stopped.to_html(tmp_path / "report.html").read_text(encoding="utf-8"))
    headline = _present.judge_headlines(stopped)
    assert headline and headline[0].startswith("JUDGE FAILED on 2 of 2 runs")
    marker = _present.stopped(stopped)
    assert marker is not None
    top = said.index(_present.header(stopped))
    assert top < said.index(marker) < said.index(headline[0]) < said.index("entry")


def test_a_report_without_candidate_runs_and_a_chart_that_fails_still_write(
    report: gb.BenchmarkReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradebench._report import charts  # where the page reads them

    references = gb.BenchmarkReport([r for r in report.to_runs() if r.role == gb.vocab.Role.REFERENCE], report.meta)
    page = references.to_html(tmp_path / "refs.html").read_text(encoding="utf-8")
    assert "(no candidate runs)" in plain(page) and page.count("<svg") == 3  # the charts say there is nothing

    def broken(report: gb.BenchmarkReport) -> None:
        raise RuntimeError("no <latency> today")

    monkeypatch.setattr(charts, "latency_quality", broken)
    page = report.to_html(tmp_path / "broken.html").read_text(encoding="utf-8")
    assert "chart unavailable: RuntimeError: no &lt;latency&gt; today" in page and page.count("<svg") == 3


def test_the_command_line_writes_it_beside_the_parquet_files(
    report: gb.BenchmarkReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _print_report(report, tmp_path / "out")  # what demo, run and rejudge print and write
    written = tmp_path / "out" / "report.html"
    assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "out" / "runs.parquet").is_file()
    out = capsys.readouterr().out
    assert f"Wrote {written}: the whole report in one file, to open offline in a browser" in out.splitlines()


def test_against_gold_labels_the_html_says_what_the_text_table_says(tmp_path: Path) -> None:
    bench = gb.Benchmark(
        echo,
        catalog=gb.sim.catalog(latency_scale=0),
        grade="standard",
        candidates=["sim/steady", "sim/swift"],
        runs=1,
        cache=tmp_path / "cache",
        progress=False,
    )
    bench.set_spec(scorer=gb.scorers.field_equals("echo", gold="expected"))
    bench.set_inputs([{"id": "a", "text": "x", "expected": "x"}, {"id": "b", "text": "y", "expected": "z"}])
    bench.run_sync()
    report = bench.report()
    gold = _present.gold_line(report)
    assert gold is not None and gold in report.table()
    shown = report._repr_html_()
    assert "<th>gold</th>" in shown and "<th>scorer</th>" not in shown and gold in plain(shown)
    for r in report.model_rows():
        assert f'<td class="n">{r.gold_mean:.2f}</td>' in shown
