"""Faults a race meets on the wire, on disk and from the operating system — each reproduced through the real openai
client over loopback HTTP (or in a real process): the race finishes on the rest, a failed run says why, and no
answer that was paid for is lost or given to an entry that did not get it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb

from .loopback import QUESTION, catalog, entry
from .providers import JudgeEndpoint, OpenAIEndpoint, serve


async def answer(input: dict[str, Any], seat: gb.Seat) -> str:
    """Answer the customer's question in one sentence."""
    return (await seat.chat([{"role": "user", "content": input["question"]}])).text


def raw_completion(content_json: str) -> httpx2.Response:
    """A completion whose content is given as raw JSON text (e.g. with a ``\\ud800`` escape no encoder would write)."""
    body = OpenAIEndpoint.completion("PLACEHOLDER")
    text = json.dumps(body).replace('"PLACEHOLDER"', content_json)
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "application/json"})


# ------------------------------------------------------------------------------------------ 8: one odd character


async def test_a_lone_surrogate_in_an_answer_is_a_replacement_character_not_a_crash(tmp_path: Path) -> None:
    async def twice(input: dict[str, Any], seat: gb.Seat) -> str:
        """Answer, then confirm the answer."""
        first = await seat.chat([{"role": "user", "content": input["question"]}])
        messages = [{"role": "user", "content": input["question"]}, first.message, {"role": "user", "content": "Sure?"}]
        return (await seat.chat(messages)).text + " / " + first.text

    endpoints = {
        "ref-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days.")),
        "odd-1": OpenAIEndpoint(lambda body, request: raw_completion('"broken \\ud800 text"')),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        cat = catalog(
            base_url, entry("acme/ref", "ref-1", base_url), entry("acme/odd", "odd-1", base_url), reference="acme/ref"
        )
        bench = gb.Benchmark(twice, catalog=cat, grade="standard", runs=2, cache=tmp_path / "cache", progress=False)
        await bench.set_input(QUESTION).run()
        report = bench.report()
        odd = report.runs.filter(pl.col("entry") == "acme/odd")
        assert odd["ok"].all() and json.loads(odd["output"][0]) == "broken \ufffd text / broken \ufffd text"
        assert odd["score"].is_not_null().all()  # judged like any other run
        back = gb.BenchmarkReport.read_parquet(report.to_parquet(tmp_path / "out"))
        assert back.runs.equals(report.runs)
        sent = len(endpoints["odd-1"].bodies)
        await bench.run()  # the rerun is served from the cache: the answer was stored
        assert (
            len(endpoints["odd-1"].bodies) == sent
            and bench.report().runs.filter(pl.col("entry") == "acme/odd")["cached"].all()
        )


def test_an_input_that_is_not_utf8_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"input 1 \(id 'b'\) holds text that is not UTF-8"):
        gb.Benchmark(answer, catalog=gb.sim.catalog(), grade="standard").set_inputs(
            [{"id": "a", "q": "fine"}, {"id": "b", "q": json.loads('"\\udc80"')}]
        )


# ----------------------------------------------------------------------------- 10: a server that trickles its body


async def test_timeout_s_is_the_deadline_of_a_whole_call_even_when_the_body_trickles(tmp_path: Path) -> None:
    import asyncio
    import time

    body = json.dumps(OpenAIEndpoint.completion("slowly, one byte at a time")).encode()

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the headers; the body is small and not needed
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        writer.write(head.encode())
        try:
            for byte in body:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.1)  # never silent long enough for a per-read timeout
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    slow = entry("acme/slow", "slow-1", base_url, timeout_s=0.5)
    cat = gb.Catalog([slow], grades=["standard"], picks={"standard": "acme/slow"}, ceiling="acme/slow")
    bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=1, cache=tmp_path / "cache", progress=False)
    started = time.perf_counter()
    with pytest.raises(gb.CallError, match=r"no whole answer within timeout_s=0.5 s"):
        await bench.set_input(QUESTION).run()  # the reference itself trickles: its failure is raised
    assert time.perf_counter() - started < 10  # the body alone would take ~20 s (far less, even under load)
    server.close()
    await server.wait_closed()


# --------------------------------------------------------------- 2: two entries, one model, two keys (one refused)


