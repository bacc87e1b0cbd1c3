"""``gradebench run`` then ``gradebench rejudge`` in processes of their own, as a user types them: the job module
beside the run config is found by every command (no ``PYTHONPATH``), and a rejudge with ``--scorer`` records the
scorer that ran in the new report's spec and in its HTML footer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from gradebench._cli.runconfig import job_of
from gradebench._race.plan import job_reference

JOB = '''
import gradebench as gb


async def quote(input, seat):
    """Say the price the question asks for, as a number with no currency."""
    reply = await seat.chat([{"role": "user", "content": input["question"]}])
    return {"price": reply.text.strip()}


quote.scorer = gb.scorers.field_equals("price")
'''

INPUTS = [
    {"id": "q1", "question": "A pen costs 2 and a pad 3. What do both cost?", "gold": {"price": "5"}},
    {"id": "q2", "question": "A cup costs 4. What do two cost?", "gold": {"price": "8"}},
]


def gradebench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The ``gradebench`` console script, as installed: its folder on the path, not the one it runs in."""
    script = Path(sys.executable).parent / "gradebench"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(Path(__file__).parent.parent.parent)  # this checkout's gradebench, nothing else
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_job_found_beside_a_config_is_recorded_with_its_folder_and_imported_from_anywhere(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pathjob_recorded.py").write_text(JOB)
    job = job_of("pathjob_recorded:quote", project)  # as `run` finds it: in the config's folder
    recorded = job_reference(job, found_in=project)
    assert recorded == f"{project.resolve().as_posix()}/pathjob_recorded:quote"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = f"from gradebench._race.plan import resolve_job; print(resolve_job({recorded!r}).__doc__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "Say the price the question asks for, as a number with no currency.", done.stderr
    with pytest.raises(ValueError, match=r"holds no module 'pathjob_recorded'"):
        job_of(f"{elsewhere.as_posix()}/pathjob_recorded:quote")


@pytest.mark.slow  # three processes that each write a report's charts: about a minute on a busy machine
def test_rejudge_finds_the_job_run_found_and_records_the_scorer_that_ran(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "quotejob.py").write_text(JOB)
    (project / "inputs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in INPUTS))
    (project / "quote.toml").write_text(
        'job = "quotejob:quote"\ninputs = "inputs.jsonl"\ngrade = "standard"\nruns = 1\nout = "out"\n'
        'candidates = ["sim/swift"]\ncontrols = 0\n'
    )
    ran = gradebench("run", "project/quote.toml", "--out", "project/out", cwd=tmp_path)  # not from its folder
    assert ran.returncode in (0, 4), ran.stderr
    meta = json.loads((project / "out" / "meta.json").read_text())
    assert meta["spec"]["job"] == f"{project.resolve().as_posix()}/quotejob:quote"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for scorer, recorded in (("job", "job"), ("field_equals:price@gold.price", "field_equals:price@gold.price")):
        out = elsewhere / f"rejudged-{recorded.split(':')[0]}"
        done = gradebench("rejudge", str(project / "out"), "--scorer", scorer, "--out", str(out), cwd=elsewhere)
        assert done.returncode in (0, 4), done.stderr
        assert json.loads((out / "meta.json").read_text())["spec"]["scorer"] == recorded
        assert re.search(f"scorer {re.escape(recorded)}( ·|<)", (out / "report.html").read_text())  # the facts line
        runs = pl.read_parquet(out / "runs.parquet")
        assert runs["scorer"].null_count() < runs.height  # the table's gold column: it scored
