"""The notebook panel, tested by building it and driving it as a user would (clicks, values), on the sim fleet."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import json
import logging
import os
import re
import time
from pathlib import Path

import altair as alt
import httpx2
import pytest

import gradebench as gb
from gradebench import widgets
from gradebench.jobs import EXAMPLE_JOBS, OrderAgent, SelectingAgent
from gradebench.results import RaceEvent
from gradebench.vocab import EventKind, Role
from gradebench.widgets import BenchmarkPanel


def rows(html: str) -> int:
    """Data rows of the (first) table in a tab's HTML."""
    return html.count("<tr>") - 1


def standard_panel(catalog: gb.Catalog, *, candidates=("sim/steady", "sim/swift"), runs=2, first=2, **kw):
    panel = BenchmarkPanel(catalog, **kw)
    panel.grade.value = "standard"
    panel.candidates.value = candidates
    panel.runs.value = runs
    panel.n_inputs.value = first
    return panel


def plain(text: str) -> str:
    """What a reader sees of a widget's HTML: tags and styles dropped, entities decoded."""
    return html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", text))


async def finished(panel: BenchmarkPanel) -> None:
    assert panel.task is not None
    await asyncio.wait([panel.task])


def test_default_state() -> None:
    async def haiku(input: dict, seat: gb.Seat) -> str:
        """Write a haiku about the topic."""
        return (await seat.chat([{"role": "user", "content": input["topic"]}])).text

    catalog = gb.sim.catalog(latency_scale=0)
    assert BenchmarkPanel(catalog).job.value == OrderAgent.name  # no job given: it opens on the example job
    panel = BenchmarkPanel(catalog, jobs=[haiku])
    assert isinstance(panel, widgets.BenchmarkPanel) and panel.tabs in panel.children
    assert list(panel.job.options) == ["haiku", *EXAMPLE_JOBS]  # yours first: it opens on it
    assert panel.job.value == "haiku" and panel.rubric.value == ""
    panel.job.value = OrderAgent.name
    assert panel.rubric.value == OrderAgent.rubric
    assert panel.grade.value == OrderAgent.grade == "standard"  # the grade the job declares it needs
    assert panel.candidates.value == tuple(gb.Benchmark.candidates(catalog, "standard"))
    labels = dict((v, k) for k, v in panel.candidates.options)
    assert labels["sim/swift"] == "sim/swift · standard · 0.1 in / 0.4 out USD per 1M · sim · callable"
    assert labels["sim/steady"].startswith("★ sim/steady")  # the grade's pick: the reference
    panel.job.value = "haiku"  # a job that declares no grade keeps the grade chosen
    assert panel.grade.value == "standard"
    panel.grade.value = "small"
    assert labels != dict((v, k) for k, v in panel.candidates.options)
    assert dict((v, k) for k, v in panel.candidates.options)["sim/mini"].startswith("★ sim/mini")
    panel.job.value = OrderAgent.name
    assert panel.grade.value == "standard"
    assert panel.runs.value == 3 and panel.n_inputs.value == 10 and not panel.all_inputs.value  # enough for a verdict
    assert plain(panel.inputs_note.value) == "10 of 26 inputs"
    assert [v for _, v in panel.scorer.options] == ["none", "field_equals", "numeric_close", "set_f1", "choice_letter"]
    assert panel.scorer.value == "none" and panel.scorer_path.disabled
    assert panel.salt.value == "" and panel.export_dir.value == "out/panel"
    assert not panel.run_button.disabled and panel.stop_button.disabled
    assert panel.tabs.titles == ("Runs", "Models", "Cost vs quality", "Latency vs quality", "Transcript", "Diagnostics")
    assert panel.task is None and panel.bench is None and panel.report is None

    panel.job.value = SelectingAgent.name  # the job's own scorer comes first, and its rubric
    assert panel.scorer.value == "job" and "field_equals(choice)" in dict(panel.scorer.options).__repr__()
    assert panel.rubric.value == SelectingAgent.rubric
    assert plain(panel.inputs_note.value) == "10 of 24 inputs"
    panel.all_inputs.value = True
    assert panel.n_inputs.disabled and plain(panel.inputs_note.value) == "24 of 24 inputs"
    panel.job.value = "haiku"  # no inputs given for it: said at once, and Run says so too
    assert "no inputs for job 'haiku'" in plain(panel.inputs_note.value)


def test_changing_grade_refreshes_candidates() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    panel = BenchmarkPanel(catalog)
    for grade in catalog.grades:
        panel.grade.value = grade
        assert [v for _, v in panel.candidates.options] == [e.name for e in catalog.of_grade(grade)]
        assert panel.candidates.value == tuple(gb.Benchmark.candidates(catalog, grade))
    assert all(" · large · " in label for label, _ in panel.candidates.options)


async def test_an_uncallable_entry_is_labelled_and_never_selected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_VAR", raising=False)
    sim = gb.sim.catalog(latency_scale=0)
    entries = [dataclasses.replace(e, api_key_env="UNSET_VAR") if e.name == "sim/swift" else e for e in sim.entries]
    catalog = gb.Catalog(entries, grades=sim.grades, picks=sim.picks, ceiling=sim.ceiling_name)
    panel = BenchmarkPanel(catalog)
    panel.grade.value = "standard"
    label = next(k for k, v in panel.candidates.options if v == "sim/swift")
    assert "NOT CALLABLE: environment variable UNSET_VAR is not set" in label
    assert "sim/swift" not in panel.candidates.value and "sim/steady" in panel.candidates.value
    assert "sim/swift" in panel.candidates_note.value and "UNSET_VAR" in panel.candidates_note.value
    panel.candidates.value = ("sim/swift", "sim/steady")  # a user selects it anyway: it is dropped, visibly
    assert panel.candidates.value == ("sim/steady",)
    assert "ignored sim/swift: not callable" in panel.candidates_note.value
    panel.candidates.value = ("sim/swift",)
    assert panel.candidates.value == ()
    panel.run_button.click()  # nothing callable selected: a status line, not an exception
    assert panel.task is None and "no candidate selected" in panel.status.value


def test_outside_an_event_loop_run_says_how_to_start() -> None:
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    panel.run_button.click()
    assert panel.task is None and "no running event loop" in panel.status.value and not panel.run_button.disabled


