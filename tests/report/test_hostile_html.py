"""Every HTML surface, built from a real race whose every name and text is hostile, runs nothing and loads nothing.

The race runs over loopback HTTP (the suite's scripted endpoint) with hostile entry names, model ids, a hostile job
name, input ids, candidate outputs and judge reasons, and a labeller's name on human labels. Then every surface is
rendered: `Estimate`, `BenchmarkReport` (with labels, so the agreement block shows) and `Comparison` in a notebook
(``_repr_html_``), the saved HTML report page, a chart saved as self-contained HTML (its spec is inside a
``<script>``), and every HTML widget of a `BenchmarkPanel` that raced it and of a `LabelPanel` on it.

The fast slice checks the markup: each hostile text is there only escaped. The browser slice loads each surface from
file:// in headless Chromium (skipped with a hint when it is missing) and checks that no payload ran (each would set
``window.__gbPwned`` or the title, or open a dialog), no element a payload would add exists, nothing was requested but
the file itself, and the hostile texts are on the page as text.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import ipywidgets as w
import pytest

import gradebench as gb
from gradebench._base.html import Markup, concat, join, script_json, tag
from gradebench._report.charts import cost_quality, save_chart
from gradebench.testing import completion
from gradebench.widgets import BenchmarkPanel, LabelPanel

from ..browser_support import CHROMIUM, CHROMIUM_ARGS, ENABLE_HINT
from ..conftest import Scripted

# what each payload does if it runs: set the marker, change the title, or fetch something
IMG = "<img src=x onerror=window.__gbPwned=1>"
BREAK_ATTRIBUTE = '"><script>window.__gbPwned=2</script>'
END_SCRIPT = "</script><script>window.__gbPwned=3;document.title='PWNED'</script>"
COMMENT = "<!--<script>window.__gbPwned=4</script>"
SVG = "<svg onload=window.__gbPwned=5><a href=javascript:window.__gbPwned=6>x</a></svg>"
LEAK = '<link rel=stylesheet href="http://127.0.0.1:9/leak.css"><iframe src="http://127.0.0.1:9/f"></iframe>'
TEMPLATE = "{{ constructor.constructor('window.__gbPwned=7')() }}"
RTL = "\u202eevil\u202c"
SURROGATE = "lone \ud800 surrogate"

ENTRY = f"acme/x{IMG}"
MODEL = f"m{BREAK_ATTRIBUTE}"
JUDGE = f"acme/judge{END_SCRIPT}"
INPUT_IDS = [f"q{COMMENT}", f"q{RTL}{LEAK}"]
OUTPUT = f"answer {SVG} {TEMPLATE} {SURROGATE}"
REASON = f"fine {END_SCRIPT} {IMG} {LEAK}"
JOB = f"job{BREAK_ATTRIBUTE}"
LABELLER = f"me{IMG}"
SHOWN = [IMG, BREAK_ATTRIBUTE, END_SCRIPT, SVG, TEMPLATE]  # texts a reader must see on some page, whole
PAYLOADS = [IMG, BREAK_ATTRIBUTE, END_SCRIPT, COMMENT, SVG, LEAK]  # none may appear unescaped in any markup


async def hostile_job(input: dict, seat: gb.Seat) -> str:
    """Answer the question."""
    return (await seat.chat([{"role": "user", "content": f"Question {input['id']}?"}])).text


hostile_job.name = JOB  # type: ignore[attr-defined]  # the name a job reports (`Job.name` reads it first)


def answer(body: dict, request: httpx2.Request) -> httpx2.Response:
    if request.headers["x-gradebench-role"] == "judge":
        said = completion(json.dumps({"accuracy": 5, "work": 2, "reason": REASON}))
    else:
        said = completion(OUTPUT, tokens=(100, 20))
    # ASCII JSON, so the lone surrogate travels as the \ud800 escape a provider could send
    return httpx2.Response(200, content=json.dumps(said).encode(), headers={"content-type": "application/json"})


def hostile_catalog(endpoint: Scripted) -> gb.Catalog:
    base = {"base_url": endpoint.base_url, "price_in": 1.0, "price_out": 2.0, "max_retries": 0}
    entries = [
        gb.Entry(name="acme/pick", model="pick", grade="standard", **base),
        gb.Entry(name=ENTRY, model=MODEL, grade="standard", **base),
        gb.Entry(name=JUDGE, model="judge", grade="large", **{**base, "price_in": 5.0}),
    ]
    return gb.Catalog(
        entries, grades=["standard", "large"], picks={"standard": "acme/pick"}, ceiling=JUDGE, source="hostile"
    )


def html_widgets(widget: Any) -> list[str]:
    """The markup of every `ipywidgets.HTML` in ``widget``'s tree."""
    found = [widget.value] if isinstance(widget, w.HTML) else []
    for child in getattr(widget, "children", ()):
        found += html_widgets(child)
    return found


