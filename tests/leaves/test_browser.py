"""The race-a-grade notebook in a real JupyterLab in headless Chromium, and its panel driven as a user would.

Every cell runs (no traceback; the panel and an offline Vega chart render), then the panel is clicked through: a grade
change, a fresh salt (the estimate beside Run now waits for a click: the reference runs are not cached), Run and
Stop mid-race (the stop marker shows), every tab (the Runs tab one line per run, the Models tab's ids unwrapped),
Rejudge, Export (every file listed), Run again from the cache (the estimate then says it is all cached). Before the
panel, a LabelPanel that the test adds below the notebook (a cell of its own, on the notebook's `report`) labels two
runs by its score buttons: the judge's score and the entry stay hidden until a run is answered and show after, and
the labels file then holds the two labels, read back here. No browser console error may appear on the way. The
exported report.html then opens from file:// in a page of its own: the models table and a chart show, with no console
error and no request but the file's own. out/browser/ gets the panel's screenshot, the label panel's, the whole
notebook, each tab of the stopped race and the report.html; the panel's screenshot replaces the README's
docs/panel.png only when asked (``make screenshot``, or GRADEBENCH_SCREENSHOT=1): a test run never rewrites a tracked
file.

Slow (~45 s on 2 cores) and needs Chromium at /usr/bin/chromium; skips with a hint when that is missing or will not
start, and when GRADEBENCH_SKIP_BROWSER=1.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import gradebench as gb

from ..browser_support import CHROMIUM, CHROMIUM_ARGS, ENABLE_HINT, JupyterLab, prepare_notebook

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="browser test: playwright is not installed (pip install -e '.[test]')"
)

REPO = Path(__file__).resolve().parent.parent.parent
NOTEBOOK = REPO / "notebooks" / "01_race_a_grade.ipynb"
SHOTS = REPO / "out" / "browser"
README_SHOT = REPO / "docs" / "panel.png"
LABEL_CELL = """\
# the browser test's own cell: a LabelPanel on the race above, whose runs the test reads (run id to entry and score)
report.runs.select("run_id", "role", "entry", "model", "score").write_parquet({runs!r})
label_panel = gb.widgets.LabelPanel(report, {labels!r}, n=2, seed=0)
label_panel
"""
LABELLED = (7, 3)  # the score buttons the test clicks, in order
WRITE_README_SHOT = os.environ.get("GRADEBENCH_SCREENSHOT") == "1"

RUN_TIMEOUT_S = 120  # all cells, from "Run All Cells" to an idle kernel
UI_TIMEOUT_MS = 30_000  # any single page step

STDERR = '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]'
KERNEL_STATUS_TEXT = '.jp-StatusBar-TextItem[title^="Change kernel for"]'  # "Python 3 (ipykernel) | Idle"
ERROR_LINE = re.compile(r"^\w*(Error|Exception)\b", re.MULTILINE)  # "SyntaxError: ..." has no "Traceback" line
CHART = "svg.marks, canvas.marks"  # what vega-embed draws, inside its .vega-embed element
MAX_HEIGHT = 16000  # px; the tallest window the notebook screenshot may use (Chromium caps textures at 16384)
TABS = ("Runs", "Models", "Cost vs quality", "Latency vs quality", "Transcript", "Diagnostics")
EXPORTED = (
    "runs.parquet",
    "models.parquet",
    "calls.parquet",
    "noise.parquet",
    "controls.parquet",
    "meta.json",
    "report.html",
)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright; skips with a hint when it is unavailable."""
    if os.environ.get("GRADEBENCH_SKIP_BROWSER") == "1":
        pytest.skip("browser test: GRADEBENCH_SKIP_BROWSER=1 is set")
    if not CHROMIUM.exists():
        pytest.skip(f"browser test: {CHROMIUM} not found; {ENABLE_HINT}")
    with sync_api.sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=30_000)
        except Exception as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            pytest.skip(f"browser test: Playwright could not start {CHROMIUM} ({reason}); {ENABLE_HINT}")
        try:
            yield chromium
        finally:
            chromium.close()