async def test_an_entry_is_never_served_answers_another_entrys_key_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_GOOD_KEY", "sk-good-0123456789")
    monkeypatch.setenv("ACME_REVOKED_KEY", "sk-revoked-0123456789")

    def by_key(body: dict[str, Any], request: httpx2.Request) -> Any:
        if request.headers["authorization"] == "Bearer sk-revoked-0123456789":
            return OpenAIEndpoint.error(401, "Incorrect API key provided.", code="invalid_api_key")
        return OpenAIEndpoint.completion("Yes: within the 30-day window.")

    endpoints = {"mid-1": OpenAIEndpoint(by_key), "judge-1": JudgeEndpoint("schema")}
    async with serve(endpoints) as base_url:
        good = entry("acme/good", "mid-1", base_url, api_key_env="ACME_GOOD_KEY")
        revoked = entry("acme/revoked", "mid-1", base_url, api_key_env="ACME_REVOKED_KEY")
        cat = catalog(base_url, good, revoked, reference="acme/good")
        bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=4, cache=tmp_path / "cache", progress=False)
        bench.set_input(QUESTION)
        for _ in range(2):  # the race, then its rerun from the cache
            await bench.run()
            runs = bench.report().runs.filter(pl.col("entry") == "acme/revoked")
            assert runs.height == 4 and not runs["ok"].any(), runs.select("ok", "output")
            assert all("HTTP 401" in e for e in runs["error"].to_list())
            assert bench.report().runs.filter(pl.col("entry") == "acme/good")["ok"].all()


# ------------------------------------------------------------------- 11: an entry that answers nothing but 429s


async def test_an_entry_that_only_ever_refuses_is_given_up_on_and_the_race_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from gradebench._calls import admission as _admission
    from gradebench._calls import waits

    monkeypatch.setattr(_admission.Refusals, "GIVE_UP_S", 0.3)  # 20 s in a race; the rule is the same
    monkeypatch.setattr(waits, "BACKOFF_FIRST_S", 0.02)
    refuse = OpenAIEndpoint.error(429, "Rate limit reached for requests", type="requests", code="rate_limit_exceeded")
    endpoints = {
        "ref-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days.")),
        "busy-1": OpenAIEndpoint(lambda body, request: refuse),  # no Retry-After, ever
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        busy = entry("acme/busy", "busy-1", base_url, max_concurrency=2, rpm=60_000)
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), busy, reference="acme/ref")
        bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=6, cache=tmp_path / "cache", progress=False)
        started = time.perf_counter()
        await bench.set_input(QUESTION).run()
        took = time.perf_counter() - started
    runs = bench.report().runs
    refused = runs.filter(pl.col("entry") == "acme/busy")
    assert refused.height == 6 and not refused["ok"].any()
    assert all("gave up on this entry for the race" in e for e in refused["error"].to_list())
    assert runs.filter(pl.col("entry") == "acme/ref")["ok"].all() and took < 60  # not rate_limit_wait_s (300 s) a call


async def test_a_429_that_asks_to_wait_is_waited_out_not_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradebench._calls import admission as _admission

    monkeypatch.setattr(_admission.Refusals, "GIVE_UP_S", 0.0)
    monkeypatch.setattr(_admission.Refusals, "GIVE_UP_COUNT", 1)
    script = [OpenAIEndpoint.rate_limited(retry_after_ms=5) for _ in range(3)] + [OpenAIEndpoint.completion("at last")]
    async with serve({"slow-1": OpenAIEndpoint(script)}) as base_url:
        slow = entry("acme/slow", "slow-1", base_url, rpm=60_000)
        cat = gb.Catalog([slow], grades=["standard"], picks={"standard": "acme/slow"}, ceiling="acme/slow")
        from gradebench._base.vocab import Role
        from gradebench._calls.session import Session
        from gradebench._records.keys import RunKey

        key = RunKey(benchmark_id="b", user_salt="", input_id="i", role=Role.CANDIDATE, entry=slow.name, repeat=0)
        async with Session(cat, gb.results.CallCache(), 4) as session:
            reply = await session.seat(slow, key).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "at last"


# ------------------------------------------------------------------------------------------ 19: the small ones


def test_a_price_that_is_not_a_finite_number_is_refused_naming_the_entry() -> None:
    raw = {
        "grades": ["standard"],
        "ceiling": "acme/mid",
        "entries": [{"name": "acme/mid", "model": "m", "grade": "standard", "base_url": "http://x", "price_in": 1.0}],
    }
    for bad in (float("inf"), float("nan")):
        with pytest.raises(gb.CatalogError, match="catalog.toml: entry 'acme/mid': field 'price_out'"):
            gb.Catalog.from_dict({**raw, "entries": [{**raw["entries"][0], "price_out": bad}]}, source="catalog.toml")
    with pytest.raises(gb.CatalogError, match="entry 'acme/mid': field 'price_in' must be a finite number >= 0"):
        gb.Catalog(
            [gb.Entry(name="acme/mid", model="m", grade="standard", base_url="http://x", price_in=float("inf"))],
            grades=["standard"],
            picks={},
            ceiling="acme/mid",
        )


