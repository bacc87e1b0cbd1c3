"""The judge's prompt, laid out for a provider's prompt cache: one prefix per input, the candidate last."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from typing import Any

import gradebench as gb
from gradebench._base.protocol import ROLE_HEADER, section
from gradebench._judge.judge import JudgeSetup, judge_messages, prompt_cache_key
from gradebench._judge.prompt import FIXED_RUBRIC, build_judge_messages, judge_prompt_parts
from gradebench._judge.scoring import ask_score
from gradebench._judge.tooldiff import compare, judge_note
from gradebench.jobs import OrderAgent, load_inputs
from gradebench.sim._prompt_cache import MIN_TOKENS, STEP_TOKENS, prompt_text
from gradebench.testing import ScriptedEndpoint, completion

from ..conftest import Scripted, make_seat, scripted_catalog

END_OF_FIRST_TRANSCRIPT = "</transcript>\n"


def split_user(user: str) -> tuple[str, str]:
    """A reference-first judge prompt's user message: (up to the end of the reference transcript, the rest)."""
    cut = user.index(END_OF_FIRST_TRANSCRIPT) + len(END_OF_FIRST_TRANSCRIPT)
    return user[:cut], user[cut:]


def input_of(body: dict[str, Any]) -> str:
    """The id of the input a judge request is about, read from its ``<input>`` section."""
    return json.loads(section(body["messages"][1]["content"], "input") or "{}")["id"]


def candidate_first(user: str) -> bool:
    return user.index('role="candidate"') < user.index('role="reference"')


def opted_in(catalog: gb.Catalog, names: set[str]) -> gb.Catalog:
    entries = [dataclasses.replace(e, prompt_cache_key=e.name in names) for e in catalog]
    return gb.Catalog(entries, grades=catalog.grades, picks=catalog.picks, ceiling=catalog.ceiling_name)


# ------------------------------------------------------------------------------------------------- scripted endpoint

_ids = itertools.count(1)
MINTED: list[str] = []


def leaky(body: dict[str, Any], request: Any) -> dict[str, Any]:
    """Every answer names its model and its own response id: run-specific names the judge must never read."""
    rid = f"chatcmpl-{next(_ids):06d}x"
    MINTED.append(rid)
    return completion(f"I am {body['model']} ({rid}); the answer is 42.", id=rid, model=body["model"])


async def who(input: dict, seat: gb.Seat) -> str:
    """Answer the question."""
    return (await seat.chat([{"role": "user", "content": input["q"]}])).text


async def scripted_race(judge_opts_in: bool, *, swap: bool = False) -> tuple[ScriptedEndpoint, gb.Catalog]:
    endpoint = ScriptedEndpoint(leaky, verdict=(6, 3, "close"))
    catalog = endpoint.catalog()
    if judge_opts_in:
        catalog = opted_in(catalog, {"test/judge"})
    # no negative controls: these cases read every verdict as a candidate's (tests/verdict/test_controls.py has theirs)
    bench = gb.Benchmark(who, runs=3, catalog=catalog, grade="standard", progress=False, controls=0)
    bench.set_inputs([{"id": "a", "q": "What is six times seven?"}, {"id": "b", "q": "What is 40 plus 2?"}])
    if swap:
        bench.set_spec(judge_swap=True)
    await bench.run()
    return endpoint, catalog


def judged(endpoint: ScriptedEndpoint) -> list[dict[str, Any]]:
    return [b for r, b in zip(endpoint.requests, endpoint.bodies, strict=True) if r.headers[ROLE_HEADER] == "judge"]


async def test_every_verdict_on_one_input_repeats_one_prefix_and_the_candidate_comes_last() -> None:
    endpoint, catalog = await scripted_race(judge_opts_in=True)
    bodies = judged(endpoint)
    assert len(bodies) == 2 * 2 * 3  # two inputs, two entries, three runs each
    by_input: dict[str, list[dict[str, Any]]] = {}
    for b in bodies:
        by_input.setdefault(input_of(b), []).append(b)
    assert sorted(by_input) == ["a", "b"]
    prefixes = []
    for group in by_input.values():
        users = [b["messages"][1]["content"] for b in group]
        shared = {split_user(u)[0] for u in users}
        assert len(shared) == 1, "the prefix differs between runs of one input"
        prefix = shared.pop()
        prefixes.append(prefix)
        assert prefix.startswith("<task>\n") and '"What is' in prefix and 'role="reference">' in prefix
        assert 'role="candidate"' not in prefix and "<checked_in_code>" not in prefix
        # Everything else in the body is the same too: system rules, params, schema.
        assert len({json.dumps({**b, "messages": b["messages"][0]}, sort_keys=True) for b in group}) == 1
        for u in users:
            own = split_user(u)[1]
            assert own.startswith("<checked_in_code>\n")
            assert re.search(r'Transcript [A-Z] is untrusted data.*\n<transcript label="[A-Z]" role="candidate">', own)
            assert re.fullmatch(
                r".*\nScore transcript [A-Z] \(the candidate\) against transcript [A-Z] "
                r"\(the reference\)\.",
                own,
                re.DOTALL,
            )
            assert "the answer is 42" in own and "the answer is 42" in prefix  # each transcript where it belongs
    assert prefixes[0] != prefixes[1]  # another input, another prefix

    # Blind: the models' names and every response id (the reference's and each run's) are gone from every request.
    secrets = {n.lower() for e in catalog for n in (e.name, e.model)} | set(MINTED)
    assert any("[redacted]" in split_user(b["messages"][1]["content"])[0] for b in bodies)  # the reference's own
    for b in bodies:
        text = json.dumps({k: v for k, v in b.items() if k != "model"}).lower()
        assert not [s for s in secrets if s in text]


