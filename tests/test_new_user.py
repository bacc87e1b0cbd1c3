"""A new user's path, as the docs write it: "Your own job and models, step by step" run top to bottom.

The section's files (the fences that name one: ```python title="triage.py", ```jsonl title="tickets.jsonl",
```toml title="triage.toml") are
written to a fresh folder, and its offline rehearsal (the ```sh block that starts `gradebench sim-serve`) runs there
command by command, on a free port: the simulated fleet over HTTP on 127.0.0.1, a catalog made from its OpenRouter-
shaped model list, the preflight check, the race, and the report it writes.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import polars as pl

import gradebench as gb

PAGE = Path(__file__).parent.parent / "docs" / "your-job.md"
SECTION = "## Your own job and models, step by step"
PORT = "8765"
"""The port the page's rehearsal names; the test serves on a free one instead."""


def section() -> str:
    text = PAGE.read_text()
    assert f"\n{SECTION}\n" in text, f"{PAGE.name} has no section {SECTION!r}"
    return text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]


def named_files(text: str) -> dict[str, str]:
    """The fences that name a file after their language, by file name."""
    return dict(re.findall(r'```\w+ title="([\w./-]+)"\n(.*?)```', text, re.DOTALL))


def rehearsal(text: str) -> tuple[str, list[str]]:
    """The offline rehearsal: its ``sim-serve`` line, and the commands after it (continued lines joined)."""
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.DOTALL) if "gradebench sim-serve" in b]
    assert len(blocks) == 1, f"expected one ```sh block with gradebench sim-serve, found {len(blocks)}"
    lines = [line.strip() for line in blocks[0].replace("\\\n", " ").splitlines() if line.strip()]
    serve = [line for line in lines if line.startswith("gradebench sim-serve")]
    assert len(serve) == 1 and lines[0] == serve[0], "the rehearsal starts the simulated fleet first"
    return serve[0], [line for line in lines[1:] if not line.startswith("kill ")]


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def wait_until_served(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60  # its start (an import of gradebench) is slow on a loaded machine
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert server.poll() is None, f"sim-serve exited with {server.returncode}"
        assert time.monotonic() < deadline, f"nothing answered at {url}"
        time.sleep(0.1)


def test_the_docs_new_user_path_runs_top_to_bottom_on_the_simulated_fleet(tmp_path: Path) -> None:
    text = section()
    files = named_files(text)
    assert sorted(files) == ["tickets.jsonl", "triage.py", "triage.toml"]
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    serve, commands = rehearsal(text)
    assert [c.split()[:2] for c in commands] == [
        ["gradebench", "catalog"],
        ["gradebench", "check"],
        ["gradebench", "run"],
    ]

    port = free_port()
    env = dict(os.environ)
    env |= {
        "COLUMNS": "80",  # a terminal 80 columns wide: every line the path prints fits it
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "GRADEBENCH_CACHE": str(tmp_path / "cache"),
        "GRADEBENCH_SIM_LATENCY_SCALE": "0",
    }
    words = shlex.split(serve.removesuffix("&").replace(PORT, port))
    assert words[:2] == ["gradebench", "sim-serve"] and "--latency-scale" in words
    server = subprocess.Popen(
        [sys.executable, "-m", "gradebench._cli.main", *words[1:]],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_until_served(f"http://127.0.0.1:{port}/v1/models", server)
        said = {}
        for command in commands:
            done = subprocess.run(
                command.replace(PORT, port),
                shell=True,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,  # a failing command's limit only: on a loaded machine one took over 120 s
            )
            assert done.returncode == 0, f"{command}\nexit status {done.returncode}\n{done.stdout}\n{done.stderr}"
            said[command.split()[1]] = done.stdout
            wide = [line for line in done.stdout.splitlines() if len(line) > 80]
            assert not wide, f"{command}: lines wider than 80 columns:\n" + "\n".join(wide)
    finally:
        server.terminate()
        server.wait(timeout=10)

    catalog = gb.Catalog.load(tmp_path / "catalog.toml")
    config = tomllib.loads(files["triage.toml"])
    raced = [e.name for e in catalog.entries if e.grade == config["grade"]]
    assert len(raced) == 3 and all(e.base_url == f"http://127.0.0.1:{port}/v1" for e in catalog.entries)
    assert f"{len(catalog)} of {len(catalog)} entries pass" in " ".join(said["check"].split())

    out = tmp_path / config["out"]
    assert (out / "report.html").is_file() and (out / "runs.parquet").is_file()
    assert f"Wrote {config['out']}/report.html" in said["run"]
    report = gb.BenchmarkReport.read_parquet(out)
    inputs = [line for line in files["tickets.jsonl"].splitlines() if line.strip()]
    runs = report.runs
    assert runs.height == len(raced) * len(inputs) * config["runs"] + len(inputs)  # the candidates' runs + references
    assert runs.filter(role="reference").height == len(inputs)
    assert runs["ok"].all() and runs.filter(role="candidate")["score"].is_not_null().all()
    assert sorted(report.models["entry"].to_list()) == sorted(raced)
    made = report.calls.filter(pl.col("role") != "judge")
    assert set(made["asked_model"]) == {"gpt-4o-mini"}  # the job's own openai code, on seat.openai

    page = (out / "report.html").read_text()
    assert '<table class="gb-models">' in page
    assert all(name in page for name in raced)
