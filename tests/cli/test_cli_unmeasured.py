"""``gradebench run`` on a catalog with broken entries: every one named on stderr, the exit status 5, the report
written; ``rejudge`` of that report says the same."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

from gradebench._cli.main import UNMEASURED, main

from ..providers import serve
from ..verdict.test_unmeasured import BROKEN, QUESTIONS, closed_port, fleet


@contextmanager
def served() -> Iterator[str]:
    """The loopback fleet of `tests.verdict.test_unmeasured` on a thread of its own (the command runs its own loop)."""
    ready: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def hold() -> None:
        async with serve(fleet()) as base_url:
            ready.append(base_url)
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.01)

    thread = threading.Thread(target=asyncio.run, args=(hold(),), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield ready[0]
    finally:
        stop.set()
        thread.join(10)


def entry_toml(name: str, model: str, base_url: str, grade: str = "standard") -> str:
    return (
        f'[[entries]]\nname = "{name}"\nmodel = "{model}"\ngrade = "{grade}"\nbase_url = "{base_url}"\n'
        "price_in = 1.0\nprice_out = 2.0\nmax_retries = 0\n"
    )


def write_run(tmp_path: Path, base_url: str) -> Path:
    entries = [
        entry_toml("acme/ref", "gpt-ref", base_url),
        entry_toml("acme/typo", "gpt-4o-mnii", base_url),
        entry_toml("acme/closed", "gpt-ref", f"http://127.0.0.1:{closed_port()}/v1"),
        entry_toml("acme/down", "gpt-down", base_url),
        entry_toml("acme/prose", "gpt-prose", base_url),
        entry_toml("judge/oracle", "judge-1", base_url, grade="large"),
    ]
    head = 'grades = ["standard", "large"]\nceiling = "judge/oracle"\n\n[picks]\nstandard = "acme/ref"\n\n'
    (tmp_path / "catalog.toml").write_text(head + "\n".join(entries))
    (tmp_path / "inputs.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    candidates = ", ".join(f'"{e}"' for e in ["acme/ref", *BROKEN, "acme/prose"])
    (tmp_path / "run.toml").write_text(
        f'catalog = "catalog.toml"\ngrade = "standard"\nruns = 1\ninputs = "inputs.jsonl"\nout = "{tmp_path / "out"}"\n'
        f'cache = "{tmp_path / "cache"}"\ncontrols = 0\ncandidates = [{candidates}]\n\n'
        '[prompt]\nname = "codes"\ninstructions = "Answer the code asked for. Answer JSON {\\"code\\": ...}."\n'
        'template = "{text}"\noutput = "json"\n'
    )
    return tmp_path / "run.toml"


def test_run_exits_5_naming_every_entry_that_could_not_be_raced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served() as base_url:
        config = write_run(tmp_path, base_url)
        assert main(["run", str(config)]) == UNMEASURED == 5
        said = capsys.readouterr()
        lines = [line for line in said.err.splitlines() if line.startswith("gradebench: UNMEASURED ")]
        assert [line.split()[2].rstrip(":") for line in lines] == BROKEN
        assert all(": no run reached the model: " in line and line.endswith("(10 of 10 runs)") for line in lines)
        assert "acme/prose  worse" in said.out  # the job failing on the model's answers stays a quality finding
        models = pl.read_parquet(tmp_path / "out" / "models.parquet")  # everything was written before the exit
        assert models.filter(pl.col("entry").is_in(BROKEN))["verdict_basis"].to_list() == ["unmeasured"] * 3
        assert "<b>unmeasured</b>" in (tmp_path / "out" / "report.html").read_text()

        # a rejudge of that report changes no endpoint's answer: the same entries, the same status
        code = main(
            ["rejudge", str(tmp_path / "out"), "--catalog", str(tmp_path / "catalog.toml"), "--rubric", "Strict."]
        )
        assert code == UNMEASURED
        assert capsys.readouterr().err.count("gradebench: UNMEASURED ") == 3