async def test_start_fills_every_tab() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    panel = standard_panel(catalog)
    report = await panel.start()
    assert report is panel.report is panel.bench.report() and panel.error is None
    assert "done in" in panel.status.value and not panel.run_button.disabled and panel.stop_button.disabled

    inputs, candidates, runs = 2, 2, 2
    assert report.runs.height == inputs + candidates * runs * inputs
    assert rows(panel.runs_table.value) == report.runs.height
    assert rows(panel.models_table.value) == report.models.height == candidates
    assert "★ sim/steady" in panel.models_table.value and "[" in plain(panel.models_table.value)  # intervals
    assert "verdict against the reference" in plain(panel.models_table.value)
    assert "recommendation" in plain(panel.models_table.value)
    for verdict in report.models["verdict"].drop_nulls().to_list():
        assert f"■ {verdict}" in plain(panel.models_table.value)
    for name in ("sim/steady", "sim/swift"):  # progress: every run landed and judged
        assert f'<td>{name}</td><td>4 / 4</td><td class="n">4</td><td class="n">0</td>' in panel.progress_table.value
    assert panel.progress_bar.value == panel.progress_bar.max == 8

    for box in (panel.cost_chart, panel.latency_chart):
        assert len(box.children) == 1 and isinstance(box.children[0], alt.JupyterChart), box.children

    candidate_runs = report.runs.filter(role="candidate")
    assert [v for _, v in panel.transcript_run.options] == candidate_runs["run_id"].to_list()
    chosen = candidate_runs.filter(entry="sim/steady").row(-1, named=True)
    panel.transcript_run.value = chosen["run_id"]
    verdict, _, rest = panel.transcript.value.partition("<h4>candidate</h4>")
    candidate, _, reference = rest.partition("<h4>reference</h4>")
    assert f"score {chosen['score']:g}/10" in verdict and html.escape(chosen["reason"], quote=True) in verdict
    for side in (candidate, reference):  # messages, tool calls with arguments and results, the answer
        assert "<b>user</b>" in side and "<b>answer</b>" in side and "tool call <code>" in side
    assert "tool call <code>lookup_order</code>" in candidate and "result of <code>lookup_order</code>" in candidate
    assert "&quot;order_id&quot;: &quot;" in candidate and "days_since_delivery" in candidate
    assert panel.tabs.children[5] is panel.diagnostics_table
    found = report.diagnostics()
    assert (
        rows(panel.diagnostics_table.value) == found.height
        if found.height
        else "nothing to flag" in (panel.diagnostics_table.value)
    )


async def test_runs_tab_sorts() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    report = await panel.start()

    def shown_order() -> list[str]:
        table = panel.runs_table.value
        return sorted(report.runs["run_id"].to_list(), key=table.index)

    panel.runs_sort.value = "score"
    panel.runs_ascending.value = False
    expected = report.runs.sort("score", descending=True, nulls_last=True, maintain_order=True)["run_id"].to_list()
    assert shown_order() == expected
    panel.runs_sort.value = "cost"
    panel.runs_ascending.value = True
    assert shown_order() == report.runs.sort("cost", maintain_order=True)["run_id"].to_list()


async def test_run_is_disabled_while_running_and_a_second_click_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[gb.Benchmark] = []

    class Counting(gb.Benchmark):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(widgets._form, "Benchmark", Counting)
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    catalog = fleet.catalog()
    panel = standard_panel(catalog, runs=1, first=1)
    panel.run_button.click()
    task = panel.task
    assert task is not None and not task.done()
    assert panel.run_button.disabled and panel.rejudge_button.disabled and not panel.stop_button.disabled
    panel.run_button.click()  # Button.click ignores `disabled`: the panel's own guard must hold
    assert panel.task is task and len(made) == 1
    report = await panel.start()  # while running, start() waits for the race under way
    assert panel.task is task and len(made) == 1 and task.done()
    assert report is not None and report.runs.height == 1 + 2
    references = [r for r in fleet.requests if r.headers["x-gradebench-role"] == "reference"]
    assert len({r.headers["x-gradebench-run"] for r in references}) == 1
    assert not panel.run_button.disabled and panel.stop_button.disabled


async def test_stop_cancels_and_a_rerun_resumes_from_the_cache(tmp_path: Path) -> None:
    # How many requests the whole race makes on a fresh cache (the sim is deterministic).
    whole_fleet = gb.sim.SimFleet(latency_scale=0)
    whole = standard_panel(whole_fleet.catalog(), runs=2, first=3, cache=tmp_path / "whole")
    await whole.start()
    total = len(whole_fleet.requests)

    fleet = gb.sim.SimFleet(latency_scale=0.05)
    catalog = fleet.catalog()
    panel = standard_panel(catalog, runs=2, first=3)
    panel.run_button.click()
    while len(fleet.requests) < total // 2:
        await asyncio.sleep(0.005)
    assert panel.stop() is True
    await finished(panel)
    assert "stopped" in panel.status.value and "resumes" in panel.status.value
    assert panel.report is not None and panel.report.meta.stopped  # the runs judged before the stop
    assert panel.report.runs.height < 3 + 2 * 2 * 3
    assert not panel.run_button.disabled and panel.stop_button.disabled
    assert panel.stop() is False  # nothing left to stop

    before = len(fleet.requests)
    report = await panel.start()
    resumed = len(fleet.requests) - before
    assert report is not None and report.runs.height == 3 + 2 * 2 * 3
    assert resumed < total and "done in" in panel.status.value


async def test_stop_before_the_race_starts_is_clean() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    panel.run_button.click()
    panel.stop()  # the task never ran a step
    await finished(panel)
    assert panel.task.cancelled() and "stopped" in panel.status.value and not panel.run_button.disabled


async def test_export_writes_the_report_and_says_where(tmp_path: Path) -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    panel.export_button.click()
    assert "nothing to export" in panel.status.value
    await panel.start()
    folder = tmp_path / "exported"
    panel.export_dir.value = str(folder)
    panel.export_button.click()
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "calls.parquet",
        "controls.parquet",
        "meta.json",
        "models.parquet",
        "noise.parquet",
        "report.html",
        "runs.parquet",
    ]
    assert str(folder.resolve()) in panel.status.value
    back = gb.BenchmarkReport.read_parquet(folder)
    assert back.runs.equals(panel.report.runs)


