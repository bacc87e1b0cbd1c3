"""Measure what laying out the judge's prompt costs a verdict, with the part every verdict on an input shares (the
task, the input, the rubric, the reference transcript) kept, and laid out again for each verdict as before.

    python benchmarks/judge_prompt.py

2,000 prompts about the first order input, each with a candidate transcript of its own, CPU time, median of 3.
Ends with one JSON line: us_per_verdict_laid_out_each_time, us_per_verdict_shared_part_kept.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from gradebench._judge import prompt
from gradebench.jobs import load_inputs

VALUE = load_inputs("orders")[0]


def events(tag: str) -> list[dict[str, Any]]:
    """A transcript of an order agent: its system and user messages, a tool call and its result, the answer."""
    return [
        {"kind": "system", "content": "You are an order agent. " * 20},
        {"kind": "user", "content": json.dumps(VALUE)},
        {"kind": "tool_call", "name": "lookup", "arguments": {"sku": "A-1", "n": 2}},
        {"kind": "tool_result", "name": "lookup", "result": {"price": 3.5, "stock": 12, "tag": tag}},
        {"kind": "answer", "output": {"total": 7.0, "items": [{"sku": "A-1", "n": 2}], "note": tag * 40}},
    ]


def per_verdict(kept: bool) -> float:
    """CPU microseconds a prompt, over 2,000 prompts."""
    fields = dict(
        instructions="Take the order. " * 30,
        rubric="Be exact about totals.",
        reference=events("ref"),
        labels=("R", "T"),
        redact=["sim/steady", "sim/swift"],
    )
    candidates = [events(f"c{i}") for i in range(200)]
    started = time.process_time()
    for _ in range(10):
        for candidate in candidates:
            if not kept:
                prompt._SHARED_MEMO.clear()  # as before: nothing kept from the last verdict
            prompt.build_judge_messages(input=VALUE, candidate=candidate, **fields)
    return (time.process_time() - started) / 2000 * 1e6


def main() -> None:
    again = statistics.median(per_verdict(kept=False) for _ in range(3))
    kept = statistics.median(per_verdict(kept=True) for _ in range(3))
    print(
        json.dumps(
            {"us_per_verdict_laid_out_each_time": round(again, 1), "us_per_verdict_shared_part_kept": round(kept, 1)}
        )
    )


if __name__ == "__main__":
    main()
