"""The judge lays out what every verdict on one input shares — the task, the input, the rubric and the reference
transcript — once for all of them, and the same prompt comes out as when it was laid out for each."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._judge import prompt
from gradebench._judge.prompt import build_judge_messages
from gradebench.jobs import OrderAgent, load_inputs


def counting_reference_blocks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    laid: list[str] = []
    real = prompt.transcript_block

    def counted(label: str, role: Role, text: str) -> str:
        if role is Role.REFERENCE:
            laid.append(label)
        return real(label, role, text)

    monkeypatch.setattr(prompt, "transcript_block", counted)
    return laid


async def test_a_race_lays_out_each_inputs_reference_once_for_all_its_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    laid = counting_reference_blocks(monkeypatch)
    catalog = gb.sim.catalog(latency_scale=0)
    bench = gb.Benchmark(OrderAgent, runs=4, catalog=catalog, grade="standard", cache=tmp_path, progress=False)
    bench.set_spec(candidates=["sim/steady", "sim/swift", "sim/squint"])
    bench.set_inputs(load_inputs("orders")[:2])
    await bench.run()
    judged = bench.report().runs.filter(role="candidate")["score"].drop_nulls().len()
    assert judged == 2 * 3 * 4 and len(laid) == 2  # 24 verdicts, one layout of each input's reference


def test_the_shared_part_is_the_same_as_laid_out_afresh_and_follows_a_changed_input():
    events = [{"kind": "user", "content": "hi"}, {"kind": "answer", "output": {"a": 1}}]
    value = {"q": [1, 2]}
    fields = dict(instructions="Answer.", rubric="Be right.", reference=events, candidate=events, labels=("R", "T"))
    first = build_judge_messages(input=value, **fields)
    again = build_judge_messages(input=value, **fields)
    prompt._SHARED_MEMO.clear()
    afresh = build_judge_messages(input=value, **fields)
    assert first == again == afresh
    value["q"].append(3)  # the same object, changed: laid out again
    changed = build_judge_messages(input=value, **fields)[1]["content"]
    assert "3" in changed.split("</input>")[0] and "3" not in first[1]["content"].split("</input>")[0]
    swapped = build_judge_messages(input=value, candidate_first=True, **fields)[1]["content"]
    assert swapped.index('role="candidate"') < swapped.index('role="reference"')