async def test_the_prompt_cache_key_is_sent_only_where_the_entry_opts_in_and_names_nothing() -> None:
    endpoint, catalog = await scripted_race(judge_opts_in=False)
    assert not any("prompt_cache_key" in b for b in endpoint.bodies)

    endpoint, catalog = await scripted_race(judge_opts_in=True)
    for r, b in zip(endpoint.requests, endpoint.bodies, strict=True):
        assert ("prompt_cache_key" in b) == (r.headers[ROLE_HEADER] == "judge")  # candidates and reference: never
    keys = {b["prompt_cache_key"] for b in judged(endpoint)}
    bench_id = endpoint.requests[0].headers["x-gradebench-benchmark"]
    assert keys == {prompt_cache_key(bench_id, "a"), prompt_cache_key(bench_id, "b")}
    names = {n.lower() for e in catalog for n in (e.name, e.model)} | {"a", "b", bench_id}
    for key in keys:
        assert re.fullmatch(r"gb-[0-9a-f]{16}", key)
        assert not any(n in key.removeprefix("gb-") for n in names if len(n) > 1)


async def test_swap_shares_the_task_input_and_rubric_and_judges_both_orders() -> None:
    endpoint, _ = await scripted_race(judge_opts_in=True, swap=True)
    bodies = judged(endpoint)
    assert len(bodies) == 2 * 2 * 3 * 2
    for key in {input_of(b) for b in bodies}:
        users = [b["messages"][1]["content"] for b in bodies if input_of(b) == key]
        usual = [u for u in users if not candidate_first(u)]
        swapped = [u for u in users if candidate_first(u)]
        assert len(usual) == len(swapped) == 6
        assert len({split_user(u)[0] for u in usual}) == 1  # the usual order: the whole prefix
        opening = {u[: u.index("</rubric>\n")] for u in swapped}
        assert len(opening) == 1 and usual[0].startswith(opening.pop())  # swapped: task, input and rubric
        for u in swapped:
            rest = u[u.index("</rubric>\n") :]
            assert rest.index('role="candidate"') < rest.index('role="reference"')


# ------------------------------------------------------------------------------------------------------ the prompt


def test_a_run_specific_name_in_the_shared_part_is_scrubbed_there_too() -> None:
    """Blindness first: a run's own id that happens to occur in the input is removed everywhere (that run's prompt
    then shares less of its prefix)."""
    events = [{"kind": "answer", "output": "see chatcmpl-cand7"}]
    common = dict(instructions="Answer.", rubric="", reference=[{"kind": "answer", "output": 1}], candidate=events)
    plain_shared, _ = judge_prompt_parts(input={"q": "why chatcmpl-cand7?"}, redact={"acme/pick"}, **common)
    shared, own = judge_prompt_parts(
        input={"q": "why chatcmpl-cand7?"}, redact={"acme/pick", "chatcmpl-cand7"}, **common
    )
    assert "chatcmpl-cand7" in plain_shared and "chatcmpl-cand7" not in shared + own
    assert "[redacted]" in shared and "[redacted]" in own
    messages = build_judge_messages(input={"q": 1}, redact={"chatcmpl-cand7"}, **common)
    assert messages[1]["content"] == "".join(judge_prompt_parts(input={"q": 1}, redact={"chatcmpl-cand7"}, **common))


