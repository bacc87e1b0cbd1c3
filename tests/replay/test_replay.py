"""Replay: recorded outputs race as catalog entries through the real openai client, over loopback HTTP and in-process;
a missing record fails its run naming the input and the model; a recorded judge gives the recorded scores; a rerun is
served from the cache; a bad recording is refused naming the file, the column and the row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench.replay import RecordedJudge, Recording, Replay

from ..providers import serve

REFERENCE = "acme-large-1"
CANDIDATE = "acme-mini-2"
QUESTIONS = {
    "q1": "How many legs has a spider?",
    "q2": "What is the capital of Australia?",
    "q3": "Which planet is the largest?",
    "q4": "What is 12 times 12?",
}
ANSWERS = {
    REFERENCE: {"q1": "Eight.", "q2": "Canberra.", "q3": "Jupiter.", "q4": "144."},
    CANDIDATE: {"q1": "Eight legs.", "q2": "Sydney.", "q3": "Jupiter.", "q4": "144."},
}
SCORES = {(CANDIDATE, "q2"): 2, (CANDIDATE, "q1"): 9}
"""Recorded scores that are not 10."""


def recorded(*, skip: tuple[str, str] | None = None, prompts: bool = True) -> list[dict[str, Any]]:
    """Both models' answers to every question (but ``skip``: (model, input)), with usage, cost and latency."""
    rows = []
    for model, answers in ANSWERS.items():
        for ident, output in answers.items():
            if (model, ident) == skip:
                continue
            row = {"input": ident, "model": model, "output": output}
            if prompts:
                row["prompt"] = QUESTIONS[ident]
            usage = {"prompt_tokens": 20 + len(ident), "completion_tokens": len(output)}
            rows.append({**row, "usage": usage, "cost": 0.002 if model == REFERENCE else 0.0005, "latency_ms": 900.0})
    return rows


def scores(*, skip: tuple[str, str] | None = None) -> RecordedJudge:
    """Recorded verdicts on every recorded output (but ``skip``: (model, input))."""
    rows = [
        {"input": i, "model": m, "score": SCORES.get((m, i), 10), "reason": f"recorded {m} {i}"}
        for m, answers in ANSWERS.items()
        for i in answers
        if (m, i) != skip
    ]
    return RecordedJudge(pl.DataFrame(rows))


def bench(recording: Recording, catalog: gb.Catalog, tmp_path: Path, **kw: Any) -> gb.Benchmark:
    job = recording.job("quiz", "Answer the question in a few words.")
    made = gb.Benchmark(job, runs=1, catalog=catalog, controls=0, cache=tmp_path / "cache", progress=False, **kw)
    return made.set_inputs(recording.inputs())


def candidate_rows(report: gb.BenchmarkReport, entry: str) -> dict[str, dict[str, Any]]:
    rows = report.runs.filter((pl.col("entry") == entry) & (pl.col("role") == "candidate")).to_dicts()
    return {r["input_id"]: r for r in rows}


async def test_a_recording_of_two_models_races_over_loopback_with_its_outputs_usage_and_cost(tmp_path: Path) -> None:
    recording = Recording(pl.DataFrame(recorded()))
    replay = Replay(recording, judge=scores(), latency_scale=0)
    # the suite's loopback server routes by model id: every one of them to the replay
    async with serve({model: replay for model in [*ANSWERS, gb.replay.JUDGE_MODEL]}) as base_url:
        catalog = replay.catalog(REFERENCE, base_url=base_url)
        report = await _raced(bench(recording, catalog, tmp_path))
    assert report.meta.reference_entry == REFERENCE
    for model, answers in ANSWERS.items():
        rows = candidate_rows(report, model)
        assert {i: json.loads(r["output"]) for i, r in rows.items()} == answers  # the recorded outputs, as recorded
        assert all(r["ok"] and r["input_tokens"] == 20 + len(i) for i, r in rows.items())
        assert {r["cost"] for r in rows.values()} == {0.002 if model == REFERENCE else 0.0005}
        assert {r["cost_source"] for r in rows.values()} == {"provider"}
    chats = [r for r in replay.requests if r.path.endswith("/chat/completions")]
    # 4 reference runs, 8 candidate runs and 8 verdicts, each one request over the socket
    assert len(chats) == 20 and {r.status for r in chats} == {200}


