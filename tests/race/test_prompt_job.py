"""A job without code (`gb.PromptJob`): one prompt, a template or messages, text or JSON out, tools the seat runs.

Every case races through the real openai client over loopback HTTP (`tests.providers`): what the prompt sends, what
a run returns, a reply that is not JSON, an input the template cannot be made from (refused at ``set_inputs``, before
anything is sent), the rerun of a saved report with no code, and the ``[prompt]`` table of a run config.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb
from gradebench._base.errors import ConfigError
from gradebench._cli.main import load_config, main

from ..loopback import JUDGE, bench_of, catalog, entry, rows
from ..providers import JudgeEndpoint, OpenAIEndpoint, serve

INSTRUCTIONS = 'Label the sentiment of a product review. Answer JSON: {"label": "positive" | "negative"}.'
REVIEWS = [
    {"id": "r1", "text": "Works great, would buy again."},
    {"id": "r2", "text": "Broke after a day."},
]


@gb.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id.

    Args:
        order_id: The order id, e.g. "A-1001".
    """
    return {"order_id": order_id, "status": "delivered", "days_since_delivery": 3}


def labeller(**fields: Any) -> gb.PromptJob:
    made: dict[str, Any] = {"name": "review-labels", "instructions": INSTRUCTIONS, "template": "Review: {text}"}
    return gb.PromptJob(**{**made, "output": "json", "grade": "standard", **fields})


def sentiment(body: dict[str, Any], request: httpx2.Request) -> dict[str, Any]:
    """A model that labels a review by one word of it, answering in JSON."""
    text = json.dumps(body["messages"])
    label = "positive" if "great" in text else "negative"
    return OpenAIEndpoint.completion(json.dumps({"label": label}))


def loopback(base_url: str, *names: str) -> gb.Catalog:
    """``openai/ref`` (the pick, model ``gpt-ref``) and the other entries named (model = the part after the slash)."""
    made = [entry("openai/ref", "gpt-ref", base_url), *(entry(n, n.split("/")[1], base_url) for n in names)]
    return catalog(base_url, *made, reference="openai/ref")


# -------------------------------------------------------------------------------------------------- what it sends


async def test_a_template_is_a_user_message_after_the_instructions_and_json_comes_back(tmp_path: Path) -> None:
    ref = OpenAIEndpoint(sentiment)
    judge = JudgeEndpoint("schema")
    async with serve({"gpt-ref": ref, "judge-1": judge}) as base_url:
        job = labeller(response_format={"type": "json_object"}, params={"temperature": 0}, rubric="Label it right.")
        bench = bench_of(job, loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=REVIEWS)
        assert await bench.run() == [{"label": "positive"}, {"label": "negative"}]
    first = next(b for b in ref.bodies if "great" in json.dumps(b))  # the inputs race at once: any order
    assert first["messages"] == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "Review: Works great, would buy again."},
    ]
    assert first["response_format"] == {"type": "json_object"} and first["temperature"] == 0
    report = bench.report()
    assert report.meta.job == "review-labels" and report.meta.instructions == INSTRUCTIONS
    assert report.meta.spec.rubric == "Label it right." and report.meta.spec.grade == "standard"
    assert INSTRUCTIONS in judge.bodies[0]["messages"][-1]["content"]  # the judge reads the task
    # one value for every run, a fresh conversation for each: two inputs x (reference + one candidate run)
    assert len(ref.bodies) == 4 and {b["messages"][1]["content"] for b in ref.bodies} == {
        "Review: Works great, would buy again.",
        "Review: Broke after a day.",
    }


def test_the_job_declares_its_grade_and_rubric_as_a_job_class_does() -> None:
    job = labeller(rubric="Label it right.")
    bench = gb.Benchmark(job, catalog=gb.sim.catalog(), progress=False)
    assert (bench.spec.grade, bench.spec.rubric) == ("standard", "Label it right.")
    assert bench.job.name == "review-labels" and bench.job.instructions == INSTRUCTIONS


async def test_messages_are_sent_as_written_with_their_fields_filled_in(tmp_path: Path) -> None:
    ref = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("positive"))
    async with serve({"gpt-ref": ref, "judge-1": JudgeEndpoint("schema")}) as base_url:
        job = gb.PromptJob(
            name="labels",
            instructions="Label the sentiment of a review in one word.",
            messages=[
                {"role": "system", "content": "You label {kind} reviews. Answer {{positive}} or {{negative}}."},
                {"role": "user", "content": [{"type": "text", "text": "Review: {text}"}]},
            ],
        )
        inputs = [{"id": "r1", "kind": "laptop", "text": "Works great."}]
        bench = bench_of(job, loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=inputs)
        assert await bench.run() == "positive"  # output="text": the reply's text
    assert ref.bodies[0]["messages"] == [
        {"role": "system", "content": "You label laptop reviews. Answer {positive} or {negative}."},
        {"role": "user", "content": [{"type": "text", "text": "Review: Works great."}]},
    ]


