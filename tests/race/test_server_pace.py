"""A local server raced at its own pace, over loopback HTTP: a llama.cpp-like server that answers two requests at
once and queues the rest (`tests.loopback.Slotted`) is sent no more than its ``/props`` ``total_slots`` — its
candidate and its judge together, the cap is the server's — so no call's deadline runs out in the server's queue;
the estimate and the check say which cap was used and why."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import gradebench as gb

from ..loopback import ANSWER, JUDGE, Slotted, answers, bench_of, entry, serve_slotted
from ..providers import Fleet, JudgeEndpoint, OpenAIEndpoint

TICKETS = [{"id": f"q{i}", "question": f"Order A-{1000 + i} arrived three days ago. Refund?"} for i in range(8)]

SERVICE_S = 0.07
"""Seconds the slotted server takes per request: eight at once into two slots queue 0.28 s for the last."""
TIMEOUT_S = 0.25
"""Each entry's deadline: far above one request, below the server's queue for eight."""


def catalog(slotted_url: str) -> gb.Catalog:
    """Every entry on the slotted server; the candidate and the judge with a deadline shorter than its queue (the
    reference's is the default: its runs are measured, not failed, when the server's queue is long)."""
    slow = {"timeout_s": TIMEOUT_S}
    entries = [
        entry("local/reference", "ref-1", slotted_url),
        entry("local/candidate", "cand-1", slotted_url, **slow),
        entry(JUDGE, "judge-1", slotted_url, grade="large", **slow),
    ]
    return gb.Catalog(
        entries, grades=["standard", "large"], picks={"standard": "local/reference"}, ceiling=JUDGE, concurrency=16
    )


def slotted_fleet(**kw: object) -> Slotted:
    return Slotted(
        Fleet(
            {
                "ref-1": OpenAIEndpoint(answers(ANSWER)),
                "cand-1": OpenAIEndpoint(answers(ANSWER)),
                "judge-1": JudgeEndpoint("schema"),
            }
        ),
        slots=2,
        service_s=SERVICE_S,
        **kw,  # type: ignore[arg-type]
    )


async def test_a_judge_sharing_a_two_slot_server_is_paced_to_its_slots_and_no_call_times_out(tmp_path: Path) -> None:
    server = slotted_fleet()
    async with serve_slotted(server) as slotted:
        bench = bench_of(answers_job(), catalog(slotted), tmp_path, candidates=["local/candidate"], inputs=TICKETS)
        estimate = await bench.estimate()
        await bench.run()
    report = bench.report()
    assert server.most <= 2, f"{server.most} requests in flight at once on a server with 2 slots"
    assert server.props_reads <= 3  # once a session: the estimate's two and the race's own
    runs = report.runs.filter(pl.col("entry") == "local/candidate")
    assert runs["ok"].all(), runs["error"].to_list()
    verdicts = report.calls.filter(pl.col("role") == "judge")
    assert verdicts.height >= len(TICKETS) and verdicts["error"].is_null().all(), verdicts["error"].to_list()
    said = "\n".join(estimate.notes)
    assert "serves 2 requests at once" in said and "/props total_slots" in said, said
    # the candidate's 8 calls and the judge's 8 verdicts through 2 slots, from the first sent to the last answered
    wall = server.span_s("cand-1", "judge-1")
    assert wall / 2 <= estimate.wall_s <= wall * 2, (estimate.wall_s, wall)


def answers_job() -> object:
    async def answer(input: dict, seat: gb.Seat) -> str:
        """Answer the customer's question in one sentence."""
        return (await seat.chat([{"role": "user", "content": input["question"]}])).text

    return answer


async def test_check_says_the_cap_each_local_server_gets_and_why(tmp_path: Path) -> None:
    with_props, without = slotted_fleet(), slotted_fleet(props=False)
    async with serve_slotted(with_props) as slotted, serve_slotted(without) as plain:
        cat = gb.Catalog(
            [entry("local/reference", "ref-1", slotted), entry(JUDGE, "judge-1", plain, grade="large")],
            grades=["standard", "large"],
            picks={"standard": "local/reference"},
            ceiling=JUDGE,
        )
        checked = await gb.check_catalog(cat)
    lines = checked.table().splitlines()
    root = slotted.removesuffix("/v1")
    expected = f"llama.cpp at {root} serves 2 requests at once (/props total_slots): racing it with max_concurrency 2"
    assert expected in lines, lines
    assert (
        f"{plain.removesuffix('/v1')}: no /props (HTTP 404); no cap of its own — each entry's max_concurrency rules"
        in (lines)
    ), lines
    assert with_props.props_reads == without.props_reads == 1


async def test_the_estimate_warns_when_a_server_that_gives_no_slots_may_queue_calls_past_their_deadline(
    tmp_path: Path,
) -> None:
    server = slotted_fleet(props=False)
    async with serve_slotted(server) as plain:
        bench = bench_of(answers_job(), catalog(plain), tmp_path, candidates=["local/candidate"], inputs=TICKETS[:2])
        estimate = await bench.estimate()
    said = "\n".join(estimate.notes)
    assert "no /props (HTTP 404)" in said, said
    assert "local/candidate: its server did not say how many requests it answers at once" in said, said
    assert "past timeout_s=0.25 — give the entry max_concurrency" in said, said
