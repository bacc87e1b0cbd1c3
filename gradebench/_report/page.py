"""The report as HTML: escaped fragments (tables, transcripts, a run beside its reference) and one page to share.

Everything rendered is escaped by construction: outputs, transcripts, reasons and errors are untrusted text, and every
fragment is built with `gradebench._base.html`'s `tag`, which escapes any value it did not build. The panel's tabs
(`gradebench.widgets`) lay these fragments out; `page` — what `BenchmarkReport.to_html` writes — puts the presenter's
summary (`_present.html`), the charts as inline SVG, the diagnostics and each entry's lowest-scoring runs beside the
reference into one file that loads nothing: no script, no stylesheet, no image from anywhere, so it opens offline.

It reads a report through `gradebench._report.view.ReportView`, so the report imports it and nothing here imports the
report back. `page` draws the charts (`gradebench._report.charts`): it imports them when called, so that making or
reading a report never loads Altair.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from .._base.canonical import canonical_json
from .._base.html import Markup, concat, esc, join, tag
from .._base.numbers import money, plain
from .._base.vocab import Role
from .._judge.agreement import judges_text
from . import present as _present
from .diagnostics import grouped
from .view import ReportView

__all__ = [
    "CSS",
    "LOWEST",
    "REPORT_HTML",
    "esc",
    "events_html",
    "facts",
    "flex",
    "html_table",
    "lowest_runs",
    "page",
    "pre",
    "run_pair",
    "td",
    "text",
    "write_page",
]

REPORT_HTML = "report.html"
"""The HTML report's file name beside the parquet files (the command line's and the panel's Export)."""
LOWEST = 2
"""How many of each entry's lowest-scoring runs the HTML report shows beside the reference."""
CSS = Markup(
    "<style>.gb-t{border-collapse:collapse;font-size:12px}.gb-t th,.gb-t td{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}.gb-t th{background:#f4f4f4}.gb-t td.n{text-align:right}"
    ".gb-t.gb-line td{white-space:nowrap;line-height:18px}.gb-t.gb-line th{white-space:nowrap}"
    ".gb-t.gb-fit td{white-space:nowrap}.gb-t.gb-fit th{vertical-align:bottom}"
    ".gb-pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px}"
    ".gb-ev{border-left:3px solid #ccc;padding:2px 6px;margin:4px 0}.gb-bad{color:#b00020}"
    ".gb-stop{color:#b45309;font-weight:bold}</style>"
)
"""The styles every fragment carries (``gb-line``: one line per row; ``gb-fit``: cells never wrap, headers may)."""
_COLOURS = {
    "user": "#4a7ebb",
    "tool_call": "#d08000",
    "tool_result": "#2a8a4a",
    "tool_error": "#b00020",
    "error": "#b00020",
    "answer": "#6a3fb5",
}
_PAGE_CSS = Markup(
    "<style>body{font-family:system-ui,sans-serif;font-size:14px;margin:24px auto;max-width:1400px;padding:0 16px;"
    "color:#222}h1{font-size:20px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}"
    "h3{font-size:15px}.gb-chart{overflow-x:auto;margin:8px 0}.gb-run{border:1px solid #e4e4e4;padding:6px 10px;"
    "margin:10px 0}.gb-facts{color:#555;margin:4px 0;padding-left:18px}"
    ".gb-t,.gb-models{display:block;overflow-x:auto;max-width:100%}</style>"
)


# -------------------------------------------------------------------------------------------------------- fragments


def text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return plain(value)  # 4 significant digits in plain notation: 0.00001234, never 1.234e-05
    return str(value)


def flex(*children: Any) -> Markup:
    """A box that takes an equal share of a flex row (a run beside its reference)."""
    return tag("div", *children, style="flex:1;min-width:0")


