"""A slow local server raced at its own pace, on real llama.cpp servers: SmolLM2 judging more runs at once than its
server has slots. The race sends the judge's server no more than its ``/props`` ``total_slots`` (the server's own
``/metrics`` never shows a request deferred), no verdict fails, and the estimate made before the race is within 2×
of the race's wall time."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx2
import polars as pl
import pytest

import gradebench as gb

from .day_one import TICKETS

pytestmark = pytest.mark.real

SYSTEM = "Label the support ticket: billing, bug or feature. Answer the label only."


async def triage(input: dict, seat: gb.Seat) -> str:
    """Label the support ticket as billing, bug or feature; answer with the label only."""
    response = await seat.openai.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": input["text"]}],
        max_tokens=4,
        temperature=0,
    )
    return response.choices[0].message.content or ""


def catalog(servers: dict[str, Any]) -> gb.Catalog:
    def entry(name: str, server: str, grade: str, **more: Any) -> gb.Entry:
        return gb.Entry(
            name=name, model=server, grade=grade, base_url=servers[server].base_url, price_in=1.0, price_out=2.0, **more
        )

    return gb.Catalog(
        [
            entry("local/smollm2", "smollm2", "standard", params={"temperature": 0}),
            entry("local/smollm2-warm", "smollm2", "standard", params={"temperature": 1.0}),
            entry("local/smollm2-judge", "judge", "large"),
        ],
        grades=["standard", "large"],
        picks={"standard": "local/smollm2", "large": "local/smollm2-judge"},
        ceiling="local/smollm2-judge",
        judge_params={"temperature": 0, "max_tokens": 60},
        concurrency=8,
        source="real",
    )


async def deferred_at_most(metrics_url: str, seen: list[float], stop: asyncio.Event) -> None:
    """Poll the server's ``llamacpp:requests_deferred`` (requests queued for want of a free slot) until ``stop``."""
    async with httpx2.AsyncClient() as http:
        while not stop.is_set():
            text = (await http.get(metrics_url, timeout=10)).text
            found = re.search(r"^llamacpp:requests_deferred\s+(\S+)", text, re.M)
            assert found, text[:400]
            seen.append(float(found.group(1)))
            await asyncio.sleep(0.2)


async def test_a_judge_with_more_verdicts_than_slots_is_paced_and_estimated(real_servers: dict[str, Any]) -> None:
    tickets = [{"id": i, "text": text} for i, text, _ in TICKETS[:6]]
    bench = gb.Benchmark(triage, runs=1, catalog=catalog(real_servers), grade="standard", progress=False)
    bench.set_inputs(tickets).set_spec(candidates=["local/smollm2-warm"], controls=0)
    estimate = await bench.estimate()
    seen: list[float] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(
        deferred_at_most(real_servers["judge"].base_url.removesuffix("/v1") + "/metrics", seen, stop)
    )
    started = time.perf_counter()
    try:
        await bench.run()
    finally:
        stop.set()
        await watcher
    wall = time.perf_counter() - started
    report = bench.report()
    verdicts = report.calls.filter(pl.col("role") == "judge")
    assert verdicts.height >= len(tickets) and verdicts["error"].is_null().all(), verdicts["error"].to_list()
    assert seen and max(seen) == 0, f"requests deferred on the judge's 2-slot server: {max(seen)}"
    said = "\n".join(estimate.notes)
    assert "serves 2 requests at once (/props total_slots)" in said, said
    print(f"estimate {estimate.wall_s:.1f} s, race {wall:.1f} s; {estimate.line()}")
    assert wall / 2 <= estimate.wall_s <= wall * 2, (estimate.wall_s, wall, said)
