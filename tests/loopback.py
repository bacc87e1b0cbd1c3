"""Races on the loopback server of `tests.providers`: entries and a catalog on it, a one-question job, a race, and
the rows a case reads back — what the conformance, fault and honesty suites share."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import polars as pl

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench.sim._server import start_server

from .providers import Fleet, OpenAIEndpoint

__all__ = [
    "ANSWER",
    "JUDGE",
    "QUESTION",
    "Slotted",
    "answering",
    "answers",
    "bench_of",
    "catalog",
    "diagnostics",
    "entry",
    "model_row",
    "race",
    "rows",
    "serve_slotted",
]

JUDGE = "judge/oracle"
"""The judge's entry in `catalog`: model ``judge-1`` on the same server."""
QUESTION = {"id": "q1", "question": "Order A-1001 arrived three days ago. Can I get a refund?"}
ANSWER = "Order A-1001 was delivered 3 days ago, within the 30-day window: it can be refunded."


def entry(name: str, model: str, base_url: str, *, grade: str = "standard", **fields: Any) -> gb.Entry:
    """An entry on the loopback server; no retries unless the case asks (the SDK's backoff is slow)."""
    return gb.Entry(
        name=name,
        model=model,
        grade=grade,
        base_url=base_url,
        **{"price_in": 1.0, "price_out": 2.0, "max_retries": 0, **fields},
    )


def catalog(base_url: str, *entries: gb.Entry, reference: str) -> gb.Catalog:
    """The entries, plus the judge (model ``judge-1``) as the ceiling."""
    judge = entry(JUDGE, "judge-1", base_url, grade="large", price_in=5.0, price_out=20.0)
    return gb.Catalog([*entries, judge], grades=["standard", "large"], picks={"standard": reference}, ceiling=JUDGE)


def bench_of(
    job: Any,
    cat: gb.Catalog,
    tmp_path: Path,
    *,
    candidates: Sequence[str],
    runs: int | str = 1,
    inputs: Sequence[dict[str, Any]] = (QUESTION,),
    **kw: Any,
) -> gb.Benchmark:
    """A benchmark of ``job`` on ``candidates`` of ``cat`` (grade ``standard``), its inputs set. No negative
    controls unless the case asks: these suites' judges are scripted stand-ins that do not read answers (the
    controls would rightly void their verdicts; tests/verdict/test_controls.py tests them)."""
    kw.setdefault("controls", 0)
    bench = gb.Benchmark(job, runs=runs, catalog=cat, grade="standard", cache=tmp_path / "cache", progress=False, **kw)
    return bench.set_inputs(list(inputs)).set_spec(candidates=candidates)


async def race(job: Any, cat: gb.Catalog, tmp_path: Path, **kw: Any) -> gb.BenchmarkReport:
    """Race `bench_of` and give its report."""
    bench = bench_of(job, cat, tmp_path, **kw)
    await bench.run()
    return bench.report()


def rows(report: gb.BenchmarkReport, entry_name: str, role: str = Role.CANDIDATE) -> list[dict[str, Any]]:
    return report.runs.filter((pl.col("entry") == entry_name) & (pl.col("role") == role)).to_dicts()


def model_row(report: gb.BenchmarkReport, entry_name: str) -> dict[str, Any]:
    return report.models.filter(pl.col("entry") == entry_name).row(0, named=True)


def diagnostics(report: gb.BenchmarkReport, kind: str, entry_name: str | None = None) -> list[dict[str, Any]]:
    found = report.diagnostics().filter(pl.col("kind") == kind)
    if entry_name is not None:
        found = found.filter(pl.col("entry") == entry_name)
    return found.to_dicts()


def answers(text: Any = ANSWER, **fields: Any) -> Callable[[dict[str, Any], httpx2.Request], Any]:
    """An OpenAI-shaped answer to every request."""
    return lambda body, request: OpenAIEndpoint.completion(text, **fields)


def answering(replies: list[gb.Reply] | None = None) -> Any:
    """A one-question job; the replies it got are appended to ``replies``."""

    async def answer(input: dict[str, Any], seat: gb.Seat) -> Any:
        """Answer the customer's question in one sentence."""
        reply = await seat.chat([{"role": "user", "content": input["question"]}])
        if replies is not None:
            replies.append(reply)
        return reply.text

    return answer


class Slotted:
    """A llama.cpp-like server in front of a `Fleet`: ``GET /props`` says its ``total_slots`` (a 404 when
    ``props`` is False), and it answers ``slots`` requests at once, each taking ``service_s``, the rest queued on the
    server as llama-server queues them (their clients' deadlines running). ``most`` is the most in flight at once."""

    def __init__(self, fleet: Fleet, *, slots: int = 2, service_s: float = 0.05, props: bool = True):
        self.fleet, self.slots, self.service_s, self.props = fleet, slots, service_s, props
        self.in_flight = self.most = self.props_reads = 0
        self.served: list[tuple[str, float, float]] = []
        """(model, arrived, answered) of each completion request, ``time.perf_counter`` seconds."""
        self._free: asyncio.Semaphore | None = None

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET" and request.url.path == "/props":
            self.props_reads += 1
            if not self.props:
                return OpenAIEndpoint.error(404, "File Not Found", code="not_found")
            return httpx2.Response(200, json={"total_slots": self.slots, "model_alias": "slotted", "build_info": "b1"})
        self._free = self._free or asyncio.Semaphore(self.slots)
        arrived = time.perf_counter()
        async with self._free:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            try:
                await asyncio.sleep(self.service_s)
                return await self.fleet.handle(request)
            finally:
                self.in_flight -= 1
                model = json.loads(request.content).get("model", "") if request.content else ""
                self.served.append((model, arrived, time.perf_counter()))

    def span_s(self, *models: str) -> float:
        """Seconds from the first request for ``models`` to arrive to the last one answered."""
        times = [(a, b) for m, a, b in self.served if m in models]
        return max(b for _, b in times) - min(a for a, _ in times)


@asynccontextmanager
async def serve_slotted(server: Slotted) -> AsyncIterator[str]:
    """Serve ``server`` on 127.0.0.1; yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    sim = await start_server(host="127.0.0.1", port=0, fleet=server)  # type: ignore[arg-type]
    try:
        yield sim.base_url
    finally:
        await sim.close()