def test_the_panel_in_jupyterlab(browser: Any, tmp_path: Path) -> None:
    started = time.monotonic()
    root = tmp_path / "root"  # mirrors the repo's layout, so paths relative to the notebook resolve the same
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("*.ipynb", ".*"))
    shutil.copytree(REPO / "data", root / "data")
    labels, label_runs = tmp_path / "labels.parquet", tmp_path / "label-runs.parquet"
    label_cell = LABEL_CELL.format(runs=str(label_runs), labels=str(labels))
    nb = prepare_notebook(NOTEBOOK, root / "notebooks", append=[label_cell])
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "failure.png").unlink(missing_ok=True)
    env = {"GRADEBENCH_SIM_LATENCY_SCALE": "0.02", "GRADEBENCH_CACHE": str(tmp_path / "cache")}

    with JupyterLab(root, tmp_path / "lab", env=env) as lab:
        timings = {"server": time.monotonic() - started}
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(UI_TIMEOUT_MS)
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(f"page error: {e}"))
        try:
            path = nb.relative_to(root).as_posix()
            page.goto(f"{lab.url}/lab/tree/{path}?token={lab.token}", wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            wait_for_kernel_idle(page, timeout_s=60)
            timings["kernel idle"] = time.monotonic() - started

            run_all_cells(page)
            wait_until_all_cells_ran(page, lab)
            timings["cells ran"] = time.monotonic() - started
            check_page(page, console)
            label_two_runs(page, label_runs, labels)
            timings["labelled"] = time.monotonic() - started

            panel = panel_output(page)
            change_grade_and_back(panel)
            stop_a_fresh_race(page, panel)
            timings["stopped"] = time.monotonic() - started
            visit_every_tab(panel)
            click_and_wait(panel, "Rejudge", r"^rejudged \d+ runs")
            exported = click_and_wait(panel, "Export", r"^wrote ")
            assert all(name in exported for name in EXPORTED), exported
            open_the_html_report(browser, exported)
            timings["report.html"] = time.monotonic() - started
            panel.locator(".widget-text", has_text="cache salt").locator("input").fill("")
            click_and_wait(panel, "Run", r"^done in ")  # the notebook's race again: from the cache
            # the estimate looked again: every run is cached now but a failed one (a failure is never cached)
            # 10 inputs × 3 runs × 5 entries
            status(panel, r"^estimate: 150 runs, \d+ of them cached").wait_for(state="visible")
            timings["clicked through"] = time.monotonic() - started

            assert not console, "browser console errors:\n" + "\n".join(console)
            show_chart_tab(panel)
            frame_for_screenshots(page)
            panel_output(page).screenshot(path=str(SHOTS / "panel.png"))
            if WRITE_README_SHOT:
                shutil.copyfile(SHOTS / "panel.png", README_SHOT)
            page.screenshot(path=str(SHOTS / "notebook.png"), full_page=True)
        except Exception as e:
            e.add_note(f"JupyterLab log (tail):\n{lab.log(4000)}\nbrowser console errors: {console}")
            with contextlib.suppress(Exception):
                page.screenshot(path=str(SHOTS / "failure.png"))
                e.add_note(f"screenshot: {SHOTS / 'failure.png'}")
            raise
        finally:
            page.close()
    timings["total"] = time.monotonic() - started
    print("\nbrowser test:", {k: round(v, 1) for k, v in timings.items()})


# ---------------------------------------------------------------------------------------------------- the labels


def label_two_runs(page: Any, runs_path: Path, labels_path: Path) -> None:
    """Click two score buttons of the LabelPanel (`LABELLED`): before a run is answered nothing names its entry or
    the judge's score; after, "last answer" reveals both, for the run just labelled. Then the labels file holds the
    two labels, in the order given, of runs of this report."""
    runs = pl.read_parquet(runs_path)
    names = sorted({*runs["entry"].drop_nulls(), *runs["model"].drop_nulls()})
    panel = page.locator(".gb-label-panel").first
    panel.wait_for(state="visible")
    revealed = panel.locator(".gb-label-revealed")
    sync_api.expect(panel).to_contain_text("run 1 of 2 to label", timeout=UI_TIMEOUT_MS)
    shown = panel.inner_text()
    assert revealed.count() == 0 and "the judge gave" not in shown, shown
    assert not [n for n in names if n in shown], f"the run to label names an entry or model: {shown}"
    said = []
    for place, value in enumerate(LABELLED, start=1):
        panel.locator(f"button.gb-label-button.gb-label-{value}").click()
        sync_api.expect(revealed).to_contain_text(f"you gave {value};", timeout=UI_TIMEOUT_MS)  # saved, then shown
        said.append(str(revealed.inner_text()))
        assert len(gb.HumanLabels.read(labels_path)) == place  # every answer saved at once
    sync_api.expect(panel).to_contain_text("all 2 drawn runs are labelled", timeout=UI_TIMEOUT_MS)
    assert panel.locator("button.gb-label-button:enabled").count() == 0, "answer buttons still enabled when done"
    panel.screenshot(path=str(SHOTS / "labels.png"))

    labels = gb.HumanLabels.read(labels_path)
    labels.validate(runs)  # runs of this report, none a reference run
    assert list(labels.scores.values()) == [float(v) for v in LABELLED], labels.frame
    judged = {r["run_id"]: r for r in runs.iter_rows(named=True)}
    for run_id, text in zip(labels.scores, said, strict=True):
        run = judged[run_id]
        assert f"the judge gave {run['score']:g} " in text and text.endswith(f"it was {run['entry']}"), (text, run)


# ------------------------------------------------------------------------------------------------- the html report


def open_the_html_report(browser: Any, exported: str) -> None:
    """Open the report.html that Export wrote (the status says where) from file:// in a page of its own: the models
    table and a chart are visible, nothing is requested but the file itself, and the console stays clean."""
    folder = re.search(r" to (/.*)$", exported.strip())
    assert folder, exported
    url = (Path(folder.group(1)) / "report.html").as_uri()
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    requests: list[str] = []
    console: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"page error: {e}"))
    try:
        page.goto(url, wait_until="load")
        page.locator("table.gb-models").wait_for(state="visible")
        page.locator("figure.gb-chart svg").first.wait_for(state="visible")
        assert page.locator("table.gb-models tbody tr").count() >= 1  # the entries judged before the Stop
        assert "STOPPED EARLY" in page.locator("body").inner_text()  # the exported race was stopped
        page.screenshot(path=str(SHOTS / "report-html.png"))
    finally:
        page.close()
    assert requests == [url], f"report.html requested more than itself: {requests}"
    assert not console, "report.html console errors:\n" + "\n".join(console)


