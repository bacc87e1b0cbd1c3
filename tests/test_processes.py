"""A race in a real process, killed, interrupted, sharing its cache with another or out of disk: nothing that was paid
for is asked again, an interrupt stops the sending, and the report is still made.

Each case runs `tests/race_child.py` in a process of its own against a loopback server in the test's process, which
counts what it was asked (a call is known by its ``x-gradebench-run``, ``-seq`` and ``-attempt`` labels)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from .providers import JudgeEndpoint, OpenAIEndpoint, serve
from .race_child import benchmark, summary

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 300.0
"""How long a wait on a child process may take before the test fails: each child imports gradebench first (~2 s on a
quiet machine, far more on a loaded one). Only a failing test waits this long; a passing one goes on at the sign."""


class Counting(OpenAIEndpoint):
    """Answers every request (after ``delay_s``), holding every answer after the first ``hold_after`` until released;
    records which calls it answered, and counts the requests it holds."""

    def __init__(self, *, hold_after: int | None = None, delay_s: float = 0.0, content: str = "Yes, refundable."):
        super().__init__(lambda body, request: OpenAIEndpoint.completion(content), delay_s=delay_s)
        self.hold_after = hold_after
        self.answered: list[tuple[str, str, str]] = []
        self.held = 0
        self.release = asyncio.Event()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if self.hold_after is not None and len(self.answered) >= self.hold_after:
            self.held += 1
            await self.release.wait()
        response = await super().handle(request)
        labels = request.headers
        self.answered.append((labels["x-gradebench-run"], labels["x-gradebench-seq"], labels["x-gradebench-attempt"]))
        return response


@asynccontextmanager
async def endpoints(runner: Counting, judge: JudgeEndpoint | None = None) -> AsyncIterator[str]:
    async with serve({"ref-1": runner, "judge-1": judge or JudgeEndpoint("schema")}) as base_url:
        try:
            yield base_url
        finally:
            runner.release.set()


async def child(
    mode: str, base_url: str, cache: Path, inputs: int, runs: int, **popen: Any
) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADEBENCH_SIM_LATENCY_SCALE": "0"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.race_child",
        mode,
        base_url,
        str(cache),
        str(inputs),
        str(runs),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


async def here(base_url: str, cache: Path, inputs: int, runs: int) -> tuple[int, str, str]:
    """What ``child("run", ...)`` races, in the test's process (no import of gradebench paid again), as `finished`
    reads a child: its exit code, its summary line, nothing on stderr."""
    bench = benchmark(base_url, str(cache), inputs, runs)
    await bench.run()
    return 0, summary(bench), ""


async def until(condition: Any, timeout: float = WAIT_S) -> None:
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out waiting")


async def finished(process: asyncio.subprocess.Process, timeout: float = WAIT_S) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode or 0, out.decode(), err.decode()


def committed(cache: Path) -> int:
    """How many answers the cache folder holds on disk, committed (its runs' wall times left out): what a process
    killed now keeps. Read with sqlite, read-only, beside the process that writes it."""
    db = cache / "cache.db"
    if not db.is_file():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
            return int(con.execute("SELECT COUNT(*) FROM Cache WHERE key NOT LIKE 'wall:%'").fetchone()[0])
    except sqlite3.OperationalError:  # created but not yet set up by its process
        return 0


async def said(process: asyncio.subprocess.Process, words: str, timeout: float = WAIT_S) -> str:
    """What ``process`` wrote to stderr up to the first line holding ``words``: its sign that it got that far, however
    long it took to start (`finished` reads the rest)."""
    assert process.stderr is not None
    lines: list[str] = []

    async def read() -> None:
        while line := (await process.stderr.readline()).decode():  # type: ignore[union-attr]
            lines.append(line)
            if words in line:
                return
        raise AssertionError(f"the process ended without saying {words!r}: {''.join(lines)}")

    await asyncio.wait_for(read(), timeout)
    return "".join(lines)


# ----------------------------------------------------------------------- 12: kill -9 keeps what came back before


async def test_kill_9_loses_no_answer_that_came_back_before_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runner, judge = Counting(hold_after=5), JudgeEndpoint("schema")
    async with endpoints(runner, judge) as base_url:  # one server throughout: its URL is part of every cache key
        racing = await child("run", base_url, cache, inputs=4, runs=2)
        await until(lambda: len(runner.answered) >= 5)
        # every answer given is on disk: no answer comes while the runner holds, so the flush timer commits them
        await until(lambda: committed(cache) >= len(runner.answered) + len(judge.bodies))
        racing.kill()
        await racing.wait()
        paid, runner.answered = set(runner.answered), []
        runner.hold_after = None
        runner.release.set()
        code, out, err = await here(base_url, cache, inputs=4, runs=2)  # the next race: here, in the test's process
    assert code == 0, err
    assert len(paid) >= 5 and not paid & set(runner.answered), "calls answered before the kill were asked again"
    assert json.loads(out)["runs"] == 4 + 4 * 2


# ------------------------------------------------------------------- 13: Ctrl-C on run_sync inside a running loop


@pytest.mark.parametrize("mode", ["run_sync_in_loop", "run_sync_in_asyncio_run"])
async def test_ctrl_c_on_run_sync_inside_a_running_loop_stops_the_race(mode: str, tmp_path: Path) -> None:
    slow = Counting(delay_s=0.05)
    async with endpoints(slow) as base_url:
        racing = await child(mode, base_url, tmp_path / "cache", inputs=20, runs=3)
        await until(lambda: len(slow.answered) >= 6)
        racing.send_signal(signal.SIGINT)
        code, _, err = await finished(racing)
        at_stop = len(slow.bodies)
        await asyncio.sleep(0.5)
        assert len(slow.bodies) == at_stop  # nothing more was sent once it stopped
    assert code != 0 and "KeyboardInterrupt" in err
    assert at_stop < 20 + 20 * 3  # it did stop early: the race had far more to send


# ------------------------------------------------------------------- 14: two processes, one cache, the same race


async def test_two_processes_racing_one_benchmark_on_one_cache_pay_once_and_agree(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runner = Counting(hold_after=1)  # the first race holds on its second call until both races are under way
    async with endpoints(runner) as base_url:  # the first and the rerun race in the test's process, the second not
        first = asyncio.create_task(here(base_url, cache, inputs=3, runs=2))
        await until(lambda: len(runner.answered) >= 1 or first.done())
        second = await child("run", base_url, cache, inputs=3, runs=2)
        waited = await said(second, "waiting for it")  # the second has started and found the benchmark held
        runner.release.set()
        results = [await first, await finished(second)]
        sent = len(runner.bodies)
        rerun = await here(base_url, cache, inputs=3, runs=2)
    for code, _, err in [*results, rerun]:
        assert code == 0, err
    summaries = [json.loads(out) for _, out, _ in [*results, rerun]]
    assert sent == 3 + 3 * 2  # each call once: the second race waited, then read the first's answers
    assert len(runner.bodies) == sent  # and a rerun afterwards is free
    assert len({s["digest"] for s in summaries}) == 1  # the same rows in all three reports
    assert "another process is racing benchmark" in waited


# -------------------------------------------------------------------------------- 15: a cache that cannot be written


def _read_only(folder: Path) -> bool:
    """Make ``folder`` read-only for this user (as root: the immutable attribute); False when this system cannot."""
    if os.geteuid() != 0:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return True
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "-R", "+i", str(folder)], capture_output=True).returncode == 0


def _writable_again(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-R", "-i", str(folder)], capture_output=True)
    else:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


async def test_a_fully_cached_race_is_served_from_a_read_only_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runner = Counting()
    async with endpoints(runner) as base_url:
        code, out, err = await here(base_url, cache, inputs=2, runs=2)  # the cache filled here; read in a process
        assert code == 0, err
        sent = len(runner.bodies)
        if not _read_only(cache):
            pytest.skip("this file system cannot make a folder read-only for root (chattr +i)")
        try:
            code, again, err = await finished(await child("run", base_url, cache, inputs=2, runs=2))
        finally:
            _writable_again(cache)
    assert code == 0, err
    assert len(runner.bodies) == sent and "read-only" in err
    assert json.loads(again)["digest"] == json.loads(out)["digest"]


async def test_a_disk_that_fills_during_the_race_still_gives_the_report(tmp_path: Path) -> None:
    cache = Path(tempfile.mkdtemp(dir=tmp_path)) / "cache"
    big = Counting(content="A long answer. " * 1800)  # ~27 kB an answer, kept inside cache.db: it outgrows the limit

    def starve() -> None:  # in the child only: writes past 300 kB fail with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    async with endpoints(big) as base_url:
        code, out, err = await finished(await child("run", base_url, cache, inputs=4, runs=3, preexec_fn=starve))
    assert code == 0, err
    assert json.loads(out)["runs"] == 4 + 4 * 3  # the report is whole
    assert "could not store" in err  # and the full disk said once
    import gradebench as gb

    assert len(gb.results.CallCache(cache)) >= 0  # the cache still opens afterwards


def test_a_corrupt_cache_names_the_folder_and_what_to_do(tmp_path: Path) -> None:
    import gradebench as gb

    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "cache.db").write_bytes(b"this is not a sqlite database, it is a text file" * 100)
    with pytest.raises(gb.CacheError, match=r"cache: this is not a readable gradebench cache .* move the folder aside"):
        gb.results.CallCache(folder)


# ---------------------------------------------------------------------- 12: SIGTERM to `gradebench run`, then again


async def test_sigterm_to_gradebench_run_flushes_and_exits_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "desk.py").write_text(
        "import gradebench as gb\n\n\n"
        "async def answer(input: dict, seat: gb.Seat) -> str:\n"
        '    """Answer the customer\'s question in one sentence."""\n'
        '    return (await seat.chat([{"role": "user", "content": input["question"]}])).text\n'
    )
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"Refund A-{i}?"}) + "\n" for i in range(4))
    )
    runner = Counting(hold_after=6)
    async with endpoints(runner) as base_url:
        (tmp_path / "catalog.toml").write_text(
            'grades = ["standard", "large"]\nceiling = "judge/oracle"\n[picks]\nstandard = "acme/ref"\n'
            + "".join(
                f'[[entries]]\nname = "{name}"\nmodel = "{model}"\ngrade = "{grade}"\nbase_url = "{base_url}"\n'
                "price_in = 1.0\nprice_out = 2.0\nmax_retries = 0\nmax_concurrency = 1\n"
                for name, model, grade in (("acme/ref", "ref-1", "standard"), ("judge/oracle", "judge-1", "large"))
            )
        )
        (tmp_path / "run.toml").write_text(  # no negative controls: this judge never reads an answer (run would exit 4)
            'job = "desk:answer"\ncatalog = "catalog.toml"\ngrade = "standard"\nruns = 2\ninputs = "in.jsonl"\n'
            f'concurrency = 1\ncontrols = 0\nout = "{tmp_path / "out"}"\ncache = "{tmp_path / "cache"}"\n'
        )
        command = [sys.executable, "-m", "gradebench._cli.main", "run", str(tmp_path / "run.toml")]
        env = {**os.environ, "GRADEBENCH_SIM_LATENCY_SCALE": "0"}
        running = await asyncio.create_subprocess_exec(
            *command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        # one call at a time: the run after the sixth is asked only once the sixth's answer is in the child's cache
        await until(lambda: len(runner.answered) >= 6 and runner.held >= 1)
        running.send_signal(signal.SIGTERM)
        code, _, err = await finished(running)
        paid, runner.answered = set(runner.answered), []
        runner.hold_after = None
        runner.release.set()
        again = await asyncio.create_subprocess_exec(
            *command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        code_again, out_again, err_again = await finished(again)
    lines = [line for line in err.splitlines() if line.startswith("gradebench:")]
    assert code == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("gradebench: stopped by SIGTERM: what finished is in the cache")
    assert code_again == 0, err_again
    assert len(paid) >= 6 and not paid & set(runner.answered), "calls answered before SIGTERM were asked again"
    assert "reference acme/ref" in out_again  # the whole report, this time