async def test_rejudge_calls_only_the_judge_and_refreshes_the_tabs() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    panel = standard_panel(catalog)
    first = await panel.start()
    before = len(fleet.requests)
    panel.rubric.value = "Refund only after <both> the lookup and the policy check."
    panel.rejudge_button.click()
    assert panel.run_button.disabled and panel.rejudge_button.disabled
    await finished(panel)
    new = fleet.requests[before:]
    assert new and {r.headers["x-gradebench-role"] for r in new} == {"judge"}
    assert panel.report is not first and panel.report.meta.spec.rubric == panel.rubric.value
    assert "Refund only after &lt;both&gt; the lookup" in panel.runs_table.value
    assert "rejudged 8 runs" in panel.status.value
    assert rows(panel.runs_table.value) == first.runs.height
    again = await panel.rejudge()  # the same rubric again: served from the cache
    assert again is panel.report and len(fleet.requests) == len(new) + before


async def test_rejudge_before_any_race_says_so() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    assert await panel.rejudge() is None
    assert "nothing to rejudge" in panel.status.value and panel.task is None


@pytest.mark.parametrize("path", ["", "decision..x"])
async def test_a_bad_scorer_path_shows_in_the_status(path: str) -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    panel = standard_panel(catalog)
    panel.scorer.value = "field_equals"
    assert not panel.scorer_path.disabled
    panel.scorer_path.value = path
    assert await panel.start() is None
    assert "cannot run: ValueError: path must be a dotted path" in panel.status.value
    assert panel.task is None and not fleet.requests and not panel.run_button.disabled


async def test_a_scorer_from_the_dropdown_scores_the_runs() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    panel.scorer.value = "field_equals"
    panel.scorer_path.value = "decision"
    report = await panel.start()
    assert report.meta.spec.scorer == "field_equals:decision"
    assert report.runs.filter(role="candidate")["scorer"].null_count() == 0


async def test_a_failing_reference_shows_in_the_status(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(input: dict, seat: gb.Seat) -> str:
        """Always fails."""
        raise RuntimeError("boom <b>")

    panel = standard_panel(gb.sim.catalog(latency_scale=0), jobs=[broken], inputs={"broken": [{"id": "only"}]})
    panel.job.value = "broken"
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert await panel.start() is None
    assert "the reference run failed: RuntimeError: boom &lt;b&gt;" in panel.status.value
    assert isinstance(panel.error, RuntimeError)
    assert rows(panel.runs_table.value) == 1 and "boom &lt;b&gt;" in panel.runs_table.value  # the reference row
    assert "failed" in panel.diagnostics_table.value
    assert not [r for r in caplog.records if r.name == "asyncio"]
    assert not panel.run_button.disabled


async def test_a_grade_without_a_pick_or_an_unset_reference_key_shows_in_the_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("UNSET_VAR", raising=False)
    fleet = gb.sim.SimFleet(latency_scale=0)
    sim = fleet.catalog()
    entries = [dataclasses.replace(e, api_key_env="UNSET_VAR") if e.name == "sim/steady" else e for e in sim.entries]
    catalog = gb.Catalog(entries, grades=sim.grades, picks=sim.picks, ceiling=sim.ceiling_name)
    panel = standard_panel(catalog, candidates=("sim/swift",))
    assert await panel.start() is None
    assert "CatalogError" in panel.status.value and "UNSET_VAR" in panel.status.value
    assert not fleet.requests


async def test_untrusted_text_is_escaped() -> None:
    async def echo(input: dict, seat: gb.Seat) -> dict:
        """Repeat the message back."""
        reply = await seat.chat([{"role": "user", "content": input["text"]}])
        return {"echo": input["text"], "reply": reply.text}

    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    panel = standard_panel(
        gb.sim.catalog(latency_scale=0), jobs=[echo], inputs={"echo": [{"id": "x", "text": evil}]}, runs=1
    )
    panel.job.value = "echo"
    await panel.start()
    for shown in (panel.runs_table.value, panel.transcript.value):
        assert "<script>" not in shown and "<img" not in shown
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in panel.transcript.value


def test_html_table_escapes_and_formats() -> None:
    import polars as pl

    table = widgets.html_table(pl.DataFrame({"a": ["<b>"], "n": [0.000012], "ok": [True], "x": [None]}))
    assert "&lt;b&gt;" in table and "0.000012" in table and "yes" in table and "–" in table  # never 1.2e-05
    assert "no rows" in widgets.html_table(pl.DataFrame({"a": []}))


def test_a_click_in_a_real_kernel_races_on_the_kernel_loop(tmp_path: Path) -> None:
    """ipykernel 7: a Run click arrives as a comm message; the race runs on the kernel's loop while the kernel idles."""
    manager = pytest.importorskip("jupyter_client.manager")
    km, kc = manager.start_new_kernel(
        kernel_name="python3",
        cwd=str(tmp_path),
        env={**os.environ, "GRADEBENCH_CACHE": str(tmp_path / "cache"), "GRADEBENCH_SIM_LATENCY_SCALE": "0"},
    )
    problems: list[dict] = []

    def execute(code: str) -> str:
        msg_id, out = kc.execute(code), []
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "error" or (kind == "stream" and content["name"] == "stderr"):
                problems.append(content)
            elif kind == "stream" and msg["parent_header"].get("msg_id") == msg_id:
                out.append(content["text"])
            elif kind == "status" and content["execution_state"] == "idle" and msg["parent_header"]["msg_id"] == msg_id:
                return "".join(out).strip()

    def click(model_id: str) -> None:  # what the browser sends when the button is clicked
        data = {"method": "custom", "content": {"event": "click"}}
        kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": model_id, "data": data}))

    try:
        run_id = execute(
            "import gradebench as gb\n"
            "catalog = gb.sim.catalog(latency_scale=0.05)\n"
            "panel = gb.widgets.BenchmarkPanel(catalog)\n"
            "panel.grade.value = 'standard'; panel.candidates.value = ('sim/steady', 'sim/swift')\n"
            "panel.runs.value = 2; panel.n_inputs.value = 2\n"
            "display(panel); print(panel.run_button.model_id)"
        )
        assert execute("print(panel.estimator.task is not None)") == "True"  # a cell runs on the kernel's loop
        click(run_id)
        assert execute("first = panel.task; print(first is not None and panel.run_button.disabled)") == "True"
        click(run_id)  # a second click while the race runs
        for _ in range(1200):  # a minute at most, for a loaded machine
            if execute("print(first.done())") == "True":
                break
            time.sleep(0.05)
        assert execute("print(panel.task is first, panel.report.runs.height)") == "True 10"
        assert "done in" in execute("print(panel.status.value)")
        for _ in range(1200):  # after the race, the estimate beside Run looks again on the kernel's loop: free now
            if execute("print(panel.estimator.result is not None)") == "True":
                break
            time.sleep(0.05)
        assert "8 of them cached" in execute("print(panel.estimate_line.value)")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not problems


class ColdStart(gb.sim.SimFleet):
    """The simulated fleet with sim/mini's quota spent when the race starts (a cold start after other work on the same
    key): its first ``refuse`` requests are answered as its server limit answers a burst — a 429 with ``retry-after``,
    ``retry-after-ms`` and ``x-ratelimit-limit-requests`` — then it serves as the fleet does, its own limit on.

    Why not the fleet's limit alone: its bucket refills in real time (40 requests a second at a latency scale of 0.05),
    so whether the panel's first burst of five outruns its four is a race against the clock, lost under load."""

    def __init__(self, *, refuse: int, latency_scale: float):
        super().__init__(latency_scale=latency_scale)
        self.refuse = refuse
        self.refused = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if self.refused < self.refuse and json.loads(await request.aread()).get("model") == "sim-mini-1":
            self.refused += 1
            rpm = round(120 / self.latency_scale)  # its 120 rpm in real minutes, as the fleet's own 429 says it
            error = {"message": "simulated rate limit of 120 requests per minute reached for sim-mini-1"}
            headers = {"retry-after": "1", "retry-after-ms": "25", "x-ratelimit-limit-requests": str(rpm)}
            return httpx2.Response(429, json={"error": {**error, "type": "rate_limit_error"}}, headers=headers)
        return await super().handle(request)


async def test_the_small_grade_races_to_the_end_on_the_first_click() -> None:
    # sim/mini (the small pick) answers 429s when a burst outruns its server limit: a normal condition, waited out.
    # Notebook 01's settings on the small grade, with the simulated clock running (so the server's limit is on too).
    fleet = ColdStart(refuse=3, latency_scale=0.05)
    catalog = fleet.catalog()
    panel = BenchmarkPanel(catalog)
    panel.grade.value = "small"
    panel.runs.value, panel.n_inputs.value = 3, 5
    report = await panel.start()
    assert fleet.refused == 3  # it was rate-limited
    assert panel.error is None and report is not None
    assert report.runs.filter(role="reference")["ok"].all() and report.runs.filter(role="reference").height == 5
    assert not any("429" in (e or "") for e in report.runs["error"].to_list())


# ------------------------------------------------------------------------------------------------------- UI fixes


async def test_a_stopped_race_is_marked_on_every_tab_and_an_entry_not_judged_is_listed() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    panel = standard_panel(fleet.catalog(), candidates=("sim/steady", "sim/swift", "sim/chatty"), runs=2, first=3)
    panel.run_button.click()

    def a_candidate_judged() -> bool:  # a candidate run's verdict (a negative control's waits for no run: it is early)
        raced = {r.headers["x-gradebench-run"] for r in fleet.requests if r.headers["x-gradebench-role"] == "candidate"}
        return any(
            r.headers["x-gradebench-role"] == "judge" and r.headers["x-gradebench-run"] in raced for r in fleet.requests
        )

    while not a_candidate_judged():
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)
    panel.stop()
    await finished(panel)
    report = panel.report
    assert report is not None and report.meta.stopped == "cancelled"
    mark = "STOPPED EARLY"
    for tab in (panel.runs_table, panel.models_table, panel.transcript, panel.diagnostics_table):
        assert mark in plain(tab.value), tab
    for box in (panel.cost_chart, panel.latency_chart):  # the charts' titles carry it
        chart = box.children[0]
        assert isinstance(chart, alt.JupyterChart) and any(mark in line for line in chart.spec["title"]["subtitle"])
    if report.recommend() is not None:
        assert "recommendation (from a race stopped early)" in plain(panel.models_table.value)

    # an entry raced with no judged run is listed, never dropped: here sim/chatty, its runs taken out
    kept = [r for r in report.to_runs() if r.entry != "sim/chatty" or r.role == "reference"]
    partial = gb.BenchmarkReport(kept, report.meta)
    panel.views.show(partial, lambda what, exc: pytest.fail(f"{what}: {exc}"))
    assert "sim/chatty" in report.meta.candidates and "sim/chatty" not in partial.models["entry"].to_list()
    listed = re.search(r"not judged \(no judged run\): ([^\n]*?)entry", plain(panel.models_table.value))
    assert listed and "sim/chatty" in listed.group(1).split(", ")
    assert mark in plain(panel.models_table.value)