async def test_a_retried_500_counts_the_attempts_the_server_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    monkeypatch.setattr(openai._base_client.BaseClient, "_calculate_retry_timeout", lambda *a, **k: 0.0)
    broken = OpenAIEndpoint(
        lambda body, request: OpenAIEndpoint.error(500, "The server had an error", type="server_error")
    )
    async with serve({"mid-1": broken}) as base_url:
        mid = entry("acme/mid", "mid-1", base_url, max_retries=3)
        cat = gb.Catalog([mid], grades=["standard"], picks={"standard": "acme/mid"}, ceiling="acme/mid")
        bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=1, progress=False)
        with pytest.raises(gb.CallError, match=r"HTTP 500 after (\d+) attempts") as failed:
            await bench.set_input(QUESTION).run()
    assert failed.value.attempts == len(broken.bodies) == 4


async def test_a_connection_that_fails_names_the_url(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    down = entry("acme/down", "m", base_url)
    cat = gb.Catalog([down], grades=["standard"], picks={"standard": "acme/down"}, ceiling="acme/down")
    bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=1, cache=tmp_path, progress=False)
    with pytest.raises(gb.CallError, match=f"acme/down: connection to {base_url} failed after 1 attempts"):
        await bench.set_input(QUESTION).run()


async def test_entries_on_one_url_share_one_client(tmp_path: Path) -> None:
    from gradebench._calls.session import Session

    async with serve({"m": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("ok"))}) as base_url:
        many = [entry(f"proxy/m{i}", "m", base_url) for i in range(50)]
        cat = gb.Catalog(many, grades=["standard"], picks={"standard": "proxy/m0"}, ceiling="proxy/m0")
        async with Session(cat, gb.results.CallCache(tmp_path), 8) as session:
            clients = {id(session.client(e)) for e in many}
            other = session.client(entry("proxy/slow", "m", base_url, timeout_s=5.0))
    assert len(clients) == 1 and id(other) not in clients  # a different timeout is a client of its own


# ----------------------------------------------------------------------------------------- 9: a tool that hangs


async def test_a_plain_tool_that_hangs_holds_up_only_its_own_run(tmp_path: Path) -> None:
    import threading

    released = threading.Event()
    hanging: list[str] = []  # the tool's calls that have not come back

    @gb.tool
    def lookup_order(order_id: str) -> dict:
        """Look an order up by its id.

        Args:
            order_id: The order id.
        """
        if order_id == "A-STUCK":
            hanging.append(order_id)
            released.wait(120)  # a synchronous call that never comes back (until the test ends)
            hanging.remove(order_id)
        return {"order_id": order_id, "status": "delivered"}

    class Desk(gb.Job):
        """Look the order up with the tool, then answer."""

        timeout_s = 5.0  # far above what a run that does not hang takes, even on a loaded machine

        async def run(self, input: dict, seat: gb.Seat) -> str:
            return (await seat.chat([{"role": "user", "content": input["question"]}], tools=[lookup_order])).text

    def calls_tool(order_id: str) -> Any:
        call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": order_id})
        return lambda body, request: (
            OpenAIEndpoint.completion("It can be refunded.")
            if body["messages"][-1]["role"] == "tool"
            else OpenAIEndpoint.completion(None, tool_calls=[call])
        )

    endpoints = {"ref-1": OpenAIEndpoint(calls_tool("A-1001")), "stuck-1": OpenAIEndpoint(calls_tool("A-STUCK"))}
    endpoints["judge-1"] = JudgeEndpoint("schema")
    try:
        async with serve(endpoints) as base_url:
            cat = catalog(
                base_url,
                entry("acme/ref", "ref-1", base_url),
                entry("acme/stuck", "stuck-1", base_url),
                reference="acme/ref",
            )
            bench = gb.Benchmark(Desk, catalog=cat, grade="standard", runs=3, cache=tmp_path / "cache", progress=False)
            await asyncio.wait_for(bench.set_input(QUESTION).run(), timeout=60)
            assert hanging == ["A-STUCK"] * 3  # the race ended while every stuck call still hung: it did not wait
    finally:
        released.set()
    runs = bench.report().runs
    stuck = runs.filter(pl.col("entry") == "acme/stuck")
    assert not stuck["ok"].any() and all("longer than the job's timeout_s=5" in e for e in stuck["error"].to_list())
    assert runs.filter(pl.col("entry") == "acme/ref")["ok"].all()