async def test_an_input_that_is_not_a_dict_is_the_field_input(tmp_path: Path) -> None:
    ref = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Bonjour"))
    async with serve({"gpt-ref": ref, "judge-1": JudgeEndpoint("schema")}) as base_url:
        job = gb.PromptJob(name="translate", instructions="Translate into French.", template="Translate: {input}")
        bench = bench_of(job, loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=["Hello"])
        assert await bench.run() == "Bonjour"
    assert ref.bodies[0]["messages"][1] == {"role": "user", "content": "Translate: Hello"}


async def test_the_seat_runs_the_tools_of_a_prompt_job(tmp_path: Path) -> None:
    def agent(body: dict[str, Any], request: httpx2.Request) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            seen = json.loads(body["messages"][-1]["content"])
            decision = "refund" if seen["days_since_delivery"] <= 30 else "deny"
            return OpenAIEndpoint.completion(f'```json\n{{"decision": "{decision}"}}\n```')  # fenced: still JSON
        return OpenAIEndpoint.completion(
            None, tool_calls=[OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1"})]
        )

    ref = OpenAIEndpoint(agent)
    async with serve({"gpt-ref": ref, "judge-1": JudgeEndpoint("schema")}) as base_url:
        job = gb.PromptJob(
            name="refund-desk",
            instructions='Decide a refund request: look the order up, then answer JSON {"decision": ...}.',
            template="{message}",
            output="json",
            tools=[lookup_order],
        )
        inputs = [{"id": "q1", "message": "Refund order A-1?"}]
        bench = bench_of(job, loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=inputs)
        assert await bench.run() == {"decision": "refund"}
    assert [t["function"]["name"] for t in ref.bodies[0]["tools"]] == ["lookup_order"]
    report = bench.report()
    assert rows(report, "openai/ref")[0]["tool_calls"] == 1 and rows(report, "openai/ref")[0]["tool_missing"] == 0


# ------------------------------------------------------------------------------------------------- what it refuses


async def test_a_reply_that_is_not_json_fails_the_run_saying_so(tmp_path: Path) -> None:
    chatty = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Sure! The label is positive."))
    endpoints = {"gpt-ref": OpenAIEndpoint(sentiment), "gpt-chatty": chatty, "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        cat = loopback(base_url, "acme/gpt-chatty")
        bench = bench_of(labeller(), cat, tmp_path, candidates=["acme/gpt-chatty"], inputs=REVIEWS[:1])
        await bench.run()
        [run] = rows(bench.report(), "acme/gpt-chatty")
        assert not run["ok"] and run["score"] == 0.0
        assert run["error"].startswith("ValueError: review-labels: the reply is not JSON (Expecting value")
        assert "it began: 'Sure! The label is positive.'" in run["error"]
        # on the reference it is the reference's failure, raised with what the model said
        chatty_ref = catalog(base_url, entry("openai/ref", "gpt-chatty", base_url), reference="openai/ref")
        failing = bench_of(labeller(), chatty_ref, tmp_path / "again", candidates=["openai/ref"], inputs=REVIEWS[:1])
        with pytest.raises(ValueError, match="the reply is not JSON") as raised:
            await failing.run()
        assert any("the reference run on openai/ref failed" in n for n in raised.value.__notes__)


async def test_a_template_field_the_input_lacks_fails_at_set_inputs_before_anything_is_sent(tmp_path: Path) -> None:
    ref = OpenAIEndpoint(sentiment)
    async with serve({"gpt-ref": ref, "judge-1": JudgeEndpoint("schema")}) as base_url:
        bench = bench_of(labeller(), loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=REVIEWS)
        with pytest.raises(ValueError) as raised:
            bench.set_inputs([REVIEWS[0], {"id": "r9", "body": "No text field here."}])
        assert str(raised.value) == (
            "input 'r9' cannot run job 'review-labels': the template reads the field {text}, which the input lacks "
            "(its fields: id, body)"
        )
        assert list(bench.inputs) == ["r1", "r2"]  # the inputs before stand
        with pytest.raises(
            ValueError, match=r"reads the field \{text\}.*it is a str, which a prompt reads as \{input\}"
        ):
            bench.set_inputs(["just a string"])
        messages = gb.PromptJob(name="m", instructions="x", messages=[{"role": "user", "content": "{a[b]}"}])
        with pytest.raises(ValueError, match=r"input 'q1' cannot run job 'm': message 0 reads the field \{b\}"):
            bench_of(messages, loopback(base_url), tmp_path, candidates=["openai/ref"], inputs=[{"id": "q1", "a": {}}])
    assert ref.bodies == []  # nothing was sent


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"template": None}, "PromptJob field 'template': give a template or messages: exactly one of the two"),
        ({"messages": [{"role": "user", "content": "x"}]}, "exactly one of the two"),
        ({"template": "Review: {text"}, "field 'template': expected '}' before end of string"),
        ({"template": "Review: {}"}, "field 'template': {} is positional: name an input field, e.g. {question}"),
        ({"template": "  "}, "field 'template': must be a non-empty string"),
        ({"output": "xml"}, "field 'output': must be one of text, json, got 'xml'"),
        ({"name": ""}, "field 'name': must be a non-empty string"),
        ({"instructions": None}, "field 'instructions': must be a non-empty string"),
        ({"tools": ["lookup_order"]}, "field 'tools': 'lookup_order' is not a function"),
        ({"tools": [lookup_order, lookup_order]}, "field 'tools': tool names must be unique"),
        ({"params": {"stop": object()}}, "field 'params': must be a mapping of JSON values"),
        ({"max_steps": 0}, "field 'max_steps': must be an integer >= 1, got 0"),
        ({"timeout_s": -1}, "field 'timeout_s': must be a number of seconds > 0"),
    ],
)
def test_a_bad_field_raises_at_once_naming_it(fields: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match="PromptJob field") as raised:
        labeller(**fields)
    assert expected in str(raised.value)