async def _raced(made: gb.Benchmark) -> gb.BenchmarkReport:
    await made.run()
    return made.report()


async def test_a_rerun_is_served_entirely_from_the_cache(tmp_path: Path) -> None:
    recording = Recording(recorded())
    replay = Replay(recording, judge=scores(), latency_scale=0)
    first = await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))
    sent = len(replay.requests)
    again = await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))
    assert sent == 20 and len(replay.requests) == sent  # nothing reached the replay the second time
    assert again.calls["cache_hit"].all()
    keep = ["entry", "input_id", "role", "output", "score", "cost"]
    assert again.runs.select(keep).sort(keep[:3]).equals(first.runs.select(keep).sort(keep[:3]))


async def test_a_missing_record_fails_that_run_naming_the_input_and_the_model(tmp_path: Path) -> None:
    recording = Recording(recorded(skip=(CANDIDATE, "q3")))
    replay = Replay(recording, judge=scores(skip=(CANDIDATE, "q3")), latency_scale=0)
    report = await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))
    rows = candidate_rows(report, CANDIDATE)
    assert not rows["q3"]["ok"] and rows["q3"]["output"] is None
    assert (
        "404" in rows["q3"]["error"]
        and f"model '{CANDIDATE}' has no recorded output for input 'q3'" in (rows["q3"]["error"])
    )
    assert all(rows[i]["ok"] for i in ("q1", "q2", "q4"))
    assert rows["q3"]["endpoint_error"]  # an endpoint failure: the verdict leaves the run out, saying so
    assert "1 of 4 runs lost to the endpoint" in report.table()
    missed = [r for r in replay.requests if r.status == 404]
    assert [(r.model, r.input) for r in missed] == [(CANDIDATE, "q3")]
    sent = len(replay.requests)
    await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))  # a failed call is not cached: asked again
    assert [(r.model, r.input, r.status) for r in replay.requests[sent:]] == [(CANDIDATE, "q3", 404)]


async def test_a_missing_reference_record_stops_the_race_naming_the_input_and_the_model(tmp_path: Path) -> None:
    recording = Recording(recorded(skip=(REFERENCE, "q2")))
    replay = Replay(recording, judge=scores(skip=(REFERENCE, "q2")), latency_scale=0)
    made = bench(recording, replay.catalog(REFERENCE), tmp_path)
    with pytest.raises(gb.CallError, match=f"model '{REFERENCE}' has no recorded output for input 'q2'"):
        await made.run()


async def test_a_recorded_judge_gives_the_recorded_scores_and_a_missing_one_fails_naming_it(tmp_path: Path) -> None:
    recording = Recording(recorded())
    rows = [
        {"input": i, "model": m, "accuracy": min(s, 7), "work": s - min(s, 7)}
        for (m, i), s in {(m, i): SCORES.get((m, i), 10) for m in ANSWERS for i in ANSWERS[m]}.items()
        if (m, i) != (CANDIDATE, "q2")
    ]
    judge = RecordedJudge(rows)
    report = await _raced(
        bench(recording, gb.replay.catalog(recording, REFERENCE, judge=judge, latency_scale=0), tmp_path)
    )
    got = candidate_rows(report, CANDIDATE)
    assert {i: got[i]["score"] for i in ("q1", "q3", "q4")} == {"q1": 9.0, "q3": 10.0, "q4": 10.0}
    assert (got["q1"]["accuracy"], got["q1"]["work"]) == (7.0, 2.0)
    assert got["q2"]["score"] is None and got["q2"]["ok"]  # the run stands; its verdict failed, saying why
    assert f"no recorded verdict on the output of model '{CANDIDATE}' for input 'q2'" in got["q2"]["judge_error"]
    assert {r["score"] for r in candidate_rows(report, REFERENCE).values()} == {10.0}


