"""An entry that could not be raced is unmeasured, not worse: over loopback HTTP through the real openai client.

Three broken entries — a misspelt model id (404), a port nobody listens on (connection refused), an upstream that
answers 500 to every call — have no quality verdict: each says why, the headline names each, the HTML shows each as
unmeasured and the recommendation never weighs them. A job that fails on the model's answers (prose where JSON is
asked) stays a quality result: ``worse``. A partial outage leaves its runs out of the pairs instead of scoring them 0.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import httpx2
import polars as pl

import gradebench as gb
from gradebench._base.vocab import VerdictBasis

from ..loopback import bench_of, catalog, entry, model_row
from ..providers import OpenAIEndpoint, serve

QUESTIONS = [{"id": f"q{i}", "text": f"Question {i}: what is the code?"} for i in range(10)]
"""Ten inputs: more than the eight a verdict needs, so a clean comparison settles."""
THIRTY = [{"id": f"q{i}", "text": f"Question {i}: what is the code?"} for i in range(30)]
ASK = gb.PromptJob(
    name="codes",
    instructions='Answer the code asked for. Answer JSON {"code": ...}.',
    template="{text}",
    output="json",
)
OUTAGE_ON = frozenset({0, 3})
"""The questions on which the patchy entry's upstream answers 500: 4 of its 20 runs."""


def _question(body: dict[str, Any]) -> int:
    found = re.search(r"Question (\d+)", json.dumps(body["messages"]))
    assert found is not None
    return int(found.group(1))


def coder(*, prose: bool = False, down_on: frozenset[int] | None = None) -> OpenAIEndpoint:
    """A model that answers each question's code as JSON; in prose with ``prose`` (the job cannot read it), or 500
    on the questions of ``down_on`` (every question: None means none)."""

    def answer(body: dict[str, Any], request: httpx2.Request) -> Any:
        i = _question(body)
        if down_on is not None and i in down_on:
            return OpenAIEndpoint.error(
                500, "The server had an error while processing your request.", type="server_error"
            )
        if prose:
            return OpenAIEndpoint.completion(f"The code you want is C{i}.")
        return OpenAIEndpoint.completion(json.dumps({"code": f"C{i}"}))

    return OpenAIEndpoint(answer)


def reading_judge() -> OpenAIEndpoint:
    """A judge whose score varies with the input (9 or 10), so it tells runs apart and verdicts can settle."""

    def answer(body: dict[str, Any], request: httpx2.Request) -> Any:
        verdict = {"accuracy": 6 + _question(body) % 2, "work": 3, "reason": "Same code as the reference."}
        return OpenAIEndpoint.completion(json.dumps(verdict), model="judge-1")

    return OpenAIEndpoint(answer)