async def test_stopped_before_anything_landed_clears_the_tabs() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    await panel.start()
    panel.run_button.click()
    panel.stop()  # before the first step: the last race's report must not pass for this one
    await finished(panel)
    assert panel.report is None
    for tab in (panel.runs_table, panel.models_table, panel.diagnostics_table):
        assert "STOPPED before any run was judged" in plain(tab.value)


async def test_the_runs_tab_shows_one_line_per_run_with_the_whole_text_on_hover() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=2)
    report = await panel.start()
    long = [r for r in report.runs["reason"].drop_nulls().to_list() if len(r) > widgets._views.RUN_CUT]
    assert long, "the sim judge's reasons are long enough to be cut"
    table = panel.runs_table.value
    assert 'class="gb-t gb-line"' in table and ".gb-t.gb-line td{white-space:nowrap" in table
    for reason in long:
        assert f'title="{html.escape(reason, quote=True)}"' in table  # whole, on hover
        assert f">{html.escape(reason[: widgets._views.RUN_CUT - 1], quote=True)}…</td>" in table  # cut, one line


async def test_the_models_tab_keeps_model_ids_on_one_line() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    await panel.start()
    table = panel.models_table.value
    assert 'class="gb-t gb-fit"' in table and ".gb-t.gb-fit td{white-space:nowrap}" in table
    assert "input_<wbr>tokens_<wbr>mean" in table  # headers break at underscores instead
    assert "overflow-x:auto" in table  # too many columns for the page: it scrolls, nothing wraps


async def test_the_sort_button_says_which_way_it_sorts() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    assert panel.runs_ascending.description == "ascending"
    panel.runs_ascending.value = False
    assert panel.runs_ascending.description == "descending" and panel.runs_ascending.icon == "sort-amount-desc"
    await panel.start()
    panel.runs_ascending.value = True
    assert panel.runs_ascending.description == "ascending" and panel.runs_ascending.icon == "sort-amount-asc"