@dataclass
class Raced:
    catalog: gb.Catalog
    inputs: list[dict[str, str]]
    estimate: str
    report: gb.BenchmarkReport
    again: gb.BenchmarkReport
    folder: Path


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> Raced:
    """Two hostile races of one job (two salts), and the first one's estimate."""
    tmp = tmp_path_factory.mktemp("hostile")
    catalog = hostile_catalog(Scripted(answer))
    inputs = [{"id": i} for i in INPUT_IDS]

    def race(salt: str) -> gb.Benchmark:
        made = gb.Benchmark(hostile_job, runs=2, catalog=catalog, grade="standard", cache=tmp / "cache", progress=False)
        return made.set_spec(salt=salt).set_inputs(inputs)

    first, second = race("one"), race("two")
    estimate = first.estimate_sync()._repr_html_()
    first.run_sync()
    second.run_sync()
    report = first.report()
    assert ENTRY in report.runs["entry"].to_list() and report.meta.job == JOB  # the hostile names made it in
    return Raced(catalog, inputs, estimate, report, second.report(), tmp)


@pytest.fixture(scope="module")
def notebook_views(raced: Raced) -> dict[str, str]:
    """What a notebook shows: the estimate, the report with labels (its agreement block), a comparison and a
    `LabelPanel` after one answer (the judge's score, reason and the entry revealed)."""
    report = raced.report
    candidates = report.runs.filter(role="candidate")["run_id"].to_list()
    labelled = report.with_labels(gb.HumanLabels.from_scores(dict.fromkeys(candidates, 6), labeller=LABELLER))
    assert labelled.agreement.height  # so the agreement block is drawn
    labels = LabelPanel(report, raced.folder / "labels.parquet", n=2, seed=0)
    labels.answer(7)
    return {
        "estimate": raced.estimate,
        "report": labelled._repr_html_(),
        "comparison": gb.compare(report, raced.again)._repr_html_(),
        "label panel": concat(*(Markup(v) for v in html_widgets(labels))),
    }


@pytest.fixture(scope="module")
def files_and_panel(raced: Raced) -> dict[str, str]:
    """The saved report page, a chart saved as HTML, and every HTML widget of a `BenchmarkPanel` that raced the
    hostile entry (a few seconds: vl-convert draws the charts)."""
    panel = BenchmarkPanel(raced.catalog, jobs=[hostile_job], inputs={JOB: raced.inputs}, cache=raced.folder / "p")
    panel.candidates.value = (ENTRY,)
    panel.runs.value = 1
    assert asyncio.run(panel.start()) is not None
    return {
        "page": raced.report.to_html(raced.folder / "report.html").read_text(encoding="utf-8"),
        "chart": save_chart(cost_quality(raced.report), raced.folder / "chart.html").read_text(encoding="utf-8"),
        "panel": concat(*(Markup(v) for v in html_widgets(panel))),
    }


def escaped_only(surfaces: dict[str, str]) -> None:
    """No payload is in any surface's markup as markup; the texts a reader must see are there escaped."""
    for name, markup in surfaces.items():
        for payload in PAYLOADS:
            assert payload not in markup, (name, payload)
    said = "".join(surfaces.values())
    for text in SHOWN:
        assert html.escape(text) in said or script_json(text)[1:-1] in said, text


# ------------------------------------------------------------------------------------------------------ fast slice


def test_the_notebook_views_show_hostile_text_escaped_only(notebook_views: dict[str, str]) -> None:
    escaped_only(notebook_views)
    assert all(isinstance(markup, Markup) for markup in notebook_views.values())  # built, not concatenated by hand