# ------------------------------------------------------------------------------------------------------ the notebook


def wait_for_kernel_idle(page: Any, timeout_s: float) -> None:
    """Wait until the status bar reports the kernel connected and idle. (The toolbar's execution indicator says
    "idle" before any kernel exists, so it cannot tell a ready kernel from none.)"""
    sync_api.expect(page.locator(KERNEL_STATUS_TEXT).first).to_have_text(
        re.compile(r"\|\s*Idle\s*$"), timeout=timeout_s * 1000
    )


def run_all_cells(page: Any) -> None:
    """Run → Run All Cells from the main menu bar; confirm the kernel if JupyterLab asks; retry if nothing starts."""
    for _ in range(3):
        page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})  # focus the notebook panel
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator(".lm-Menu-item:not(.lm-mod-disabled)", has_text="Run All Cells").first.click()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            select_kernel = page.locator(".jp-Dialog", has_text="Select Kernel")
            if select_kernel.count():
                select_kernel.locator(".jp-Dialog-button.jp-mod-accept").first.click()
            prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
            if any(p.strip() != "[ ]:" for p in prompts):
                return
            page.wait_for_timeout(100)
    raise AssertionError(f"Run All Cells did not start any cell (prompts {prompts})")


def wait_until_all_cells_ran(page: Any, lab: JupyterLab) -> None:
    """Wait until every code cell shows an execution count and the kernel is idle again; stop early on an error
    output (JupyterLab skips the cells after a failed one, so they would never get a count)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
        status = page.locator(KERNEL_STATUS_TEXT).first.inner_text()
        if status.endswith("Idle") and (errors_shown(page) or (prompts and all(ran(p) for p in prompts))):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"cells did not finish within {RUN_TIMEOUT_S} s (prompts {prompts}, kernel {status!r});\n{lab.log()}"
            )
        page.wait_for_timeout(250)


def ran(prompt: str) -> bool:
    """True for an input prompt like "[3]:", false for "[ ]:" (not run) and "[*]:" (queued or running)."""
    return bool(re.fullmatch(r"\[\d+\]:", prompt.strip()))


def errors_shown(page: Any) -> list[str]:
    """Error outputs and tracebacks on stderr (JupyterLab renders an error output as stderr text)."""
    texts = page.locator(STDERR).all_inner_texts()
    return [t for t in texts if "Traceback" in t or ERROR_LINE.search(t)]


def check_page(page: Any, console: list[str]) -> None:
    errors = errors_shown(page)
    assert not errors, "a cell failed:\n" + "\n---\n".join(errors)

    broken = page.locator(".jupyter-widgets-error-widget").all_inner_texts()
    assert not broken, f"widget views failed to render: {broken}; console errors: {console}"

    page.locator(".jupyter-widgets.widget-button", has_text="Run").first.wait_for(state="visible")
    page.locator(".jupyter-widgets .lm-TabBar-tab", has_text="Cost vs quality").first.wait_for(state="attached")

    page.locator(".vega-embed").locator(CHART).first.wait_for(state="attached")
    js_errors = page.locator(".jp-OutputArea-output", has_text="JavaScript Error").all_inner_texts()
    assert not js_errors, f"a chart failed to render: {js_errors}; console errors: {console}"
    unavailable = page.get_by_text("chart unavailable").all_inner_texts()  # BenchmarkPanel's note for a failed chart
    assert not unavailable, f"the panel could not draw a chart: {unavailable}"


# --------------------------------------------------------------------------------------------------------- the panel


def panel_output(page: Any) -> Any:
    """The output area that holds the panel (the widget view with the Run button)."""
    run = page.locator(".jupyter-widgets.widget-button", has_text="Run")
    return page.locator(".jp-OutputArea-output").filter(has=run).first


def button(panel: Any, name: str) -> Any:
    return panel.locator("button.widget-button").filter(has_text=re.compile(rf"^\s*{name}\s*$")).first


def status(panel: Any, pattern: str) -> Any:
    """The status line, once it says something matching ``pattern``."""
    return panel.locator(".widget-html-content > span").filter(has_text=re.compile(pattern)).first


def click_and_wait(panel: Any, name: str, said: str) -> str:
    """Click a panel button and wait until the status line says ``said`` (a regex); the status text."""
    button(panel, name).click()
    line = status(panel, said)
    line.wait_for(state="visible")
    return str(line.inner_text())


def change_grade_and_back(panel: Any) -> None:
    """Pick the large grade, then standard again: the candidates list is rebuilt twice (fewer options, then more);
    this once logged "Cannot set properties of undefined (setting 'selected')". And the grade's labels fit."""
    grade = panel.locator(".widget-dropdown", has_text="grade").locator("select")
    fit = grade.evaluate(
        """el => {
            const s = getComputedStyle(el), ctx = document.createElement("canvas").getContext("2d");
            ctx.font = `${s.fontSize} ${s.fontFamily}`;
            const widest = Math.max(...[...el.options].map(o => ctx.measureText(o.textContent).width));
            return {widest, room: el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)};
        }"""
    )
    assert fit["widest"] <= fit["room"], f"the grade dropdown cuts its labels: {fit}"
    for name in ("large", "standard"):
        label = next(o for o in grade.locator("option").all_inner_texts() if o.startswith(name))
        grade.select_option(label=label)
        candidates = panel.locator(".widget-select-multiple select option")
        sync_api.expect(candidates.first).to_contain_text(f" · {name} · ")