async def test_a_settings_error_leaves_the_last_race_progress_alone() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    await panel.start()
    assert panel.progress_bar.bar_style == "success"
    panel.scorer.value = "field_equals"
    panel.scorer_path.value = "a..b"
    panel.run_button.click()
    assert "cannot run: ValueError" in panel.status.value
    assert panel.progress_bar.bar_style == "success" and panel.progress_bar.value == panel.progress_bar.max


async def test_export_lists_every_file_it_wrote(tmp_path: Path) -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    await panel.start()
    panel.export_dir.value = str(tmp_path / "out")
    path = panel.export()
    written = sorted(p.name for p in path.iterdir())
    assert written == [
        "calls.parquet",
        "controls.parquet",
        "meta.json",
        "models.parquet",
        "noise.parquet",
        "report.html",
        "runs.parquet",
    ]
    said = plain(panel.status.value)
    assert all(name in said for name in written), said


def test_the_grade_dropdown_is_wide_enough_for_its_labels() -> None:
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    longest = max(len(label) for label, _ in panel.grade.options)
    assert longest == len("standard (reference sim/steady)")
    assert f"+ {longest}ch" in panel.grade.layout.width  # beside the description and the arrow


def test_a_grade_change_never_leaves_the_browser_a_selection_past_the_options() -> None:
    """What a browser's SelectMultiple view does with each state message: it reads the selection against the
    options it has. Options sent apart from the selection once made it select past the end of a shorter list
    ("Cannot set properties of undefined (setting 'selected')" in the console)."""
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    front = panel.candidates.get_state()  # the browser's copy of the model
    messages: list[dict] = []
    panel.candidates._send = lambda msg, buffers=None: messages.append(msg["state"])  # type: ignore[method-assign]
    for grade in ("standard", "large", "standard", "small", "large", "standard"):
        panel.grade.value = grade
    assert messages
    for state in messages:
        front.update(state)
        assert all(0 <= i < len(front["_options_labels"]) for i in front["index"]), state
    assert tuple(front["index"]) == panel.candidates.index  # and the browser ends where Python is


# ---------------------------------------------------------------------------------------- spending less (the panel)