def closed_port() -> int:
    """A loopback port nobody listens on: a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BROKEN = ["acme/typo", "acme/closed", "acme/down"]


def fleet() -> dict[str, Any]:
    return {
        "gpt-ref": coder(),
        "gpt-prose": coder(prose=True),
        "gpt-down": coder(down_on=frozenset(range(len(QUESTIONS)))),
        "gpt-patchy": coder(down_on=OUTAGE_ON),
        "gpt-mostly": coder(down_on=frozenset(range(6))),
        "judge-1": reading_judge(),
    }


def loopback(base_url: str) -> gb.Catalog:
    return catalog(
        base_url,
        entry("acme/ref", "gpt-ref", base_url, price_in=4.0, price_out=8.0),
        entry("acme/typo", "gpt-4o-mnii", base_url),  # not served: the fleet answers 404 model_not_found
        entry("acme/closed", "gpt-ref", f"http://127.0.0.1:{closed_port()}/v1"),
        entry("acme/down", "gpt-down", base_url),
        entry("acme/prose", "gpt-prose", base_url),
        entry("acme/patchy", "gpt-patchy", base_url),
        entry("acme/mostly", "gpt-mostly", base_url),
        reference="acme/ref",
    )


async def race(tmp_path: Path, candidates: list[str], inputs: list[dict[str, str]] = QUESTIONS) -> gb.BenchmarkReport:
    async with serve(fleet()) as base_url:
        bench = bench_of(ASK, loopback(base_url), tmp_path, candidates=candidates, inputs=inputs, runs=2)
        await bench.run()
        return bench.report()


async def test_three_broken_entries_are_unmeasured_each_saying_why(tmp_path: Path) -> None:
    report = await race(tmp_path, ["acme/ref", *BROKEN, "acme/prose"])
    reasons = {}
    for name in BROKEN:
        row = model_row(report, name)
        assert row["verdict"] is None and row["verdict_basis"] == VerdictBasis.UNMEASURED
        assert row["mean_diff"] is None and row["lower"] is None and row["n_pairs"] is None
        reasons[name] = row["verdict_reason"]
        assert reasons[name].startswith("no run reached the model: ") and reasons[name].endswith("(20 of 20 runs)")
    assert "HTTP 404 after 1 attempt" in reasons["acme/typo"] and "gpt-4o-mnii" in reasons["acme/typo"]
    assert "connection to http://127.0.0.1:" in reasons["acme/closed"]
    assert "HTTP 500 after 1 attempt" in reasons["acme/down"]
    # every run of theirs failed on the endpoint, recorded per run
    runs = report.runs.filter(pl.col("entry").is_in(BROKEN))
    assert runs.height == 60 and runs["endpoint_error"].null_count() == 0

    # the job failing on the model's answers is the model's failure: a quality result, worse
    prose = model_row(report, "acme/prose")
    assert prose["verdict"] == "worse" and prose["verdict_basis"] == VerdictBasis.JUDGE_ONLY
    assert report.runs.filter(entry="acme/prose", role="candidate")["endpoint_error"].null_count() == 20

    table = report.table()
    for name in BROKEN:  # a headline each, above the models table
        headline = f"UNMEASURED {name}: {reasons[name]}"
        assert headline in table and table.index(headline) < table.index("  entry")
        assert re.search(rf"^  {re.escape(name)} +unmeasured +Δ —", table, re.M)
        assert not re.search(rf"^  {re.escape(name)} +worse", table, re.M)
    assert re.search(r"^  acme/prose +worse ", table, re.M)
    pick = report.recommend()
    assert pick is not None and pick.entry == "acme/ref"
    assert pick.sentence.endswith("unmeasured (the endpoint failed, so not weighed): acme/typo, acme/closed, acme/down")

    page = report.to_html(tmp_path / "report.html").read_text()
    for name in BROKEN:
        assert f"<td>{name}</td><td><b>unmeasured</b></td>" in page
        assert f"UNMEASURED {name}: no run reached the model" in page
    assert "<td>acme/prose</td><td><b>worse</b></td>" in page

    back = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "saved"))  # the same read back
    assert back.models.select("entry", "verdict", "verdict_basis").equals(
        report.models.select("entry", "verdict", "verdict_basis")
    )


async def test_a_partial_outage_leaves_its_runs_out_of_the_pairs_and_says_how_many(tmp_path: Path) -> None:
    """The patchy entry answers as the reference does, but its upstream answered 500 on 4 of its 60 runs: counted 0
    those runs made it look worse; left out, it is as good on the 56 that reached the model, and the reason says
    how many were lost. (Thirty questions: its every paired difference is 0, and that says "as good" from 26 inputs
    on, gradebench._stats.adjusted.)"""
    report = await race(tmp_path, ["acme/ref", "acme/patchy"], inputs=THIRTY)
    row = model_row(report, "acme/patchy")
    assert row["ok_rate"] == 56 / 60  # the failures still show where reliability is read
    assert row["verdict"] == "as good" and row["verdict_basis"] == VerdictBasis.JUDGE_ONLY
    assert row["n_pairs"] == 56 and row["n_inputs"] == 28 and row["mean_diff"] == 0.0
    assert (
        "4 of 60 runs left out: the endpoint failed them (HTTP 500 after 1 attempt: The server had an error while "
        "processing your request.: 4), which says nothing of the model's answers"
    ) in row["verdict_reason"]
    table = report.table()
    assert "UNMEASURED" not in table
    pick = report.recommend()  # as good by the judge alone on the answers it gave, and what a switch would meet
    assert pick is not None and pick.entry == "acme/ref"
    assert pick.sentence.startswith("not a finding: acme/patchy is as good as acme/ref on codes (margin 1.0, 56 paired")
    assert re.search(r"^  acme/patchy +as good .* · 4 of 60 runs lost to the endpoint", table, re.M), table


async def test_an_entry_that_lost_most_of_its_runs_to_its_endpoint_is_unmeasured(tmp_path: Path) -> None:
    """12 of 20 runs never reached the model: the 8 that did are too few, and too chosen by the outage, to measure it
    (the rule: unmeasured when the endpoint failed more than half of an entry's runs)."""
    report = await race(tmp_path, ["acme/ref", "acme/mostly"])
    row = model_row(report, "acme/mostly")
    assert row["verdict"] is None and row["verdict_basis"] == VerdictBasis.UNMEASURED
    assert row["verdict_reason"] == (
        "too few runs reached the model to measure it: the endpoint failed 12 of 20 runs (HTTP 500 after 1 attempt: "
        "The server had an error while processing your request.: 12)"
    )
    assert report.table().splitlines()[1] == f"UNMEASURED acme/mostly: {row['verdict_reason']}"