def stop_a_fresh_race(page: Any, panel: Any) -> None:
    """Run with a new salt (nothing cached), Stop it mid-race: the status says so and the tabs carry the marker."""
    panel.locator(".widget-text", has_text="cache salt").locator("input").fill("browser")
    status(panel, r"^an estimate runs 10 reference runs on sim/steady first").wait_for(state="visible")
    assert button(panel, "Estimate").is_enabled()  # a fresh salt: the estimate would spend, so it waits for a click
    click_and_wait(panel, "Run", r"^racing ")
    wait_until_judged(page, panel, at_least=2)  # a time would be too short on a loaded machine, or too long
    click_and_wait(panel, "Stop", r"^stopped: ")
    shown = visible_tab(panel)  # the Runs tab
    sync_api.expect(shown).to_contain_text("STOPPED")


def wait_until_judged(page: Any, panel: Any, *, at_least: int) -> None:
    """Until the progress table shows ``at_least`` candidate runs judged (its "judged" column, reference row aside)."""
    progress = panel.locator("table", has_text="landed").first
    deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        rows = [r.split("\t") for r in progress.inner_text().splitlines()[1:]]
        judged = sum(int(r[2]) for r in rows if len(r) > 2 and r[2].strip().isdigit())
        if judged >= at_least:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"fewer than {at_least} runs judged after {UI_TIMEOUT_MS} ms: {progress.inner_text()!r}")