@pytest.fixture
def quick_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate waits 0.05 s after a change instead of half a second."""
    monkeypatch.setattr(widgets._estimator, "ESTIMATE_AFTER_S", 0.05)


async def estimated(panel: BenchmarkPanel) -> None:
    """Until the estimate beside Run has settled (a newer change may have replaced the task on the way)."""
    while (task := panel.estimator.task) is not None and not task.done():
        await asyncio.wait([task])


def roles(fleet: gb.sim.SimFleet, since: int = 0) -> list[str]:
    return [r.headers["x-gradebench-role"] for r in fleet.requests[since:]]


def test_outside_an_event_loop_the_estimate_says_how_to_get_one() -> None:
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    assert panel.estimator.task is None and "needs a running event loop" in plain(panel.estimate_line.value)
    assert panel.budget.value == "" and plain(panel.budget_note.value) == "USD · empty: no budget"
    assert not panel.to_verdict.value and panel.max_runs.disabled and not panel.runs.disabled


@pytest.mark.usefixtures("quick_estimate")
async def test_the_estimate_waits_for_a_click_when_it_would_spend_and_is_free_once_the_references_are_cached() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    panel = standard_panel(fleet.catalog(), runs=2, first=2)
    await estimated(panel)
    said = plain(panel.estimate_line.value)
    assert said == (
        "an estimate runs 2 reference runs on sim/steady first: they are spent now, and Run then reuses them "
        "from the cache"
    )
    assert not fleet.requests and panel.estimator.result is None and not panel.estimate_button.disabled
    assert await panel.build_benchmark().uncached_references() == 2 and not fleet.requests  # cache-only: none sent

    panel.estimate_button.click()  # returns at once: the estimate is a task on the loop
    task = panel.estimator.task
    assert task is not None and not task.done() and panel.estimate_button.disabled
    assert "the reference runs first on sim/steady" in plain(panel.estimate_line.value)
    await estimated(panel)
    made = panel.estimator.result
    assert made is not None and (made.runs, made.cached_runs) == (8, 0) and made.cost > 0
    assert plain(panel.estimate_line.value) == made.line()  # the estimate's own words
    sent = len(fleet.requests)
    assert set(roles(fleet)) == {"reference"}  # only the references ran (the candidates were replayed, not sent)
    assert len({r.headers["x-gradebench-run"] for r in fleet.requests}) == 2

    assert await panel.build_benchmark().uncached_references() == 0
    panel.runs.value = 3  # the references are cached now: every later estimate is made at once, for free
    assert panel.estimator.result is None
    await estimated(panel)
    assert panel.estimator.result.runs == 12 and len(fleet.requests) == sent

    sent = len(fleet.requests)
    report = await panel.start()  # the race reuses the references the estimate ran
    assert report is not None and "reference" not in roles(fleet, sent)
    await estimated(panel)  # after the race: everything it planned is cached, so a rerun costs nothing
    after = panel.estimator.result
    assert after is not None and (after.runs, after.cached_runs, after.cost) == (12, 12, 0.0)
    assert "12 of them cached" in plain(panel.estimate_line.value)
    assert await panel.estimate() is not None  # the click from code


@pytest.mark.usefixtures("quick_estimate")
async def test_the_estimate_follows_every_setting_and_waits_for_a_burst_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    looked: list[str] = []

    class Counting(gb.Benchmark):
        async def uncached_references(self) -> int:
            looked.append("references")
            return await super().uncached_references()

        async def estimate(self):
            looked.append("estimate")
            return await super().estimate()

    monkeypatch.setattr(widgets._form, "Benchmark", Counting)
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=1, first=1)
    await panel.start()
    await estimated(panel)
    assert looked == ["references", "estimate"]  # the burst of settings above, and the race, asked once

    form = panel.form
    changes = {
        form.runs: 2,
        form.to_verdict: True,
        form.max_runs: 12,
        form.budget: "5",
        form.n_inputs: 2,
        form.all_inputs: True,
        form.scorer: "field_equals",
        form.scorer_path: "decision",
        form.salt: "s",
        form.rubric: "Refund only after the lookup.",
        form.verdict_design: "auto",
        form.judges: ("sim/oracle", "sim/sage"),
        form.controls: 0,
        form.judge_batch: True,
        form.candidates: ("sim/steady",),
        form.grade: "small",
        form.job: SelectingAgent.name,
    }
    assert set(changes) == set(form.settings())
    for widget, value in changes.items():
        await estimated(panel)
        assert "estimating" not in plain(panel.estimate_line.value), widget
        widget.value = value
        assert panel.estimator.result is None and not panel.estimator.task.done(), widget  # looking again
        assert plain(panel.estimate_line.value) == "estimating…", widget

    looked.clear()
    # typing: one look at the end, not one per key (the keys 0.01 s apart, the look 1 s after the last: a stall of the
    # loaded machine between two keys cannot pass for the end of the burst)
    monkeypatch.setattr(widgets._estimator, "ESTIMATE_AFTER_S", 1.0)
    for salt in ("a", "ab", "abc", "abcd"):
        panel.salt.value = salt
        await asyncio.sleep(0.01)
    await estimated(panel)
    assert looked == ["references"]  # a fresh salt: not in the cache, so the button, not an estimate
    assert "an estimate runs 24 reference runs on sim/steady first" in plain(panel.estimate_line.value)


@pytest.mark.usefixtures("quick_estimate")
async def test_an_estimate_that_cannot_be_made_says_why_in_place() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    panel = standard_panel(fleet.catalog())
    panel.budget.value = "abc"
    assert "budget must be a number > 0" in plain(panel.budget_note.value)
    await estimated(panel)
    said = plain(panel.estimate_line.value)
    assert said.startswith("cannot estimate: ValueError: budget must be a number > 0") and "'abc'" in said
    assert isinstance(panel.estimator.error, ValueError) and not panel.estimate_button.disabled
    assert await panel.start() is None and "cannot run: ValueError: budget must be" in plain(panel.status.value)
    for bad in ("0", "-1", "nan", "inf"):
        panel.budget.value = bad
        assert "budget must be a number > 0" in plain(panel.budget_note.value), bad
    panel.budget.value = " 2.5 "
    assert plain(panel.budget_note.value) == "USD" and panel.build_benchmark().spec.budget == 2.5
    panel.candidates.value = ()
    await estimated(panel)
    assert "cannot estimate: ValueError: no candidate selected" in plain(panel.estimate_line.value)
    assert not fleet.requests


async def test_a_change_cancels_a_stale_estimate_and_run_cancels_one_under_way(monkeypatch) -> None:
    monkeypatch.setattr(widgets._estimator, "ESTIMATE_AFTER_S", 0.05)
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    panel = standard_panel(fleet.catalog(), runs=1, first=2)
    panel.estimate_button.click()  # runs the references: slow here
    first = panel.estimator.task
    await asyncio.sleep(0.01)
    panel.rubric.value = "Refund only after the lookup."  # the estimate under way no longer holds
    await asyncio.wait([first])
    assert first.cancelled() and panel.estimator.task is not first

    panel.estimate_button.click()
    second = panel.estimator.task
    assert second is not first and not second.done()
    panel.run_button.click()  # the race runs the references itself: the estimate gives way
    await asyncio.wait([second])
    assert second.cancelled() and panel.estimate_button.disabled
    assert plain(panel.estimate_line.value) == "the estimate waits for the race to end"
    panel.salt.value = "later"  # a change while the race runs: looked at once it ends
    assert panel.estimator.task is second and plain(panel.estimate_line.value).endswith("race to end")
    report = await panel.start()
    assert report is not None and report.runs.height == 2 + 2 * 2 and report.meta.spec.salt == ""
    await estimated(panel)
    assert "an estimate runs 2 reference runs" in plain(panel.estimate_line.value)  # the salt as it is now
    panel.salt.value = ""
    await estimated(panel)
    assert panel.estimator.result is not None and panel.estimator.result.cost == 0.0


async def test_a_budget_stops_the_race_and_every_view_says_so() -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=2, first=3)
    panel.budget.value = "0.05"
    report = await panel.start()
    assert report is not None and report.meta.stopped == "budget" and report.meta.spec.budget == 0.05
    spent = report.runs["spent_now"].sum() + sum(
        c.spent_now for r in report.to_runs() if r.verdict is not None for c in r.verdict.calls
    )
    assert 0 < spent <= 0.05 and 0 < report.runs.filter(role="candidate").height < 2 * 2 * 3
    mark = "STOPPED: the budget would not cover another run"
    for tab in (panel.runs_table, panel.models_table, panel.transcript, panel.diagnostics_table, panel.status):
        assert mark in plain(tab.value), tab
    for box in (panel.cost_chart, panel.latency_chart):
        assert any(mark in line for line in box.children[0].spec["title"]["subtitle"])
    assert "budget: the next runs would not fit" in plain(panel.progress_table.value)
    assert "budget: the next runs would not fit" in plain(panel.models_table.value)  # the stopped column
    assert panel.progress_bar.bar_style == "warning"


async def test_racing_to_a_verdict_shows_each_entry_stop_as_it_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(widgets._progress, "PROGRESS_EVERY_S", 0)  # draw on every event, so every state is seen
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    panel.grade.value = "small"
    panel.n_inputs.value = 8
    panel.to_verdict.value = True
    assert panel.runs.disabled and not panel.max_runs.disabled
    assert panel.form.verdict_design.value == "gsd" and not panel.form.verdict_design.disabled  # the recommended
    panel.form.verdict_design.value = "auto"  # another name for the same race
    assert panel.max_runs.value == 32  # 4 runs an input, following the inputs until edited
    panel.n_inputs.value = 9
    assert panel.max_runs.value == 36
    panel.max_runs.value = 32
    panel.n_inputs.value = 8
    assert panel.max_runs.value == 32  # edited: it stays

    panel.candidates.value = ("sim/pico", "sim/nano")
    panel.run_button.click()  # without the reference entry nothing can be paired
    assert panel.task is None and "select it too" in plain(panel.status.value) and "sim/mini" in panel.status.value
    panel.candidates.value = ("sim/mini", "sim/pico", "sim/nano")

    seen: list[str] = []
    panel.run_button.click()
    assert panel.bench.spec.runs == "auto" and panel.bench.spec.max_runs == 32
    panel.bench.subscribe(lambda _: seen.append(panel.progress_table.value))
    await asyncio.sleep(0)  # the task's first step says what it races
    assert "racing 3 candidates to a verdict on 8 inputs, at most 32 runs an entry" in plain(panel.status.value)
    await finished(panel)
    report = panel.report
    assert report is not None and report.meta.spec.design == "auto" and panel.error is None
    stops = dict(report.models.select("entry", "stopped").rows())
    early = [e for e, why in stops.items() if why and why.startswith("settled:")]
    assert early, stops
    assert panel.bench.stops == {e: why for e, why in stops.items() if why}  # live, and as the report says

    def row(table: str, entry: str) -> str:
        """The progress table's row of ``entry``, as text, cells apart."""
        cells = (re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in table.split("<tr>")[1:])
        return next(" | ".join(plain(c) for c in row) for row in cells if row and plain(row[0]) == entry)

    # while the race went on, an entry that had settled said so beside one still racing
    during = [t for t in seen if any(stops[e] in row(t, e) for e in early) and "racing" in plain(t)]
    assert during, plain(seen[-1])
    assert "≤32" in row(seen[0], "sim/pico") and row(seen[0], "sim/pico").endswith("| racing")
    final = panel.progress_table.value
    for entry, why in stops.items():
        if why:
            assert why in row(final, entry)
    judged = report.runs.filter(role="candidate").height
    assert panel.progress_bar.max == panel.progress_bar.value == judged and panel.progress_bar.bar_style == "success"
    models = plain(panel.models_table.value)
    assert "raced to a verdict in 8 looks (at most 32 runs an entry)" in models
    for why in filter(None, stops.values()):
        assert why in models  # in the stopped column and the verdict lines
    await estimated(panel)
    assert "at most: racing to a verdict stops each entry once it is settled" in plain(panel.estimate_line.value)


