"""NaN or Infinity in a response's ``usage`` (Python's json reads both words), through the real openai client over
loopback HTTP: the paid answer is kept and scored, its tokens and cost are unknown (null, never 0 or a guess), a
diagnostic names the fields, and a rerun is served from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import polars as pl

import gradebench as gb

from ..batch_providers import OpenAIBatchAPI
from ..loopback import answering, answers, catalog, diagnostics, entry, race, rows
from ..providers import Fleet, JudgeEndpoint, OpenAIEndpoint, serve
from .test_batch_shapes import ask, one_question_catalog, openai_judge, serving


def usage_sent_as(field: str, word: str) -> httpx2.Response:
    """A completion whose ``usage.<field>`` is the bare JSON word ``word`` (``NaN``, ``Infinity``), as a server
    written in a language whose encoder allows them would send it."""
    body = OpenAIEndpoint.completion("Yes, it can be refunded.")
    body["usage"]["cost"] = 0.00004
    body["usage"][field] = "PLACEHOLDER"
    text = json.dumps(body).replace('"PLACEHOLDER"', word)
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "application/json"})


ODD = {
    "acme/nan": ("nan-1", "prompt_tokens", "NaN"),
    "acme/inf": ("inf-1", "completion_tokens", "Infinity"),
    "acme/infcost": ("infcost-1", "cost", "Infinity"),
}


async def test_nan_or_infinity_in_usage_keeps_the_answer_with_usage_unknown_and_says_so(tmp_path: Path) -> None:
    endpoints = {model: OpenAIEndpoint(lambda b, r, f=f, w=w: usage_sent_as(f, w)) for model, f, w in ODD.values()}
    endpoints |= {
        "ref-1": OpenAIEndpoint(lambda b, r: OpenAIEndpoint.completion("Yes.")),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        odd = [entry(name, model, base_url) for name, (model, _, _) in ODD.items()]
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), *odd, reference="acme/ref")
        report = await race(answering(), cat, tmp_path, candidates=list(ODD))
        for name, (_, field, word) in ODD.items():
            (run,) = rows(report, name)
            assert run["ok"], run["error"]
            assert json.loads(run["output"]) == "Yes, it can be refunded." and run["score"] is not None
            assert run["input_tokens"] is None and run["output_tokens"] is None and run["cost"] is None
            (said,) = diagnostics(report, "usage_not_finite", name)
            assert f"{field}={word}" in said["detail"] and "unknown" in said["detail"]
            assert not diagnostics(report, "no_usage", name)  # said once, by what it is
        back = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "out"))
        assert back.diagnostics().filter(pl.col("kind") == "usage_not_finite").height == len(ODD)
        sent = {model: len(endpoints[model].bodies) for model, _, _ in ODD.values()}
        again = await race(answering(), cat, tmp_path, candidates=list(ODD))  # the paid answers were stored
        assert {model: len(endpoints[model].bodies) for model, _, _ in ODD.values()} == sent
        assert all(rows(again, name)[0]["cached"] for name in ODD)


async def test_a_job_on_seat_openai_gets_its_answer_whatever_the_usage_said(tmp_path: Path) -> None:
    async def job(input: dict[str, Any], seat: gb.Seat) -> str:
        """Answer the customer's question, streamed, as a user's own openai code does."""
        stream = await seat.openai.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": input["question"]}],
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    endpoints = {model: OpenAIEndpoint(lambda b, r, f=f, w=w: usage_sent_as(f, w)) for model, f, w in ODD.values()}
    endpoints |= {
        "ref-1": OpenAIEndpoint(lambda b, r: OpenAIEndpoint.completion("Yes.")),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        odd = [entry(name, model, base_url) for name, (model, _, _) in ODD.items()]
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), *odd, reference="acme/ref")
        report = await race(job, cat, tmp_path, candidates=list(ODD))
        for name in ODD:
            (run,) = rows(report, name)
            assert run["ok"], run["error"]
            assert json.loads(run["output"]) == "Yes, it can be refunded." and run["cost"] is None
            assert diagnostics(report, "usage_not_finite", name)


async def test_a_batch_results_line_with_infinity_in_usage_keeps_its_verdict(tmp_path: Path) -> None:
    def judge(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, answer = openai_judge(body)
        answer["usage"]["completion_tokens"] = float("inf")  # written to the results file as the word Infinity
        return status, answer

    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    async with serving(OpenAIBatchAPI(fleet, judge)) as base_url:
        report = await ask(one_question_catalog(base_url), tmp_path, judge_batch=True)
    candidates = report.runs.filter(pl.col("role") == "candidate")
    assert (
        candidates.height == 12
        and candidates["judge_error"].is_null().all()
        and candidates["accuracy"].is_not_null().all()
    )
    assert candidates["judge_cost"].is_null().all()  # unknown, not 0
    (said,) = diagnostics(report, "usage_not_finite", "judge/oracle")
    assert "completion_tokens=Infinity" in said["detail"]
