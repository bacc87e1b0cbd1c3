"""A cache that may not be written is still read: reopened read-only in the process that filled it (its answers
still in sqlite's write-ahead log), or on a full disk. Races run over loopback HTTP through the real openai client;
the folder's refusal is simulated at sqlite, the lowest level diskcache writes through."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gradebench._calls.cache import Cached, CallCache

from ..loopback import answering, answers, bench_of, catalog, entry
from ..providers import OpenAIEndpoint, serve

WRITES = ("CREATE", "INSERT", "UPDATE", "DELETE", "REPLACE", "BEGIN", "DROP")


def refusing(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    """Make every write diskcache's sqlite connections attempt fail with ``message`` (as sqlite says it for a
    read-only folder or a full disk); reads, and connections opened by URI (read-only ones), work as before."""
    real_connect = sqlite3.connect

    class Refusing(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            statement = sql.lstrip().upper()
            if statement.startswith(WRITES) or (statement.startswith("PRAGMA") and "=" in statement):
                raise sqlite3.OperationalError(message)
            return super().execute(sql, *args)

    def connect(database: Any, *args: Any, **kw: Any) -> sqlite3.Connection:
        if kw.get("uri"):
            return real_connect(database, *args, **kw)
        return real_connect(database, *args, factory=Refusing, **kw)

    monkeypatch.setattr(sqlite3, "connect", connect)


async def race_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> tuple[int, int, Any, Any]:
    """Race a benchmark, then race it again in this process on the same cache, made to refuse writes; the first
    benchmark (and its cache) is still open. Gives the requests each race sent and their reports."""
    model, judge = OpenAIEndpoint(answers()), OpenAIEndpoint(answers('{"accuracy": 7, "work": 3, "reason": "ok"}'))
    async with serve({"gpt-a": model, "gpt-b": model, "judge-1": judge}) as base_url:
        cat = catalog(
            base_url, entry("acme/a", "gpt-a", base_url), entry("acme/b", "gpt-b", base_url), reference="acme/a"
        )
        inputs = [{"id": f"q{i}", "question": f"Question {i}?"} for i in range(3)]
        first = bench_of(answering(), cat, tmp_path, candidates=["acme/b"], inputs=inputs, runs=2)
        await first.run()
        sent = len(model.bodies) + len(judge.bodies)
        refusing(monkeypatch, message)
        again = bench_of(answering(), cat, tmp_path, candidates=["acme/b"], inputs=inputs, runs=2)
        assert again.cache.read_only and again.cache is not first.cache
        await again.run()
        resent = len(model.bodies) + len(judge.bodies) - sent
    return sent, resent, first.report(), again.report()


async def test_a_cache_reopened_read_only_in_the_process_that_filled_it_serves_every_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent, resent, first, again = await race_twice(tmp_path, monkeypatch, "attempt to write a readonly database")
    assert sent > 0 and resent == 0  # every call answered from the cache: none sent again
    assert again.runs.height == first.runs.height > 0 and again.runs["ok"].all()


async def test_a_full_disk_still_serves_what_the_cache_holds_and_says_why_nothing_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gradebench"):
        sent, resent, first, again = await race_twice(tmp_path, monkeypatch, "database or disk is full")
    assert sent > 0 and resent == 0
    assert again.runs.height == first.runs.height > 0 and again.runs["ok"].all()
    said = [r.getMessage() for r in caplog.records if "disk is full" in r.getMessage()]
    assert len(said) == 1 and "none is stored" in said[0] and str(tmp_path / "cache") in said[0]


def test_a_full_disk_at_open_keeps_the_answers_of_a_closed_cache_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = CallCache(tmp_path)
    cache.set("k", Cached(response='{"id": "x"}', latency_s=0.1))
    cache.close()
    refusing(monkeypatch, "database or disk is full")
    full = CallCache(tmp_path)
    assert full.read_only and full.get("k") == Cached(response='{"id": "x"}', latency_s=0.1)
    full.set("new", Cached(response="{}", latency_s=0.0))
    assert full.get("new") is None and len(full) == 1