async def test_a_race_to_a_verdict_stopped_by_hand_says_how_far_it_got() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    panel = standard_panel(fleet.catalog(), first=8)
    panel.to_verdict.value = True
    panel.run_button.click()
    while not any(r.headers["x-gradebench-role"] == "judge" for r in fleet.requests):
        await asyncio.sleep(0.005)
    panel.stop()
    await finished(panel)
    said = plain(panel.status.value)
    assert said.startswith("stopped: ") and " of at most 64 runs had landed" in said, said
    table = plain(panel.progress_table.value)
    assert "racing" not in table and "≤32" in table and panel.progress_bar.bar_style == "warning"


def test_an_entry_named_reference_keeps_its_own_progress_row() -> None:
    from gradebench.widgets._progress import Progress

    def run(entry: str, role: gb.vocab.Role, ok: bool = True) -> gb.results.Run:
        return gb.results.Run(
            benchmark_id="b",
            job="j",
            input_id="i",
            run_id=f"{entry}-{role}",
            role=role,
            entry=entry,
            model="m",
            grade="standard",
            simulated=False,
            repeat=0,
            currency="USD",
            ok=ok,
        )

    progress = Progress()
    progress.reset("acme/pick", ["acme/pick", "reference"], per_entry=2, inputs=3)
    progress.on_event(RaceEvent(kind=EventKind.REFERENCE, run=run("acme/pick", Role.REFERENCE), planned=3))
    for kind in (EventKind.LANDED, EventKind.JUDGED):
        progress.on_event(RaceEvent(kind=kind, run=run("reference", Role.CANDIDATE, ok=False), planned=4))
    progress.draw(force=True)
    rows = re.findall(r"<tr>(.*?)</tr>", progress.table.value)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows[1:]]
    assert [c[:4] for c in cells] == [
        ["reference (acme/pick)", "1 / 3", "–", "0"],
        ["acme/pick", "0 / 2", "0", "0"],
        ["reference", "1 / 2", "0", "1"],  # failed: never judged
    ]
    assert progress.landed() == 1 and progress.bar.value == 1 and progress.bar.max == 4


# ------------------------------------------------------------------------------------------- the panel, your job


async def test_the_panel_opens_on_your_job_with_your_inputs() -> None:
    async def haiku(input: dict, seat: gb.Seat) -> str:
        """Write a haiku about the topic."""
        return (await seat.chat([{"role": "user", "content": input["topic"]}])).text

    async def limerick(input: dict, seat: gb.Seat) -> str:
        """Write a limerick about the topic."""
        return (await seat.chat([{"role": "user", "content": input["topic"]}])).text

    class MyOrders(OrderAgent):
        rubric = "my own rubric"  # the same name as the example job: yours is the one offered

    topics = [{"id": f"t{i}", "topic": f"topic {i}"} for i in range(3)]
    catalog = gb.sim.catalog(latency_scale=0)
    panel = BenchmarkPanel(catalog, jobs=[haiku, limerick, MyOrders], inputs={"haiku": topics})
    assert panel.job.value == "haiku" and list(panel.job.options) == ["haiku", "limerick", *EXAMPLE_JOBS]
    assert plain(panel.inputs_note.value) == "3 of 3 inputs" and panel.selected_inputs() == topics
    assert panel.rubric.value == ""
    panel.grade.value = "standard"
    panel.candidates.value = ("sim/steady", "sim/swift")
    panel.runs.value = 1
    report = await panel.start()
    assert report is not None and report.meta.job == "haiku"
    assert sorted(report.runs["input_id"].unique().to_list()) == ["t0", "t1", "t2"]
    panel.job.value = OrderAgent.name
    assert panel.rubric.value == "my own rubric" and panel.form.factories[OrderAgent.name] is MyOrders