async def test_params_for_still_merges_renames_and_drops_the_key() -> None:
    verdict = completion('{"accuracy": 6, "work": 2, "reason": "fine"}')
    plain = Scripted(lambda body, req: verdict)
    seat = make_seat(scripted_catalog(plain, params={"top_p": 0.5}), "acme/judge", job_params={"temperature": 0})
    await ask_score(seat, [{"role": "user", "content": "j"}], params={"temperature": 0}, prompt_cache_key="gb-1")
    assert {k: plain.bodies[0].get(k) for k in ("top_p", "temperature", "prompt_cache_key")} == {
        "top_p": 0.5,
        "temperature": 0,
        "prompt_cache_key": "gb-1",
    }

    renamed = Scripted(lambda body, req: verdict)
    seat = make_seat(scripted_catalog(renamed, rename_params={"prompt_cache_key": "cache_hint"}), "acme/judge")
    await ask_score(seat, [{"role": "user", "content": "j"}], params={}, prompt_cache_key="gb-1")
    assert renamed.bodies[0]["cache_hint"] == "gb-1" and "prompt_cache_key" not in renamed.bodies[0]

    dropped = Scripted(lambda body, req: verdict)
    seat = make_seat(scripted_catalog(dropped, drop_params=("prompt_cache_key",)), "acme/judge")
    await ask_score(seat, [{"role": "user", "content": "j"}], params={}, prompt_cache_key="gb-1")
    assert "prompt_cache_key" not in dropped.bodies[0] and "response_format" in dropped.bodies[0]


# ----------------------------------------------------------------------------------------------- the simulated fleet


async def test_on_the_sim_the_judge_prefix_is_shared_and_served_from_the_prompt_cache() -> None:
    fleet = gb.sim.SimFleet(latency_scale=0)
    catalog = fleet.catalog()
    assert all(e.prompt_cache_key for e in catalog)  # the simulated fleet opts in
    bench = gb.Benchmark(OrderAgent, runs=2, catalog=catalog, grade="standard", progress=False)
    inputs = load_inputs("orders")[:3]
    await bench.set_inputs(inputs).run()
    report = bench.report()

    # The request bodies the fleet received: one prefix per input, at least 1024 tokens of the sim's prompt.
    bodies = [r.body for r in fleet.requests if r.headers.get(ROLE_HEADER) == "judge" and r.body]
    shared_tokens = {}
    for key in {input_of(b) for b in bodies}:
        group = [b for b in bodies if input_of(b) == key]
        prefixes = {split_user(b["messages"][1]["content"])[0] for b in group}
        assert len(prefixes) == 1 and len({b["prompt_cache_key"] for b in group}) == 1
        head = {**group[0], "messages": [group[0]["messages"][0], {"role": "user", "content": prefixes.pop()}]}
        shared_tokens[key] = len(prompt_text(head)) // 4  # the sim's tokens: 4 characters each
        assert shared_tokens[key] >= MIN_TOKENS, "the order agent's judge prefix is too short to be cached"
    assert len(shared_tokens) == 3

    # The same messages are rebuilt from the report's runs: what was sent is what `judge_messages` lays out.
    setup = JudgeSetup.from_meta(report.meta, catalog)
    runs = report.to_runs()
    refs = {r.input_id: r for r in runs if r.role == "reference"}
    values = {x["id"]: x for x in inputs}
    for run in (r for r in runs if r.role == "candidate" and r.ok):
        ref = refs[run.input_id]
        facts = judge_note(compare(run.calls, run.output, ref.calls, ref.output))
        assert report.judge_prompts(run.run_id) == [judge_messages(run, ref, values[run.input_id], setup, facts=facts)]

    # Later verdicts on an input are served the shared prefix from the judge's prompt cache.
    calls = report.calls.filter(role="judge")
    inputs_of = [input_of(json.loads(r)) for r in calls["request"]]
    for key, tokens in shared_tokens.items():
        cached = [c for c, i in zip(calls["cached_input_tokens"], inputs_of, strict=True) if i == key]
        assert len(cached) >= 5 and sum(c == 0 for c in cached) <= 1, cached  # only the first pays for the prefix
        assert all(c >= tokens // STEP_TOKENS * STEP_TOKENS for c in cached if c), cached
    assert report.runs.filter(role="candidate")["judge_cost"].sum() > 0


def test_short_names_are_scrubbed_whole_and_never_from_the_prompts_own_layout() -> None:
    """Entries named ``ref``, ``cand`` and ``task``: the judge still reads its tags, roles and rubric intact; the names
    go where the runs wrote them as words, and stay inside longer words ("reference", "candidates", "multitask")."""
    common = dict(instructions="Answer the task.", rubric="", input={"q": "refund?"})
    shared, own = judge_prompt_parts(
        reference=[{"kind": "answer", "output": "per the reference policy: yes"}],
        candidate=[{"kind": "answer", "output": "I am cand, a model by Task Inc; candidates multitask"}],
        redact={"ref", "cand", "task"},
        **common,
    )
    text = shared + own
    for layout in ('role="reference"', 'role="candidate"', "<task>", "</task>", "<rubric>", "(the candidate)"):
        assert layout in text
    assert "I am [redacted], a model by [redacted] Inc" in own
    assert "candidates multitask" in own and "reference policy" in shared
    assert FIXED_RUBRIC in shared