def test_a_malformed_jsonl_line_is_named_by_its_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gradebench._cli.main import main

    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "a", "question": "one"}\n\n{"id": "b", "question": "two"}\n{"id": "c", question: 3}\n')
    config = tmp_path / "run.toml"
    config.write_text(f'job = "order-agent"\ngrade = "standard"\ninputs = "{inputs}"\n')
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"inputs file {inputs}: line 4 is not JSON" in err and "\n" not in err.strip()


# -------------------------------------------------------------------------- 20: a rerun keeps the run's wall time


async def test_a_rerun_from_the_cache_keeps_the_wall_time_the_run_had(tmp_path: Path) -> None:
    endpoints = {
        "ref-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Yes, within 30 days."), delay_s=0.05),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), reference="acme/ref")
        bench = gb.Benchmark(answer, catalog=cat, grade="standard", runs=2, cache=tmp_path / "cache", progress=False)
        await bench.set_input(QUESTION).run()
        first = bench.report().runs
        await bench.run()
        again = bench.report().runs
    assert first["wall_s"].min() >= 0.05 and first["wall_s"].to_list() == first["wall_now_s"].to_list()
    assert again["cached"].all() and again["wall_s"].to_list() == first["wall_s"].to_list()  # kept, like the cost
    assert again["wall_now_s"].max() < 0.05  # what it took this time, beside it
    models = bench.report().models
    assert models["wall_s_mean"][0] >= 0.05


def test_a_report_written_before_wall_now_s_reads_back(tmp_path: Path) -> None:
    bench = gb.Benchmark(answer, catalog=gb.sim.catalog(), grade="standard", runs=1, progress=False)
    bench.set_spec(candidates=["sim/steady"]).set_input(QUESTION).run_sync()
    folder = bench.report().to_parquet(tmp_path / "report")
    pl.read_parquet(folder / "runs.parquet").drop("wall_now_s").write_parquet(folder / "runs.parquet")
    back = gb.BenchmarkReport.read_parquet(folder)
    assert back.runs["wall_now_s"].null_count() == back.runs.height and back.runs["ok"].all()


# ------------------------------------------------------------------------ 16: a failing reference says what it got


async def test_a_failing_reference_names_the_entry_the_input_and_what_the_model_said(tmp_path: Path) -> None:
    async def parses(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer with JSON."""
        return json.loads((await seat.chat([{"role": "user", "content": input["question"]}])).text)

    endpoints = {
        "ref-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("Sure! Here is my answer: refund it.")),
        "judge-1": JudgeEndpoint("schema"),
    }
    async with serve(endpoints) as base_url:
        cat = catalog(base_url, entry("acme/ref", "ref-1", base_url), reference="acme/ref")
        bench = gb.Benchmark(parses, catalog=cat, grade="standard", runs=1, cache=tmp_path / "cache", progress=False)
        bench.set_input(QUESTION)
        for attempt in (bench.estimate, bench.run):
            with pytest.raises(json.JSONDecodeError) as failed:
                await attempt()
            note = "\n".join(failed.value.__notes__)
            assert "the reference run on acme/ref failed on input 'q1': JSONDecodeError: Expecting value" in note
            assert "the model's last answer began: 'Sure! Here is my answer" in note
            assert bench.report().runs.filter(pl.col("role") == "reference")["error"][0].startswith("JSONDecodeError")


def test_the_command_line_names_a_failing_reference_in_one_line_and_writes_what_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradebench._cli.main import main

    (tmp_path / "strict.py").write_text(
        "import json\nimport gradebench as gb\n\n\n"
        "async def strict(input: dict, seat: gb.Seat) -> dict:\n"
        '    """Answer with a JSON object."""\n'
        '    return json.loads((await seat.chat([{"role": "user", "content": input["question"]}])).text)\n'
    )
    (tmp_path / "in.jsonl").write_text(json.dumps(QUESTION) + "\n")
    out = tmp_path / "out"
    (tmp_path / "run.toml").write_text(
        f'job = "strict:strict"\ngrade = "standard"\nruns = 1\ninputs = "in.jsonl"\nout = "{out}"\n'
    )
    assert main(["run", str(tmp_path / "run.toml")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gradebench:")]
    assert len(err) == 1 and "the reference run on sim/steady failed on input 'q1': JSONDecodeError" in err[0]
    assert "the model's last answer began:" in err[0] and f"what ran is written to {out}" in err[0]
    assert gb.BenchmarkReport.read_parquet(out).runs.filter(pl.col("role") == "reference")["ok"].to_list() == [False]