async def test_while_a_new_race_runs_the_last_ones_tabs_and_estimate_say_whose_they_are(
    quick_estimate: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = gb.sim.SimFleet(latency_scale=0.05)
    panel = standard_panel(fleet.catalog(), runs=1, first=2)
    first = await panel.start()
    await estimated(panel)
    said = plain(panel.estimate_line.value)
    assert panel.estimator.result is not None and said.startswith("estimate: ")  # free now: the race cached it

    tabs = (panel.runs_table, panel.models_table, panel.transcript, panel.diagnostics_table)
    panel.run_button.click()  # the same settings: the estimate shown is this race's
    assert panel.task is not None and not panel.task.done()
    assert plain(panel.estimate_line.value) == widgets._estimator.THIS_RACE + said
    for tab in tabs:
        assert plain(tab.value).startswith(widgets._views.PREVIOUS), tab
    for box in (panel.cost_chart, panel.latency_chart):
        banner, chart = box.children
        assert widgets._views.PREVIOUS in plain(banner.value) and isinstance(chart, alt.JupyterChart)
    panel.transcript_run.value = panel.transcript_run.options[-1][1]  # a tab drawn again still says so
    assert plain(panel.transcript.value).startswith(widgets._views.PREVIOUS)
    second = await panel.start()
    assert second is not None and second is not first and panel.report is second
    for tab in tabs:
        assert "PREVIOUS RACE" not in plain(tab.value), tab
    assert all(len(box.children) == 1 for box in (panel.cost_chart, panel.latency_chart))

    panel.salt.value = "fresh"  # the references are not cached: no estimate is made, so none is shown as this race's
    await estimated(panel)
    assert "an estimate runs 2 reference runs" in plain(panel.estimate_line.value)

    class Failing(gb.Benchmark):
        async def run(self):
            raise RuntimeError("the endpoint went away")

    monkeypatch.setattr(widgets._form, "Benchmark", Failing)
    panel.run_button.click()
    assert plain(panel.estimate_line.value) == widgets._estimator.WAITING
    await finished(panel)
    assert "the race failed: RuntimeError: the endpoint went away" in plain(panel.status.value)
    assert panel.report is second  # nothing of the failed race to show: the last one's, marked as such
    for tab in tabs:
        assert plain(tab.value).startswith("PREVIOUS RACE — the race started after it failed"), tab


async def test_a_failed_run_counts_as_failed_never_as_judged() -> None:
    from gradebench.testing import ScriptedEndpoint, completion

    def answer(body: dict, request) -> object:
        if body["model"] == "candidate-1":  # every candidate run fails (no retries in this catalog)
            return httpx2.Response(500, json={"error": {"message": "down"}})
        return completion("fine")

    async def echo(input: dict, seat: gb.Seat) -> str:
        """Say something about the input."""
        return (await seat.chat([{"role": "user", "content": input["text"]}])).text

    endpoint = ScriptedEndpoint(answer)
    inputs = [{"id": f"i{n}", "text": f"input {n}"} for n in range(3)]
    panel = BenchmarkPanel(endpoint.catalog(), jobs=[echo], inputs={"echo": inputs})
    panel.candidates.value = ("test/candidate",)
    panel.runs.value = 5
    report = await panel.start()
    assert report is not None and not report.runs.filter(role="candidate")["ok"].any()
    table = panel.progress_table.value
    assert '<td>test/candidate</td><td>15 / 15</td><td class="n">0</td><td class="n">15</td>' in table  # 0 judged
    assert panel.progress_bar.value == panel.progress_bar.max == 15 and panel.progress_bar.description == "done"
    assert "18 runs (15 raced + 3 reference), 15 failed, 1 entry" in plain(panel.status.value)


async def test_the_estimate_and_the_done_line_count_runs_the_same_way(quick_estimate: None) -> None:
    panel = standard_panel(gb.sim.catalog(latency_scale=0), runs=2, first=2)
    report = await panel.start()
    await estimated(panel)
    made = panel.estimator.result
    assert made is not None and made.runs == report.runs.filter(role="candidate").height == 8
    assert plain(panel.estimate_line.value).startswith("estimate: 8 runs")
    assert "done in " in plain(panel.status.value)
    assert "10 runs (8 raced + 2 reference), 0 failed, 2 entries" in plain(panel.status.value)


async def test_a_report_in_a_notebook_is_an_html_table_with_the_text_tables_figures() -> None:
    from IPython.core.formatters import DisplayFormatter

    from gradebench._report import present as _present

    panel = standard_panel(gb.sim.catalog(latency_scale=0), candidates=("sim/steady", "sim/swift", "sim/chatty"))
    report = await panel.start()
    shown, _ = DisplayFormatter().format(report)  # what a notebook cell whose value is the report renders
    page = shown["text/html"]
    assert page == report._repr_html_() and "shape: (" not in page  # not polars' repr of 48 columns
    table = re.search(r'<table class="gb-models">.*?</table>', page, re.DOTALL)
    assert table is not None and rows(table.group(0)) == report.models.height
    assert ".gb-models th,.gb-models td{border:1px solid #ddd;padding:2px 6px;white-space:nowrap" in page
    text_table = report.table()
    for row in report.model_rows():
        cells = _present.model_cells(row)
        line = next(t for t in text_table.splitlines() if t[2:].startswith(f"{row.entry} ") and "paired" not in t)
        for head, value in cells.items():
            shown_value = f"{value} {row.currency}" if head == "cost/run" else value
            assert f'<td class="n">{html.escape(shown_value)}</td>' in table.group(0), (head, value)
            assert value in line, (head, value)  # the figures of the text table, formatted alike
    said = plain(page)
    assert _present.header(report) in said and _present.recommendation(report) in said
    for v in _present.verdict_lines(report):
        assert f"{v.verdict} {v.entry}: {v.evidence()}" in said


def test_the_form_sets_the_judges_the_controls_the_batch_and_the_looks() -> None:
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    form = panel.form
    spec = form.spec()
    assert spec.judge is None and spec.judges is None and spec.controls == 3 and not spec.judge_batch
    assert form.verdict_design.disabled  # a fixed number of runs: no looks to choose
    form.judges.value = ("sim/oracle", "sim/sage")
    form.controls.value = 0
    form.judge_batch.value = True
    form.to_verdict.value = True
    spec = form.spec()
    assert spec.judges == ("sim/oracle", "sim/sage") and spec.controls == 0 and spec.judge_batch
    assert spec.runs == "gsd" and spec.max_runs == form.max_runs.value
    form.judges.value = ("sim/sage",)
    assert form.spec().judge == "sim/sage" and form.spec().judges is None  # one judge: that entry judges
    form.judges.value = ()
    with pytest.raises(ValueError, match="no judge selected"):
        form.spec()


async def test_a_panel_races_to_a_verdict_in_planned_looks() -> None:
    panel = BenchmarkPanel(gb.sim.catalog(latency_scale=0))
    panel.grade.value = "small"
    panel.n_inputs.value = 8
    panel.to_verdict.value = True
    panel.run_button.click()
    assert panel.bench.spec.runs == "gsd" and panel.bench.spec.max_runs == 32
    await finished(panel)
    report = panel.report
    assert report is not None and report.meta.spec.design == "gsd" and panel.error is None
    stops = [why for why in report.models["stopped"].to_list() if why]
    assert stops and all(" of 8" in why or why.startswith("max_runs") for why in stops), stops
    assert all(why in plain(panel.models_table.value) for why in stops)


async def test_the_runs_tab_of_a_large_race_shows_its_first_rows_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(widgets._views, "RUN_ROWS", 3)
    panel = standard_panel(gb.sim.catalog(latency_scale=0))
    report = await panel.start()
    assert report is not None and report.runs.height > 3
    assert rows(panel.runs_table.value) == 3
    said = plain(panel.runs_table.value)
    assert f"the first 3 of {report.runs.height} runs, sorted by entry, ascending" in said and "report.runs" in said
