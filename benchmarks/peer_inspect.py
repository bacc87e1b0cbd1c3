"""Inspect AI's side of ``benchmarks/peer.py``, run by the Python of a venv with ``inspect-ai`` (not gradebench's).

    python benchmarks/peer_inspect.py --n 2000 --concurrency 100 --log-dir LOGS [--cache]

A Task of N samples: the solver calls the model once (``generate()``), the scorer (``model_graded_qa``) calls the judge
once, both through Inspect's ``openai-api`` provider, which reads the loopback server's URL from
``LOOPBACK_BASE_URL`` (``LOOPBACK_API_KEY`` its key). ``--cache`` turns on Inspect's cache for every generate call
(``eval(cache=...)``; its folder is ``INSPECT_CACHE_DIR``). ``--instructions-file`` gives the judge's grading
instructions (``peer.py`` pads them so the judge prompt is as long as gradebench's). Prints one JSON line: the eval's
wall time in this process, the log file, and how many samples were scored correct.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import CachePolicy
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import generate

RUNNER = "openai-api/loopback/runner-1"
JUDGE = "openai-api/loopback/judge-1"
PROMPT = "Question {i:06d}: one line, please."
"""The user message of sample i; gradebench's side sends the same text (same length) in each run."""


@task
def peer(n: int = 200, instructions: str | None = None) -> Task:
    samples = [Sample(input=PROMPT.format(i=i), target="A one-line answer.", id=i) for i in range(n)]
    return Task(dataset=samples, solver=generate(), scorer=model_graded_qa(instructions=instructions, model=JUDGE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--cache", action="store_true", help="Inspect's cache on every generate call")
    parser.add_argument("--instructions-file", type=Path)
    args = parser.parse_args()
    instructions = args.instructions_file.read_text() if args.instructions_file else None
    started = time.perf_counter()
    logs = inspect_eval(
        peer(n=args.n, instructions=instructions),
        model=RUNNER,
        log_dir=str(args.log_dir),
        display="none",
        max_connections=args.concurrency,
        max_samples=args.concurrency,
        max_retries=0,
        cache=CachePolicy(expiry=None) if args.cache else None,
    )
    wall = time.perf_counter() - started
    log = logs[0]
    if log.status != "success":
        raise SystemExit(f"the Inspect eval ended {log.status}: {log.error}")
    correct = sum(1 for s in log.samples or [] for score in (s.scores or {}).values() if score.value == "C")
    print(json.dumps({"wall_s": round(wall, 3), "log": log.location, "correct": correct}))


if __name__ == "__main__":
    main()