def test_a_bad_message_raises_naming_it() -> None:
    with pytest.raises(ValueError, match="field 'messages': must be a non-empty list"):
        gb.PromptJob(name="m", instructions="x", messages=[])
    with pytest.raises(ValueError, match="message 1 must have a role and a content"):
        gb.PromptJob(name="m", instructions="x", messages=[{"role": "user", "content": "a"}, {"role": "user"}])
    with pytest.raises(ValueError, match=r"field 'messages': .*positional"):
        gb.PromptJob(
            name="m", instructions="x", messages=[{"role": "user", "content": [{"type": "text", "text": "{0}"}]}]
        )


def test_a_job_instance_is_refused_and_a_prompt_job_is_taken() -> None:
    from gradebench.jobs import OrderAgent

    with pytest.raises(TypeError, match="pass the job class OrderAgent, not an instance"):
        gb.Benchmark(OrderAgent(), catalog=gb.sim.catalog())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="or a PromptJob"):
        gb.Benchmark(42, catalog=gb.sim.catalog())  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- rerun without code


def test_a_prompt_job_is_recorded_so_it_can_be_rebuilt() -> None:
    job = labeller(tools=[lookup_order], params={"temperature": 0}, timeout_s=30)
    assert job.reference is not None and job.reference.startswith("prompt:")
    back = gb.PromptJob.from_reference(job.reference)
    assert back.to_dict() == job.to_dict() and back.tools[0] is lookup_order
    assert job.to_dict()["tools"] == ["tests.race.test_prompt_job:lookup_order"]

    def local(order_id: str) -> str:
        """A tool no other process can import."""
        return order_id

    assert labeller(tools=[local]).reference is None  # a rerun passes job=...
    with pytest.raises(ValueError, match="is not a prompt job's JSON"):
        gb.PromptJob.from_reference("prompt:{nope")
    with pytest.raises(ValueError, match="job: field 'output': Input should be 'text' or 'json'"):
        gb.PromptJob.from_reference('prompt:{"name": "a", "instructions": "b", "template": "c", "output": "xml"}')


async def test_a_report_of_a_prompt_job_reruns_with_no_code(tmp_path: Path) -> None:
    endpoints = {
        "gpt-ref": OpenAIEndpoint(sentiment),
        "gpt-mini": OpenAIEndpoint(sentiment),
        "judge-1": JudgeEndpoint(),
    }
    async with serve(endpoints) as base_url:
        cat = loopback(base_url, "acme/gpt-mini")
        bench = bench_of(labeller(tools=[lookup_order]), cat, tmp_path, candidates=["acme/gpt-mini"], inputs=REVIEWS)
        await bench.run()
        bench.report().to_parquet(tmp_path / "saved")
        saved = gb.BenchmarkReport.read_parquet(tmp_path / "saved")
        assert str(saved.meta.spec.job).startswith('prompt:{"name":"review-labels"')
        again = gb.Benchmark.from_report(saved, cat, cache=tmp_path / "cache", progress=False)
        assert again.job.factory.to_dict() == bench.job.factory.to_dict()
        await again.run()
    report = again.report()
    assert report.runs["cached"].all() and report.runs["spent_now"].sum() == 0
    kept = ["run_id", "input_id", "entry", "output", "score", "cost"]
    assert report.runs.select(kept).equals(bench.report().runs.select(kept))