def visible_tab(panel: Any) -> Any:
    return panel.locator(".widget-tab-contents > :not(.lm-mod-hidden)").first


def visit_every_tab(panel: Any) -> None:
    for title in TABS:
        panel.locator(".lm-TabBar-tab", has_text=title).first.click()
        shown = visible_tab(panel)
        shown.wait_for(state="visible")
        slug = title.lower().replace(" ", "-")
        if title in ("Cost vs quality", "Latency vs quality"):
            shown.locator(CHART).first.wait_for(state="visible")
        elif title == "Runs":
            sync_api.expect(shown).to_contain_text("STOPPED")
            check_one_line_per_row(shown.locator("table.gb-line"), "Runs")
        elif title == "Models":
            sync_api.expect(shown).to_contain_text("STOPPED")
            check_one_line_per_row(shown.locator("table.gb-fit"), "Models")
        else:
            sync_api.expect(shown).to_contain_text("STOPPED")
        shown.screenshot(path=str(SHOTS / f"tab-{slug}.png"))


def check_one_line_per_row(table: Any, tab: str) -> None:
    """Every body row of ``table`` is one line of text high: its box against its cells' line height and padding."""
    rows = table.evaluate(
        """t => {
            const td = t.querySelector("tbody td"), s = getComputedStyle(td);
            const line = parseFloat(s.lineHeight) || 1.2 * parseFloat(s.fontSize);
            const one = line + parseFloat(s.paddingTop) + parseFloat(s.paddingBottom) + 2;  // and the borders
            const heights = [...t.querySelectorAll("tbody tr")].map(r => r.getBoundingClientRect().height);
            return {line, one, heights};
        }"""
    )
    assert rows["heights"], f"the {tab} tab has no rows"
    tall = [h for h in rows["heights"] if h > rows["one"] + 0.5]
    assert not tall, f"{tab} tab rows wrap: {len(tall)} of {len(rows['heights'])} taller than one line ({rows})"
    assert max(rows["heights"]) < 2 * rows["line"]


def show_chart_tab(panel: Any) -> None:
    """Select the "Cost vs quality" tab and wait until its chart is drawn and visible."""
    panel.locator(".lm-TabBar-tab", has_text="Cost vs quality").first.click()
    visible_tab(panel).locator(CHART).first.wait_for(state="visible")  # the tab's child may be the .vega-embed


def frame_for_screenshots(page: Any) -> None:
    """Hide the file browser and make the window as tall as the notebook, so one page screenshot shows it all."""
    page.keyboard.press("Control+b")  # application:toggle-left-area
    page.locator("#jp-left-stack").wait_for(state="hidden")
    scroller = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
    overflow = scroller.evaluate(
        """el => {  // the last cell's bottom, not scrollHeight: that includes the scroll-past-end padding
            const cells = el.querySelectorAll(".jp-Cell");
            const bottom = cells[cells.length - 1].getBoundingClientRect().bottom;
            return Math.ceil(bottom - el.getBoundingClientRect().top + el.scrollTop + 24 - el.clientHeight);
        }"""
    )
    if overflow > 0:
        size = page.viewport_size
        page.set_viewport_size({"width": size["width"], "height": min(size["height"] + overflow + 40, MAX_HEIGHT)})
    scroller.evaluate("el => el.scrollTo(0, 0)")
    page.wait_for_timeout(300)  # let Lumino lay the panels out again