def test_the_builder_escapes_all_but_its_own_fragments() -> None:
    cell = tag("td", IMG, title=BREAK_ATTRIBUTE, data_run=RTL)
    assert cell == (
        '<td title="&quot;&gt;&lt;script&gt;window.__gbPwned=2&lt;/script&gt;" data-run="\u202eevil\u202c">'
        "&lt;img src=x onerror=window.__gbPwned=1&gt;</td>"
    )
    assert tag("p", tag("b", "bold")) == "<p><b>bold</b></p>"  # a fragment is markup already
    mixed = "<b>" + tag("i", "x")  # a fragment joined by hand to a plain str is a plain str again: escaped
    assert type(mixed) is str and tag("p", mixed) == "<p>&lt;b&gt;&lt;i&gt;x&lt;/i&gt;</p>"
    assert join([IMG, tag("br")], ", ").startswith("&lt;img")
    for url in ("javascript:alert(1)", " JaVa\tScRiPt:alert(1)", "data:text/html,<script>", "vbscript:x"):
        with pytest.raises(ValueError, match="refusing"):
            tag("a", "x", href=url)
    assert tag("a", "x", href="report.html") == '<a href="report.html">x</a>'
    for bad in ("scr ipt", "a><script", ""):
        with pytest.raises(ValueError):
            tag(bad)
    assert json.loads(script_json({"a": END_SCRIPT + COMMENT + SURROGATE})) == {"a": END_SCRIPT + COMMENT + SURROGATE}
    assert "<" not in script_json(END_SCRIPT + COMMENT) and "\u2028" not in script_json("\u2028")


# --------------------------------------------------------------------------------------------------- browser slice


@pytest.fixture(scope="module")
def browser() -> Any:
    """Headless Chromium driven by Playwright; skips with a hint when it is unavailable."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    if os.environ.get("GRADEBENCH_SKIP_BROWSER") == "1":
        pytest.skip("browser test: GRADEBENCH_SKIP_BROWSER=1 is set")
    if not CHROMIUM.exists():
        pytest.skip(f"browser test: {CHROMIUM} not found; {ENABLE_HINT}")
    with sync_api.sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=30_000)
        except Exception as e:
            pytest.skip(f"browser test: Playwright could not start {CHROMIUM} ({type(e).__name__}); {ENABLE_HINT}")
        try:
            yield chromium
        finally:
            chromium.close()


PROBE = """() => ({
    pwned: window.__gbPwned === undefined ? null : String(window.__gbPwned),
    title: document.title,
    added: document.querySelectorAll('img[src="x"], iframe, link[rel="stylesheet"], svg[onload], a[href^="javascript"]')
        .length,
    text: document.body ? document.body.innerText : "",
    drawn: document.querySelectorAll(".vega-embed svg.marks").length,
})"""


DRAWN_OR_RAN = "() => document.querySelector('.vega-embed svg.marks') !== null || window.__gbPwned !== undefined"


def as_document(name: str, markup: str) -> str:
    """A fragment as a notebook shows it: inside a page of its own (the report page and the chart are pages)."""
    if name in ("page", "chart"):
        return markup
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head><body>{markup}</body></html>'


@pytest.mark.browser
def test_no_surface_runs_or_loads_anything_in_chromium(
    notebook_views: dict[str, str], files_and_panel: dict[str, str], browser: Any, tmp_path: Path
) -> None:
    surfaces = {**notebook_views, **files_and_panel}
    escaped_only(surfaces)
    for name, markup in surfaces.items():
        path = tmp_path / f"{name.replace(' ', '-')}.html"
        # a lone surrogate cannot be written as UTF-8: it goes to the file as the replacement character
        path.write_text(as_document(name, markup), encoding="utf-8", errors="replace")
        page = browser.new_page()
        requests: list[str] = []
        dialogs: list[str] = []
        page.on("request", lambda r, requests=requests: requests.append(r.url))
        page.on("dialog", lambda d, dialogs=dialogs: (dialogs.append(d.message), d.dismiss()))
        try:
            page.goto(path.as_uri(), wait_until="load")
            if name == "chart":  # vega-embed draws after load (or, were the spec markup, a payload has run)
                page.wait_for_function(DRAWN_OR_RAN, timeout=10_000)
            seen = page.evaluate(PROBE)
        finally:
            page.close()
        assert seen["pwned"] is None and seen["title"] != "PWNED" and not dialogs, (name, seen["pwned"], dialogs)
        assert seen["added"] == 0, name
        assert requests == [path.as_uri()], (name, requests)
        if name == "chart":  # the escaped spec still draws (vega-embed reads it as the same JSON)
            assert seen["drawn"] == 1 and IMG in seen["text"], seen
        if name in ("estimate", "report", "page", "panel"):  # the surfaces that show an entry's name as text
            assert IMG in seen["text"], name


def test_html_is_escaped_in_one_place() -> None:
    """No module escapes HTML by hand: the builder is the one place (an escape made by hand can be forgotten)."""
    package = Path(gb.__file__).parent
    builder = package / "_base" / "html.py"
    by_hand = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path != builder and ("html.escape" in (text := path.read_text(encoding="utf-8")) or "import html\n" in text)
    ]
    assert not by_hand, by_hand