# --------------------------------------------------------------------------------------------------- the run config


def write_prompt_config(tmp_path: Path, prompt: str, top: str = "") -> Path:
    (tmp_path / "reviews.jsonl").write_text("\n".join(json.dumps(r) for r in REVIEWS) + "\n")
    path = tmp_path / "run.toml"
    path.write_text(f'inputs = "reviews.jsonl"\n{top}\n[prompt]\n{prompt}')  # a table ends the top-level keys
    return path


PROMPT_TABLE = f"""name = "review-labels"
instructions = '{INSTRUCTIONS}'
template = "Review: {{text}}"
output = "json"
grade = "standard"
tools = ["tests.race.test_prompt_job:lookup_order"]
params = {{ temperature = 0 }}
"""


def test_a_run_config_declares_a_prompt_job_in_a_prompt_table(tmp_path: Path) -> None:
    config = load_config(write_prompt_config(tmp_path, PROMPT_TABLE))
    assert str(config.spec.job).startswith("prompt:")
    job = gb.PromptJob.from_reference(str(config.spec.job))
    assert job.to_dict() == labeller(tools=[lookup_order], params={"temperature": 0}).to_dict()


@pytest.mark.parametrize(
    ("prompt", "top", "expected"),
    [
        (PROMPT_TABLE, 'job = "order-agent"', "field 'job': give job = ... or a [prompt] table"),
        (
            PROMPT_TABLE.replace('output = "json"', 'outptu = "json"'),
            "",
            "unknown field 'prompt.outptu' (did you mean 'output'?)",
        ),
        (
            PROMPT_TABLE + 'messages = [{ role = "user", content = "hi" }]\n',
            "",
            "field 'prompt.template': give a template or messages",
        ),
        (PROMPT_TABLE.replace('"json"', '"xml"'), "", "field 'prompt.output': Input should be 'text' or 'json'"),
        (
            PROMPT_TABLE.replace("tests.race.test_prompt_job:lookup_order", "nowhere:fn"),
            "",
            "field 'prompt.tools': tool 'nowhere:fn' cannot be imported",
        ),
    ],
    ids=["both", "typo", "template-and-messages", "output", "tools"],
)
def test_a_bad_prompt_table_says_so_naming_the_file_and_field(
    tmp_path: Path, prompt: str, top: str, expected: str
) -> None:
    path = write_prompt_config(tmp_path, prompt, top)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}: ") and expected in str(raised.value), str(raised.value)


def test_a_config_with_neither_job_nor_prompt_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.toml"
    path.write_text('inputs = "reviews.jsonl"\n')
    assert main(["run", str(path)]) == 2
    assert "field 'job': Field required (or a [prompt] table: a job without code)" in capsys.readouterr().err


@contextmanager
def served_in_a_thread(endpoints: dict[str, Any]) -> Iterator[str]:
    """`serve` on a loop of its own, for the command line's own ``asyncio.run``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = serve(endpoints)
    try:
        yield asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(10)
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_gradebench_run_races_a_prompt_table_and_the_report_reruns(tmp_path: Path) -> None:
    endpoints = {
        "gpt-ref": OpenAIEndpoint(sentiment),
        "gpt-mini": OpenAIEndpoint(sentiment),
        "judge-1": JudgeEndpoint(),
    }
    with served_in_a_thread(endpoints) as base_url:
        (tmp_path / "catalog.toml").write_text(
            f'grades = ["standard", "large"]\nceiling = "{JUDGE}"\n[picks]\nstandard = "openai/ref"\n'
            + "".join(
                f'[[entries]]\nname = "{name}"\nmodel = "{model}"\ngrade = "{grade}"\nbase_url = "{base_url}"\n'
                f"price_in = 1.0\nprice_out = 2.0\nmax_retries = 0\n"
                for name, model, grade in [
                    ("openai/ref", "gpt-ref", "standard"),
                    ("acme/mini", "gpt-mini", "standard"),
                    (JUDGE, "judge-1", "large"),
                ]
            )
        )
        # no negative controls: this scripted judge never reads an answer (they would void it, and run exits 4)
        top = f'catalog = "catalog.toml"\nruns = 1\ncontrols = 0\nout = "{tmp_path / "out"}"'
        assert main(["run", str(write_prompt_config(tmp_path, PROMPT_TABLE, top))]) == 0
        report = gb.BenchmarkReport.read_parquet(tmp_path / "out")
        assert report.meta.job == "review-labels" and report.runs.filter(pl.col("ok")).height == 6
        again = gb.Benchmark.from_report(report, progress=False)  # the job and the catalog from the spec alone
        asyncio.run(again.run())
    assert again.report().runs["cached"].all()