async def test_a_recording_without_prompts_races_on_prompts_made_from_a_template(tmp_path: Path) -> None:
    bare = Recording(recorded(prompts=False))
    with pytest.raises(ValueError, match=r"holds no prompts .*with_prompts"):
        bare.inputs()
    fields = [{"input": i, "question": q} for i, q in QUESTIONS.items()]
    recording = bare.with_prompts("Question: {question}\nAnswer briefly.", fields)
    replay = Replay(recording, judge=scores(), latency_scale=0)
    report = await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))
    assert {i: json.loads(r["output"]) for i, r in candidate_rows(report, CANDIDATE).items()} == ANSWERS[CANDIDATE]
    assert replay.requests[0].input == "q1"


async def test_whitespace_in_a_prompt_does_not_hide_its_record_and_no_usage_is_never_made_up(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k not in ("usage", "cost")} for r in recorded()]
    for r in rows:
        r["prompt"] = "  " + r["prompt"].replace(" ", "\n ") + "\n"  # as a log may have kept it
    recording = Recording(rows)
    assert recording.find(QUESTIONS["q2"]) == "q2"
    replay = Replay(recording, judge=scores(), latency_scale=0)
    report = await _raced(bench(recording, replay.catalog(REFERENCE), tmp_path))
    assert report.runs["ok"].all()
    answered = report.calls.filter(pl.col("entry") != gb.replay.JUDGE_MODEL)
    assert answered.height == 12 and answered["input_tokens"].null_count() == 12  # 4 references, 8 candidate runs
    assert report.runs["cost"].null_count() == report.runs.height


def test_a_recording_reads_the_same_from_parquet_jsonl_and_csv(tmp_path: Path) -> None:
    frame = pl.DataFrame(recorded())
    frame.write_parquet(tmp_path / "r.parquet")
    frame.write_ndjson(tmp_path / "r.jsonl")
    frame.with_columns(pl.col("usage").struct.json_encode()).write_csv(tmp_path / "r.csv")
    read = [Recording.read(tmp_path / f"r.{s}").records for s in ("parquet", "jsonl", "csv")]
    assert read[0] == read[1] and [(r.input, r.output, r.usage, r.cost) for r in read[0]] == [
        (r.input, r.output, r.usage, r.cost) for r in read[2]
    ]
    assert read[0][0].usage == {"prompt_tokens": 22, "completion_tokens": 6}
    twice = pl.concat([frame, frame.head(1)])  # a log that kept one call twice: the same answer, kept once
    assert len(Recording(twice)) == len(read[0]) == 8


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"input": "q1", "output": "x"}], r"r\.jsonl: missing column 'model'"),
        ([{"input": "q1", "model": "m", "output": "x", "answer": "y"}], r"unknown column 'answer'"),
        (
            [{"input": "q1", "model": "m", "output": "x"}, {"input": "q1", "model": "m", "output": "y"}],
            r"rows 1 and 2 both record model 'm' on input 'q1', with different outputs",
        ),
        (
            [{"input": "q1", "model": "m", "output": None}],
            r"row 1 \(input 'q1', model 'm'\), column 'output': is empty",
        ),
        (
            [{"input": "q1", "model": "m", "output": "x", "cost": -1.0}],
            r"row 1 \(input 'q1', model 'm'\), column 'cost': must be a finite number >= 0",
        ),
        (
            [{"input": "q1", "model": "m", "output": "x", "usage": {"prompt_tokens": -3}}],
            r"column 'usage': prompt_tokens must be a whole number >= 0",
        ),
        (
            [
                {"input": "q1", "model": "m", "output": "x", "prompt": "Same?"},
                {"input": "q2", "model": "m", "output": "y", "prompt": "Same?"},
            ],
            r"inputs 'q1' and 'q2' have the same prompt",
        ),
        (
            [
                {"input": "q1", "model": "m", "output": "x", "prompt": "One"},
                {"input": "q1", "model": "n", "output": "y", "prompt": "Two"},
            ],
            r"give input 'q1' two different prompts",
        ),
    ],
)
def test_a_bad_recording_file_is_refused_naming_the_file_column_and_row(
    tmp_path: Path, rows: list[dict[str, Any]], message: str
) -> None:
    path = tmp_path / "r.jsonl"
    pl.DataFrame(rows).write_ndjson(path)
    with pytest.raises(ValueError, match=message) as caught:
        Recording.read(path)
    assert str(path) in str(caught.value)