def td(value: Any, cut: int | None = None) -> Markup:
    """A cell; with ``cut``, text longer than that many characters is cut to one line, whole in its tooltip."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    shown = " ".join(text(value).split()) if cut else text(value)
    if cut and len(shown) > cut:
        return tag("td", shown[: cut - 1] + "…", title=text(value))
    return tag("td", shown, class_="n" if number else None)


def _head(name: str) -> Markup:
    """A header that may break after an underscore (so a long column name does not widen its column)."""
    return join(name.split("_"), concat("_", tag("wbr")))


def html_table(
    df: pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    empty: str = "(no rows)",
    cut: int | None = None,
    fit: bool = False,
) -> Markup:
    """An escaped HTML table of ``df`` (all columns, or ``columns`` in that order).

    ``cut``: one line per row, text longer than ``cut`` characters cut (the whole text in the cell's tooltip).
    ``fit``: cells never wrap (ids stay whole), headers break after underscores.
    """
    columns = list(columns or df.columns)
    if not df.height:
        return tag("p", tag("i", empty))
    kind = " gb-line" if cut else " gb-fit" if fit else ""
    heads = tag("tr", *(tag("th", _head(c) if fit else c) for c in columns))
    body = (tag("tr", *(td(v, cut) for v in row)) for row in df.select(columns).iter_rows())
    return concat(CSS, tag("table", tag("thead", heads), tag("tbody", *body), class_="gb-t" + kind))


def pre(value: Any) -> Markup:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return tag("pre", text, class_="gb-pre")


def events_html(events: Sequence[Mapping[str, Any]]) -> Markup:
    """A transcript (`transcript_events`) as escaped HTML: messages, tool calls with arguments and results, answer.

    It carries its own styles, so it reads the same in a notebook cell as in the panel.
    """
    parts = [CSS]
    for e in events:
        kind, name = str(e.get("kind")), tag("code", e.get("name"))
        if kind == "system":
            parts.append(tag("details", tag("summary", "system prompt"), pre(e.get("content")), class_="gb-ev"))
            continue
        title, body = {
            "tool_call": (concat("tool call ", name), e.get("arguments")),
            "tool_result": (concat("result of ", name), e.get("result")),
            "tool_error": (concat("tool error of ", name), e.get("error")),
            "answer": ("answer", e.get("output")),
            "error": ("error", e.get("error")),
        }.get(kind, (kind, e.get("content", {k: v for k, v in e.items() if k != "kind"})))
        colour = _COLOURS.get(kind, "#999")
        parts.append(tag("div", tag("b", title), pre(body), class_="gb-ev", style=f"border-left-color:{colour}"))
    return concat(*parts)


def run_pair(report: ReportView, run_id: str, shown: dict[str, tuple[str, str]] | None = None) -> Markup:
    """A candidate run beside the reference run of its input: the judge's verdict and reason, then both transcripts
    (messages, tool calls with arguments and results, the answer or the error), with each run's facts.

    ``shown``: the transcripts already on the page (by their content: an anchor id and which run showed it), filled in
    here; a transcript shown before is a link to it instead (entries tied on the same answers, one reference run
    beside several candidates' runs)."""
    row = report.runs.filter(run_id=run_id).row(0, named=True)
    refs = report.runs.filter(role=Role.REFERENCE, input_id=row["input_id"])

    def side(r: dict[str, Any] | None, title: str) -> Markup:
        if r is None:
            return flex(tag("h4", title), tag("i", "missing"))
        events = report.transcript(r["run_id"])
        said = f"{r['entry']} input {r['input_id']} repeat {r['repeat']} ({r['role']})"
        key = canonical_json(events)
        anchor = None
        if shown is not None:
            if key in shown:
                anchor, first = shown[key]
                same = tag("p", "the same transcript as ", tag("a", first, href=f"#{anchor}"), ", shown above")
                return flex(tag("h4", title), tag("p", said), same)
            anchor = f"gb-tr{len(shown)}"
            shown[key] = (anchor, said)
        facts = (
            f"{r['entry']} ({r['model']}) · input {r['input_id']} · repeat {r['repeat']} · "
            f"{'ok' if r['ok'] else 'FAILED'} · {_present.plural(r['calls'], 'call')} · "
            f"{_present.plural(r['tool_calls'], 'tool call')} · {text(r['latency_s'])}s · "
            f"cost {money(r['cost'])} {r['currency']}"
        )
        return flex(tag("h4", title), tag("p", facts), tag("div", events_html(events), id=anchor))

    t = {k: text(row[k]) for k in ("score", "accuracy", "work", "judge_entry", "judge_path", "scorer")}
    if row["ok"]:
        said = (
            f": score {t['score']}/10 (accuracy {t['accuracy']}/7, work {t['work']}/3) · "
            f"judge {t['judge_entry']} via {t['judge_path']} · scorer {t['scorer']}"
        )
        verdict = tag("p", tag("b", "verdict"), said)
    else:
        verdict = tag("p", tag("b", "failed"), f": not judged; a failed run scores {t['score']}/10 in every figure")
    errors = [tag("p", f"{key}: {row[key]}", class_="gb-bad") for key in ("judge_error", "scorer_error") if row[key]]
    sides = (side(row, Role.CANDIDATE), side(refs.row(0, named=True) if refs.height else None, Role.REFERENCE))
    return concat(verdict, pre(row["reason"] or ""), *errors, tag("div", *sides, style="display:flex;gap:16px"))


# ------------------------------------------------------------------------------------------------------------ page


def lowest_runs(report: ReportView, per_entry: int = LOWEST) -> dict[str, list[str]]:
    """Each entry's ``per_entry`` lowest-scoring candidate runs (a failed run scores 0; a run the judge gave no
    score comes after every scored one), run ids by entry in the models frame's order."""
    candidates = report.runs.filter(role=Role.CANDIDATE)
    found = {}
    for row in report.model_rows():
        own = candidates.filter(entry=row.entry).sort("score", nulls_last=True, maintain_order=True)
        found[row.entry] = own["run_id"].head(per_entry).to_list()
    return found


def _charts(report: ReportView) -> list[tuple[str, Any]]:
    """The charts the command line writes, by title: a chart that cannot be made is its error instead."""
    from . import charts

    makers = [
        ("cost vs quality", charts.cost_quality),
        ("latency vs quality", charts.latency_quality),
        ("judge scores per run", charts.score_distribution),
    ]
    if report.runs["scorer"].drop_nulls().len():
        makers.append(("judge vs scorer", charts.scorer_agreement))
    made: list[tuple[str, Any]] = []
    for title, make in makers:
        try:
            made.append((title, make(report)))
        except Exception as exc:  # one chart that cannot be drawn must not cost the report
            made.append((title, exc))
    return made


def _svg(chart: Any, n: int) -> Markup:
    """A chart as inline SVG (vl-convert, through `save_chart`: offline), its ids made unique to the page."""
    from .charts import save_chart

    with tempfile.TemporaryDirectory() as tmp:
        svg = save_chart(chart, Path(tmp) / "chart.svg").read_text(encoding="utf-8")
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    # two inline SVGs sharing an id would resolve each other's clip paths and gradients
    svg = re.sub(r'(id="|url\(#|href="#)([^")]+)', lambda m: f"{m.group(1)}gb{n}-{m.group(2)}", svg)
    # vl-convert's SVG is markup it escaped itself (every label and title is an XML text node or attribute); the
    # hostile-names browser test holds it to that
    return Markup(svg)


def _unavailable(exc: Exception) -> Markup:
    return tag("p", f"chart unavailable: {type(exc).__name__}: {exc}", class_="gb-bad")


def _charts_html(report: ReportView) -> Markup:
    parts = []
    for n, (title, chart) in enumerate(_charts(report)):
        if isinstance(chart, Exception):
            body = _unavailable(chart)
        else:
            try:
                body = _svg(chart, n)
            except Exception as exc:
                body = _unavailable(exc)
        parts.append(tag("figure", body, class_="gb-chart", aria_label=title))
    return concat(*parts)


def _runs_html(report: ReportView, per_entry: int) -> Markup:
    runs = report.runs
    shown: dict[str, tuple[str, str]] = {}  # each transcript once: tied entries' and a shared reference's link back
    parts = []
    for entry, ids in lowest_runs(report, per_entry).items():
        blocks = []
        for run_id in ids:
            r = runs.filter(run_id=run_id).row(0, named=True)
            how = "failed" if not r["ok"] else f"score {text(r['score'])}" if r["score"] is not None else "no score"
            title = f"input {r['input_id']} · repeat {r['repeat']} · {how}"
            blocks.append(
                tag("div", tag("h4", title), run_pair(report, run_id, shown), class_="gb-run", data_run=run_id)
            )
        parts += [tag("h3", entry), concat(*blocks) if blocks else tag("p", tag("i", "no candidate run"))]
    return concat(*parts) if parts else tag("p", tag("i", "no candidate runs"))


def _controls_html(report: ReportView) -> list[Markup]:
    """The negative controls: what the judge made of each planted wrong answer (nothing when none were asked)."""
    said = report.controls_outcome().sentence()
    if said is None:
        return []
    rows = report.controls.select("entry", "input_id", "score", "accuracy", "work", "reason", "judge_error")
    table = html_table(rows, empty="no control was judged")  # reasons wrap: the page never scrolls sideways
    return [concat(tag("h2", "Negative controls"), tag("p", said), table)]


RUNS_NAMED = 3
"""How many of the runs a grouped diagnostic is about the page names (the rest counted)."""


def _diagnostics_html(report: ReportView) -> Markup:
    """The diagnostics, the rows that say the same thing of different runs of an entry as one (with how many)."""
    rows = grouped(report.diagnostics())

    def named(runs: str) -> str:
        each = runs.split("; ") if runs else []
        more = len(each) - RUNS_NAMED
        return "; ".join(each[:RUNS_NAMED]) + (f"; and {more} more" if more > 0 else "")

    rows = rows.with_columns(pl.col("runs").map_elements(named, return_dtype=pl.String))
    return html_table(rows, empty="nothing to flag")


def _when(stamp: str) -> str:
    """``2026-12-02T06:12:12Z`` as ``2026-12-02 06:12:12 UTC`` (``?`` when not recorded)."""
    return f"{stamp.replace('T', ' ').removesuffix('Z')} UTC" if stamp else "?"


def facts(report: ReportView) -> list[str]:
    """What a shared report ran and when: the times, the job, the catalog, the judges, gradebench's version and the
    benchmark's id, salt and scorer, a line each."""
    m = report.meta
    ran = f"ran {_when(m.started_at)} to {_when(m.finished_at)}" if m.started_at else "when it ran: not recorded"
    if m.rejudged_at:
        ran += f"; judged again {_when(m.rejudged_at)}"
    return [
        ran,
        f"job {m.spec.job or m.job or '?'}" + (f" ({m.job})" if m.spec.job and m.job else ""),
        f"catalog {m.spec.catalog or '(made in code)'} · grade {m.spec.grade or '?'} · reference {m.reference_entry}",
        f"{judges_text(m.judges)} · scorer {m.spec.scorer or 'none'}",
        f"gradebench {m.gradebench_version or '?'} · benchmark {m.benchmark_id or '-'} · salt {m.spec.salt!r}",
    ]


def _entries_html(report: ReportView) -> Markup:
    """The catalog's terms of each entry that ran or judged: its model and the prices its calls were priced at."""
    terms = report.meta.entries
    if not terms:
        return tag("p", tag("i", "the entries' terms were not kept in this report"))
    columns = ("model", "price_in", "price_out", "price_cached_in", "currency", "price_source")
    rows = [{"entry": name, **{c: t.get(c) for c in columns}} for name, t in terms.items()]
    schema = {"entry": pl.String(), **{c: pl.Float64() if c.startswith("price_") else pl.String() for c in columns}}
    schema["price_source"] = pl.String()
    table = html_table(pl.DataFrame(rows, schema=schema), fit=True)
    return concat(
        tag("p", "prices per 1M tokens, as each entry's calls were priced (a provider's own figure wins):"), table
    )


def page(report: ReportView, *, lowest: int = LOWEST) -> Markup:
    """The whole report as one HTML document that loads nothing: when and what it ran (the job, the catalog, the
    judges, the version), the summary (header, stop marker, judge headlines, models table, verdicts,
    recommendation), the rubric and the entries' prices, the charts as inline SVG, the diagnostics (rows saying the
    same of several runs once) and each entry's ``lowest`` lowest-scoring runs beside the reference run of the same
    input (a transcript shown once)."""
    m = report.meta
    rubric = tag("details", tag("summary", "the rubric the judge read"), pre(m.spec.rubric or "(none)"))
    entries = tag("details", tag("summary", "the entries and their prices"), _entries_html(report))
    head = _present.header(report)
    low = f"{_present.plural(lowest, 'lowest-scoring run')} of each entry, beside the reference run of its input"
    title = f"{m.job or 'gradebench'}: gradebench report" + (f" of {_when(m.started_at)}" if m.started_at else "")
    said = join((tag("li", line) for line in facts(report)), Markup("\n"))
    sections = [
        tag("h1", title),
        tag("ul", said, class_="gb-facts"),
        _present.html(report),
        concat(rubric, entries),
        concat(tag("h2", "Charts"), _charts_html(report)),
        concat(tag("h2", "Diagnostics"), _diagnostics_html(report)),
        *_controls_html(report),
        concat(tag("h2", "Transcripts"), tag("p", low), _runs_html(report, lowest)),
    ]
    viewport = tag("meta", name="viewport", content="width=device-width, initial-scale=1")
    head_html = tag("head", tag("meta", charset="utf-8"), viewport, tag("title", f"{title} · {head}"), _PAGE_CSS, CSS)
    body = tag("body", Markup("\n"), join(sections, Markup("\n")), Markup("\n"))
    return concat(Markup("<!DOCTYPE html>\n"), tag("html", head_html, Markup("\n"), body, lang="en"), Markup("\n"))


def write_page(report: ReportView, path: str | Path, *, lowest: int = LOWEST) -> Path:
    """Write `page` to ``path`` (its folder created if needed); the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(report, lowest=lowest), encoding="utf-8")
    return out