def test_a_bad_judge_file_or_a_file_of_no_format_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"r\.txt: a recording is a \.parquet, \.jsonl"):
        Recording.read(tmp_path / "r.txt")
    with pytest.raises(ValueError, match=r"nothere\.csv: no such file"):
        Recording.read(tmp_path / "nothere.csv")
    path = tmp_path / "scores.csv"
    pl.DataFrame([{"input": "q1", "model": REFERENCE, "score": 11}]).write_csv(path)
    with pytest.raises(ValueError, match=r"scores\.csv: row 1 .*column 'score': must be a whole number from 0 to 10"):
        RecordedJudge.read(path)
    pl.DataFrame([{"input": "q9", "model": REFERENCE, "score": 7}]).write_csv(path)
    with pytest.raises(ValueError, match=rf"scores\.csv: row 1 scores model '{REFERENCE}' on input 'q9', which"):
        Replay(Recording(recorded()), judge=RecordedJudge.read(path))
    with pytest.raises(KeyError, match="pick 'gpt-9' is not a recorded model"):
        Replay(Recording(recorded()), judge=scores()).catalog("gpt-9")


async def test_a_changed_recording_is_never_answered_from_the_cache_of_the_old_one(tmp_path: Path) -> None:
    first = Recording(recorded())
    await _raced(bench(first, Replay(first, judge=scores(), latency_scale=0).catalog(REFERENCE), tmp_path))
    rows = recorded()
    fixed = next(r for r in rows if (r["model"], r["input"]) == (CANDIDATE, "q2"))
    fixed["output"] = "Canberra."
    changed = Recording(rows)
    replay = Replay(changed, judge=scores(), latency_scale=0)
    assert replay.base_url != Replay(first, judge=scores()).base_url
    report = await _raced(bench(changed, replay.catalog(REFERENCE), tmp_path))
    assert json.loads(candidate_rows(report, CANDIDATE)["q2"]["output"]) == "Canberra."
    assert replay.requests  # asked again, not served what the old recording said


async def test_a_prompt_recorded_as_the_messages_sent_is_found_by_its_last_user_message() -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": QUESTIONS["q1"]}]},
    ]
    rows = [{**r, "prompt": json.dumps(messages) if r["input"] == "q1" else r["prompt"]} for r in recorded()]
    recording = Recording(rows)
    assert recording.inputs()[0] == {"id": "q1", "prompt": QUESTIONS["q1"]}
    replay = Replay(recording, judge=scores(), latency_scale=0)
    async with httpx2.AsyncClient(transport=replay.transport()) as http:
        client = openai.AsyncOpenAI(base_url=replay.base_url, api_key="none", http_client=http, max_retries=0)
        listed = await client.models.list()
        asked = [{"role": "user", "content": QUESTIONS["q1"]}]
        answer = await client.chat.completions.create(model=CANDIDATE, messages=asked)  # type: ignore[arg-type]
        with pytest.raises(openai.NotFoundError, match="no record of model 'acme-mini-2' answers this prompt"):
            await client.chat.completions.create(model=CANDIDATE, messages=[{"role": "user", "content": "Hi?"}])
    assert [m.id for m in listed.data] == [REFERENCE, CANDIDATE, gb.replay.JUDGE_MODEL]
    assert answer.choices[0].message.content == "Eight legs."
    assert answer.usage is not None and answer.usage.completion_tokens == len("Eight legs.")
